#!/usr/bin/env python3
"""Untuned problems out of the box: the lookup's config, the first-call benchmark's pick, cuDNN.

For each problem of a list that the installed wheel's database has no entry for, in one
process and the same harness (same-harness.py's cold and graph protocols):
- **lookup**: the config `convtune.lookup` answers (the untuned fallback's first choice);
- **first use**: the config `convtune.torch.benchmark = True` keeps after timing the lookup's
  first `BENCHMARK_CANDIDATES` candidates on the problem's first call (the real mechanism: its
  choice is read back from `convtune.torch.choices()`), checked against PyTorch's float64
  result;
- **best of the candidates**: the fastest of those candidates in the cold protocol (what a
  perfect first-call pick would keep);
- **cuDNN** (`torch.backends.cudnn.benchmark = True`), the same problem.

Prints a row per problem and the geomeans of cuDNN's time over ours; writes JSON to --json.
    Usage: first-use.py PROBLEMS.txt [--json OUT.json] [--candidates N] [--second M]
           [--pick-only]
           (the wheel's package importable; N: convtune.torch.BENCHMARK_CANDIDATES, M:
           convtune.torch.SECOND_ROUND, each by default the package's own; the JSON is
           rewritten after every problem, so a run cut short keeps what it timed)
"""

import argparse
import json
import sys
import time

import torch

import convtune
import convtune.torch as ct

sh = None  # same-harness.py, loaded in main() (it needs a GPU to import)


def timed(line, config, device):
    """Cold and graph µs of one config, after checking its output."""
    fn, err, ok = sh.ours(line, config, device)
    if not ok:
        raise RuntimeError(f"{config}: wrong result, rel_err {err:.3g}")
    return sh.time_cold(fn), sh.cc.time_graph(fn)


def first_use_pick(line, device):
    """The config the first-call benchmark keeps for `line`, what it measured, and the first
    call's wall time in s (lookup, compiling and loading the candidates, timing them)."""
    info = convtune.problem(line)
    flats = sh.gc.buffers(info, device)
    ct._plans.clear()  # a fresh process's cache: this problem not seen yet
    ct.benchmark = True
    t0 = time.perf_counter()
    try:
        ct.launch(line, flats["x"], flats["w"], flats["y"])
        torch.cuda.synchronize(device)
    finally:
        ct.benchmark = False
    wall = time.perf_counter() - t0
    measured = ct.choices().get(info["key"]) or ct.choices().get(line)
    if not measured:  # one candidate only, or an exact entry: nothing was timed
        return convtune.lookup(line, arch_of(device))["config"], {}, wall
    return next(iter(measured)), measured, wall


def arch_of(device):
    return "sm_{}{}".format(*torch.cuda.get_device_capability(device))


