"""make_oracle: names to oracles, options passed through, unknown names refused."""

from __future__ import annotations

import pytest

from oracles.synthetic.data_search import SearchConjunctionOracle
from oracles.synthetic.data_player import EnumerationConjunctionOracle, HighsConjunctionOracle
from oracles.enumerate import EnumerationOracle
from oracles.mip.gurobi import GurobiOracle
from oracles.mip.highs import HighsOracle
from oracles.routing.registry import CONJUNCTIONS, DISCRETE, FACTORIES, SPLIT, make_oracle
from oracles.routing.routes import ROUTE_NAMES, Route
from tests.oracles.limited import on_limits


def test_known_names():
    assert set(FACTORIES) >= {"enumerate", "highs", "gurobi", "auto", "structured"}
    # every name is a route of the routing table; a route of one strategy holds that strategy
    for name, strategy in (
        ("enumerate", EnumerationOracle),
        ("highs", HighsOracle),
        ("gurobi", GurobiOracle),
    ):
        assert isinstance(make_oracle(name).strategy(name), strategy)
    for name in FACTORIES:
        assert isinstance(make_oracle(name), Route)
    for name in ("enumerate", "highs", "gurobi", "auto", "convex", "structured", "window"):
        assert make_oracle(name).name == name


def test_every_name_is_a_route_of_the_routing_table():
    assert set(FACTORIES) == set(ROUTE_NAMES)
    assert SPLIT == ("structured", "window", "portfolio")


def test_the_data_players_oracles_are_named_but_never_a_configs_oracle():
    highs = make_oracle("conjunctions_highs", time_limit=7.0, threads=2)
    assert isinstance(highs.strategy("conjunctions_highs"), HighsConjunctionOracle)
    assert (highs.time_limit, highs.threads) == (7.0, 2)
    enumeration = make_oracle("conjunctions_enumerate", time_limit=7.0, max_records=10)
    assert isinstance(enumeration.strategy("conjunctions_enumerate"), EnumerationConjunctionOracle)
    assert enumeration.strategy("conjunctions_enumerate").max_records == 10
    search = make_oracle("conjunctions_search", time_limit=7.0, threads=2)
    assert isinstance(search.strategy("conjunctions_search"), SearchConjunctionOracle)
    assert search.time_limit == 7.0
    assert set(CONJUNCTIONS) <= set(FACTORIES)
    assert not set(CONJUNCTIONS) & set(DISCRETE) and "selection" not in DISCRETE


def test_options_are_passed_through():
    oracle = make_oracle("highs", time_limit=30.0, threads=2, strict_eps=1e-5)
    assert (oracle.time_limit, oracle.threads) == (30.0, 2)
    assert oracle.strategy("highs").strict_eps == 1e-5
    assert make_oracle("enumerate", max_points=10).strategy("enumerate").max_points == 10
    assert make_oracle("auto", prefer=("highs",)).prefer == ("highs",)


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(
        ValueError, match=r"unknown oracle 'cplex'; known: \['auto', 'conjunctions_enumerate'"
    ):
        make_oracle("cplex")


def test_unknown_option_is_a_type_error():
    with pytest.raises(TypeError):
        make_oracle("highs", gap=0.1)


def test_bad_option_value_is_refused():
    with pytest.raises(ValueError, match="time_limit"):
        make_oracle("gurobi", time_limit=-1.0)
    with pytest.raises(ValueError, match="threads must be >= 1, found 0"):
        make_oracle("structured", threads=0)


def _eleven_dimensional_problem():
    """177,147 grid points: three chunks of enumeration."""
    import numpy as np

    from core.problem import IntegerGrid, Problem

    rng = np.random.default_rng(4)
    X = rng.integers(0, 2, size=(6, 11)).astype(float)
    return Problem(
        points=X,
        pos=np.ones(6),
        neg=np.zeros(6),
        domain=IntegerGrid(11, 1),
        linear=rng.normal(size=11),
    )


def test_the_time_limit_means_the_same_for_brute_force():
    """oracle.time_limit reaches enumeration: past it, the best point so far, uncertified."""
    from oracles.contract.certificate import Status

    problem = _eleven_dimensional_problem()
    full = on_limits(make_oracle("enumerate", time_limit=600.0), problem)
    assert full.certificate.status is Status.OPTIMAL and full.certificate.certified
    cut = on_limits(make_oracle("enumerate", time_limit=1e-9), problem)
    assert cut.certificate.status is Status.TIME_LIMIT and not cut.certificate.certified
    assert cut.certificate.objective >= full.certificate.objective
    with pytest.raises(ValueError, match="time_limit"):
        make_oracle("enumerate", time_limit=float("inf"))
