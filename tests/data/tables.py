"""A small table and how the table tests load it (test_table.py, test_table_reading.py,
test_table_encoding.py)."""

from __future__ import annotations

from pipeline.data.table import load_table

CSV = """colour,size,income,y
red,1,10,yes
green,2,20,no
red,3,30,yes
blue,4,40,no
green,5,50,yes
red,6,60,no
blue,7,70,yes
green,8,80,no
"""
STATED = dict(
    label="y",
    positive="yes",
    negative="no",
    categorical={"colour": ["red", "green", "blue"]},
    numeric={"size": [0, 10], "income": [0, 100]},
)


def write(tmp_path, text, name="data.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def load(path, **kw):
    return load_table(path, **{**STATED, "test_fraction": 0.0, **kw})
