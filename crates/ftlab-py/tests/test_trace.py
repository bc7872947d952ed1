"""Traces into Arrow, and their statistics as the CLI prints them."""

import json

import numpy as np
import pyarrow as pa
import pytest

import ftlab
from conftest import MSR, SPC


def test_read_trace_columns_and_types():
    t = ftlab.read_trace(SPC)
    assert isinstance(t, pa.Table) and t.num_rows == 10000
    assert t.column_names == ["time", "op", "offset", "size", "device"]
    assert t.schema.field("time").type == pa.float64()
    assert t.schema.field("op").type == pa.dictionary(pa.int8(), pa.string())
    assert t.schema.field("offset").type == pa.int64() and t.schema.field("size").type == pa.int64()
    assert t.schema.field("device").type == pa.uint32()
    first = t.slice(0, 1).to_pylist()[0]
    # 0,303567,3584,w,0.000000
    assert first == {"time": 0.0, "op": "w", "offset": 303567 * 512, "size": 3584, "device": 0}
    df = t.to_pandas()
    assert list(df["op"].cat.categories) == ["r", "w", "t", "f"]


def test_read_trace_batches_and_transforms():
    batches = list(ftlab.iter_trace(SPC, batch_size=3000))
    assert [b.num_rows for b in batches] == [3000, 3000, 3000, 1000]
    whole = ftlab.read_trace(SPC)
    assert pa.Table.from_batches(batches).equals(whole)
    only1 = ftlab.read_trace(SPC, devices=[1], limit=100)
    assert only1.num_rows == 100 and set(only1.column("device").to_pylist()) == {1}
    msr = ftlab.read_trace(MSR, "msr")
    assert msr.num_rows > 0 and set(msr.column("op").to_pylist()) <= {"r", "w"}


def test_read_trace_csv_mapping(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("0.5,4096,8192,w\n1.0,0,512,r\n")
    t = ftlab.read_trace(f, mapping={"time": 0, "offset": 1, "size": 2, "op": 3})
    # Times are rebased to the first record (issue 27); absolute_time keeps the stamps.
    assert t.to_pydict() == {
        "time": [0.0, 0.5], "op": ["w", "r"], "offset": [4096, 0], "size": [8192, 512], "device": [0, 0],
    }
    t = ftlab.read_trace(f, mapping={"time": 0, "offset": 1, "size": 2, "op": 3}, absolute_time=True)
    assert t.column("time").to_pylist() == [0.5, 1.0]


def test_trace_runs_like_its_table():
    # The table read back and run as a workload simulates what the trace run does.
    t = ftlab.read_trace(SPC)
    a = ftlab.run(trace=SPC).to_dict()
    b = ftlab.run(workload=t).to_dict()
    for d in (a, b):
        # The trace run also notices that its 22 ASUs share one address space.
        d.pop("workload"), d.pop("config"), d.pop("notices")
    assert a == b


def test_trace_stats_match_the_cli(cli):
    out = json.loads(cli("trace", "stats", str(SPC), "--json").stdout)
    assert ftlab.trace_stats(SPC) == out
    out = json.loads(cli("trace", "stats", str(MSR), "--format", "msr", "--json", "--page-bytes", "2048").stdout)
    assert ftlab.trace_stats(MSR, "msr", page_bytes=2048) == out
    s = ftlab.trace_stats(SPC, limit=10)
    assert s["requests"] == 10
