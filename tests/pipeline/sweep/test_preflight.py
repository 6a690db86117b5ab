"""The sweep's checks before it changes anything (pipeline.sweep.preflight), in-process: what each probe
leaves alone, the address forms, the one-line messages, the OPSamp call count, and the data
against the bounds the proofs assume. (Unreachable services, the job output directory and tiny
epsilons end to end: test_reliability.py.)"""

from __future__ import annotations

import logging
import re
import socket
import sqlite3
import threading
import time
import types

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from core.validation import InvalidValue
from mechanisms.synthetic.domain import ConjunctionClass, Domain
from mechanisms.synthetic.fem import check_listed
from oracles.window import tree_size
from pipeline.sweep import preflight
from pipeline.cli import CONFIG_DIR
from pipeline.config import ConfigError, SweepConfig, validate
from pipeline.data.record import Dataset, records_provenance
from pipeline.sweep.preflight import (
    WARN_ORACLE_CALLS,
    ServiceError,
    _require_calls,
    check_data_bounds,
    check_job_output_dir,
    check_oracle_calls,
    check_task_cpus,
    check_tree_sizes,
    check_workload,
    local_cpus,
    local_ray_error,
    probe_ray_address,
    probe_tracking_store,
    ray_connect_error,
    shape_tree,
    under_ray_job,
)
from pipeline.sweep.one_run import RunKey, run_release


def _config(*overrides):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        return validate(
            compose(
                config_name="config", overrides=["+sweep=smoke", "sweep.epsilons=[1.0]", *overrides]
            )
        )


