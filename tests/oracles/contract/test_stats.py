"""The typed stats of a certificate (``oracles.contract.stats``): release.json's ``extra`` keeps the keys
it had when the certificate held an open dict, for a certificate of every family, and no code
reads ``Certificate.extra`` any more (the attribute is gone)."""

from __future__ import annotations

import ast
import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from mechanisms.release import PrivacyClaim, Release
from core.problem import Box, ConvexProblem
from oracles.contract.certificate import Certificate, Status, certify
from oracles.contract.budget import Budget
from oracles.synthetic.data_search import SearchConjunctionOracle
from oracles.convex import ConvexOracle
from oracles.mip.gurobi import GurobiOracle
from oracles.mip.highs import HighsOracle
from oracles.contract.stats import (
    CarryStats,
    ClusterStats,
    ConjunctionStats,
    MipStats,
    RouteStats,
    TreeStats,
    WindowStats,
    find,
    flat,
    merged,
)
from oracles.structured.oracle import StructuredOracle
from oracles.window.engine import InProcess
from oracles.window.oracle import WindowOracle
from pipeline.tracking.mlflow_log import release_json
from tests.oracles.licence import require_gurobi_licence
from tests.oracles.fuzz import fuzz_instance
from tests.oracles.synthetic.test_data_search import _random_problem
from tests.oracles.test_convex import _data, _sigma
from tests.oracles.structured.test_oracle import small_instance

REPO = Path(__file__).resolve().parents[3]

#: The keys each family's certificate had in its ``extra`` before the typed stats (main at
#: d9bba28), which release.json's ``extra`` still shows (its scalars: lists are left out).
WINDOW = {
    "incumbent",
    "lagrange_bound",
    "workers",
    "donations",
    "nodes",
    "leaves",
    "worker_cpu_seconds",
    "remote_cpu_seconds",
}
STOPPED = {
    "stopped",
    "to_certify",
    "nodes_per_cpu_second",
    "tree_nodes",
    "tree_nodes_low",
    "tree_nodes_high",
    "tree_estimate_seconds",
}
CARRIED = {
    "attempts",
    "carried_nodes",
    "carried_cpu_seconds",
    "carried_seconds",
    "total_nodes",
    "total_cpu_seconds",
    "total_seconds",
}
ELASTIC = {
    "elastic_extras",
    "elastic_recalled",
    "elastic_nodes",
    "elastic_grown_at",
    "elastic_tail_seconds",
    "elastic_tail_worker_seconds",
    "elastic_tail_cpu_seconds",
}
MODEL = {
    "n_cols",
    "n_rows",
    "n_integer",
    "n_nonzeros",
    "n_active_rows",
    "n_problem_rows",
    "n_band_cuts",
}
HIGHS = MODEL | {
    "solver_status",
    "solver_status_name",
    "solver_seconds",
    "presolve",
    "presolve_rule_off",
    "max_violation",
    "band_rounds",
    "band_cuts",
    "feasibility_tol",
    "first_bound",
    "second_opinion_bound",
    "second_opinion_seconds",
    "second_opinion_band_rounds",
}
GUROBI = MODEL | {
    "n_constraints",
    "solver_status",
    "solver_seconds",
    "max_violation",
    "band_rounds",
    "band_cuts",
}
STRUCTURED = {  # onehot_groups is a list: in the certificate, not in release.json
    "binary_cols",
    "continuous_cols",
    "cells",
    "cell_rows",
    "combinations",
    "subproblems",
    "cutoff",
    "solved",
    "max_sub_seconds",
    "sub_seconds",
    "max_breakpoints",
    "tabled",
    "combinations_pruned_by_bound",
    # the compiled search over the binary columns (issue 46), added after d9bba28
    "searched",
    "search_nodes",
    "search_handed",
}
CONVEX = {
    "loss",
    "alpha",
    "bound_kind",
    "scale",
    "scale_source",
    "lipschitz_l1",
    "rows",
    "iterations",
    "rounds",
}


def json_extra(*certificates: Certificate) -> list[dict]:
    """release.json's ``extra`` of each certificate, as the file holds it."""
    claim = PrivacyClaim(1.0, 1e-5, True, "test", calibration="proven")
    release = Release("opdisc", np.zeros(2), claim, certificates=certificates)
    record = json.loads(release_json(release, {}))
    return [c["extra"] for c in record["certificates"]]


def test_a_window_certificate_keeps_its_json_keys_fresh_stopped_and_carried(tmp_path):
    problem = fuzz_instance(7)
    done = WindowOracle(search_seconds=0.0).solve(problem, Budget.unlimited()).certificate
    carrying = WindowOracle(search_seconds=0.0, executor=InProcess(1), carry=str(tmp_path))
    stopped = carrying.solve(problem, Budget.unlimited().with_nodes(1)).certificate
    again = carrying.solve(problem, Budget.unlimited()).certificate
    assert done.certified and stopped.status is Status.TIME_LIMIT and again.certified
    fresh, kept, carried = json_extra(done, stopped, again)
    assert set(fresh) == WINDOW
    assert set(kept) == WINDOW | STOPPED | CARRIED | {"carry"}
    assert set(carried) == WINDOW | CARRIED | {"carried_open_nodes"}
    # the fields and the file say the same
    assert kept["carry"] == stopped.stat(CarryStats).carry  # (dropped once it certified)
    assert kept["tree_nodes"] == stopped.stat(TreeStats).tree_nodes
    assert carried["total_nodes"] == again.stat(CarryStats).total_nodes
    assert fresh["nodes"] == done.stat(WindowStats).nodes > 0


