"""The sweep against real components on 127.0.0.1: an mlflow server, a two-node Ray cluster,
``ray job submit``, and a sweep killed half-way then resumed. Each test stops what it started.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import secrets
import shlex
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.integration  # an mlflow server, Ray clusters, subprocesses

BIN = Path(sys.executable).parent
# a small grid of the smoke sweep: every mechanism, one epsilon
SMALL = ["+sweep=smoke", "sweep.epsilons=[1.0]", "sweep.seeds=1"]
SMALL_RUNS = 8  # 6 private mechanisms x 1 epsilon x 1 seed + 2 non-private references


def free_port() -> int:
    """A free port outside Ray's default worker port range (10002-19999)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not 10000 <= port <= 20000:
            return port


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **extra}


def pipeline(args, output: Path, environ=None, timeout=900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args, f"hydra.run.dir={output}"],
        cwd=REPO,
        env=environ or env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path) as f:
        return list(csv.DictReader(f))


def wait_for(predicate, timeout: float, what: str, poll: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(poll)
    raise TimeoutError(f"{what} not ready after {timeout}s")


# --- MLflow server -----------------------------------------------------------------------------


@pytest.fixture
def mlflow_server(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [
            str(BIN / "mlflow"),
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--backend-store-uri",
            f"sqlite:///{tmp_path / 'server.db'}",
            "--artifacts-destination",
            str(tmp_path / "server-artifacts"),
            "--workers",
            "1",
        ],
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    uri = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        import urllib.request

        try:
            with urllib.request.urlopen(f"{uri}/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    try:
        wait_for(healthy, 90, "mlflow server")
        yield uri
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def test_smoke_sweep_against_a_real_mlflow_server(mlflow_server, tmp_path):
    from mlflow import MlflowClient

    result = pipeline(
        [*SMALL, f"tracking.tracking_uri={mlflow_server}", "tracking.experiment=server-test"],
        tmp_path / "out",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    client = MlflowClient(mlflow_server)
    experiment = client.get_experiment_by_name("server-test")
    parents = client.search_runs([experiment.experiment_id], "tags.role = 'sweep'")
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    parent = parents[0]
    children = client.search_runs(
        [experiment.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'"
    )
    assert len(children) == SMALL_RUNS
    by_mechanism = {c.data.tags["mechanism"]: c for c in children}
    opdisc = by_mechanism["opdisc"]
    assert opdisc.data.params["noise.sigma"]
    assert float(opdisc.data.params["requested_epsilon"]) == 1.0
    assert float(opdisc.data.params["privacy_epsilon"]) == 1.0  # proven calibration (SPEC 10.1)
    assert opdisc.data.params["calibration"] == "proven"
    client.download_artifacts(opdisc.info.run_id, "release.json", str(tmp_path))
    release = json.loads((tmp_path / "release.json").read_text())
    assert release["mechanism_config"]["tau"] == 1.0  # the details: release.json, not params
    assert 0.0 <= opdisc.data.metrics["train_accuracy"] <= 1.0
    assert "wall_seconds" in opdisc.data.metrics and "oracle_wall_seconds" in opdisc.data.metrics
    assert opdisc.data.tags["privacy_holds"] == "yes" and opdisc.data.tags["backend"] == "highs"
    assert by_mechanism["erm_01"].data.tags["privacy_holds"] == "no"  # a reference, not private
    assert int(by_mechanism["opsamp"].data.params["oracle_calls"]) >= 1
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"results.csv", "fig1a_accuracy.png", "fig1b_runtime.png", "summary.md"} <= artifacts
    assert parent.data.metrics["runs"] == SMALL_RUNS


# --- a two-node Ray cluster and ray job submit -------------------------------------------------


def session_members(sid: int) -> list[int]:
    """Pids of the processes in session ``sid`` (Ray's daemons stay in the session of the
    `ray start --block` that started them)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) == sid:
                    pids.append(int(entry))
            except OSError:  # gone meanwhile
                pass
    return pids


def stop_own(procs: list[subprocess.Popen], grace: float = 8.0) -> None:
    """Stop the processes these handles started, and only those: SIGTERM to every process in
    their sessions, SIGKILL to what is left after ``grace`` seconds. Never `ray stop`, which
    kills every Ray process on the machine, other users' included."""
    sessions = [p.pid for p in procs]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for sid in sessions:
            for pid in session_members(sid):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(session_members(s) for s in sessions):
            for p in procs:
                p.poll()  # reap our direct children
            time.sleep(0.2)
        if not any(session_members(s) for s in sessions):
            break
    for p in procs:
        p.wait(timeout=30)


def test_stopping_a_cluster_spares_other_ray_processes(tmp_path):
    """The test cluster is stopped by its own handles, not `ray stop --force`
    (which would also kill this bystander, a process named like a raylet outside our session)."""
    fake_raylet = tmp_path / "raylet"
    fake_raylet.symlink_to("/bin/sleep")
    bystander = subprocess.Popen([str(fake_raylet), "60"], start_new_session=True)
    ours = subprocess.Popen(["/bin/sh", "-c", "sleep 60 & sleep 60"], start_new_session=True)
    try:
        wait_for(lambda: len(session_members(ours.pid)) == 3, 10, "our processes")
        stop_own([ours], grace=5)
        assert session_members(ours.pid) == []
        assert bystander.poll() is None, "a process we did not start was stopped"
    finally:
        bystander.kill()
        bystander.wait()


@contextlib.contextmanager
def two_node_cluster(cwd: Path | None = None, **extra: str):
    """A head and a worker node on 127.0.0.1, one CPU each, with token authentication (``extra``:
    more environment, ``cwd``: where the nodes start); each `ray start --block` runs in a session
    of its own, and the end stops those sessions only. Yields the address, the dashboard and
    the environment."""
    ray = str(BIN / "ray")
    port, dashboard = free_port(), free_port()
    environ = env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16), **extra)
    common = [
        "--node-ip-address",
        "127.0.0.1",
        "--num-cpus",
        "1",
        "--disable-usage-stats",
        "--block",
    ]
    procs: list[subprocess.Popen] = []

    def start(args: list[str]) -> None:
        # each node's job agent on a port of its own: the default (52365) may be taken by
        # another Ray on this shared machine, and then no agent accepts `ray job submit`
        agent = ["--dashboard-agent-listen-port", str(free_port())]
        procs.append(
            subprocess.Popen(
                [ray, "start", *args, *agent, *common],
                env=environ,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                cwd=cwd,
            )
        )

    def listening(p: int) -> bool:
        try:
            socket.create_connection(("127.0.0.1", p), timeout=1).close()
            return True
        except OSError:
            return False

    try:
        start(
            [
                "--head",
                "--port",
                str(port),
                "--include-dashboard",
                "true",
                "--dashboard-host",
                "127.0.0.1",
                "--dashboard-port",
                str(dashboard),
            ]
        )
        wait_for(lambda: listening(port) and listening(dashboard), 120, "the Ray head")
        start(["--address", f"127.0.0.1:{port}"])
        wait_for(
            lambda: _nodes_alive(ray, dashboard, environ) >= 2, 120, "the second Ray node", poll=1
        )
        yield {
            "address": f"127.0.0.1:{port}",
            "dashboard": f"http://127.0.0.1:{dashboard}",
            "env": environ,
        }
    finally:
        stop_own(procs)


@pytest.fixture(scope="module")
def ray_cluster():
    """A two-node cluster of this module's own (``two_node_cluster``)."""
    with two_node_cluster() as cluster:
        yield cluster


def _nodes_alive(ray: str, dashboard: int, environ: dict[str, str]) -> int:
    result = subprocess.run(
        [ray, "list", "nodes", "--address", f"http://127.0.0.1:{dashboard}", "--format", "json"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if result.returncode != 0:
        return 0
    import json

    try:
        return sum(n.get("state") == "ALIVE" for n in json.loads(result.stdout))
    except ValueError:
        return 0


def _cluster_rows(ray_cluster, out: Path, overrides: list[str]) -> list[dict]:
    """The results.csv rows of a sweep with ``overrides`` at epsilon 1 and two seeds on the
    two-node cluster, once it has exited 0."""
    result = pipeline(
        [
            *overrides,
            "sweep.epsilons=[1.0]",
            "sweep.seeds=2",
            f"cluster.address={ray_cluster['address']}",
        ],
        out,
        environ=ray_cluster["env"],
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return read_rows(out / "results.csv")


def test_tasks_land_on_both_nodes(ray_cluster, tmp_path):
    rows = _cluster_rows(ray_cluster, tmp_path / "out", ["+sweep=smoke"])
    assert len(rows) == 14
    nodes = {node for row in rows for node in row["node"].split(",") if node}
    assert len(nodes) == 2, nodes


def _generic_table(path: Path, n: int = 80, d: int = 16, seed: int = 0) -> list[str]:
    """A CSV of ``d`` continuous columns in [0, 1] (too many for the structured oracle's
    shape) and the overrides that run it as a table sweep."""
    import numpy as np

    rng = np.random.default_rng(seed)
    X = np.round(rng.uniform(size=(n, d)), 3)
    y = np.where((X - 0.5) @ rng.normal(size=d) + rng.normal(0, 0.3, n) > 0, "yes", "no")
    columns = [f"x{j}" for j in range(d)]
    lines = [",".join(columns + ["y"])]
    lines += [",".join([*map(str, row), label]) for row, label in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")
    numeric = ",".join(f"{c}:[0,1]" for c in columns)
    return [
        f"dataset.path={path}",
        "dataset.label=y",
        "dataset.positive=yes",
        f"dataset.numeric={{{numeric}}}",
    ]


def test_one_solve_split_into_ray_tasks_across_the_cluster(ray_cluster, tmp_path):
    """The split solve on ``cluster.address``: a generic table's OPDisc solves go to the window
    oracle, each cut into 2 parts run as Ray tasks on the two-node cluster; every run is
    certified (privacy holds)."""
    out = tmp_path / "split-out"
    overrides = [
        "+sweep=table",
        *_generic_table(tmp_path / "wide.csv"),
        "sweep.mechanisms=[opdisc,rspm_gaussian]",
        "oracle.parts=2",
        "oracle.time_limit=120",
    ]
    rows = _cluster_rows(ray_cluster, out, overrides)
    assert len(rows) == 4
    assert {row["oracle_backends"] for row in rows} == {"window"}, [
        (row["key"], row["oracle_fallbacks"]) for row in rows
    ]
    assert all(row["privacy_holds"] == "True" for row in rows), rows


def _job_submit(ray_cluster, cwd, args) -> str:
    """``ray job submit`` of ``python -m pipeline ARGS`` to the cluster from ``cwd``; its stdout
    and stderr. A fresh head's job agent can take a while to come up on a busy machine: the
    submission is tried again (24 times, 5 s apart) while no agent is there."""
    command = [
        str(BIN / "ray"),
        "job",
        "submit",
        "--address",
        ray_cluster["dashboard"],
        "--working-dir",
        str(REPO),
        "--",
        "python",
        "-m",
        "pipeline",
        *args,
    ]
    for _ in range(24):
        result = subprocess.run(
            command, env=ray_cluster["env"], capture_output=True, text=True, timeout=600, cwd=cwd
        )
        if "No available agent to submit job" not in result.stdout + result.stderr:
            break
        time.sleep(5)
    return result.stdout + result.stderr


def test_ray_job_submit(ray_cluster, tmp_path):
    out = tmp_path / "job-out"  # absolute: the job's driver runs in a copy of the working dir
    output = _job_submit(ray_cluster, tmp_path, [*SMALL, f"hydra.run.dir={out}"])
    assert "succeeded" in output, output[-3000:]
    assert len(read_rows(out / "results.csv")) == SMALL_RUNS
    assert (out / "fig1a_accuracy.png").stat().st_size > 0


# --- resume ------------------------------------------------------------------------------------


def test_killed_sweep_resumes_with_every_run_exactly_once(tmp_path):
    from mlflow import MlflowClient

    out = tmp_path / "out"
    args = ["+sweep=smoke", "sweep.epsilons=[0.5,1.0]", "sweep.seeds=4"]
    expected = 6 * 2 * 4 + 2
    stderr = tmp_path / "driver.stderr"
    with open(stderr, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pipeline", *args, f"hydra.run.dir={out}"],
            cwd=REPO,
            env=env(),
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    uri = f"sqlite:///{out / 'mlflow.db'}"

    def finished_children() -> int:
        """The store's FINISHED runs with a run key, read with sqlite3 in read-only mode: an
        MlflowClient would run MLflow's schema migrations on a store the driver may be creating
        at that moment, and the driver then fails ("table _alembic_tmp_metrics already exists")."""
        db = out / "mlflow.db"
        if not db.exists():
            return 0
        try:
            with contextlib.closing(
                sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=2)
            ) as connection:
                (count,) = connection.execute(
                    "SELECT COUNT(*) FROM runs JOIN tags ON tags.run_uuid = runs.run_uuid "
                    "WHERE runs.status = 'FINISHED' AND tags.key = 'run_key'"
                ).fetchone()
            return count
        except sqlite3.Error:  # the database is mid-creation, or busy
            return 0

    try:

        def four_finished() -> bool:
            # a driver that exits before it is killed fails the test now, with its reason
            assert proc.poll() is None, f"the driver exited early: {stderr.read_text()[-3000:]}"
            return finished_children() >= 4

        wait_for(four_finished, 600, "four finished runs", poll=0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and the Ray it started
        proc.wait(timeout=30)
    killed_at = finished_children()
    assert 4 <= killed_at < expected, "the sweep must be killed half-way for this test"

    result = pipeline(args, out)
    assert result.returncode == 0, result.stderr[-3000:]
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("oracle-dp")
    parents = client.search_runs([exp.experiment_id], "tags.role = 'sweep'")
    assert len(parents) == 1
    children = client.search_runs(
        [exp.experiment_id], f"tags.mlflow.parentRunId = '{parents[0].info.run_id}'"
    )
    keys = [c.data.tags["run_key"] for c in children]
    assert len(keys) == expected and len(set(keys)) == expected  # each run exactly once
    assert all(c.info.status == "FINISHED" for c in children)
    assert len(read_rows(out / "results.csv")) == expected
    assert f"{expected - killed_at} to run" in result.stdout + result.stderr


@pytest.mark.slow
def test_missing_ray_token_is_one_clear_line(ray_cluster, tmp_path):
    """A driver without the cluster's token fails with one line, no parent."""
    environ = {
        k: v for k, v in ray_cluster["env"].items() if k not in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")
    }
    out = tmp_path / "out"
    result = pipeline(
        [*SMALL, f"cluster.address={ray_cluster['address']}"], out, environ=environ, timeout=300
    )
    assert result.returncode == 5, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: cannot connect to the Ray cluster at {ray_cluster['address']}")
    assert "RAY_AUTH_MODE=token" in last and "Traceback" not in result.stderr
    assert not (out / "summary.md").exists()


@pytest.mark.slow
def test_ray_job_submit_with_a_relative_output_dir_is_refused(ray_cluster, tmp_path):
    """The default relative output directory would land in Ray's temporary
    copy of the working directory and vanish with the cluster; the job fails and says so."""
    output = _job_submit(ray_cluster, tmp_path, SMALL)
    assert "failed" in output and "succeeded" not in output, output[-3000:]
    assert (
        "error: hydra.run.dir: under `ray job submit` the driver runs in Ray's temporary copy"
        in output
    ), output[-3000:]


NICENESS_PROBE = """
import json, os
import ray
from hydra import compose, initialize_config_dir
from pipeline.cli import CONFIG_DIR
from pipeline.config import validate
from pipeline.sweep.fan_out import init_ray, largest_node_cpus

with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
    config = validate(compose(config_name="config", overrides=["+sweep=smoke", "cluster.num_cpus=1"]))
init_ray(config)
task = ray.remote(num_cpus=1)(lambda: os.nice(0))
seen = {"driver": os.nice(0), "task": ray.get(task.remote()), "cpus": largest_node_cpus()}
print(json.dumps(seen))
"""


def test_the_pipelines_own_ray_runs_its_tasks_at_the_drivers_niceness():
    """Ray starts its workers niced (RAY_worker_niceness, 15) unless told otherwise; the
    pipeline's own Ray runs them at the driver's niceness. The driver runs
    at niceness 3 here, so a default Ray's task would read 18. Its one node has the CPUs it was
    given (``largest_node_cpus``, what the sweep checks its tasks against)."""
    environ = env()
    environ.pop("RAY_ADDRESS", None)
    environ.pop("RAY_worker_niceness", None)
    done = subprocess.run(
        ["nice", "-n", "3", sys.executable, "-c", NICENESS_PROBE],
        cwd=REPO,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["task"] == seen["driver"] >= 3, seen
    assert seen["cpus"] == 1, seen


FAILING_START = """
import json, os
from pipeline.sweep import reaper
from pipeline.sweep import fan_out as sweep
from pipeline.sweep.preflight import ServiceError

try:
    sweep.start_local_ray(1)
    print(json.dumps({"started": True}))
except ServiceError as e:
    alive = [p for p in reaper.descendants(os.getpid()) if reaper._alive(p)]
    print(json.dumps({"error": str(e), "alive": alive}))
"""


def test_a_local_ray_that_would_not_start_is_retried_and_leaves_no_process_behind():
    # a GCS wait of 0 s: each start fails after its GCS (a process of ours) has started
    result = subprocess.run(
        [sys.executable, "-c", FAILING_START],
        check=False,
        cwd=REPO,
        env={**os.environ, "RAY_gcs_server_port_wait_time_s": "0"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["error"].startswith(
        "a local Ray would not start (3 attempts, each waiting 30 s for its raylet and 0 s for "
        "its GCS (RAY_gcs_server_port_wait_time_s), its processes stopped after): RuntimeError: "
        "Timed out waiting for file"
    ), result.stderr[-3000:]
    assert outcome["alive"] == []  # no GCS, raylet or agent of the failed starts still running
    assert result.stderr.count("a local Ray did not start (attempt") == 2


# --- docs/cluster.md, walked on a fresh HOME ------------------------------------------------------


def cluster_doc_commands() -> list[str]:
    """The commands of docs/cluster.md's first bash block, continuation lines joined, comments
    and blank lines dropped."""
    text = (REPO / "docs" / "cluster.md").read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    lines = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    return [" ".join(line.split()) for line in lines if line]


def test_the_cluster_doc_works_as_written_on_a_fresh_home(tmp_path):
    """Every command of docs/cluster.md in order, as a new user runs it (a fresh HOME, no token
    anywhere), on 127.0.0.1: ports of the test's own and a tiny sweep for the doc's, and
    `ray stop` (which would stop every Ray on the machine) replaced by stopping the sessions
    of this test's own `ray start`s. A second head of the same user shares the token file."""
    home = tmp_path / "home"
    home.mkdir()
    environ = {k: v for k, v in env().items() if not k.startswith("RAY_")} | {"HOME": str(home)}
    port, dashboard = free_port(), free_port()
    tiny = ["+sweep=smoke", "sweep.mechanisms=[opdisc]", "sweep.epsilons=[1.0]", "sweep.seeds=1"]
    ray = str(BIN / "ray")

    def own_ports() -> list[str]:  # the defaults may be taken by another Ray on the machine
        return [
            "--node-ip-address=127.0.0.1",
            "--num-cpus=1",
            "--disable-usage-stats",
            f"--dashboard-agent-listen-port={free_port()}",
            f"--ray-client-server-port={free_port()}",
            f"--metrics-export-port={free_port()}",
        ]

    def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        result = subprocess.run(
            argv, env=environ, capture_output=True, text=True, timeout=600, check=False, **kwargs
        )
        assert result.returncode == 0, f"{argv}:\n{(result.stdout + result.stderr)[-3000:]}"
        return result

    starts: list[subprocess.Popen] = []

    def ray_start(args: list[str]) -> None:
        log = tmp_path / f"ray-start-{len(starts)}.log"  # not a pipe: the daemons inherit it
        with open(log, "w") as output:
            proc = subprocess.Popen(
                [ray, "start", *args, *own_ports()],
                env=environ,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its daemons stay in this session: stopped by it
            )
        starts.append(proc)
        assert proc.wait(timeout=300) == 0, log.read_text()[-3000:]

    commands = cluster_doc_commands()
    walked = []
    try:
        for command in commands:
            words = shlex.split(
                command.replace("HEAD_HOST", "127.0.0.1")
                .replace("6379", str(port))
                .replace("8265", str(dashboard))
                .replace("0.0.0.0", "127.0.0.1")
            )
            if words[0] == "export":
                name, value = words[1].split("=", 1)
                environ[name] = value
            elif words[:2] == ["ray", "get-auth-token"]:
                run([ray, *words[1:-2]] if words[-2] == ">" else [ray, *words[1:]])
                assert (home / ".ray" / "auth_token").stat().st_size > 0
            elif words[:3] == ["ray", "start", "--head"]:
                ray_start([*words[2:], f"--dashboard-port={dashboard}"])
            elif words[:2] == ["ray", "start"]:  # a worker: a second node on the same machine
                ray_start(words[2:])
            elif words[:3] == ["python", "-m", "pipeline"]:
                out = tmp_path / "driver-out"
                args = [w for w in words[3:] if not w.startswith("+sweep=")]
                run([sys.executable, "-m", "pipeline", *tiny, *args, f"hydra.run.dir={out}"])
                assert len(read_rows(out / "results.csv")) == 1
            elif words[:3] == ["ray", "job", "submit"]:
                out = tmp_path / "job-out"
                head, _, job = " ".join(words).partition(" -- ")
                job = [
                    w
                    for w in job.split()
                    if not w.startswith(("+sweep=", "hydra.run.dir=", "tracking.tracking_uri="))
                ]
                submit = [ray, *head.split()[1:], "--", *job, *tiny, f"hydra.run.dir={out}"]
                for _ in range(24):  # a fresh head's job agent can take a while to come up
                    result = subprocess.run(
                        submit,
                        env=environ,
                        capture_output=True,
                        text=True,
                        timeout=600,
                        check=False,
                        cwd=REPO,  # the doc's `--working-dir .`: the repository
                    )
                    if "No available agent to submit job" not in result.stdout + result.stderr:
                        break
                    time.sleep(5)
                assert "succeeded" in result.stdout + result.stderr, result.stderr[-3000:]
                assert len(read_rows(out / "results.csv")) == 1
            elif words == ["ray", "stop"]:
                continue  # below, by the sessions of this test's own `ray start`s
            else:
                raise AssertionError(
                    f"docs/cluster.md: a command this walk does not know: {command}"
                )
            walked.append(words[0] if words[0] != "ray" else " ".join(words[:2]))
        assert walked == [
            "export",
            "ray get-auth-token",
            "ray start",
            "ray start",
            "python",
            "ray job",
        ], walked

        # a second head of the same user on the machine: the same token file, unchanged
        token = (home / ".ray" / "auth_token").read_text()
        second = free_port()
        ray_start(["--head", f"--port={second}", "--include-dashboard=false"])
        reach = "import ray; ray.init(address=%r); print(int(ray.cluster_resources()['CPU']))"
        result = run([sys.executable, "-c", reach % f"127.0.0.1:{second}"])
        assert result.stdout.strip().splitlines()[-1] == "1"
        assert (home / ".ray" / "auth_token").read_text() == token
    finally:
        stop_own(starts)
    assert all(session_members(p.pid) == [] for p in starts)
