#!/usr/bin/env python3
"""Runs the C-lash / CACH-FTL experiments of issue 7 and prints the markdown tables of
docs/results.md. Run from the repository root after `cargo build --release -p ftlab-cli`:

    python3 docs/results/clash-cach/tables.py [fig4|sweep|clash|all] > /tmp/tables.md

Synthetic traces are generated into /tmp/ftlab-issue7 by gen_synth.py (deterministic).
Every row's exact ftlab command is printed under its table."""
import json
import os
import subprocess
import sys

BIN = "target/release/ftlab"
TMP = "/tmp/ftlab-issue7"
HERE = os.path.dirname(os.path.abspath(__file__))
FIN1 = "tests/data/financial1-first10k.spc"

# PMR share of the flash -> --op giving it (PMR = every block beyond the BMR).
PMR_OP = {5: "5.27", 10: "11.12", 15: "17.65", 20: "25.01", 25: "33.34"}

# cach-ftl.txt §5.1: C-lash with 6 b-space blocks and 128 p-space pages; the cache hands
# CACH-FTL only its own pages (no merge reads), see docs/results.md.
CLASH_CACH = ["--set", "buffer_options.b_space_blocks=6", "--set", "buffer_options.merge=none"]


def synth(name, args):
    os.makedirs(TMP, exist_ok=True)
    path = f"{TMP}/{name}.spc"
    if not os.path.exists(path):
        subprocess.run([sys.executable, f"{HERE}/gen_synth.py", path] + args, check=True)
    return path


def cach_table1():
    # cach-ftl.txt Table 1 defaults: sequential 40%, spatial locality 20%, writes 100%,
    # 1 page (4 KB) requests, exponential inter-arrival mean 200 ms, 250,000 requests, 1 GB.
    return synth("cach-table1", ["--space-mib", "1024", "--count", "250000", "--seq", "0.4",
                                 "--local", "0.2", "--write", "1.0", "--size-kb", "4",
                                 "--align", "4096", "--mean-ms", "200", "--seed", "1"])


def clash_table1(write=0.8, seq=0.8):
    # c-lash.txt Table 1 defaults: sequential 80%, spatial locality 40%, writes 80%,
    # sizes normal (mean 2 KB, variance 2), 1 GB; count and inter-arrival are not given:
    # 100,000 requests, exponential mean 200 ms (Table 2's).
    name = f"clash-w{int(write*100)}-s{int(seq*100)}"
    return synth(name, ["--space-mib", "1024", "--count", "100000", "--seq", str(seq),
                        "--local", "0.4", "--write", str(write), "--size-normal", "2", "2",
                        "--mean-ms", "200", "--seed", "1"])


def run(args):
    os.makedirs(TMP, exist_ok=True)
    out = f"{TMP}/run.json"
    cmd = [BIN, "run", "-q", "--json", out] + args
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f), " ".join(["ftlab", "run"] + args)


def row(r):
    h, f = r["host"], r["flash"]
    return {
        "mean_us": h["response_ns"]["mean"] / 1000,
        "p99_us": h["response_ns"]["p99"] / 1000,
        "erases": f["block_erases"],
        "waf": r["waf"],
        "map": r["ftl"]["mapping_bytes"],
        "hit": r["buffer"]["hit_ratio"],
        "x": r["ftl"]["extra"],
        "b": r["buffer"]["extra"],
    }


def fmt(v, d=1):
    return "-" if v is None else f"{v:.{d}f}"


def device(nand, capacity, op, trace, extra):
    return ["--nand", nand, "--capacity", capacity, "--op", op, "--precondition", "fill",
            "--trace", trace] + extra


HIST = ["1", "2", "3_4", "5_8", "9_16", "17_32", "33_64"]