def test_a_cluster_record_is_written_as_the_elastic_keys():
    cluster = ClusterStats(2, 1, 2, 3.5, 40.0, 80.0, 78.0)
    window = WindowStats(1.0, 0.5, 3, 4, 100, 20, 2.0, 1.0)
    (extra,) = json_extra(
        Certificate(Status.OPTIMAL, 1.0, 1.0, 1.0, "window", stats=(window, cluster))
    )
    assert set(extra) == WINDOW | ELASTIC
    assert extra["elastic_tail_cpu_seconds"] == 78.0 and extra["elastic_extras"] == 2


def test_a_highs_certificate_keeps_its_json_keys():
    problem = fuzz_instance(3)
    c = HighsOracle().solve(problem, Budget.unlimited()).certificate
    assert c.certified
    (extra,) = json_extra(c)
    assert set(extra) == HIGHS
    assert extra["first_bound"] == c.stat(MipStats).first_bound


def test_a_gurobi_certificate_keeps_its_json_keys():
    require_gurobi_licence()  # CI installs the pip licence: its absence fails there
    c = GurobiOracle().solve(fuzz_instance(3), Budget.unlimited()).certificate
    (extra,) = json_extra(c)
    assert set(extra) == GUROBI


def test_a_structured_certificate_keeps_its_json_keys():
    c = StructuredOracle().solve(small_instance(0), Budget.unlimited()).certificate
    (extra,) = json_extra(c)
    assert set(extra) == STRUCTURED
    assert isinstance(c.stats_dict()["onehot_groups"], list)


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_a_convex_certificate_keeps_its_json_keys(loss):
    X, y = _data(seed=1)
    problem = ConvexProblem.from_xy(
        X, y, _sigma(4, seed=11, scale=5.0), Box(4, -1.0, 1.0), loss=loss
    )
    c = ConvexOracle().solve(problem, Budget.unlimited()).certificate
    (extra,) = json_extra(c)
    expected = CONVEX if loss == "logistic" else CONVEX - {"rounds"}
    assert set(extra) == expected


def test_a_conjunction_certificate_keeps_its_json_keys():
    problem = _random_problem(np.random.default_rng(5), integer_noise=False)
    c = SearchConjunctionOracle().solve(problem, Budget.unlimited()).certificate
    (extra,) = json_extra(c)
    assert set(extra) == {"records", "unfinished", "nodes"}
    assert c.stat(ConjunctionStats).records == 1


def test_the_route_records_and_merging_them():
    problem = fuzz_instance(3)
    w = np.zeros(problem.d)
    tree = TreeStats("deadline", 10.0, 5.0, 20.0, 0.1, 100.0, "about 10 nodes left")
    stopped = certify(
        problem,
        w,
        status=Status.TIME_LIMIT,
        bound=-1e9,
        seconds=0.0,
        backend="window",
        stats=(tree,),
    ).certificate
    skipped = stopped.with_stats(RouteStats(reference_skipped="not run: 0 s left"))
    (extra,) = json_extra(skipped)
    assert set(extra) == STOPPED | {"reference_skipped"}
    again = skipped.with_stats(dataclasses.replace(tree, stopped="node limit"))
    assert len(again.stats) == 2 and again.stat(TreeStats).stopped == "node limit"
    assert find(again.stats, CarryStats) is None and again.stat(CarryStats) is None
    assert merged((tree,), None) == (tree,)
    assert flat(()) == {} and Certificate(Status.OPTIMAL, 1.0, 1.0, 0.0, "x").stats == ()


def test_certificate_extra_is_gone_and_no_code_reads_it():
    """The open dict is gone, and no module (the product, its benches, scripts and tests) reads
    an ``extra`` attribute of a certificate or passes ``extra=`` to one: an ``.extra`` read is
    allowed only on the few objects that have one of their own (a mechanism's catalog entry's
    extra settings, the window minorant's per-row table, the selection search's gains)."""
    assert not hasattr(Certificate(Status.OPTIMAL, 1.0, 1.0, 0.0, "x"), "extra")
    assert "extra" not in {f.name for f in dataclasses.fields(Certificate)}
    own = {"entry", "self", "prune", "RowPrune"}  # objects with an ``extra`` of their own
    offenders = []
    for folder in ("oracles", "pipeline", "mechanisms", "core", "bench", "scripts", "tests"):
        for path in sorted((REPO / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and node.attr == "extra":
                    base = node.value
                    name = base.id if isinstance(base, ast.Name) else None
                    if name not in own:
                        offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
                if isinstance(node, ast.Call) and _names(node.func) & {"certify", "Certificate"}:
                    if any(k.arg == "extra" for k in node.keywords):
                        offenders.append(f"{path.relative_to(REPO)}:{node.lineno} extra=")
    assert not offenders, offenders


def _names(func: ast.expr) -> set[str]:
    if isinstance(func, ast.Name):
        return {func.id}
    if isinstance(func, ast.Attribute):
        return {func.attr}
    return set()


def test_a_stopped_trees_cpu_seconds_are_its_nodes_at_the_searchs_rate():
    tree = TreeStats("time limit", 3e6, 1e6, 5e6, 0.1, 1e6, "words")
    assert tree.cpu_seconds() == 3.0 and tree.cpu_seconds_high() == 5.0
    narrow = dataclasses.replace(tree, tree_nodes_high=2e6)  # a high end below: the likely
    assert narrow.cpu_seconds_high() == 3.0
    unrated = dataclasses.replace(tree, nodes_per_cpu_second=0.0)
    assert math.isnan(unrated.cpu_seconds()) and math.isnan(unrated.cpu_seconds_high())
