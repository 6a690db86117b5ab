"""mechanisms.audit.game_sampler: the batched games have the distribution of ``run_fem`` itself
(a fixed-seed chi-square test of homogeneity, error rate 1e-6), on both statistics, for the
mechanism and its mutant; the mutant's calibration is the one sampled.

The real games are the cost (the batched ones take milliseconds), so the two samples are of
unequal sizes: ``RUNS`` real games against ``BATCHED`` batched ones. A two-sample test's power
goes with the effective size 1 / (1 / n1 + 1 / n2): 1,548 here, above the 1,500 of the former
3,000 against 3,000."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from mechanisms.audit.audits import GAME_PARAMS, RSPM_GAME_PARAMS, RSPM_ROUND_PARAMS
from mechanisms.audit.game_sampler import GAME_WORKLOAD, GameSampler, game_pairs
from mechanisms.audit.mutants import FEMOneRound, FEMRSPMOneBit
from mechanisms.audit.sampler_base import AuditError
from mechanisms.synthetic.fem import run_fem
from oracles.routing.registry import make_oracle

#: Real games (``run_fem``) and batched games per test; effective size 1,548 (module docstring).
RUNS = 1600
BATCHED = 30 * RUNS
#: The game with RSPM's query player (four rounds, conjunctions of one literal).
RSPM_GAME = RSPM_GAME_PARAMS


def _run_fem_statistics(params, X, runs, seed):
    """(count of level-0 records, index of the first selection) of ``runs`` real games."""
    codes = X.astype(np.int64)
    oracle = make_oracle("conjunctions_enumerate")
    rng = np.random.default_rng(seed)
    counts, firsts = [], []
    for _ in range(runs):
        release = run_fem(codes, GAME_WORKLOAD, params, rng, oracle)
        counts.append(int((release.records[:, 0] == 0).sum()))
        query, sign = release.selections[0]
        firsts.append(query if sign > 0 else query + GAME_WORKLOAD.queries)
    return np.array(counts), np.array(firsts)


def _same_distribution(a, b, cells):
    table = np.array([np.bincount(a, minlength=cells), np.bincount(b, minlength=cells)])
    table = table[:, table.sum(axis=0) > 0]
    return stats.chi2_contingency(table).pvalue > 1e-6


@pytest.mark.parametrize(
    "params",
    [
        GAME_PARAMS,
        FEMOneRound(**dataclasses.asdict(GAME_PARAMS)),
        RSPM_GAME,
        FEMRSPMOneBit(**dataclasses.asdict(RSPM_GAME)),
    ],
    ids=["fem", "fem-one_round_budget", "rspm", "rspm-one_bit"],
)
def test_the_batched_games_have_run_fems_distribution(params):
    pair = game_pairs()[1]  # n = 2, one record flipped
    counts, firsts = _run_fem_statistics(params, pair.X1, RUNS, seed=1)
    records = GameSampler(params, GAME_WORKLOAD)
    batched = records.sample(pair.X1, pair.y1, BATCHED, np.random.default_rng(2))
    # a histogram's index over the universe {0, 1} is its count of level-0 records
    assert _same_distribution(counts, batched, records.cells())
    selection = GameSampler(params, GAME_WORKLOAD, statistic="selection")
    first = selection.sample(pair.X1, pair.y1, BATCHED, np.random.default_rng(3))
    assert _same_distribution(firsts, first, selection.cells())


def test_the_mutant_selects_with_the_whole_budget_each_round():
    mutant = FEMOneRound(**dataclasses.asdict(GAME_PARAMS))
    assert mutant.round_epsilon() == pytest.approx(GAME_PARAMS.epsilon)
    assert GAME_PARAMS.round_epsilon() == pytest.approx(GAME_PARAMS.epsilon / GAME_PARAMS.rounds)


def test_the_rspm_mutant_forgets_the_signatures_length():
    mutant = FEMRSPMOneBit(**dataclasses.asdict(RSPM_ROUND_PARAMS))
    assert RSPM_ROUND_PARAMS.round_epsilon() == pytest.approx(1.0)  # T = 1: the whole claim
    assert mutant.round_epsilon() == pytest.approx(3.0)  # m = 3: Lap(2 / eps0), not Lap(2m / eps0)
    sampler = GameSampler(RSPM_ROUND_PARAMS, GAME_WORKLOAD, statistic="selection")
    assert sampler.cells() == 4 and sampler.signatures.shape == (3, 4)
    assert sampler.describe(1)(2) == "round 1 selects query 0 with sign -"


def test_the_cells_are_named_and_counted():
    records = GameSampler(GAME_PARAMS, GAME_WORKLOAD)
    assert records.cells() == GAME_PARAMS.rounds + 1 and records.grid(1).shape == (5, 1)
    assert records.describe(1)(3) == "histogram 3 of the 4 synthetic records"
    selection = GameSampler(GAME_PARAMS, GAME_WORKLOAD, statistic="selection")
    assert selection.describe(1)(3) == "round 1 selects query 1 with sign -"


def test_what_the_sampler_cannot_play_is_refused():
    with pytest.raises(AuditError, match="statistic must be records or selection"):
        GameSampler(GAME_PARAMS, GAME_WORKLOAD, statistic="weights")
    with pytest.raises(AuditError, match="X must hold level codes"):
        GameSampler(GAME_PARAMS, GAME_WORKLOAD).sample(
            np.full((2, 1), 0.5), np.ones(2), 10, np.random.default_rng(0)
        )