def fig4(name, trace, capacity, extra):
    print(f"\n#### {name}\n")
    print("| FTL (C-lash above it) | mean response µs | p99 µs | erases | WA | mapping RAM B | buffer hit ratio |")
    print("|---|---|---|---|---|---|---|")
    cmds, rows = [], []
    base = device("agrawal-4k", capacity, PMR_OP[10], trace, extra)
    variants = [
        ("page", "page", []),
        ("cach (threshold 4, PMR 10%)", "cach", []),
        ("cach, `pmr_gc_min_invalid=32` (sensitivity, not the default)", "cach",
         ["--set", "ftl_options.pmr_gc_min_invalid=32"]),
    ]
    for label, ftl, fo in variants:
        r, cmd = run(base + ["--ftl", ftl, "--buffer", "clash"] + CLASH_CACH + fo)
        x = row(r)
        rows.append((label, x))
        print(f"| {label} | {fmt(x['mean_us'])} | {fmt(x['p99_us'])} | {x['erases']} | "
              f"{fmt(x['waf'], 3)} | {x['map']} | {fmt(x['hit'], 3)} |")
        cmds.append(cmd)
    print("| block | pending (block-family merge, issue 4) | | | | | |")
    print("| fast | pending (block-family merge, issue 4) | | | | | |")
    page_map = rows[0][1]["map"]
    print("\nCACH-FTL internals (ftl.extra) and C-lash flushes (buffer.extra):\n")
    print("| run | PMR groups / pages | BMR groups / pages | PMR-GC sync / async | "
          "BMR-GC sync / async | interrupted | erases PMR / BMR | fillers | "
          "mapping B (paper count) vs page |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, x in rows[1:]:
        e = x["x"]
        i = lambda k: int(e[k])
        print(f"| {label} | {i('pmr_groups')} / {i('pmr_pages_written')} | "
              f"{i('bmr_groups')} / {i('bmr_pages_written')} | {i('pmr_gc_sync')} / "
              f"{i('pmr_gc_async')} | {i('bmr_gc_sync')} / {i('bmr_gc_async')} | "
              f"{i('gc_interruptions')} | {i('pmr_erases')} / {i('bmr_erases')} | "
              f"{i('filler_programs')} | {x['map']} ({i('map_bytes_paper')}) vs {page_map}: "
              f"{100 * (1 - x['map'] / page_map):.1f}% ({100 * (1 - e['map_bytes_paper'] / page_map):.1f}%) less |")
    b = rows[1][1]["b"]
    hist = ", ".join(f"{k.replace('_', '-')}: {int(b['flush_group_pages_' + k])}" for k in HIST)
    print(f"\nC-lash flushed-group sizes (pages: groups), cach run: {hist}.")
    print("\nCommands:\n")
    for c in cmds:
        print(f"    {c}")


def sweep(name, trace, capacity, extra):
    print(f"\n#### {name}: CACH-FTL (C-lash above) over threshold and PMR share\n")
    thresholds = [1, 2, 4, 8, 16, 32]
    print("Mean response time in µs (erases in parentheses); last column: page mapping on the same device.\n")
    print("| PMR % | " + " | ".join(f"t={t}" for t in thresholds) + " | page |")
    print("|---|" + "---|" * (len(thresholds) + 1))
    best = None
    for pmr, op in PMR_OP.items():
        base = device("agrawal-4k", capacity, op, trace, extra) + ["--buffer", "clash"] + CLASH_CACH
        cells = []
        for t in thresholds:
            r, _ = run(base + ["--ftl", "cach", "--set", f"ftl_options.threshold={t}"])
            x = row(r)
            cells.append(f"{fmt(x['mean_us'])} ({x['erases']})")
            if best is None or x["mean_us"] < best[0]:
                best = (x["mean_us"], pmr, t, x["erases"])
        r, _ = run(base + ["--ftl", "page"])
        p = row(r)
        cells.append(f"{fmt(p['mean_us'])} ({p['erases']})")
        print(f"| {pmr} | " + " | ".join(cells) + " |")
    print(f"\nBest CACH-FTL point: PMR {best[1]}%, threshold {best[2]}: "
          f"{fmt(best[0])} µs, {best[3]} erases.")
    print("\nCommand of each cell (PMR% sets --op, see the table above):\n")
    print("    " + " ".join(["ftlab", "run"] + device("agrawal-4k", capacity, "<op>", trace, extra)
                           + ["--buffer", "clash"] + CLASH_CACH
                           + ["--ftl", "cach", "--set", "ftl_options.threshold=<t>"]))
    return best


def clash_fig3():
    print("\n#### c-lash.txt Fig. 3 in small: write rate and sequential rate\n")
    configs = [
        ("page", ["--ftl", "page"]),
        ("C-lash (late merge) + page", ["--ftl", "page", "--buffer", "clash"]),
        ("C-lash (no merge) + page", ["--ftl", "page", "--buffer", "clash",
                                      "--set", "buffer_options.merge=none"]),
        ("C-lash (no merge) + cach", ["--ftl", "cach", "--buffer", "clash",
                                      "--set", "buffer_options.merge=none"]),
    ]
    cmds = {}
    for axis, points in [("write rate %", [(w, 0.8) for w in (0.5, 0.65, 0.8, 0.9)]),
                         ("sequential rate %", [(0.8, s) for s in (0.5, 0.65, 0.8, 0.9)])]:
        vals = [int(round((w if axis.startswith("write") else s) * 100)) for w, s in points]
        print(f"Mean response time µs / erases / WA, {axis} varied:\n")
        print(f"| scheme | " + " | ".join(str(v) for v in vals) + " |")
        print("|---|" + "---|" * len(vals))
        for label, args in configs:
            cells = []
            for w, s in points:
                trace = clash_table1(w, s)
                r, cmd = run(device("micron-2k", "1GiB", PMR_OP[10], trace, []) + args)
                x = row(r)
                cells.append(f"{fmt(x['mean_us'])} / {x['erases']} / {fmt(x['waf'], 2)}")
                cmds[label] = cmd
            print(f"| {label} | " + " | ".join(cells) + " |")
        for pending in ["FAST", "DFTL", "C-lash + block (the paper's C-lash)"]:
            print(f"| {pending} | pending merge of issue 4/5 |" + " |" * (len(vals) - 1))
        print()
    print("Commands (trace: gen_synth.py --space-mib 1024 --count 100000 --seq S --local 0.4 "
          "--write W --size-normal 2 2 --mean-ms 200 --seed 1):\n")
    for label, c in cmds.items():
        print(f"    {c}")


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    fin = (FIN1, "512MiB", ["--warmup", "2"])
    syn = (None, "1GiB", [])
    if what in ("fig4", "all"):
        fig4("financial1-first10k (2 warm-up passes)", fin[0], fin[1], fin[2])
        fig4("cach-ftl.txt Table 1 synthetic (250,000 writes)", cach_table1(), syn[1], syn[2])
    if what in ("sweep", "all"):
        sweep("financial1-first10k", fin[0], fin[1], fin[2])
        sweep("cach-ftl.txt Table 1 synthetic", cach_table1(), syn[1], syn[2])
    if what in ("clash", "all"):
        clash_fig3()


if __name__ == "__main__":
    main()
