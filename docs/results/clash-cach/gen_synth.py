#!/usr/bin/env python3
"""DiskSim-style synthetic traces for the C-lash / CACH-FTL results (issue 7), in SPC
format (ASU,LBA in 512 B sectors,size in bytes,r|w,timestamp in s).

A stopgap until ftlab's own generator (issue 3) has sequential/local/random mixes. Each
request, after the first, is sequential (starts where the previous one ended) with
probability `seq`, local (starts at the previous start plus a normal offset with
variance `local_var` sectors^2, DiskSim's example `normal 0 40000`) with probability
`local`, else uniform over the address space. Sizes are fixed or normal (mean, variance)
in KB, rounded to 512 B sectors (at least one). Inter-arrival times are exponential.
Starts are aligned to `align` bytes. Deterministic for a given seed.

usage: gen_synth.py OUT --space-mib N --count N --seq F --local F --write F
                    [--size-kb F | --size-normal MEAN VAR] [--mean-ms F] [--align B] [--seed N]
"""
import argparse
import math
import random


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--space-mib", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--seq", type=float, required=True)
    p.add_argument("--local", type=float, required=True)
    p.add_argument("--write", type=float, required=True)
    p.add_argument("--size-kb", type=float)
    p.add_argument("--size-normal", type=float, nargs=2, metavar=("MEAN_KB", "VAR_KB2"))
    p.add_argument("--mean-ms", type=float, default=200.0)
    p.add_argument("--local-var", type=float, default=40000.0)
    p.add_argument("--align", type=int, default=512)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = random.Random(a.seed)
    space = a.space_mib * 1024 * 1024
    align = a.align
    t = 0.0
    last_start, last_end = 0, 0
    with open(a.out, "w") as f:
        for i in range(a.count):
            t += rng.expovariate(1.0 / a.mean_ms) / 1000.0
            if a.size_normal:
                kb = rng.gauss(a.size_normal[0], math.sqrt(a.size_normal[1]))
            else:
                kb = a.size_kb
            size = max(512, int(round(kb * 1024 / 512)) * 512)
            u = rng.random()
            if i > 0 and u < a.seq:
                start = last_end
            elif i > 0 and u < a.seq + a.local:
                start = last_start + int(round(rng.gauss(0.0, math.sqrt(a.local_var)))) * 512
            else:
                start = rng.randrange(0, space)
            start = (start // align) * align % space
            if start + size > space:
                start = ((space - size) // align) * align
            op = "w" if rng.random() < a.write else "r"
            f.write(f"0,{start // 512},{size},{op},{t:.6f}\n")
            last_start, last_end = start, start + size


if __name__ == "__main__":
    main()
