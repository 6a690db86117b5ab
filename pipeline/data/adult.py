"""The paper's Adult instance (SPEC section 1).

``load_adult`` finds ``adult.data`` and ``adult.test`` (a configured directory, else
``$ADULT_DATA_DIR``, else a cache it downloads into from the canonical UCI URL), checks their
SHA-256, parses them strictly and builds

* the balanced training set: all 7,841 rows with income ``>50K`` (label +1) and 7,841 rows drawn
  without replacement from the ``<=50K`` rows with a seeded generator, n = 15,682, kept in file
  order;
* d = 23 features: one-hot marital-status (7), relationship (6), race (5), sex (2), then
  capital-gain, capital-loss, hours-per-week each divided by its training maximum; no intercept;
* the test set with the training encoding (levels unseen in training map to all zeros; the
  continuous columns are divided by the training maxima, so they may exceed 1).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from core.validation import check_int
from pipeline.data.record import DataError, Dataset

CANONICAL_URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
ENV_VAR = "ADULT_DATA_DIR"
DEFAULT_CACHE_DIR = Path("~/.cache/oracle-dp/adult")
FILES = ("adult.data", "adult.test")

#: SHA-256 of each file's data lines (lines starting with ``|`` dropped: the UCI copy of
#: adult.test opens with a ``|1x3 Cross validator`` line that the shared copy lacks). For files
#: without such lines this is the plain ``sha256sum`` of ``../shared/data/adult/SHA256SUMS``.
SHA256 = {
    "adult.data": "df25a4e32ed6f1bd4b3910d21a7bd661a09061eced7cb45555a519d9667cc87b",
    "adult.test": "5c8e678e04c82a07182bbcb6667c9a06faaba123a55b409af7c5d21fb45784b3",
}

COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)
NUMERIC_COLUMNS = frozenset(
    {"age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"}
)

#: One-hot groups in column order, with a fixed level order (UCI's documented levels).
CATEGORICAL = (
    (
        "marital-status",
        (
            "Married-civ-spouse",
            "Divorced",
            "Never-married",
            "Separated",
            "Widowed",
            "Married-spouse-absent",
            "Married-AF-spouse",
        ),
    ),
    (
        "relationship",
        ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"),
    ),
    ("race", ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black")),
    ("sex", ("Female", "Male")),
)
#: Continuous columns, each divided by its maximum over the training set.
CONTINUOUS = ("capital-gain", "capital-loss", "hours-per-week")
POSITIVE_LABEL = ">50K"
NEGATIVE_LABEL = "<=50K"


@dataclass(frozen=True)
class AdultSplits:
    """The balanced training set and the test set encoded with the training encoding."""

    train: Dataset
    test: Dataset


def feature_names() -> tuple[str, ...]:
    names = [f"{col}={level}" for col, levels in CATEGORICAL for level in levels]
    return tuple(names + list(CONTINUOUS))


# --- locating and checking the files -----------------------------------------------------------


def data_sha256(path: Path) -> str:
    """SHA-256 of the file with comment lines (starting with ``|``) removed."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for line in f:
            if not line.startswith(b"|"):
                digest.update(line)
    return digest.hexdigest()


def verify_checksums(directory: Path) -> dict[str, str]:
    sums = {}
    for name in FILES:
        actual = data_sha256(directory / name)
        if actual != SHA256[name]:
            raise DataError(
                f"{directory / name}: SHA-256 {actual} does not match the known Adult file "
                f"({SHA256[name]}). The file is corrupt or not the UCI Adult data; replace it, "
                "or set dataset.verify_checksum=false if you changed it on purpose."
            )
        sums[name] = actual
    return sums


