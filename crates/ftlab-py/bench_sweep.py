"""Sweep benchmarks (issue 19), recorded in BENCHMARKS.md:

1. speedup on all cores: `ftlab sweep -j 1` against `-j <cores>` on 16 equal points
   (one DFTL run, 16 seeds), through the release CLI;
2. the Dask backend's overhead per point: `ftlab.sweep(backend="dask")` on a
   `LocalCluster` of one single-threaded worker process per core, against
   `backend="local"` with as many threads, on 64 tiny points (where the overhead is all
   there is) and on the 16 equal points.

Rounds are interleaved and medians printed, with the load average, since the machine may
be shared. From the repository root, after `cargo build --release --bin ftlab` and
`pip install ./crates/ftlab-py "dask[distributed]"`:

    python crates/ftlab-py/bench_sweep.py            # ROUNDS=5 by default
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

import ftlab

ROUNDS = int(os.environ.get("ROUNDS", "5"))
CORES = os.cpu_count() or 1
CLI = os.environ.get("FTLAB_CLI", "target/release/ftlab")

EQUAL = """
[base]
ftl = "dftl"
capacity = "256MiB"
precondition = "fill"
synthetic.count = 600000
synthetic.read_ratio = 0.0
[axes]
seed = { from = 1, to = 16 }
"""

TINY = """
[base]
capacity = "16MiB"
synthetic.count = 200
[axes]
seed = { from = 1, to = 64 }
"""


def load() -> str:
    return open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?"


def median_of(times):
    return statistics.median(times), [round(t, 2) for t in times]


def speedup() -> None:
    with tempfile.TemporaryDirectory() as d:
        study = os.path.join(d, "equal.toml")
        with open(study, "w") as f:
            f.write(EQUAL)
        times = {1: [], CORES: []}
        loads = []
        for _ in range(ROUNDS):
            for j in times:
                s = time.perf_counter()
                subprocess.run(
                    [CLI, "sweep", study, "-o", os.path.join(d, "out"), "--force", "-q", "-j", str(j)],
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
                times[j].append(time.perf_counter() - s)
                loads.append(load())
        (m1, r1), (mn, rn) = median_of(times[1]), median_of(times[CORES])
        print(f"16 equal points, CLI: -j 1 {m1:.2f} s {r1}, -j {CORES} {mn:.2f} s {rn}: "
              f"speedup {m1 / mn:.2f}x (load averages {loads})")


def dask_overhead() -> None:
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=CORES, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    ftlab.sweep(TINY, backend="dask", client=client)  # workers import ftlab before timing
    for name, study, n in [("64 tiny points", TINY, 64), ("16 equal points", EQUAL, 16)]:
        t = {"local": [], "dask": []}
        for _ in range(ROUNDS):
            for b in t:
                s = time.perf_counter()
                df = ftlab.sweep(study, backend=b, client=client if b == "dask" else None, jobs=CORES)
                t[b].append(time.perf_counter() - s)
                assert (df["status"] == "ok").all()
        (ml, rl), (md, rd) = median_of(t["local"]), median_of(t["dask"])
        print(f"{name}: local {ml:.3f} s {rl}, dask {md:.3f} s {rd}: "
              f"overhead {(md - ml) / n * 1000:.1f} ms per point (load {load()})")
    client.close()
    cluster.close()


if __name__ == "__main__":
    if "--dask-only" not in sys.argv:
        speedup()
    dask_overhead()
