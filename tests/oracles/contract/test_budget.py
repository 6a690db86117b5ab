"""oracles.contract.budget: a solve's deadline, CPUs and node limit, checked once and split, never
extended."""

from __future__ import annotations

import math
import pickle
import time

import pytest

from oracles.contract.budget import MIN_SOLVER_SECONDS, Budget, Limited, check_limits, now


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"time_limit": 0.0}, ValueError, r"time_limit must be finite and > 0, found 0\.0"),
        ({"time_limit": -1}, ValueError, r"time_limit must be finite and > 0, found -1"),
        ({"time_limit": math.inf}, ValueError, r"time_limit must be finite and > 0, found inf"),
        ({"time_limit": math.nan}, ValueError, r"time_limit .* found nan"),
        ({"time_limit": "60"}, TypeError, r"time_limit must be a real number, found '60'"),
        ({"time_limit": True}, TypeError, r"time_limit must be a real number, found True"),
        ({"threads": 0}, ValueError, r"threads must be >= 1, found 0"),
        ({"threads": 2.0}, TypeError, r"threads must be an integer, found 2\.0"),
        ({"node_limit": 0}, ValueError, r"node_limit must be >= 1, found 0"),
    ],
)
def test_limits_are_checked_once_naming_the_field_and_quoting_the_value(kwargs, error, match):
    with pytest.raises(error, match=match):
        Budget.from_limit(**kwargs)
    with pytest.raises(error, match=match):
        check_limits(
            kwargs.get("time_limit", 1.0), kwargs.get("threads", 1), kwargs.get("node_limit")
        )


def test_a_budget_counts_down_from_its_limit():
    before = now()
    budget = Budget.from_limit(30.0, threads=2, node_limit=5)
    assert (budget.threads, budget.node_limit, budget.seconds) == (2, 5, 30.0)
    assert before + 30.0 <= budget.deadline <= now() + 30.0
    assert 29.0 < budget.left() <= 30.0 and not budget.expired()
    assert budget.solver_seconds() == pytest.approx(budget.left(), abs=0.1)
    assert abs(budget.wall_deadline() - (time.time() + budget.left())) < 0.1


def test_an_expired_budget_gives_a_solver_the_least_time_and_nothing_more():
    spent = Budget(now() - 1.0, seconds=5.0)
    assert spent.expired() and spent.left() == 0.0
    assert spent.solver_seconds() == MIN_SOLVER_SECONDS


def test_a_member_gets_a_part_of_what_is_left_never_more():
    budget = Budget.from_limit(10.0)
    half = budget.share(0.5)
    assert 4.5 < half.left() <= 5.0 and half.deadline <= budget.deadline
    assert budget.sub(3.0).left() <= 3.0
    assert budget.sub(100.0).deadline == budget.deadline  # never beyond the solve's deadline
    assert budget.share(1.0).deadline <= budget.deadline
    with pytest.raises(ValueError, match=r"fraction must be in \(0, 1\], found 1\.5"):
        budget.share(1.5)
    with pytest.raises(ValueError, match="seconds: must be >= 0, found -1"):
        budget.sub(-1)


def test_threads_and_pickling():
    budget = Budget.from_limit(10.0, threads=1)
    assert (
        budget.with_threads(3).threads == 3 and budget.with_threads(3).deadline == budget.deadline
    )
    with pytest.raises(ValueError, match="threads must be >= 1"):
        budget.with_threads(0)
    # to another process the deadline travels as wall-clock seconds, read back on its clock
    clone = pickle.loads(pickle.dumps(budget))
    assert abs(clone.deadline - budget.deadline) < 0.01
    assert (clone.threads, clone.node_limit, clone.seconds) == (1, None, 10.0)
    unlimited = pickle.loads(pickle.dumps(Budget.unlimited()))
    assert unlimited.deadline == math.inf and not unlimited.expired()


def test_a_budget_is_checked_where_it_is_made():
    with pytest.raises(TypeError, match="threads must be an integer"):
        Budget(0.0, threads=1.5)
    with pytest.raises(ValueError, match="node_limit must be >= 0"):
        Budget(0.0, node_limit=-1)
    with pytest.raises(ValueError, match="deadline"):
        Budget(math.nan)


def test_node_chunks_come_from_the_budget():
    budget = Budget(math.inf, node_limit=10)
    assert budget.chunk(0, 4) == 4 and budget.chunk(8, 4) == 3 and budget.chunk(11, 4) == 0
    assert not budget.spent(10) and budget.spent(11)
    assert budget.stopped_by(11) == "more than 10 nodes" and budget.stopped_by(3) == "deadline"
    assert budget.after(4).node_limit == 6 and budget.after(40).node_limit == 0
    assert budget.with_nodes(20).node_limit == 10 and budget.with_nodes(5).node_limit == 5
    assert (
        Budget.unlimited().chunk(10**12, 7) == 7 and Budget.unlimited().after(5).node_limit is None
    )


class _Recording:
    """A strategy that answers with the budget it was handed."""

    name = "recording"

    def solve(self, problem, budget):
        return problem, budget


def test_a_limited_strategy_makes_each_solves_budget_from_its_limits_when_asked():
    oracle = Limited(_Recording(), 30.0, 2)
    assert oracle.name == "recording"
    before = now()
    budget = oracle.budget()
    assert (budget.seconds, budget.threads, budget.node_limit) == (30.0, 2, None)
    assert before + 30.0 <= budget.deadline <= now() + 30.0
    assert oracle.solve("p", budget) == ("p", budget)  # the budget handed over, not its own
    unlimited = Limited(_Recording()).budget()
    assert (unlimited.seconds, unlimited.threads) == (math.inf, 1)
    with pytest.raises(ValueError, match="threads must be >= 1, found 0"):
        Limited(_Recording(), 1.0, 0).budget()