def _download(url: str, dest: Path, timeout: float) -> None:
    """Download ``url`` to ``dest`` atomically: a failure leaves nothing at ``dest``."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            while chunk := resp.read(1 << 20):
                out.write(chunk)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def resolve_data_dir(
    data_dir: str | os.PathLike | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    download: bool = True,
    url: str = CANONICAL_URL,
    timeout: float = 30.0,
    verify_checksum: bool = True,
) -> tuple[Path, dict[str, str]]:
    """The directory holding both Adult files, downloading into the cache if needed.

    Order: ``data_dir`` if given, else ``$ADULT_DATA_DIR`` if set (both must hold the files: a
    configured directory is never silently replaced by a download), else ``cache_dir``, filled
    from ``url`` when the files are missing and ``download`` is true. Returns the directory and
    the checked SHA-256 sums (empty when ``verify_checksum`` is false).
    """
    configured = data_dir if data_dir not in (None, "") else os.environ.get(ENV_VAR) or None
    if configured is not None:
        directory = Path(configured).expanduser().resolve()
        missing = [name for name in FILES if not (directory / name).is_file()]
        if missing:
            source = "dataset.data_dir" if data_dir not in (None, "") else f"${ENV_VAR}"
            raise DataError(
                f"Adult data not found: {', '.join(str(directory / m) for m in missing)} "
                f"(directory from {source}; dataset.data_dir defaults to ${ENV_VAR}). Point {source} at a directory holding adult.data "
                f"and adult.test (e.g. export {ENV_VAR}=/path/to/shared/data/adult), or unset it "
                f"to download from {CANONICAL_URL} into the cache."
            )
        return directory, (verify_checksums(directory) if verify_checksum else {})

    directory = Path(cache_dir or DEFAULT_CACHE_DIR).expanduser().resolve()
    missing = [name for name in FILES if not (directory / name).is_file()]
    if missing and not download:
        raise DataError(
            f"Adult data not found in the cache {directory} and downloads are off. "
            f"Set {ENV_VAR}=/path/to/adult (a directory holding adult.data and adult.test) "
            "or dataset.data_dir=..., or allow dataset.download=true."
        )
    for name in missing:
        try:
            _download(url.rstrip("/") + "/" + name, directory / name, timeout)
        except (urllib.error.URLError, OSError, TimeoutError) as e:
            raise DataError(
                f"Adult data not found in {directory} and the download of {name} from "
                f"{url} failed ({e}). With no network, set {ENV_VAR}=/path/to/adult (a "
                "directory holding adult.data and adult.test) or dataset.data_dir=...."
            ) from e
        if verify_checksum and data_sha256(directory / name) != SHA256[name]:
            actual = data_sha256(directory / name)
            (directory / name).unlink()
            raise DataError(
                f"downloaded {name} from {url} has SHA-256 {actual}, expected {SHA256[name]}; "
                "it was deleted. The source changed or the download was corrupted."
            )
    return directory, (verify_checksums(directory) if verify_checksum else {})


# --- parsing ---------------------------------------------------------------------------------


def raw_rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, its 15 stripped fields) of each data line of a raw Adult file; blank lines
    and "|" comments skipped, a line of another width a DataError naming the file and line."""
    with open(path, encoding="utf-8", newline="") as f:
        for lineno, raw in enumerate(f, start=1):
            line = raw.strip()
            if not line or line.startswith("|"):
                continue
            fields = [v.strip() for v in line.split(",")]
            if len(fields) != len(COLUMNS):
                raise DataError(
                    f"{path}:{lineno}: expected {len(COLUMNS)} comma-separated fields, found "
                    f"{len(fields)} (truncated or malformed row): {line[:80]!r}"
                )
            yield lineno, fields


def read_adult_file(path: Path) -> tuple[dict[str, list], np.ndarray]:
    """Parse one raw file strictly. Returns the used columns (as lists) and labels in {-1, +1}.

    Every malformed line is an error that names the file, the line number and the problem.
    """
    used = {col for col, _ in CATEGORICAL} | set(CONTINUOUS)
    index = {col: COLUMNS.index(col) for col in used}
    columns: dict[str, list] = {col: [] for col in used}
    labels: list[int] = []
    for lineno, fields in raw_rows(path):
        for col in NUMERIC_COLUMNS:
            value = fields[COLUMNS.index(col)]
            try:
                number = float(value)
            except ValueError:
                raise DataError(
                    f"{path}:{lineno}: column {col!r} must be numeric, found {value!r}"
                ) from None
            if not np.isfinite(number) or number < 0:
                raise DataError(
                    f"{path}:{lineno}: column {col!r} must be a finite number >= 0, found {value!r}"
                )
        for col, i in index.items():
            columns[col].append(float(fields[i]) if col in CONTINUOUS else fields[i])
        income = fields[-1].rstrip(".")
        if income == POSITIVE_LABEL:
            labels.append(1)
        elif income == NEGATIVE_LABEL:
            labels.append(-1)
        else:
            raise DataError(
                f"{path}:{lineno}: income must be {POSITIVE_LABEL!r} or "
                f"{NEGATIVE_LABEL!r} (a trailing period allowed), found {fields[-1]!r}"
            )
    if not labels:
        raise DataError(f"{path}: no data rows")
    return columns, np.array(labels, dtype=np.int8)


