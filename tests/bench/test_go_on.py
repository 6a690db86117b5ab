"""bench.go_on: the same problems by the route with and without going on, side by side."""

from __future__ import annotations

import math

import pytest

from bench import go_on
from bench.generic_instances import sweep_instance
from oracles.routing import routes


def test_going_on_switched_off_is_an_infinite_margin_and_comes_back():
    kept = routes.GO_ON_MARGIN
    with go_on.going_on(False):
        assert routes.GO_ON_MARGIN == math.inf
    assert routes.GO_ON_MARGIN == kept
    with go_on.going_on(True):
        assert routes.GO_ON_MARGIN == kept


def test_both_variants_solve_each_problem_and_the_totals_count_them(capsys):
    # crime at epsilon 10: searches of a second or so (docs/results/carry_table.md)
    instances = [sweep_instance("rspm", 10.0, run, "crime") for run in (0, 1)]
    rows = go_on.run(instances, at=0.85, max_seconds=60.0)
    assert [r.variant for r in rows] == ["go on", "hand over", "hand over", "go on"]
    assert all(r.limit == r.alone_seconds / 0.85 for r in rows)
    assert all(r.instance == instances[i // 2].name for i, r in enumerate(rows))
    assert not any(r.went_on for r in rows if r.variant == "hand over")
    assert all(r.by == "window" for r in rows if r.went_on)  # no reference after a go-on
    out = capsys.readouterr().out
    assert out.count("| rspm") == 4 and "load" not in out.split("|")[-2]
    text = go_on.totals(rows)
    assert text.splitlines()[0].startswith("go on: ") and " of 2 certified" in text


@pytest.mark.parametrize(
    "argv, says",
    [(["--at", "1.5"], "--at must be in (0, 1]"), (["--limit", "0"], "--limit must be")],
)
def test_a_bad_option_is_refused(argv, says, capsys):
    with pytest.raises(SystemExit) as stop:
        go_on.main(argv)
    assert stop.value.code == 2 and says in capsys.readouterr().err


def test_a_fixed_limit_solves_every_problem_at_it_without_a_run_alone(monkeypatch):
    monkeypatch.setattr(go_on, "alone", lambda *a: (_ for _ in ()).throw(AssertionError("alone")))
    instances = [sweep_instance("opdisc", 10.0, 0, "crime")]
    rows = go_on.run(instances, at=0.85, max_seconds=60.0, limit=5.0)
    assert [r.limit for r in rows] == [5.0, 5.0] and all(math.isnan(r.alone_seconds) for r in rows)