def test_probing_a_sqlite_store_leaves_nothing_behind(tmp_path):
    probe_tracking_store(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert list(tmp_path.iterdir()) == []  # no database created, no probe file left
    sqlite3.connect(tmp_path / "mlflow.db").close()
    probe_tracking_store(f"sqlite:///{tmp_path / 'mlflow.db'}")  # an existing store: writable
    assert [p.name for p in tmp_path.iterdir()] == ["mlflow.db"]


@pytest.mark.parametrize(
    "uri", ["sqlite:///:memory:", "file:///nonexistent/mlruns", "databricks", "sqlite://"]
)
def test_stores_that_need_no_probe_pass_without_one(uri):
    probe_tracking_store(uri)


@pytest.mark.parametrize("address", ["auto", "local", "http://127.0.0.1:1"])
def test_addresses_ray_resolves_itself_are_not_probed(address):
    probe_ray_address(address, timeout=0.01)  # nothing listens on port 1: no probe was made


@pytest.mark.parametrize("address", ["ray://head", "head:port", ":6379"])
def test_a_malformed_address_is_a_config_error(address):
    with pytest.raises(ConfigError, match=rf"cluster.address: must be HOST:PORT.*'{address}'"):
        probe_ray_address(address)


def test_ray_errors_are_one_line_with_the_token_hint_only_when_it_can_help(monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "token")  # the driver already sends a token
    error = ray_connect_error("h:1", ConnectionError("refused\ntraceback lines"))
    assert str(error) == "cannot connect to the Ray cluster at h:1: ConnectionError: refused"
    assert str(ray_connect_error("h:1", TimeoutError())).endswith(": TimeoutError: TimeoutError")


def test_only_a_job_driver_checks_its_output_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_JOB_CONFIG_JSON_ENV_VAR", raising=False)
    assert not under_ray_job()
    check_job_output_dir(tmp_path, cwd=tmp_path)
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", "{}")
    assert under_ray_job()
    with pytest.raises(ConfigError, match="would vanish with the cluster"):
        check_job_output_dir(tmp_path, cwd=tmp_path)  # the working directory itself
    check_job_output_dir(tmp_path / "out", cwd=tmp_path / "job")  # a sibling: kept


def test_oracle_calls_are_counted_only_when_opsamp_runs():
    assert check_oracle_calls(_config("sweep.mechanisms=[opdisc,expmech]"), [1.0], n=400, d=8) == {}


def test_the_call_limit_and_the_warning(caplog):
    with pytest.raises(
        ConfigError,
        match=r"needs m=12,345 oracle calls .* more than "
        r"sweep.max_oracle_calls=1,000; .*found 0.5",
    ):
        _require_calls(12_345, 1_000, 0.5, 2)
    with pytest.raises(ConfigError, match=r"needs m=1e\+13 oracle calls"):
        _require_calls(10**13, 1_000, 0.5, 2)
    with caplog.at_level(logging.WARNING, logger="pipeline.sweep.preflight"):
        _require_calls(WARN_ORACLE_CALLS, 1_000, 0.5, 3)
        assert caplog.text == ""  # at the threshold: no warning
        _require_calls(WARN_ORACLE_CALLS + 1, 1_000, 0.5, 3)
    assert (
        f"m={WARN_ORACLE_CALLS + 1} oracle calls (Ray tasks) per run, "
        f"{3 * (WARN_ORACLE_CALLS + 1)} for its 3 runs" in caplog.text
    )


def test_data_beyond_a_proofs_bound_is_refused_or_recorded_when_clipped(caplog):
    data = Dataset(np.array([[0.5, 1.5], [0.0, 0.2]]), [1, -1], ["a", "b"])
    refuse = _config("sweep.mechanisms=[opsamp,opdisc]")
    with pytest.raises(ConfigError, match=r"^mechanisms.opsamp.x_max: row 0, column 'b' is 1.5"):
        check_data_bounds(refuse, data)
    clip = _config("sweep.mechanisms=[opsamp,opdisc]", "mechanisms.opsamp.out_of_bounds=clip")
    with caplog.at_level(logging.WARNING, logger="pipeline.sweep.preflight"):
        leaks = check_data_bounds(clip, data)
    assert len(leaks) == 1 and leaks[0].startswith("mechanisms.opsamp: OPSamp clipped 1 entry")
    assert leaks[0] in caplog.text
    inside = Dataset(np.array([[0.5, 1.0], [0.0, -1.0]]), [1, -1], ["a", "b"])
    assert check_data_bounds(refuse, inside) == []  # within the bound: nothing to say


@pytest.mark.parametrize("answer", [b"", b"HTTP/1.0 200 OK\r\n\r\nhello"])
def test_a_port_that_is_not_a_ray_head_is_refused_within_the_timeout(answer):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def serve():  # takes every connection; says nothing, or speaks HTTP/1, never gRPC
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    address = f"127.0.0.1:{server.getsockname()[1]}"
    start = time.monotonic()
    try:
        with pytest.raises(ServiceError, match=rf"something listens at {address} but it does not"):
            probe_ray_address(address, timeout=1.0)
    finally:
        stop.set()
        thread.join()
        server.close()
    assert time.monotonic() - start < 5


def test_a_local_ray_that_would_not_start_is_one_line():
    error = local_ray_error(TimeoutError("Timed out after 30 s\n  raylet log ...\n  more"))
    assert str(error).startswith("a local Ray would not start: TimeoutError: Timed out after 30 s")
    assert "\n" not in str(error) and "rerun the same command" in str(error)


def test_the_workload_is_checked_on_records_and_ignored_by_the_classifiers():
    """``check_workload``: a classifier's dataset has no attributes to count (its runs ignore the
    workload); records are refused past their attributes."""
    features = Dataset(np.array([[0.5, 1.0], [0.0, 0.2]]), [1, -1], ["a", "b"])
    check_workload(_config("sweep.workload_k=99"), features)
    domain = Domain(("a", "y"), (("x", "z"), ("0", "1")))
    records = Dataset(
        np.array([[0, 1], [1, 0]]), [1, -1], ["a", "y"], records_provenance(domain, "y", "1")
    )
    synth = ["+sweep=synth_table", "dataset.path=t.csv", "dataset.label=y", "dataset.positive=1"]
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        k2 = validate(compose(config_name="config", overrides=[*synth, "sweep.workload_k=2"]))
        k3 = validate(compose(config_name="config", overrides=[*synth, "sweep.workload_k=3"]))
    check_workload(k2, records)
    with pytest.raises(ConfigError, match=r"^sweep.workload_k: must be <= the 2 attributes .*3$"):
        check_workload(k3, records)


def test_a_workload_of_conjunctions_is_never_listed_and_refuses_fem_before_any_run():
    """``sweep.workload=conjunctions``: fem_rspm and the baselines take the class (every
    conjunction of up to workload_k literals), fem, which lists its workload, is one ConfigError
    in the driver; a workload kind outside the two choices is refused when the config is
    checked."""
    domain = Domain(("a", "b", "y"), (("x", "z"), ("p", "q", "r"), ("0", "1")))
    records = Dataset(
        np.array([[0, 1, 1], [1, 2, 0]]),
        [1, -1],
        ["a", "b", "y"],
        records_provenance(domain, "y", "1"),
    )
    synth = ["+sweep=synth_table", "dataset.path=t.csv", "dataset.label=y", "dataset.positive=1"]
    conj = [*synth, "sweep.workload=conjunctions", "sweep.workload_k=2"]
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        rspm = validate(
            compose(config_name="config", overrides=[*conj, "sweep.mechanisms=[fem_rspm,mst]"])
        )
        fem = validate(compose(config_name="config", overrides=[*conj, "sweep.mechanisms=[fem]"]))
    check_workload(rspm, records)
    cells = SweepConfig(name="x", mechanisms=["fem_rspm"], epsilons=[1.0], workload="cells")
    with pytest.raises(InvalidValue, match=r"^workload: must be one of .*'cells'$"):
        cells.check()
    with pytest.raises(ValueError) as refused:  # fem's one refusal (mechanisms.synthetic.fem)
        check_listed(ConjunctionClass(domain.sizes, 2))
    with pytest.raises(ConfigError) as error:
        check_workload(fem, records)
    assert str(error.value) == f"sweep.workload: {refused.value}"
    assert str(refused.value) == (
        "fem's exponential mechanism scores every query of its workload, and the 23 "
        "conjunctions of up to 2 literals are never listed: use fem_rspm (RSPM's query player) "
        "or a workload of marginals"
    )


def test_every_task_must_fit_in_the_largest_node(monkeypatch):
    """``check_task_cpus``: oracle.threads counts when an oracle mechanism is swept,
    cluster.cpus_per_task when one without; ``local_cpus`` is the CPUs of a Ray of our own."""
    both = _config("sweep.mechanisms=[opdisc,logistic_regression]", "oracle.threads=3")
    check_task_cpus(both, 3, "here")
    with pytest.raises(ConfigError, match=r"^oracle.threads: .* of 3 CPUs, more than the 2 CPUs"):
        check_task_cpus(both, 2, "here")
    wide = _config("sweep.mechanisms=[logistic_regression]", "oracle.threads=64")
    check_task_cpus(wide, 2, "here")  # no oracle swept: its threads are never a task
    per_task = _config("sweep.mechanisms=[opdisc,expmech]", "cluster.cpus_per_task=5")
    with pytest.raises(
        ConfigError, match=r"^cluster.cpus_per_task: .*give cluster.cpus_per_task=4"
    ):
        check_task_cpus(per_task, 4, "here")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 7)
    assert local_cpus(_config()) == 7 and local_cpus(_config("cluster.num_cpus=3")) == 3
    assert local_cpus(_config("cluster.address=auto")) is None
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")
    assert local_cpus(_config()) is None


