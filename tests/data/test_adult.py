"""The Adult loader against SPEC section 1."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from pipeline.data.adult import CONTINUOUS, SHA256, feature_names, load_adult
from pipeline.data.record import DataError


def test_paper_instance_shape(adult):
    train = adult.train
    assert (train.n, train.d) == (15_682, 23)
    assert (train.labels == 1).sum() == 7_841 and (train.labels == -1).sum() == 7_841
    merged = train.merged()
    assert merged.n_distinct == 2_611
    assert ((merged.pos > 0) & (merged.neg > 0)).sum() == 298
    assert merged.min_possible_loss() == 2_735  # SPEC section 1: best accuracy 0.8256
    assert train.features.min() == 0.0 and train.features.max() == 1.0


def test_one_hot_groups_and_column_order(adult):
    X = adult.train.features
    assert adult.train.feature_names == feature_names()
    assert adult.train.feature_names[-3:] == CONTINUOUS
    for start, stop in ((0, 7), (7, 13), (13, 18), (18, 20)):
        assert (X[:, start:stop].sum(axis=1) == 1).all()
    assert X[:, 20:].max(axis=0).tolist() == [1.0, 1.0, 1.0]


def test_arrays_are_read_only(adult):
    with pytest.raises(ValueError):
        adult.train.features[0, 0] = 5.0


def test_same_seed_same_arrays_other_seed_other_balancing(adult_dir, adult):
    again = load_adult(adult_dir, balance_seed=0)
    np.testing.assert_array_equal(again.train.features, adult.train.features)
    np.testing.assert_array_equal(again.train.labels, adult.train.labels)
    other = load_adult(adult_dir, balance_seed=1)
    assert other.train.n == 15_682
    # the positives are the same rows (one-hot part; the continuous maxima depend on the draw)
    np.testing.assert_array_equal(
        other.train.features[other.train.labels == 1, :20],
        adult.train.features[adult.train.labels == 1, :20],
    )
    assert not np.array_equal(other.train.features, adult.train.features)


def test_test_set_uses_training_encoding(adult):
    test, train = adult.test, adult.train
    assert test.feature_names == train.feature_names
    assert test.n == 16_281 and test.d == 23
    assert test.provenance["continuous_maxima"] == train.provenance["continuous_maxima"]
    assert test.provenance["unseen_levels"] == 0
    assert (train.provenance["label"], train.provenance["positive"]) == ("income", ">50K")
    assert (test.labels == 1).sum() == 3_846  # the trailing period is read as the same label


@pytest.fixture
def copy_dir(adult_dir, tmp_path) -> Path:
    d = tmp_path / "adult"
    d.mkdir()
    for name in ("adult.data", "adult.test"):
        shutil.copy(adult_dir / name, d / name)
    return d


def _rewrite_line(path: Path, lineno: int, edit) -> None:
    lines = path.read_text().splitlines(keepends=True)
    lines[lineno - 1] = edit(lines[lineno - 1])
    path.write_text("".join(lines))


def test_wrong_checksum_is_rejected(copy_dir):
    with open(copy_dir / "adult.data", "a") as f:
        f.write("\n")
    with pytest.raises(DataError, match=r"adult\.data: SHA-256 [0-9a-f]{64} does not match"):
        load_adult(copy_dir)


def test_truncated_row_names_the_line(copy_dir):
    _rewrite_line(copy_dir / "adult.data", 17, lambda line: line[:40] + "\n")
    with pytest.raises(DataError, match=r"adult\.data:17: expected 15 comma-separated fields"):
        load_adult(copy_dir, verify_checksum=False)


def test_non_numeric_value_names_line_and_column(copy_dir):
    def edit(line):
        fields = line.split(", ")
        fields[12] = "forty"  # hours-per-week
        return ", ".join(fields)

    _rewrite_line(copy_dir / "adult.test", 5, edit)
    with pytest.raises(DataError, match=r"adult\.test:5: column 'hours-per-week' .* 'forty'"):
        load_adult(copy_dir, verify_checksum=False)


def test_bad_label_is_rejected(copy_dir):
    _rewrite_line(copy_dir / "adult.data", 3, lambda line: line.replace("<=50K", "maybe"))
    with pytest.raises(DataError, match=r"adult\.data:3: income must be"):
        load_adult(copy_dir, verify_checksum=False)


def test_missing_directory_names_path_and_fix(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(DataError) as err:
        load_adult(missing)
    assert str(missing / "adult.data") in str(err.value)
    assert "ADULT_DATA_DIR" in str(err.value)


def test_env_var_is_used(adult_dir, monkeypatch):
    monkeypatch.setenv("ADULT_DATA_DIR", str(adult_dir))
    assert load_adult().train.n == 15_682


def test_no_files_no_network_names_cache_and_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("ADULT_DATA_DIR", raising=False)
    cache = tmp_path / "cache"
    with pytest.raises(DataError) as err:
        # an unroutable URL stands in for "no network": the download fails
        load_adult(cache_dir=cache, url=(tmp_path / "no-such-server").as_uri())
    assert str(cache) in str(err.value) and "ADULT_DATA_DIR" in str(err.value)
    assert list(cache.iterdir()) == []  # nothing half-downloaded is left behind


def test_download_fills_the_cache(adult_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("ADULT_DATA_DIR", raising=False)
    cache = tmp_path / "cache"
    splits = load_adult(cache_dir=cache, url=adult_dir.as_uri() + "/")
    assert splits.train.n == 15_682
    assert sorted(p.name for p in cache.iterdir()) == ["adult.data", "adult.test"]
    assert splits.train.provenance["sha256"] == SHA256


def test_corrupt_download_leaves_nothing(copy_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("ADULT_DATA_DIR", raising=False)
    with open(copy_dir / "adult.test", "r+") as f:
        f.truncate(1000)
    cache = tmp_path / "cache"
    with pytest.raises(DataError, match="adult.test .* has SHA-256"):
        load_adult(cache_dir=cache, url=copy_dir.as_uri() + "/")
    assert [p.name for p in cache.iterdir()] == ["adult.data"]  # the good file only


def test_download_off_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("ADULT_DATA_DIR", raising=False)
    with pytest.raises(DataError, match="downloads are off"):
        load_adult(cache_dir=tmp_path, download=False)


def test_uci_header_line_is_skipped(copy_dir):
    # The UCI copy of adult.test opens with "|1x3 Cross validator"; the checksum covers data lines.
    path = copy_dir / "adult.test"
    path.write_text("|1x3 Cross validator\n" + path.read_text())
    assert load_adult(copy_dir).test.n == 16_281
