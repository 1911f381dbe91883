#!/usr/bin/env python3
"""The first call's CPU cost (no GPU needed): for each problem of a list, what
`convtune.torch`'s first-call benchmark does before its first launch — `convtune.lookup(...,
candidates=N)`, then every candidate compiled to PTX in a thread of its own — timed per problem
(run with CONVTUNE_CODEGEN_CACHE=off for a cold codegen). The driver's JIT and the timing runs
come on top on a GPU machine.

    Usage: CONVTUNE_CODEGEN_CACHE=off scripts/first-call-cpu.py PROBLEMS.txt N [N ...]
"""
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import convtune


def main():
    path, counts = sys.argv[1], [int(n) for n in sys.argv[2:]]
    lines = [l.strip() for l in open(path) if l.strip() and not l.startswith("#")]
    for n in counts:
        rows = []
        for line in lines:
            t0 = time.perf_counter()
            found = convtune.lookup(line, "sm_90", candidates=n)
            t1 = time.perf_counter()
            configs = [f["config"] for f in found.get("candidates", [found])]
            with ThreadPoolExecutor(len(configs)) as pool:
                list(pool.map(lambda c: convtune.compile(line, "sm_90", config=c), configs))
            rows.append((t1 - t0, time.perf_counter() - t1, len(configs)))
        look, comp = [r[0] for r in rows], [r[1] for r in rows]
        print(f"{len(rows)} problems, candidates {n}: lookup median {statistics.median(look):.2f} s "
              f"(max {max(look):.2f}), compile (LLVM, threads) median {statistics.median(comp):.2f} s "
              f"(max {max(comp):.2f}), mean configs {statistics.mean(r[2] for r in rows):.1f}")


if __name__ == "__main__":
    main()
