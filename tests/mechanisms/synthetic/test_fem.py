"""mechanisms.synthetic.fem: the game's release, its privacy claim (the target, proven by
composition), its exponential mechanism's distribution (a fixed-seed chi-square test, error
rate 1e-6), its accuracy as epsilon grows, and a data player whose oracle fails."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from core.problem import conjunction_index
from mechanisms.privacy import PrivacyTarget
from mechanisms.synthetic import selection
from mechanisms.synthetic.accounting import round_epsilon, schedule_rounds, total_epsilon
from mechanisms.synthetic.domain import ConjunctionClass, Workload
from mechanisms.synthetic.fem import (
    SAMPLES,
    SHORT_KEEP,
    SHORT_SAMPLES,
    SHORT_TARGET,
    FEMParams,
    check_listed,
    run_fem,
    select,
    selection_precision,
    window_sampling_error,
)
from oracles.contract.certificate import Status
from oracles.contract.budget import Budget, now
from oracles.synthetic.data_search import SearchConjunctionOracle
from oracles.synthetic.query_player import HighsSelectionOracle, SearchSelectionOracle
from oracles.synthetic.data_player import EnumerationConjunctionOracle
from oracles.routing.registry import make_oracle

SIZES = (3, 2, 4)


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a > 0).astype(int) ^ (rng.random(n) < 0.1)  # b follows a, mostly
    c = np.where(rng.random(n) < 0.7, 2 * b + a % 2, rng.integers(0, 4, n))
    return np.stack([a, b, c], 1)


WORKLOAD = Workload.all_k_way(SIZES, 2)

#: The exponential mechanism's game on _data() (rounds 5, samples 2, seed 7, enumeration), as
#: run_fem played it before the RSPM query player was added (commit 593a15f).
PINNED_SELECTIONS = ((24, 1), (2, -1), (24, 1), (19, -1), (19, -1))
PINNED_RECORDS = [
    [1, 1, 1], [1, 0, 2], [2, 1, 3], [0, 0, 1], [2, 0, 1],
    [0, 0, 1], [0, 1, 2], [2, 1, 2], [2, 1, 2], [1, 1, 2],
]  # fmt: skip


def test_the_release_meets_its_target_and_says_how():
    codes = _data()
    params = FEMParams(1.0, 1e-6, rounds=20, samples=5)
    release = run_fem(
        codes, WORKLOAD, params, np.random.default_rng(1), make_oracle("conjunctions_highs")
    )
    assert release.records.shape == (20 * 5, 3)
    assert len(release.selections) == 20 and release.oracle_certified
    claim = release.privacy
    assert claim.holds and claim.epsilon <= 1.0 and claim.epsilon == pytest.approx(1.0)
    assert claim.delta == 1e-6 and claim.requested_epsilon == 1.0 and claim.calibration == "zcdp"
    assert release.params["round_epsilon"] == round_epsilon(PrivacyTarget(1.0, 1e-6), 20)
    assert all(0 <= q < WORKLOAD.queries and s in (-1, 1) for q, s in release.selections)


def test_same_seed_same_release_other_seed_other_release():
    codes, params = _data(), FEMParams(1.0, 1e-6, rounds=8, samples=3)
    oracle = make_oracle("conjunctions_enumerate")
    a = run_fem(codes, WORKLOAD, params, np.random.default_rng(5), oracle)
    b = run_fem(codes, WORKLOAD, params, np.random.default_rng(5), oracle)
    c = run_fem(codes, WORKLOAD, params, np.random.default_rng(6), oracle)
    assert np.array_equal(a.records, b.records) and a.selections == b.selections
    assert not np.array_equal(a.records, c.records)


def test_the_exponential_mechanism_samples_its_distribution():
    utilities = np.array([0.0, 0.01, 0.02, -0.03, 0.05])
    eps0, n, draws = 2.0, 100, 200_000
    rng = np.random.default_rng(11)
    counts = np.bincount([select(utilities, eps0, n, rng) for _ in range(draws)], minlength=5)
    logits = eps0 * n * utilities / 2
    expected = np.exp(logits - logits.max())
    expected = draws * expected / expected.sum()
    assert stats.chisquare(counts, expected).pvalue > 1e-6


def test_more_privacy_budget_answers_the_workload_better():
    codes = _data(n=2000)
    # the data player's 600 best responses by listing the 24-record universe (exact, the same
    # records as HiGHS here: mean errors 0.064 / 0.023 against 0.088 for uniform records);
    # HiGHS's MILP took 7 s of them, and test_the_release_meets_its_target plays the game with it
    oracle = make_oracle("conjunctions_enumerate")

    def mean_error(epsilon):
        params = FEMParams(epsilon, 1e-6, rounds=30, samples=10, noise_scale=0.5)
        release = run_fem(codes, WORKLOAD, params, np.random.default_rng(2), oracle)
        return WORKLOAD.errors(codes, release.records).mean()

    uniform = WORKLOAD.errors(codes, np.random.default_rng(0).integers(0, SIZES, (300, 3)))
    private, generous = mean_error(0.05), mean_error(50.0)
    assert generous < 0.5 * uniform.mean()  # the game learns the marginals
    assert generous < private


def test_a_data_player_whose_oracle_fails_keeps_the_guarantee_and_says_so():
    class Stopped:
        def solve(self, problem, budget):
            solution = EnumerationConjunctionOracle().solve(problem, budget)
            cert = dataclasses.replace(solution.certificate, status=Status.TIME_LIMIT)
            return dataclasses.replace(solution, certificate=cert)

    params = FEMParams(1.0, 1e-6, rounds=4, samples=2)
    release = run_fem(_data(), WORKLOAD, params, np.random.default_rng(0), Stopped())
    assert release.privacy.holds and not release.oracle_certified
    assert release.params["data_player_uncertified"] == 4  # 4 rounds, one certificate a round
    assert release.to_params()["param.data_player_uncertified"] == 4


def test_a_data_player_search_out_of_time_plays_on_and_is_counted():
    # the search's budget already spent in every round: each record is the search's greedy
    # one, every round's certificate TIME_LIMIT; the claim holds (docs/synthetic.md 2.4)
    class Spent(SearchConjunctionOracle):
        def solve(self, problem, budget):
            return super().solve(problem, Budget(now() - 1.0))

    params = FEMParams(1.0, 1e-6, rounds=5, samples=3)
    release = run_fem(_data(), WORKLOAD, params, np.random.default_rng(4), Spent())
    assert release.privacy.holds and release.privacy.epsilon == pytest.approx(1.0)
    assert not release.oracle_certified and release.params["data_player_uncertified"] == 5
    assert {c.status for c in release.certificates} == {Status.TIME_LIMIT}
    assert release.records.shape == (15, 3) and (release.records < SIZES).all()


@pytest.mark.parametrize(
    "codes, message",
    [
        (np.zeros((0, 3), dtype=int), "codes must be"),
        (np.zeros((5, 2), dtype=int), "codes must be"),
        (np.full((5, 3), 3), "within the domain's levels"),
    ],
)
def test_codes_outside_the_domain_are_refused(codes, message):
    with pytest.raises(ValueError, match=message):
        run_fem(codes, WORKLOAD, FEMParams(1.0, 1e-6), np.random.default_rng(0), None)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(rounds=0), "rounds must be >= 1"),
        (dict(samples=1.5), "samples must be an integer"),
        (dict(noise_scale=0.0), "noise_scale must be finite and > 0"),
        (dict(delta=1.0), "delta must be in"),
        (dict(query_player="gibbs"), "query_player must be 'expmech' or 'rspm'"),
        (dict(max_literals=0), "max_literals must be >= 1"),
        (dict(separator="gray"), "separator must be 'binary' or 'onehot'"),
    ],
)
def test_bad_params_are_refused_by_name(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        FEMParams(**({"epsilon": 1.0, "delta": 1e-6} | kwargs))


# --- the RSPM query player (docs/synthetic.md, section 4) ---------------------------------------


def _rspm(**kwargs):
    return FEMParams(1.0, 1e-6, **({"rounds": 6, "samples": 2, "query_player": "rspm"} | kwargs))


def test_an_rspm_release_rests_on_its_certified_selections():
    params = _rspm(max_literals=2)
    release = run_fem(
        _data(), WORKLOAD, params, np.random.default_rng(1), make_oracle("conjunctions_highs")
    )
    claim = release.privacy
    assert claim.holds and claim.epsilon <= 1.0 and claim.epsilon == pytest.approx(1.0)
    assert release.params["round_epsilon"] == round_epsilon(PrivacyTarget(1.0, 1e-6), 6, "pure")
    many = dict(rounds=50, query_player="rspm")  # zCDP beats basic composition: eps0^2 / 2 vs / 8
    assert _rspm(**many).round_epsilon() == pytest.approx(
        FEMParams(1.0, 1e-6, rounds=50).round_epsilon() / 2
    )
    assert len(release.selection_certificates) == 6 and release.selection_certified
    assert all(c.backend == "search" for c in release.selection_certificates)
    assert len(release.certificates) == 6  # the data player's, apart: one a round
    for (index, sign), query in zip(release.selections, release.queries):
        assert 1 <= len(query) <= 2 and sign in (-1, 1)
        assert index == conjunction_index(SIZES, 2, query)
    assert release.params["signature_bits"] == 2 + 2 + 3 + 1  # binary codes of 3, 2, 4 levels


def test_every_exact_selector_makes_the_same_release():
    # continuous noise: no ties, so every exact oracle returns the one argmax
    params = _rspm(max_literals=3, separator="onehot")
    releases = [
        run_fem(_data(), WORKLOAD, params, np.random.default_rng(4), oracle, selector)
        for oracle, selector in [
            (make_oracle("conjunctions_enumerate"), None),
            (make_oracle("conjunctions_enumerate"), SearchSelectionOracle()),
            (make_oracle("conjunctions_enumerate"), HighsSelectionOracle()),
        ]
    ]
    assert releases[0].params["selector"] == "enumerate"
    for other in releases[1:]:
        assert other.selections == releases[0].selections
        assert np.array_equal(other.records, releases[0].records)
        assert other.selection_certified


def test_an_uncertified_selection_voids_the_claim_and_says_so():
    class Stopped:
        name = "stopped"

        def solve(self, problem, budget):
            solution = SearchSelectionOracle().solve(problem, budget)
            cert = dataclasses.replace(solution.certificate, status=Status.TIME_LIMIT)
            return dataclasses.replace(solution, certificate=cert)

    release = run_fem(
        _data(),
        WORKLOAD,
        _rspm(),
        np.random.default_rng(0),
        make_oracle("conjunctions_enumerate"),
        Stopped(),
    )
    assert not release.privacy.holds and not release.selection_certified
    assert "6 of 6 oracle calls not certified" in release.privacy.reason
    assert release.oracle_certified  # the data player's are fine: only the selection counts


def test_the_exponential_mechanism_path_is_unchanged():
    # records and selections of the default query player, pinned before RSPM was added (at the
    # perturbation scale 1 of that time; answers now kept round by round, the same numbers)
    params = FEMParams(1.0, 1e-6, rounds=5, samples=2, noise_scale=1.0)
    release = run_fem(
        _data(), WORKLOAD, params, np.random.default_rng(7), make_oracle("conjunctions_enumerate")
    )
    assert release.selections == PINNED_SELECTIONS
    assert release.records.tolist() == PINNED_RECORDS
    assert release.queries == tuple(WORKLOAD.conjunction(q) for q, _ in PINNED_SELECTIONS)
    assert release.selection_certificates == () and release.selection_certified


def test_the_schedule_from_the_budget_spends_it_in_rounds_of_a_fixed_epsilon():
    # docs/synthetic.md 2.6: eps0 = round_scale sqrt(epsilon), T the rounds the budget pays for
    for epsilon in (0.1, 1.0, 3.0):
        params = FEMParams(epsilon, 1e-6)
        rounds = params.total_rounds
        assert rounds == schedule_rounds(
            PrivacyTarget(epsilon, 1e-6), params.round_scale * epsilon**0.5
        )
        assert params.round_epsilon() >= params.round_scale * epsilon**0.5
        assert params.perturbation() == pytest.approx(params.noise_scale * rounds**0.5)
    assert FEMParams(0.1, 1e-6).total_rounds < FEMParams(1.0, 1e-6).total_rounds
    assert FEMParams(1.0, 1e-6, rounds=7).total_rounds == 7  # stated: as stated
    rspm = FEMParams(1.0, 1e-6, query_player="rspm")
    with pytest.raises(ValueError, match="fem_rspm's rounds follow the public n and domain"):
        _ = rspm.total_rounds
    rspm = rspm.with_table(32561, ADULT_SIZES, 1)
    assert not rspm.windowed and rspm.first_kept() == 0 and rspm.output_keep() == 1.0


#: Adult's levels per attribute (pipeline/data/adult_domain.py): RSPM's schedule reads them.
ADULT_SIZES = (6, 9, 16, 7, 15, 6, 5, 2, 3, 3, 4, 42, 2)


def test_rspm_rounds_come_from_its_noise_by_a_public_rule():
    # docs/synthetic.md 4.8: T minimizes 1 / sqrt(T) + 2 m k / (n eps0(T)) over 1..fem's T
    n, delta = 32561, 1.0 / 32561**2
    bits = selection.signature_length(ADULT_SIZES, "binary")
    got = {}
    for k in (3, 5):
        for epsilon in (0.1, 0.3, 1.0, 3.0):
            params = FEMParams(epsilon, delta, query_player="rspm", max_literals=k)
            params = params.with_table(n, ADULT_SIZES, 1)
            rounds = params.total_rounds
            most = FEMParams(epsilon, delta).total_rounds  # the exponential mechanism's schedule
            model = selection.rspm_error_model(
                PrivacyTarget(epsilon, delta), n, bits, k, np.arange(1, most + 1)
            )
            assert 1 <= rounds <= most and model[rounds - 1] == model.min()
            # each round's eps0 is the pure rounds' calibration, and the whole is the target
            eps0 = params.round_epsilon()
            assert eps0 == round_epsilon(PrivacyTarget(epsilon, delta), rounds, "pure")
            assert total_epsilon(eps0, rounds, delta, "pure") <= epsilon
            assert total_epsilon(eps0, rounds, delta, "pure") == pytest.approx(epsilon, rel=1e-9)
            assert params.records_per_round() >= selection.RSPM_LEAST_SAMPLES
            got[k, epsilon] = rounds
    # more budget pays for more rounds; a larger class (more noise in the argmax) for fewer
    assert got[3, 0.1] < got[3, 0.3] < got[3, 1.0] < got[3, 3.0]
    assert all(got[5, e] <= got[3, e] for e in (0.1, 0.3, 1.0, 3.0))
    assert (got[5, 1.0], got[5, 3.0]) == (11, 23)  # Adult's figures in docs/synthetic.md 4.8
    # a stated T is kept
    stated = FEMParams(1.0, delta, rounds=50, query_player="rspm").with_table(n, ADULT_SIZES, 1)
    assert stated.total_rounds == 50 and stated.records_per_round() == SAMPLES


def test_rspm_records_a_round_keep_the_sampling_error_below_half_the_model():
    # sqrt(ln(2 |Q|) / (2 T s)) <= error / 2, at least RSPM_LEAST_SAMPLES
    assert selection.rspm_samples(10, 0.5, 1000) == selection.RSPM_LEAST_SAMPLES
    s = selection.rspm_samples(2, 0.05, 10**6)
    assert (
        math.sqrt(math.log(2e6) / (2 * 2 * s))
        <= 0.025
        < math.sqrt(math.log(2e6) / (2 * 2 * (s - 1)))
    )


def test_a_scheduled_rspm_game_plays_its_rule_and_proves_the_target():
    codes = _data()
    params = FEMParams(1.0, 1e-6, query_player="rspm", max_literals=2)
    release = run_fem(
        codes, WORKLOAD, params, np.random.default_rng(0), make_oracle("conjunctions_search")
    )
    bound = params.with_table(len(codes), WORKLOAD.sizes, WORKLOAD.queries)
    rounds, samples, error = bound.rspm_schedule()
    assert len(release.selections) == rounds == release.params["rounds"]
    assert len(release.records) == rounds * samples == rounds * release.params["samples"]
    assert release.params["n"] == len(codes) and "public_table" not in release.params
    assert release.params["modelled_error"] == error
    assert release.privacy.holds and release.privacy.epsilon <= 1.0


def test_the_scheduled_game_keeps_its_late_rounds_and_proves_the_target():
    codes = _data()
    params = FEMParams(0.3, 1e-6, samples=3, keep=0.5)
    release = run_fem(
        codes, WORKLOAD, params, np.random.default_rng(3), make_oracle("conjunctions_search")
    )
    rounds = params.total_rounds
    params = params.with_table(len(codes), WORKLOAD.sizes, WORKLOAD.queries)
    assert len(release.selections) == rounds == release.params["rounds"]
    assert release.params["kept_from_round"] == params.first_kept() == rounds - -(-rounds // 2)
    assert len(release.records) == (rounds - params.first_kept()) * 3
    assert release.privacy.holds and release.privacy.epsilon <= 0.3
    assert release.privacy.epsilon == pytest.approx(0.3)
    assert len(release.certificates) == rounds and release.oracle_certified  # one a round
    assert release.params["data_player_uncertified"] == 0


def test_the_regime_follows_the_selections_precision_against_the_windows_sampling():
    # docs/synthetic.md 2.6: the window when alpha = 2 ln(2|Q|) / (eps0 n) >= eps_W
    n, queries = 32561, 164_934  # Adult's records and 3-way cells
    delta = 1.0 / n**2
    eps_w = window_sampling_error(queries)
    assert 2 * queries * math.exp(-2 * SHORT_TARGET * SHORT_SAMPLES * eps_w**2) == (
        pytest.approx(1.0)
    )
    regimes = {}
    for epsilon in (0.1, 0.3, 1.0, 3.0):
        params = FEMParams(epsilon, delta).with_table(n, ADULT_SIZES, queries)
        alpha = selection_precision(n, queries, params.round_epsilon())
        assert alpha == pytest.approx(2 * math.log(2 * queries) / (params.round_epsilon() * n))
        assert params.windowed == (alpha >= eps_w)
        regimes[epsilon] = params.windowed
    # Adult: the window at epsilon 0.1 and 0.3, every round at 1 and 3 (the T rule's choices)
    assert regimes == {0.1: True, 0.3: True, 1.0: False, 3.0: False}
    short = FEMParams(0.1, delta).with_table(n, ADULT_SIZES, queries)
    long = FEMParams(1.0, delta).with_table(n, ADULT_SIZES, queries)
    assert (short.query_rounds(), short.output_keep()) == (SHORT_TARGET, SHORT_KEEP)
    assert (long.query_rounds(), long.output_keep()) == (long.total_rounds, 1.0)
    assert long.first_kept() == 0
    assert (short.records_per_round(), long.records_per_round()) == (SHORT_SAMPLES, SAMPLES)
    # n, not T, sets it: a tenth of the rows at epsilon 1 is coarse enough for the window,
    # ten times as many at 0.1 fine enough for every round
    assert FEMParams(1.0, delta).with_table(n // 10, ADULT_SIZES, queries).windowed
    assert not FEMParams(0.1, delta).with_table(n * 10, ADULT_SIZES, queries).windowed
    with pytest.raises(ValueError, match="the schedule's regime follows the public n"):
        _ = FEMParams(0.1, delta).windowed
    stated = FEMParams(1.0, 1e-6, rounds=4)  # stated rounds: every round, as before
    assert (stated.query_rounds(), stated.first_kept()) == (4, 0)
    # a window of one round: the query player answers the last round's records alone
    params = FEMParams(1.0, 1e-6, rounds=6, samples=3, target_rounds=1)
    release = run_fem(
        _data(), WORKLOAD, params, np.random.default_rng(2), make_oracle("conjunctions_search")
    )
    assert release.params["target_rounds"] == 1 and len(release.records) == 18


def test_the_search_and_enumeration_play_the_same_game():
    # the data player's exact search answers as enumeration does (continuous noise: no ties),
    # the answers kept round by round as the recomputed ones
    params = FEMParams(1.0, 1e-6, rounds=12, samples=4)
    rng_a, rng_b = np.random.default_rng(8), np.random.default_rng(8)
    a = run_fem(_data(), WORKLOAD, params, rng_a, make_oracle("conjunctions_search"))
    b = run_fem(_data(), WORKLOAD, params, rng_b, make_oracle("conjunctions_enumerate"))
    assert a.selections == b.selections and np.array_equal(a.records, b.records)


def test_keep_must_be_a_fraction():
    with pytest.raises(ValueError, match="keep must be in"):
        FEMParams(1.0, 1e-6, keep=1.5)


def test_a_class_of_conjunctions_is_rspm_s_and_the_exponential_mechanism_refuses_it():
    codes, cls = _data(), ConjunctionClass(SIZES, 2)
    params = FEMParams(1.0, 1e-6, rounds=3, samples=2, query_player="rspm", max_literals=2)
    release = run_fem(
        codes, cls, params, np.random.default_rng(0), make_oracle("conjunctions_search")
    )
    assert release.params["queries"] == cls.queries and release.privacy.holds
    with pytest.raises(ValueError) as refused:
        check_listed(cls)
    assert str(refused.value).startswith("fem's exponential mechanism scores every query of its")
    with pytest.raises(ValueError) as error:
        run_fem(codes, cls, FEMParams(1.0, 1e-6, rounds=3), np.random.default_rng(0), None)
    assert str(error.value) == str(refused.value)  # one refusal, one message
    check_listed(WORKLOAD)  # a listed workload passes
