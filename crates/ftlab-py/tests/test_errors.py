"""Every error path: a clear exception of the right class, never a crash."""

import numpy as np
import pandas as pd
import pytest

import ftlab
from conftest import SPC, needs_example


def test_exception_classes():
    assert issubclass(ftlab.ConfigError, ValueError)
    assert issubclass(ftlab.TraceError, ValueError)
    assert issubclass(ftlab.DataLossError, Exception)
    assert issubclass(ftlab.InternalError, Exception)
    assert ftlab.ConfigError.__module__ == "ftlab"


# --- configuration ------------------------------------------------------------------


@pytest.mark.parametrize(
    "config, overrides, words",
    [
        ({"fo": 1}, {}, ["unknown field `fo`"]),
        (None, {"synthetic.cout": 5}, ["unknown field `cout`"]),
        ({"synthetic": {"count": "lots"}}, {}, ["`synthetic.count`", "lots"]),
        (None, {"timing": "paralel"}, ["`timing`", "paralel", "parallel"]),
        (None, {"capacity": "12 parsecs"}, ["`capacity`", "parsecs"]),
        (None, {"op": True}, ["`op`"]),
        (None, {"ftl": "nope"}, ["`ftl`", "nope", "dftl"]),
        (None, {"buffer": "nope"}, ["`buffer`", "nope", "bplru"]),
        (None, {"ftl_options.gc_threshold": 0}, ["gc_threshold", "0"]),
        (None, {"ftl_options.nothing": 1}, ["nothing"]),
        (None, {"replay": 0}, ["`replay`"]),
        (None, {"nand": "tlc-unknown"}, ["`nand`", "tlc-unknown"]),
    ],
)
def test_config_errors_name_the_key(config, overrides, words):
    with pytest.raises(ftlab.ConfigError) as e:
        ftlab.run(config, **overrides)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_setting_errors_carry_the_key():
    with pytest.raises(ftlab.ConfigError) as e:
        ftlab.run(ftl="nope")
    assert e.value.key == "ftl"


