"""Oracles side by side on generic tables (bench.generic_tables): the oracles it builds by
name, the verdict of each answer against the best point any oracle found, the summary lines,
and usage errors for bad options."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from bench.generic_tables import _summary, check, main, make
from oracles.mip.highs import HighsOracle
from oracles.routing.routes import Route


def test_oracles_are_made_by_name_with_the_limits_given():
    reference = make("reference", 7.0, 2)
    assert isinstance(reference, Route) and reference.name == "auto"
    assert (reference.time_limit, reference.threads) == (7.0, 2)
    window = make("window", 7.0, 1)
    assert isinstance(window, Route) and not window.fallback  # the search alone
    assert isinstance(make("highs", 7.0, 1).strategy("highs"), HighsOracle)
    with pytest.raises(ValueError, match="unknown oracle 'cplex'; known: "):
        make("cplex", 7.0, 1)


def _answer(w, objective, certified):
    return SimpleNamespace(
        w=np.asarray(w, dtype=float),
        certificate=SimpleNamespace(objective=objective, certified=certified),
    )


def test_each_answer_is_judged_against_the_best_point_any_oracle_found(tiny_problem):
    points = [np.array(w, dtype=float) for w in ([1, 0], [0, 0], [-1, 1])]
    values = [float(tiny_problem.objective(w)) for w in points]
    best = int(np.argmin(values))
    worse = [i for i in range(3) if values[i] > values[best] + 1e-3][0]
    runs = [
        ("a", _answer(points[best], values[best], True)),
        ("b", _answer(points[worse], values[worse], False)),
        ("c", _answer(points[worse], values[worse], True)),
    ]
    verdicts = check(tiny_problem, runs)
    gap = values[worse] - values[best]
    # a certified value that another oracle's feasible point beats is a false certificate
    assert verdicts == ["best", f"+{gap:.3g}", "FALSE"]
    # the best point is the exact objective of the answers' w, not their claimed objectives
    claimed_low = [("a", _answer(points[worse], values[best] - 5.0, False))] + runs[:1]
    assert check(tiny_problem, claimed_low) == ["best", "best"]


def test_the_summary_counts_certified_solves_and_leaves_erm_out_when_asked():
    ok, no = SimpleNamespace(certified=True), SimpleNamespace(certified=False)
    got = [("opdisc", ok, 1.0, 0.5), ("rspm", no, 3.0, 2.5), ("erm", ok, 100.0, 90.0)]
    assert _summary("window", got, True) == (
        "window: 1/2 certified; wall s median 2.0, max 3.0; CPU s median 1.5, max 2.5"
    )
    assert _summary("window", got, False).startswith("window: 2/3 certified; wall s median 3.0")
    assert _summary("window", got[2:], True) == "window: none"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--oracles", "cplex"], "argument --oracles: invalid choice: 'cplex'"),
        (["--tables", "iris"], "argument --tables: invalid choice: 'iris'"),
    ],
)
def test_bad_options_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as err:
        main(argv)
    assert err.value.code == 2 and message in capsys.readouterr().err
