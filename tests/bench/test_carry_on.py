"""bench.carry_on: a small instance stopped and carried on is the search run whole; the
command line's output and its refusal of a bad family."""

from __future__ import annotations

import pytest

from bench.carry_on import Carried, line, main, measure
from bench.generic_instances import make_instance
from tests.bench.conftest import TINY_ROWS


def test_an_instance_stopped_and_carried_on_is_the_search_run_whole():
    r = measure(make_instance("rspm", 3.0, 1, rows=TINY_ROWS), stops=3, grid_seconds=0.1)
    assert r.same_answer and r.same_bound and r.carried_nodes == r.nodes
    assert r.attempts >= 1 and r.ratio == 1.0
    assert "yes" in line("tiny", r)


def test_a_row_says_when_the_answers_differ():
    r = Carried("x", 100, 101, 3, False, True, 1.0, 1.2)
    assert r.ratio == pytest.approx(1.01) and " NO " in line("t", r)


def test_the_command_line_refuses_a_bad_family_and_bad_stops(capsys):
    with pytest.raises(SystemExit):
        main(["--family", "nowhere:rspm:3"])
    with pytest.raises(SystemExit):
        main(["--family", "breast_cancer:rspm:3", "--stops", "0"])
    assert "--stops must be >= 1" in capsys.readouterr().err
