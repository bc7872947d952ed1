"""DataFrames: reports as tidy rows, the generator's columns, workloads from Python."""

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import ftlab

N = {"synthetic.count": 4000}


def test_report_row_columns_and_dtypes():
    r = ftlab.run(ftl="dftl", **N)
    df = r.to_pandas()
    assert df.shape[0] == 1
    cols = list(df.columns)
    # Config keys first (dotted, prefixed), then the metrics with the report's keys.
    assert cols[0].startswith("config.") and "config.ftl" in cols and "config.ftl_options.cmt_bytes" in cols
    assert "config.synthetic.count" in cols and "config.device.geometry.page_size" in cols
    for c in ("host.requests", "host.response_ns.p99", "flash.block_erases", "waf", "ftl.gc.invocations",
              "flash.by_cause.gc.page_programs", "ftl.extra.cmt_entries", "verify.violations"):
        assert c in cols, c
    assert df["config.ftl"].iloc[0] == "dftl"
    assert df["host.requests"].dtype == np.int64 and df["host.requests"].iloc[0] == 4000
    assert df["waf"].dtype == np.float64 and df["waf"].iloc[0] == r.summary["waf"]
    assert df["host.response_ns.mean"].dtype == np.float64
    assert df["verify.enabled"].dtype == bool
    # Every metric column is numeric (ints, floats, bools); text stays in config.
    metrics = [c for c in cols if not c.startswith("config.") and c != "failure"]
    for c in metrics:
        assert df[c].dtype.kind in "ifb", (c, df[c].dtype)
    # A figure the run does not have is NaN, not None: the column stays float.
    assert math.isnan(df["ftl.map_cache.hit_ratio"].iloc[0]) is False  # dftl has a map cache
    p = ftlab.run(**N).to_pandas()
    assert p["ftl.map_cache.hit_ratio"].dtype == np.float64 and math.isnan(p["ftl.map_cache.hit_ratio"].iloc[0])


def test_many_reports_one_frame_varying_config_only():
    rs = [ftlab.run(ftl=f, **N) for f in ("page", "dftl", "fast")]
    df = ftlab.to_pandas(rs)
    assert len(df) == 3 and list(df["config.ftl"]) == ["page", "dftl", "fast"]
    v = ftlab.to_pandas(rs, varying_only=True)
    assert "config.ftl" in v.columns and "config.seed" not in v.columns
    assert "host.requests" in v.columns


def test_generate_columns_and_dtypes():
    df = ftlab.generate(seed=3, **{"synthetic.count": 1000, "synthetic.read_ratio": 0.3})
    assert list(df.columns) == ["time", "op", "offset", "size"]
    assert df["time"].dtype == np.float64
    assert isinstance(df["op"].dtype, pd.CategoricalDtype) and list(df["op"].cat.categories) == ["r", "w", "t", "f"]
    assert df["offset"].dtype == np.int64 and df["size"].dtype == np.int64
    assert len(df) == 1000 and set(df["op"]) <= {"r", "w"}
    assert (df["offset"] >= 0).all() and (df["size"] > 0).all()
    assert df["time"].is_monotonic_increasing
    arrays = ftlab.generate(seed=3, output="numpy", **{"synthetic.count": 1000, "synthetic.read_ratio": 0.3})
    assert arrays["op"].dtype == np.uint8 and np.array_equal(arrays["offset"], df["offset"].to_numpy())
    t = ftlab.generate(seed=3, output="arrow", **{"synthetic.count": 1000, "synthetic.read_ratio": 0.3})
    assert isinstance(t, pa.Table) and t.num_rows == 1000


def _metrics(r):
    d = r.to_dict()
    d.pop("workload")
    return d


def test_generated_workload_runs_like_the_configured_one():
    keys = {"ftl": "dftl", "seed": 5, "synthetic.count": 8000, "synthetic.read_ratio": 0.3}
    direct = ftlab.run(**keys)
    df = ftlab.generate(**keys)
    via = ftlab.run(workload=df, **keys)
    assert via.to_dict()["workload"]["source"] == "requests"
    assert _metrics(via) == _metrics(direct)
    # The same requests as numpy arrays, op as codes, in a dict; and as a pyarrow table.
    arrays = ftlab.generate(output="numpy", **keys)
    assert _metrics(ftlab.run(workload=arrays, **keys)) == _metrics(direct)
    assert _metrics(ftlab.run(workload=pa.Table.from_pandas(df), **keys)) == _metrics(direct)


def test_workload_op_spellings_and_time():
    w = {
        "op": np.array(["w", "W", "write", "r", "read", "t", "f"]),
        "offset": np.array([0, 4096, 8192, 0, 4096, 0, 0], dtype=np.uint32),
        "size": np.array([4096.0] * 5 + [2048.0, 0.0]),
        "time": np.arange(7) * 0.001,
    }
    r = ftlab.run(workload=w)
    d = r.to_dict()["host"]
    assert (d["write_requests"], d["read_requests"], d["trim_requests"], d["flush_requests"]) == (3, 2, 1, 1)
    codes = dict(w, op=np.array([1, 1, 1, 0, 0, 2, 3]))
    assert _metrics(ftlab.run(workload=codes)) == _metrics(r)
    # Without time every request arrives at 0; timedelta times are accepted.
    ftlab.run(workload={k: v for k, v in w.items() if k != "time"})
    ftlab.run(workload=dict(w, time=pd.to_timedelta(w["time"], unit="s").to_numpy()))
    # A structured numpy array works too.
    s = np.zeros(3, dtype=[("op", "u1"), ("offset", "i8"), ("size", "i8")])
    s["op"], s["size"] = 1, 2048
    assert ftlab.run(workload=s).to_dict()["host"]["write_requests"] == 3


def test_polars_rows_and_workloads():
    pl = pytest.importorskip("polars")
    rs = [ftlab.run(ftl=f, **N) for f in ("page", "dftl")]
    df = ftlab.to_polars(rs)
    assert df.height == 2 and df["config.ftl"].to_list() == ["page", "dftl"]
    assert df["host.requests"].dtype == pl.Int64 and df["waf"].dtype == pl.Float64
    assert rs[0].to_polars().height == 1
    g = ftlab.generate(output="polars", **N)
    assert g.columns == ["time", "op", "offset", "size"] and g["op"].dtype == pl.Categorical
    assert _metrics(ftlab.run(workload=g)) == _metrics(ftlab.run(workload=ftlab.generate(**N)))
