#!/usr/bin/env python3
"""Regenerates the CO-OP tables of docs/results.md (co-op-buffer-ftl.txt Figs. 6-9 in
small): throughput and merge breakdown of FAB, BPLRU, BP-REF, BA-GC, BLRU and CO-OP
above BAST and FAST for several DRAM (buffer) sizes and four workloads.

Usage, from the repository root, after `cargo build --release`:

    python3 docs/coop_results.py > /tmp/coop-tables.md

Every run's exact command is printed on stderr.
"""

import json
import subprocess
import sys

BIN = "./target/release/ftlab"
COMMON = [
    "--nand", "mlc-k9gag08uxm",  # co-op-buffer-ftl.txt Table 1, MLC
    "--capacity", "256MiB",
    "--op", "3",  # §6.1: "extra blocks ... 3%"
    "--precondition", "fill",
]

# (buffer id, FTL options, label) per scheme, as §6 pairs them.
SCHEMES = [
    ("fab", [], "FAB"),
    ("bplru", [], "BPLRU"),
    ("bpref", [], "BP-REF"),
    ("bagc", ["ftl_options.ba_gc=true"], "BA-GC"),
    ("blru", [], "BLRU"),
    ("coop", ["ftl_options.osm=true"], "CO-OP"),
]

DRAM = ["4MiB", "8MiB", "16MiB", "32MiB"]
DRAM_SCALED = ["256KiB", "512KiB", "1MiB", "2MiB"]


def workloads():
    return {
        "financial1-first10k": ["--trace", "tests/data/financial1-first10k.spc", "--fold"],
        "tpcc-small": [
            "--trace", "tests/data/tpcc-small.mqsim.trace", "--format", "mqsim", "--fold",
        ],
        "synthetic sequential": [
            "--set", "synthetic.pattern=\"sequential\"",
            "--set", "synthetic.read_ratio=0",
            "--set", "synthetic.request_bytes=65536",
            "--set", "synthetic.count=8192",
        ],
        "synthetic random": [
            "--set", "synthetic.pattern=\"random\"",
            "--set", "synthetic.read_ratio=0.3",
            "--set", "synthetic.request_bytes=8192",
            "--set", "synthetic.count=60000",
        ],
    }


def run(ftl, scheme, size, wl_args):
    buf, ftl_opts, _ = scheme
    cmd = [BIN, "run", "-q", "--json", "-", "--ftl", ftl, "--buffer", buf] + COMMON + wl_args
    cmd += ["--set", f"buffer_options.size=\"{size}\""]
    for o in ftl_opts:
        cmd += ["--set", o]
    print(" ".join(cmd), file=sys.stderr)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def padding_cost_ns(r):
    lat = r["config"]["device"]["latencies_ns"]
    p = r["flash"]["by_cause"]["padding"]
    return p["page_reads"] * lat["read"] + p["page_programs"] * lat["program"]


def throughput_table(ftl, wl, sizes, results):
    print(f"\n**{ftl.upper()}, {wl}**: KiB/s of host data over flash operation time\n")
    print("| scheme | " + " | ".join(sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for s in SCHEMES:
        row = []
        for size in sizes:
            t = results[(ftl, wl, s[2], size)]["host"]["throughput_busy_kib_s"]
            row.append("-" if t is None else f"{t:,.0f}")
        print(f"| {s[2]} | " + " | ".join(row) + " |")


def merge_table(ftl, wl, size, results):
    print(f"\n**{ftl.upper()}, {wl}, {size}**: merges by kind, merge + padding time, erases\n")
    print("| scheme | switch | partial | full | PSM | OSM | BA-BM | merge+pad s | pad reads | pad writes | erases | hit ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for s in SCHEMES:
        r = results[(ftl, wl, s[2], size)]
        m = r["ftl"]["merges"]
        p = r["flash"]["by_cause"]["padding"]
        cost = (m["cost_ns"] + padding_cost_ns(r)) / 1e9
        hr = r["buffer"]["hit_ratio"]
        print(
            f"| {s[2]} | {m['switch']} | {m['partial']} | {m['full']} | {m['padding_switch']} "
            f"| {m['osm']} | {m['ba_bm']} | {cost:.2f} | {p['page_reads']} | {p['page_programs']} "
            f"| {r['flash']['block_erases']} | {'-' if hr is None else f'{hr:.3f}'} |"
        )


def main():
    results = {}
    wls = workloads()
    plan = []
    for wl in wls:
        sizes = DRAM + (DRAM_SCALED if wl.startswith(("financial1", "tpcc")) else [])
        for ftl in ["bast", "fast"]:
            for s in SCHEMES:
                for size in sizes:
                    plan.append((ftl, wl, s, size))
    for ftl, wl, s, size in plan:
        r = run(ftl, s, size, wls[wl])
        assert r["verify"]["violations"] == 0
        results[(ftl, wl, s[2], size)] = r
    print("#### Throughput (Figs. 6 and 7)")
    for ftl in ["bast", "fast"]:
        for wl in wls:
            throughput_table(ftl, wl, DRAM, results)
    print("\n#### Throughput with scaled-down buffers (trace write working sets are 14 and 31 MiB)")
    for ftl in ["bast", "fast"]:
        for wl in ["financial1-first10k", "tpcc-small"]:
            throughput_table(ftl, wl, DRAM_SCALED, results)
    print("\n#### Merge breakdown (Figs. 8 and 9)")
    for ftl in ["bast", "fast"]:
        for wl in wls:
            size = "16MiB" if wl.startswith("synthetic") else "1MiB"
            merge_table(ftl, wl, size, results)


if __name__ == "__main__":
    main()