def _encode(
    columns: dict[str, list], maxima: np.ndarray, *, strict: bool, path: Path
) -> tuple[np.ndarray, int]:
    """One-hot plus scaled continuous columns. Returns the matrix and the unseen-level count."""
    n = len(columns[CONTINUOUS[0]])
    blocks, unseen = [], 0
    for col, levels in CATEGORICAL:
        values = np.asarray(columns[col], dtype=object)
        onehot = (values[:, None] == np.asarray(levels, dtype=object)[None, :]).astype(float)
        unknown = onehot.sum(axis=1) == 0
        if unknown.any():
            if strict:
                bad = sorted(set(values[unknown]))
                raise DataError(
                    f"{path}: column {col!r} has levels outside the Adult encoding: {bad[:5]}"
                )
            unseen += int(unknown.sum())
        blocks.append(onehot)
    continuous = np.column_stack([np.asarray(columns[c], dtype=float) for c in CONTINUOUS])
    blocks.append(continuous / maxima)
    X = np.hstack(blocks)
    assert X.shape == (n, len(feature_names()))
    return X, unseen


def load_adult(
    data_dir: str | os.PathLike | None = None,
    *,
    balance_seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    download: bool = True,
    url: str = CANONICAL_URL,
    verify_checksum: bool = True,
) -> AdultSplits:
    """Load the paper's balanced Adult training set and the encoded test set (SPEC section 1).

    ``balance_seed`` seeds the draw of the negative rows: the same seed gives identical arrays.
    """
    check_int("balance_seed", balance_seed, 0)
    directory, sums = resolve_data_dir(
        data_dir,
        cache_dir=cache_dir,
        download=download,
        url=url,
        verify_checksum=verify_checksum,
    )
    train_path, test_path = directory / FILES[0], directory / FILES[1]
    columns, labels = read_adult_file(train_path)
    test_columns, test_labels = read_adult_file(test_path)

    positives = np.flatnonzero(labels == 1)
    negatives = np.flatnonzero(labels == -1)
    if len(negatives) < len(positives):
        raise DataError(f"{train_path}: fewer negative rows than positive ones, cannot balance")
    rng = np.random.default_rng(balance_seed)
    chosen = rng.choice(negatives, size=len(positives), replace=False)
    keep = np.sort(np.concatenate([positives, chosen]))
    train_columns = {col: [values[i] for i in keep] for col, values in columns.items()}

    maxima = np.array([max(train_columns[c]) for c in CONTINUOUS], dtype=float)
    if (maxima <= 0).any():
        raise DataError(f"{train_path}: a continuous column is all zero in the training set")
    X_train, _ = _encode(train_columns, maxima, strict=True, path=train_path)
    X_test, unseen = _encode(test_columns, maxima, strict=False, path=test_path)

    common = {
        "source": "UCI Adult",
        "label": "income",
        "positive": POSITIVE_LABEL,
        "directory": str(directory),
        "sha256": sums,
        "checksum_verified": bool(verify_checksum),
        "balance_seed": int(balance_seed),
        "continuous_maxima": dict(zip(CONTINUOUS, maxima.tolist())),
    }
    names = feature_names()
    train = Dataset(
        X_train, labels[keep], names, {**common, "split": "train", "rows_in_file": int(len(labels))}
    )
    test = Dataset(
        X_test,
        test_labels,
        names,
        {**common, "split": "test", "rows_in_file": int(len(test_labels)), "unseen_levels": unseen},
    )
    return AdultSplits(train=train, test=test)
