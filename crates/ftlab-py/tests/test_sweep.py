"""``ftlab.sweep``: the same table as ``ftlab sweep``, on the local cores and on a real
Dask ``distributed`` cluster (two worker processes)."""

import os

import pandas as pd
import pytest

import ftlab
from conftest import SPC, has_example

# Eight points on the bundled trace (4 OP x 2 FTLs), plus a zip of two seeds.
STUDY = f"""
[base]
trace = "{SPC}"
fold = true
capacity = "32MiB"
precondition = "fill"
limit = 4000

[axes]
ftl = ["page", "dftl"]
op = [4, 7, 10, 15]
"""


def _failing_study() -> str:
    """Points that fail: with the test build's `example` FTL, lost data found by the
    oracle and a panic; without it, a value the run refuses."""
    if has_example():
        return """
[base]
ftl = "example"
capacity = "16MiB"
synthetic.count = 2000
[zip.fault]
"ftl_options.lose_writes_after" = [1000000, 100, 1000000]
"ftl_options.panic_after" = [1000000, 1000000, 50]
"""
    return """
[base]
capacity = "16MiB"
synthetic.count = 2000
[axes]
ftl = ["page", "nosuch"]
"""


def test_local_table_is_the_cli_table(tmp_path, cli):
    study = tmp_path / "study.toml"
    study.write_text(STUDY)
    out = tmp_path / "out"
    cli("sweep", str(study), "-o", str(out), "-q")
    from_cli = pd.read_parquet(out / "results.parquet")
    from_csv = pd.read_csv(out / "results.csv")
    df = ftlab.sweep(study)
    assert len(df) == 8
    assert list(df["ftl"]) == ["page"] * 4 + ["dftl"] * 4
    assert (df["status"] == "ok").all()
    pd.testing.assert_frame_equal(df, from_cli)
    pd.testing.assert_frame_equal(df, from_csv, check_dtype=False)
    # WAF falls as over-provisioning grows, for both FTLs.
    for ftl in ("page", "dftl"):
        waf = df[df["ftl"] == ftl]["waf"].tolist()
        assert waf == sorted(waf, reverse=True) and waf[0] > waf[-1], waf


def test_failing_points_are_rows_and_the_rest_go_on():
    df = ftlab.sweep(_failing_study())
    assert df["status"].tolist()[0] == "ok"
    failed = df[df["status"] == "failed"]
    assert len(failed) >= 1
    assert failed["error"].str.len().min() > 0
    assert failed["command"].str.startswith("ftlab run ").all()
    assert failed["waf"].isna().all()


def test_bad_studies_raise_before_anything_runs(tmp_path):
    with pytest.raises(ftlab.ConfigError, match="axis `opp` is not a configuration key"):
        ftlab.sweep("[axes]\nopp = [1, 2]")
    with pytest.raises(ftlab.ConfigError, match="empty axis"):
        ftlab.sweep("[axes]\nop = []")
    with pytest.raises(ValueError, match="backend"):
        ftlab.sweep("[axes]\nop = [7]", backend="spark")


@pytest.fixture(scope="module")
def dask_client():
    if os.environ.get("FTLAB_REQUIRE_DASK"):
        import distributed  # ci.sh installs it: the cluster tests must run, not skip
    else:
        distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_dask_table_equals_the_local_table_row_for_row(tmp_path, dask_client):
    study = tmp_path / "study.toml"
    study.write_text(STUDY)
    local = ftlab.sweep(study)
    remote = ftlab.sweep(study, backend="dask", client=dask_client)
    pd.testing.assert_frame_equal(remote, local)
    # The points ran on the two worker processes, not here.
    workers = dask_client.scheduler_info()["workers"]
    assert len(workers) == 2
    failing_local = ftlab.sweep(_failing_study())
    failing_remote = ftlab.sweep(_failing_study(), backend="dask", client=dask_client)
    pd.testing.assert_frame_equal(failing_remote, failing_local)


def test_dask_stores_reports_and_resumes(tmp_path, dask_client, cli):
    study = tmp_path / "study.toml"
    study.write_text(STUDY)
    out = tmp_path / "out"
    first = ftlab.sweep(study, backend="dask", client=dask_client, out=out)
    stored = sorted(os.listdir(out / "points"))
    assert len([f for f in stored if f.endswith(".json")]) == 8
    # The CLI finds every report the cluster stored: nothing left to run.
    p = cli("sweep", str(study), "-o", str(out))
    assert "0 run, 8 from earlier runs" in p.stderr, p.stderr
    pd.testing.assert_frame_equal(first, pd.read_parquet(out / "results.parquet"), check_dtype=False)


def test_a_point_runs_with_the_gil_released():
    """What a Dask task calls: the main thread keeps running Python meanwhile."""
    import json
    import threading
    import time

    s = ftlab._ftlab.Study('[base]\nftl = "dftl"\nsynthetic.count = 400000\n[axes]\nseed = [1]', "t", ".")
    config = s.points()[0][1]
    result = []
    t = threading.Thread(target=lambda: result.append(ftlab._run_point(config)))
    ticks = 0
    start = time.perf_counter()
    t.start()
    while t.is_alive():
        ticks += 1
        time.sleep(0.01)
    elapsed = time.perf_counter() - start
    ok, text = result[0]
    assert ok and json.loads(text)["host"]["requests"] == 400000
    assert ticks >= 0.5 * elapsed / 0.01, (ticks, elapsed)