def test_bad_python_values_and_config_types(tmp_path):
    with pytest.raises(ftlab.ConfigError, match="`seed`.*object"):
        ftlab.run(seed=object())
    with pytest.raises(ftlab.ConfigError, match="does not fit"):
        ftlab.run(seed=2**70)
    with pytest.raises(ftlab.ConfigError, match="config must be"):
        ftlab.run(42)
    with pytest.raises(ftlab.ConfigError, match="None is not allowed"):
        ftlab.run(devices=[1, None])
    with pytest.raises(ftlab.ConfigError, match="no-such.toml"):
        ftlab.run(tmp_path / "no-such.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("ftl = \n")
    with pytest.raises(ftlab.ConfigError, match="bad.toml"):
        ftlab.run(bad)
    with pytest.raises(ftlab.ConfigError, match="not both"):
        ftlab.run(trace=SPC, workload={"op": [1], "offset": [0], "size": [1]})


def test_resolve_and_generate_raise_config_errors():
    with pytest.raises(ftlab.ConfigError):
        ftlab.resolve(ftl="nope")
    with pytest.raises(ftlab.ConfigError, match="trace"):
        ftlab.generate(trace=str(SPC))
    with pytest.raises(ftlab.ConfigError, match="synthetic"):
        ftlab.generate(**{"synthetic.read_ratio": 2.0})


# --- traces -------------------------------------------------------------------------


def test_missing_trace_names_the_file(tmp_path):
    missing = tmp_path / "none.spc"
    for call in (lambda: ftlab.run(trace=missing), lambda: ftlab.read_trace(missing), lambda: ftlab.trace_stats(missing)):
        with pytest.raises(ftlab.TraceError) as e:
            call()
        assert str(missing) in str(e.value) and e.value.file == str(missing)


def test_malformed_trace_names_file_line_and_field(tmp_path):
    f = tmp_path / "bad.spc"
    f.write_text("0,10,4096,w,0.0\n0,11,4096,x,0.1\n")
    for call in (lambda: ftlab.run(trace=f), lambda: ftlab.read_trace(f), lambda: ftlab.trace_stats(f)):
        with pytest.raises(ftlab.TraceError) as e:
            call()
        assert e.value.file == str(f) and e.value.line == 2 and e.value.field
        assert "%s:2" % f in str(e.value)
    # skip_bad counts it instead.
    assert ftlab.run(trace=f, skip_bad=True).to_dict()["workload"]["skipped_records"] == 1
    assert ftlab.trace_stats(f, skip_bad=True)["skipped_records"] == 1


def test_unknown_trace_format():
    with pytest.raises(ftlab.ConfigError, match="format"):
        ftlab.read_trace(SPC, "nope")
    with pytest.raises(ftlab.ConfigError, match="format"):
        ftlab.run(trace=SPC, format="nope")


def test_trace_beyond_capacity():
    with pytest.raises(ftlab.TraceError, match="capacity"):
        ftlab.run(trace=SPC, capacity="64MiB")


# --- workloads from Python ----------------------------------------------------------

GOOD = {"op": ["w", "r"], "offset": [0, 4096], "size": [4096, 4096]}


@pytest.mark.parametrize(
    "change, field, row, words",
    [
        ({"op": None}, "op", None, ["missing column `op`"]),
        ({"size": None}, "size", None, ["missing column `size`"]),
        ({"offset": [0, -4096]}, "offset", 1, ["row 1", "`offset`", "-4096", "negative"]),
        ({"size": [-1, 4096]}, "size", 0, ["row 0", "negative"]),
        ({"size": [4096]}, "size", None, ["1 values", "2"]),
        ({"time": [0.0]}, "time", None, ["1 values"]),
        ({"op": ["w", "x"]}, "op", 1, ["row 1", "'x'"]),
        ({"op": [1, 7]}, "op", 1, ["row 1", "7 is not an op"]),
        ({"offset": [0.0, 0.5]}, "offset", 1, ["whole number"]),
        ({"time": [0.0, -1.0]}, "time", 1, ["row 1", "`time`"]),
        ({"time": [0.0, float("nan")]}, "time", 1, ["row 1"]),
        ({"offset": [0, 2**40]}, "offset", None, ["capacity"]),
    ],
)
def test_bad_workloads_raise_trace_errors(change, field, row, words):
    w = dict(GOOD)
    for k, v in change.items():
        if v is None:
            del w[k]
        else:
            w[k] = v
    with pytest.raises(ftlab.TraceError) as e:
        ftlab.run(workload=w)
    msg = str(e.value)
    for word in words:
        assert word in msg, (word, msg)
    assert e.value.field == field
    if row is not None:
        assert e.value.line == row


def test_bad_workload_containers():
    with pytest.raises(ftlab.TraceError, match="missing column `offset`"):
        ftlab.run(workload=pd.DataFrame({"op": ["w"], "offs": [0], "size": [1]}))
    with pytest.raises(ftlab.TraceError, match="must be"):
        ftlab.run(workload=[("w", 0, 4096)])
    with pytest.raises(ftlab.TraceError, match="dtype"):
        ftlab.run(workload={"op": [1.5], "offset": [0], "size": [1]})


# --- what the run finds -------------------------------------------------------------


@needs_example
def test_data_loss_is_in_the_report_and_raised_with_check():
    keys = {"ftl": "example", "ftl_options.lose_writes_after": 100, "synthetic.count": 5000}
    r = ftlab.run(**keys)
    assert not r.ok and r.failure_kind == "violation" and r.failure
    assert r.summary["violations"] == 1
    with pytest.raises(ftlab.DataLossError) as e:
        ftlab.run(check=True, **keys)
    assert e.value.report.failure == r.failure


@needs_example
def test_a_panic_in_a_scheme_is_an_internal_error_not_a_crash():
    keys = {"ftl": "example", "ftl_options.panic_after": 50, "synthetic.count": 5000}
    with pytest.raises(ftlab.InternalError) as e:
        ftlab.run(**keys)
    assert "panic_after" in str(e.value) and "seed" in str(e.value)
    assert e.value.report.failure_kind == "internal"
    # The interpreter and the module still work.
    assert ftlab.run(**{"synthetic.count": 100}).ok