# --- the window search's tree before the sweep (check_tree_sizes) --------------------------------


def _generic_table(n=40, d=6, seed=1):
    """A tiny table of continuous columns: the window search's tree is a few dozen nodes."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d)).round(3)
    y = np.where(X @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0, 1, -1)
    return Dataset(X, y, [f"x{i}" for i in range(d)])


def _tree_config(*overrides):
    return _config("oracle=window", "sweep.mechanisms=[rspm_gaussian,dpsgd_lr]", *overrides)


def test_a_tree_that_certifies_within_the_limit_says_nothing(caplog):
    with caplog.at_level(logging.WARNING, logger="pipeline.sweep.preflight"):
        assert check_tree_sizes(_tree_config(), _generic_table()) == []
    assert caplog.text == ""


def test_a_tree_that_does_not_certify_within_the_limit_warns_once_per_shape(caplog, monkeypatch):
    monkeypatch.setattr(tree_size, "TYPICAL_RATE", 1e-3)  # a node every 1,000 s
    config = _tree_config("sweep.epsilons=[1.0,10.0]", "oracle.time_limit=300")
    with caplog.at_level(logging.WARNING, logger="pipeline.sweep.preflight"):
        lines = check_tree_sizes(config, _generic_table())
    assert [line.split(":")[0] for line in lines] == [
        "rspm_gaussian at epsilon 1",
        "rspm_gaussian at epsilon 10",
    ]
    for line in lines:
        assert re.fullmatch(
            r"rspm_gaussian at epsilon 1?0?: the window search is estimated at about \d+ nodes, "
            r"about [\d.e+-]+ CPU-hours at 0.001 nodes/s \(run [01], the dearest; 2 of the 2 "
            r"runs estimated are not expected to certify: runs 0, 1\): it is not expected to "
            r"certify within "
            r"oracle.time_limit=300 s; give a longer limit, more CPUs, or carry on "
            r"\(oracle.carry_on=true\)",
            line,
        ), line
        assert line in caplog.text
    # the same from a limit too small for the typical rate
    monkeypatch.undo()
    tiny = check_tree_sizes(_tree_config("oracle.time_limit=1e-9"), _generic_table())
    assert len(tiny) == 1 and "within oracle.time_limit=1e-09 s;" in tiny[0]


def test_the_estimate_counts_every_cpu_of_a_solve(monkeypatch):
    monkeypatch.setattr(tree_size, "TYPICAL_RATE", 1e-3)
    (line,) = check_tree_sizes(_tree_config("oracle.threads=2"), _generic_table())
    assert "within oracle.time_limit=600 s on 2 CPUs;" in line


def test_oracle_estimate_false_estimates_nothing(monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("estimated a tree with oracle.estimate=false")

    monkeypatch.setattr(preflight, "shape_tree", never)
    monkeypatch.setattr(tree_size, "TYPICAL_RATE", 1e-3)
    config = _tree_config("oracle.estimate=false")
    assert config.oracle.estimate is False
    assert check_tree_sizes(config, _generic_table()) == []


def test_shapes_the_route_sends_elsewhere_are_not_estimated(monkeypatch):
    monkeypatch.setattr(tree_size, "TYPICAL_RATE", 1e-3)  # any tree estimated would warn
    structured = _tree_config("oracle=structured")
    one_hot = Dataset(np.eye(4)[[0, 1, 2, 3, 0, 1, 2, 3, 0, 1]], [1, -1] * 5, list("abcd"))
    assert check_tree_sizes(structured, one_hot) == []  # the structured search's shape
    # six continuous columns: the structured search's in 600 s, the window search's in 1e-6 s
    assert check_tree_sizes(structured, _generic_table()) == []
    quick = _tree_config("oracle=structured", "oracle.time_limit=1e-6")
    assert len(check_tree_sizes(quick, _generic_table())) == 1
    assert check_tree_sizes(_tree_config("oracle=highs"), _generic_table()) == []  # no window
    erm = _config("oracle=window", "sweep.mechanisms=[erm_01,opsamp]")
    assert check_tree_sizes(erm, _generic_table()) == []  # neither OPDisc nor RSPM


def test_the_estimate_stops_after_its_time_and_says_so():
    config = _tree_config("sweep.epsilons=[1.0,2.0]", "sweep.mechanisms=[opdisc,rspm_laplace]")
    (line,) = check_tree_sizes(config, _generic_table(), seconds=0.0)
    assert line == (
        "stopped estimating the window search's trees after 0 s: 8 of 8 runs not estimated, "
        "4 (mechanism, epsilon) with none (oracle.estimate=false turns the estimate off)"
    )


class _Clock:
    """``time.monotonic`` for check_tree_sizes: each estimate takes ``step`` seconds."""

    def __init__(self, step: float) -> None:
        self.t, self.step = 0.0, step

    def monotonic(self) -> float:
        return self.t


def test_every_run_is_estimated_within_the_budget_run_0_of_every_shape_first(monkeypatch):
    """Issue 45, item 3: each run the budget allows, not run 0 of each (mechanism, epsilon)
    only, in launch order (every shape's run 0 first); the runs not estimated are counted."""
    clock = _Clock(10.0)
    asked = []
    dear = {RunKey("opdisc", 2.0, 2)}  # only run 2 of one shape is beyond the limit

    def fake_shape_tree(config, train, key, plan_seconds):
        asked.append(key)
        clock.t += clock.step
        nodes = 1e12 if key in dear else 1.0
        return types.SimpleNamespace(
            nodes=nodes, certifies_within=lambda cpu, rate: nodes / rate <= cpu
        )

    monkeypatch.setattr(preflight, "shape_tree", fake_shape_tree)
    monkeypatch.setattr(preflight, "time", clock)
    monkeypatch.setattr(preflight, "size_message", lambda e, rate: f"{e.nodes:g} nodes")
    config = _tree_config(
        "sweep.epsilons=[1.0,2.0]", "sweep.mechanisms=[opdisc,rspm_laplace,erm_01]", "sweep.seeds=3"
    )
    lines = check_tree_sizes(config, _generic_table(), seconds=1000.0)  # room for all 12
    assert len(asked) == 12 and len(set(asked)) == 12
    assert [k.run_index for k in asked] == [0] * 4 + [1] * 4 + [2] * 4  # every shape's run 0
    assert lines == [
        "opdisc at epsilon 2: the window search is estimated at 1e+12 nodes (run 2, the dearest; "
        "1 of the 3 runs estimated are not expected to certify: run 2): it is not expected to "
        "certify within oracle.time_limit=600 s; give a longer limit, more CPUs, or carry on "
        "(oracle.carry_on=true)"
    ]
    asked.clear()
    clock.t = 0.0
    lines = check_tree_sizes(config, _generic_table(), seconds=55.0)  # 6 estimates fit
    assert len(asked) == 6 and lines == [
        "stopped estimating the window search's trees after 55 s: 6 of 12 runs not estimated "
        "(oracle.estimate=false turns the estimate off)"
    ]  # opdisc at 2, run 2 was not estimated: no warning of it


def test_a_cell_whose_first_run_goes_elsewhere_is_not_read_further(monkeypatch):
    """The route's choice rests on what a (mechanism, epsilon)'s runs share (the data's shape,
    the grid, the budget), not their noise: once its first run is not sent to the window
    search, its other runs are not built (on Adult: 140 problems of the structured search)."""
    asked = []
    window_cells = {("opdisc", 1.0)}

    def fake_shape_tree(config, train, key, plan_seconds):
        asked.append(key)
        if (key.mechanism, key.epsilon) not in window_cells:
            return None
        return types.SimpleNamespace(nodes=1.0, certifies_within=lambda cpu, rate: True)

    monkeypatch.setattr(preflight, "shape_tree", fake_shape_tree)
    config = _tree_config(
        "sweep.epsilons=[1.0,2.0]", "sweep.mechanisms=[opdisc,rspm_laplace]", "sweep.seeds=3"
    )
    assert check_tree_sizes(config, _generic_table(), seconds=1000.0) == []
    assert sorted((k.mechanism, k.epsilon, k.run_index) for k in asked) == [
        ("opdisc", 1.0, 0),
        ("opdisc", 1.0, 1),
        ("opdisc", 1.0, 2),
        ("opdisc", 2.0, 0),
        ("rspm_laplace", 1.0, 0),
        ("rspm_laplace", 2.0, 0),
    ]
    # the count of runs not estimated counts the window search's runs only
    clock = _Clock(10.0)
    monkeypatch.setattr(preflight, "time", clock)

    def slow_shape_tree(config, train, key, plan_seconds):
        clock.t += clock.step
        return fake_shape_tree(config, train, key, plan_seconds)

    monkeypatch.setattr(preflight, "shape_tree", slow_shape_tree)
    asked.clear()
    (line,) = check_tree_sizes(config, _generic_table(), seconds=45.0)  # 5 estimates fit
    assert len(asked) == 5
    assert "1 of 3 runs not estimated" in line, line  # of the 3 the window search would take


def test_the_tree_is_estimated_on_run_0s_own_problem(monkeypatch):
    """The preflight's problem is the one run 0 solves: same data, same noise, drawn from a
    generator of its own (run 0 draws the same again)."""
    config = _tree_config()
    train = _generic_table()
    key = RunKey("rspm_gaussian", 1.0, 0)
    estimated = []
    monkeypatch.setattr(
        preflight, "estimate_tree", lambda t, best, rng: estimated.append(t) or None
    )
    planned = []
    real_plan = preflight.plan
    monkeypatch.setattr(
        preflight, "plan", lambda p, *a, **k: planned.append(p) or real_plan(p, *a, **k)
    )
    shape_tree(config, train, key, 0.1)

    solved = []

    def capture(oracle, problems):
        solved.extend(problems)
        raise RuntimeError("captured")

    with pytest.raises(RuntimeError, match="captured"):
        run_release(config, key, train, solve_many=capture)
    (ours,), (runs,) = planned, solved
    assert np.array_equal(ours.linear, runs.linear) and ours.norm_coef == runs.norm_coef
    assert np.array_equal(ours.pos, runs.pos) and np.array_equal(ours.neg, runs.neg)
    assert len(estimated) == 1
