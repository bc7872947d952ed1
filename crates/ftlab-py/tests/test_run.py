"""ftlab.run: configurations, the report, and the same JSON as the CLI."""

import json

import numpy as np
import pytest

import ftlab
from conftest import SPC


def test_defaults_run_and_report_headline_figures():
    r = ftlab.run(**{"synthetic.count": 5000})
    assert r.ok and r.failure is None and r.failure_kind is None
    s = r.summary
    assert s["ftl"] == "page" and s["buffer"] == "none"
    assert s["requests"] == 5000 == r.requests
    assert s["waf"] >= 1.0
    assert s["violations"] == 0 and s["reads_checked"] > 0
    assert "ftl=page" in str(r) and "requests" in r.text
    assert r["host.requests"] == 5000
    with pytest.raises(KeyError):
        r["host.nothing"]
    assert "ftl=page" in repr(r)


def test_config_dict_path_and_overrides_layer(tmp_path):
    cfg = {"ftl": "dftl", "synthetic": {"count": 3000, "read_ratio": 0.5}, "ftl_options": {"gc_threshold": 4}}
    a = ftlab.run(cfg)
    assert a.config["ftl"] == "dftl" and a.config["ftl_options"]["gc_threshold"] == 4
    assert a.config["synthetic"]["read_ratio"] == 0.5
    # Overrides win over the dict, dotted keys reach into tables.
    b = ftlab.run(cfg, seed=7, **{"ftl_options.gc_threshold": 5})
    assert b.config["seed"] == 7 and b.config["ftl_options"]["gc_threshold"] == 5
    assert b.config["synthetic"]["count"] == 3000
    # A TOML file gives the same run as the same dict.
    f = tmp_path / "c.toml"
    f.write_text('ftl = "dftl"\n[synthetic]\ncount = 3000\nread_ratio = 0.5\n[ftl_options]\ngc_threshold = 4\n')
    assert ftlab.run(str(f)).to_json() == a.to_json()
    assert ftlab.run(f).to_json() == a.to_json()  # a pathlib.Path
    # numpy scalars are accepted as values.
    c = ftlab.run(cfg, op=np.float64(7.0), seed=np.int64(1), verify=np.str_("on"))
    assert c.to_json() == a.to_json()


def test_same_config_same_report():
    a = ftlab.run(ftl="fast", **{"synthetic.count": 4000})
    b = ftlab.run(ftl="fast", **{"synthetic.count": 4000})
    assert a.to_json() == b.to_json()
    c = ftlab.run(ftl="fast", seed=2, **{"synthetic.count": 4000})
    assert c.to_json() != a.to_json()


def test_to_dict_is_the_json():
    r = ftlab.run(ftl="tpm", **{"synthetic.count": 2000})
    d = r.to_dict()
    assert d == json.loads(r.to_json())
    assert list(d)[:3] == ["ftlab_version", "report_version", "host"]  # the JSON's key order
    d["host"]["requests"] = -1  # a copy
    assert r.to_dict()["host"]["requests"] == 2000


def test_latency_percentiles_and_histogram():
    r = ftlab.run(**{"synthetic.count": 5000})
    lat = r.latency
    rt = r.to_dict()["host"]["response_ns"]
    for k in ("mean", "p50", "p99", "p999", "max"):
        assert lat[k] == rt[k]
    q, v = lat["quantile"], lat["quantile_ns"]
    assert q.dtype == np.float64 and v.dtype == np.uint64 and len(q) == len(v)
    assert v[list(q).index(0.99)] == rt["p99"]
    assert v[list(q).index(0.5)] == rt["p50"]
    assert v[-1] == rt["max"] and np.all(np.diff(v.astype(np.int64)) >= 0)
    assert lat["count"].sum() == 5000
    assert len(lat["value_ns"]) == len(lat["count"]) > 0


def test_timeline_when_recorded():
    r = ftlab.run(**{"synthetic.count": 10000})
    assert r.timeline is None
    r = ftlab.run(timeline_every=2500, **{"synthetic.count": 10000})
    t = r.timeline
    assert list(t["requests"]) == [2500, 5000, 7500, 10000]
    assert np.all(np.diff(t["page_programs"].astype(np.int64)) >= 0)
    assert t["page_programs"][-1] == r["flash.page_programs"]
    assert t["p99_response_ns"][-1] == r["host.response_ns.p99"]


def test_intervals_from_the_timeline_key():
    assert ftlab.run(**{"synthetic.count": 1000}).intervals is None
    r = ftlab.run(timeline="2500", **{"synthetic.count": 10000})
    t = r.intervals
    assert list(t["requests"]) == [2500] * 4
    assert t["requests"].dtype == np.uint64 and t["waf"].dtype == np.float64
    assert int(t["flash_programs"].sum()) == r["flash.page_programs"]
    assert int(t["host_pages_written"].sum()) == r["host.pages_written"]
    assert r["config.timeline"] == "2500"


def test_progress_callback_sees_the_run():
    seen = []
    ftlab.run(progress=lambda done, total: seen.append((done, total)), check_every=1000, **{"synthetic.count": 5000})
    assert seen[0] == (1000, 5000) and seen[-1] == (5000, 5000)


def test_progress_callback_error_stops_the_run():
    def boom(done, total):
        if done >= 2000:
            raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        ftlab.run(progress=boom, check_every=1000, **{"synthetic.count": 100000})


def test_trace_replay():
    r = ftlab.run(trace=SPC, ftl="fast", fold=True)
    d = r.to_dict()
    assert d["workload"]["source"] == "trace" and d["workload"]["records_per_pass"] == 10000
    assert r.config["trace"] == str(SPC)


def test_resolve_fills_defaults_without_running():
    c = ftlab.resolve(ftl="dftl")
    assert c["ftl_options"]["cmt_bytes"] == "512KiB"
    assert c["device"]["geometry"]["page_size"] == 2048


# --- the same numbers as the command line -----------------------------------------


def _sets(d):
    out = []
    for k, v in d.items():
        out += ["--set", "%s=%s" % (k, json.dumps(v) if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else v)]
    return out


@pytest.mark.parametrize(
    "keys",
    [
        {"synthetic.count": 20000},
        {"ftl": "dftl", "synthetic.count": 20000, "synthetic.read_ratio": 0.4, "seed": 3},
        {"ftl": "fast", "buffer": "bplru", "trace": str(SPC), "fold": True},
        {"ftl": "superblock", "timing": "parallel", "channels": 2, "dies": 2, "trace": str(SPC), "fold": True, "ftl_options.hot_cold": "off"},
    ],
    ids=["defaults", "dftl", "fast-bplru-trace", "superblock-parallel"],
)
def test_json_is_byte_identical_to_the_cli(cli, keys):
    out = cli("run", "-q", "--json", "-", *_sets(keys)).stdout
    assert ftlab.run(**keys).to_json() == out


def test_json_from_a_config_file_is_byte_identical_to_the_cli(cli, tmp_path):
    f = tmp_path / "run.toml"
    f.write_text('ftl = "bast"\nbuffer = "fab"\ncapacity = "256MiB"\n[synthetic]\ncount = 15000\n[buffer_options]\nsize = "1MiB"\n')
    out = cli("run", "-q", "--json", "-", "--config", str(f)).stdout
    assert ftlab.run(f).to_json() == out