def main():
    global sh
    ap = argparse.ArgumentParser()
    ap.add_argument("problems")
    ap.add_argument("--json")
    ap.add_argument("--candidates", type=int)
    ap.add_argument("--second", type=int)
    ap.add_argument("--pick-only", action="store_true",
                    help="time only the lookup's answer and the kept config (not every candidate)")
    a = ap.parse_args()
    if a.candidates:
        ct.BENCHMARK_CANDIDATES = a.candidates
    if a.second is not None:
        ct.SECOND_ROUND = a.second
    sh = sh or sh_module()
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda", 0)
    arch = arch_of(dev)
    lines = [l.strip() for l in open(a.problems) if l.strip() and not l.startswith("#")]
    print(f"GPU: {torch.cuda.get_device_name()}  cuDNN {torch.backends.cudnn.version()}  "
          f"{len(lines)} problems, first use times {ct.BENCHMARK_CANDIDATES} candidates, then "
          f"{getattr(ct, 'SECOND_ROUND', 0)} in a second round")
    print(f"{'lookup':>8} {'1st use':>8} {'best of':>8} {'cuDNN':>8} | {'lookup':>8} {'1st use':>8} "
          f"{'cuDNN':>8}  (us: cold | graph)  problem")
    rows = []
    for line in lines:
        row = {"problem": line}
        try:
            found = convtune.lookup(line, arch, candidates=ct.BENCHMARK_CANDIDATES)
            if found["source"] == "exact":
                raise RuntimeError("the database has this problem: not an unseen one")
            p = sh.cc.parse(line)
            if p is None:
                raise RuntimeError("cuDNN cannot run this layout through torch")
            configs = [c["config"] for c in found["candidates"]]
            pick, measured, first_call_s = first_use_pick(line, dev)
            cand, failed = {}, {}
            for c in ([found["config"]] if a.pick_only else configs) + [pick]:
                if c in cand or c in failed:
                    continue
                try:
                    cand[c] = timed(line, c, dev)
                except Exception as ex:  # a candidate that cannot run is a finding, not the end
                    failed[c] = str(ex)[:200]
                    print(f"  candidate error: {failed[c]}")
            row["candidate_errors"] = failed
            if found["config"] not in cand or pick not in cand:
                raise RuntimeError(f"the lookup's or the kept config did not run: {failed}")
            cud = sh.cc.make_op(p)
            row.update(lookup=found["config"], pick=pick, first_call_ms=measured,
                       first_call_s=first_call_s,
                       cold={c: t[0] for c, t in cand.items()},
                       graph={c: t[1] for c, t in cand.items()},
                       cudnn_cold=sh.time_cold(cud), cudnn_graph=sh.cc.time_graph(cud))
        except Exception as ex:  # one problem failing is a row, not the end of the run
            row["error"] = str(ex)[:300]
            print(f"  error: {row['error']}  {line}")
            rows.append(row)
            if a.json:
                json.dump(rows, open(a.json, "w"), indent=1)
            continue
        lk, pk = row["lookup"], row["pick"]
        best = min(row["cold"].values())
        row.update(ratio_lookup=row["cudnn_cold"] / row["cold"][lk],
                   ratio_pick=row["cudnn_cold"] / row["cold"][pk],
                   ratio_best=row["cudnn_cold"] / best,
                   ratio_lookup_graph=row["cudnn_graph"] / row["graph"][lk],
                   ratio_pick_graph=row["cudnn_graph"] / row["graph"][pk])
        print(f"{row['cold'][lk]:8.1f} {row['cold'][pk]:8.1f} {best:8.1f} {row['cudnn_cold']:8.1f} | "
              f"{row['graph'][lk]:8.1f} {row['graph'][pk]:8.1f} {row['cudnn_graph']:8.1f}  "
              f"{line[:100]}")
        rows.append(row)
        if a.json:
            json.dump(rows, open(a.json, "w"), indent=1)
    good = [r for r in rows if "ratio_pick" in r]
    sh.print_geomeans(good, [("lookup, cold", "ratio_lookup"), ("first use, cold", "ratio_pick"),
                             ("best of the candidates, cold", "ratio_best"),
                             ("lookup, graph", "ratio_lookup_graph"),
                             ("first use, graph", "ratio_pick_graph")])
    gain = [r["cold"][r["lookup"]] / r["cold"][r["pick"]] for r in good]
    if gain:
        print(f"first use over lookup (cold): geomean {sh.geomean(gain):.3f}, min {min(gain):.3f}, "
              f"picked another config on {sum(r['pick'] != r['lookup'] for r in good)} of "
              f"{len(good)}")
    walls = sorted(r["first_call_s"] for r in good)
    if walls:
        print(f"first call (lookup, compile and load the candidates, time them): median "
              f"{walls[len(walls) // 2]:.2f} s, max {walls[-1]:.2f} s")
    bad = [r for r in rows if "error" in r]
    print(f"{len(good)} timed, {len(bad)} failed")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)
    return 1 if bad else 0


def sh_module():
    import importlib.util
    import os
    spec = importlib.util.spec_from_file_location(
        "same_harness", os.path.join(os.path.dirname(os.path.abspath(__file__)), "same-harness.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


if __name__ == "__main__":
    sys.exit(main())
