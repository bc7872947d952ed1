"""Benchmarks of the Python package (BENCHMARKS.md, "Python package"): a 1 M-request run
from Python against the same run by the release CLI, and read_trace into Arrow.

    cargo build --release --bin ftlab
    python crates/ftlab-py/bench.py            # from the repository root

Each figure is the best of ROUNDS (default 5) rounds; FTLAB_BENCH_REQUESTS changes the
run's size, FTLAB_BENCH_LINES the trace's.
"""

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ftlab

ROOT = Path(__file__).resolve().parents[2]
CLI = os.environ.get("FTLAB_CLI", str(ROOT / "target" / "release" / "ftlab"))
ROUNDS = int(os.environ.get("ROUNDS", "5"))
REQUESTS = int(os.environ.get("FTLAB_BENCH_REQUESTS", "1000000"))
LINES = int(os.environ.get("FTLAB_BENCH_LINES", "5000000"))


def cpu_seconds():
    """CPU time of this process and its finished children (on a shared machine the
    wall time also counts the time other processes had the cores)."""
    a = resource.getrusage(resource.RUSAGE_SELF)
    b = resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def best(f):
    """Best wall time and best CPU time of ROUNDS calls."""
    wall, cpu = [], []
    for _ in range(ROUNDS):
        s, c = time.perf_counter(), cpu_seconds()
        f()
        wall.append(time.perf_counter() - s)
        cpu.append(cpu_seconds() - c)
    return min(wall), min(cpu)


def main():
    print("ftlab %s, Python %s, %d rounds (best)" % (ftlab.__version__, sys.version.split()[0], ROUNDS))
    for ftl in ("page", "dftl"):
        keys = {"ftl": ftl, "synthetic.count": REQUESTS}
        sets = ["--set", "ftl=%s" % ftl, "--set", "synthetic.count=%d" % REQUESTS]
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.json")
            cli = best(lambda: subprocess.run([CLI, "run", "-q", "--json", out] + sets, check=True, stdout=subprocess.DEVNULL))
            cli_json = Path(out).read_text()
        py = best(lambda: ftlab.run(**keys))
        same = ftlab.run(**keys).to_json() == cli_json
        print(
            "run %s, %d requests: CLI %.3f s (cpu %.3f s), Python %.3f s (cpu %.3f s): %+.1f%% wall, "
            "%+.1f%% cpu; same JSON: %s"
            % (ftl, REQUESTS, cli[0], cli[1], py[0], py[1], (py[0] / cli[0] - 1) * 100, (py[1] / cli[1] - 1) * 100, same)
        )
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "t.spc")
        subprocess.run(
            [CLI, "trace", "gen", "-o", trace, "--count", str(LINES), "--set", "synthetic.read_ratio=0.3"],
            check=True,
            stderr=subprocess.DEVNULL,
        )
        size = os.path.getsize(trace)
        t = best(lambda: ftlab.read_trace(trace))
        stats = best(lambda: subprocess.run([CLI, "trace", "stats", trace, "--json"], check=True, stdout=subprocess.DEVNULL))
        print(
            "read_trace spc, %d lines (%.0f MB): %.2f M records/s into Arrow (%.2f M per cpu second); "
            "ftlab trace stats on the same file: %.2f M lines/s (%.2f M per cpu second)"
            % (LINES, size / 1e6, LINES / t[0] / 1e6, LINES / t[1] / 1e6, LINES / stats[0] / 1e6, LINES / stats[1] / 1e6)
        )


if __name__ == "__main__":
    main()
