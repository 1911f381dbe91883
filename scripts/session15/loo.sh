#!/usr/bin/env bash
# Session 15: the untuned fallback, leave one out, on the entries whose pick this session's
# re-tiling changed (scripts/session15/loo-changed.txt: problem|base pick|new pick|tuned). Each
# config is verified and timed on this GPU as a one-config space (exhaustive, full timing), in
# the same run; prints per problem tuned/base and tuned/new speed, and their geomeans.
#   Usage (repo root, on the device): BIN=... bash scripts/session15/loo.sh [LIST]
set -uo pipefail
BIN=${BIN:-target/release/convtune}
LIST=${1:-scripts/session15/loo-changed.txt}
R=${OUT:-out}/loo; mkdir -p "$R"
python3 - "$BIN" "$LIST" "$R" <<'PY'
import json, math, os, subprocess, sys
bin_, lst, r = sys.argv[1:]
def time_config(tag, problem, config):
    with open(f"{r}/{tag}.space.toml", "w") as space:
        if subprocess.run([bin_, "space", "--problem", problem, "--arch", "sm_90", "--pin", config],
                          stdout=space, stderr=subprocess.DEVNULL).returncode != 0:
            return None
    open(f"{r}/{tag}.txt", "w").write(problem + "\n")
    rep = f"{r}/{tag}.json"
    with open(f"{r}/{tag}.log", "w") as log:
        subprocess.run([bin_, "--problems", f"{r}/{tag}.txt", "--space", f"{r}/{tag}.space.toml",
                        "--strategy", "exhaustive", "--db", f"{r}/db.toml", "--journal", f"{r}/j.jsonl",
                        "--report", rep, "--quiet", "--full-timing"], stdout=log, stderr=log, timeout=60)
    try:
        return json.load(open(rep))[0]["time_us"]
    except Exception:
        return None
rows = [l.rstrip("\n").split("|") for l in open(lst) if l.strip() and not l.startswith("#")]
speeds = {"base": [], "new": []}
for n, (p, old, new, tuned) in enumerate(rows):
    t = {k: time_config(f"{k}{n}", p, c) for k, c in (("tuned", tuned), ("base", old), ("new", new))}
    if not t["tuned"]:
        print(f"tuned config failed: {p}"); continue
    s = {k: (t["tuned"] / t[k] if t[k] else 0.0) for k in ("base", "new")}
    for k in s:
        speeds[k].append(s[k])
    print(f"tuned {t['tuned']:7.1f} us  base {s['base']:.2f}x  new {s['new']:.2f}x  {p}", flush=True)
for k, v in speeds.items():
    if v:
        g = math.exp(sum(math.log(max(x, 1e-3)) for x in v) / len(v))
        print(f"{k}: geomean {g:.3f} of tuned speed over {len(v)} changed picks, min {min(v):.3f}")
PY
rm -f "$R"/*.lock
