#!/usr/bin/env bash
# How good is the untuned fallback, measured honestly (issue 16 item 5): hold out COUNT entries
# of a tuned database, ship the rest as the only database (`--db rest --no-system-db`), ask
# `convtune lookup` for each held-out problem, then time on this GPU, in the same run, the
# looked-up config and the tuned one (each as a one-config search space, verified first).
# Prints per problem tuned/fallback speed (1.0 = as fast as tuned) and the geomean and minimum.
#   Usage: scripts/fallback-holdout.sh [COUNT] [DB] [BIN]
#          (defaults: 6, tuned-db/sm_90.toml, target/release/convtune; OLD_BIN=… also scores
#          another build's lookup, e.g. the one before the ranked fallback)
#   Results: $OUT/holdout/ (holdout.txt, the split database, logs).
set -uo pipefail
cd "$(dirname "$0")/.."
count=${1:-6}
db=${2:-tuned-db/sm_90.toml}
BIN=${3:-target/release/convtune}
OUT=${OUT:-out}
R=$OUT/holdout
mkdir -p "$R"
[ -f "$(dirname "$BIN")/libffi.so.8" ] && export LD_LIBRARY_PATH="$(dirname "$BIN")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
python3 - "$db" "$R" "$count" "$BIN" "${OLD_BIN:-}" <<'PY' | tee "$R/holdout.txt"
import json, math, os, re, subprocess, sys, tomllib
db, r, count, bin_, old_bin = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
text = open(db).read()
head, *blocks = text.split("\n[[entry]]\n")
entries = tomllib.load(open(db, "rb"))["entry"]
assert len(blocks) == len(entries), "one [[entry]] block per entry"
step = max(1, len(entries) // max(1, count))
held = list(range(0, len(entries), step))[:count]
keep = [b for i, b in enumerate(blocks) if i not in held]
head = re.sub(r"entries = \d+", f"entries = {len(keep)}", head)
rest = f"{r}/rest.toml"
open(rest, "w").write(head + "".join("\n[[entry]]\n" + b for b in keep))
arch = tomllib.load(open(db, "rb"))["header"]["arch"]
def lookup(binary, problem):
    o = subprocess.run([binary, "lookup", "--problem", problem, "--arch", arch, "--db", rest,
                        "--no-system-db", "--json"], capture_output=True, text=True)
    if o.returncode != 0:
        return None, "error: " + o.stderr.strip()[-200:]
    j = json.loads(o.stdout)
    return j["config"], j["source"]["kind"]

def time_config(tag, problem, config):
    """The config's verified median on this GPU, µs (None: it failed)."""
    # `convtune space --pin` writes the one-config space (no copy of the field names here)
    # and refuses a config that is not legal for the problem.
    with open(f"{r}/{tag}.space.toml", "w") as space:
        pinned = subprocess.run([bin_, "space", "--problem", problem, "--arch", arch, "--pin",
                                 config], stdout=space, stderr=subprocess.PIPE, text=True)
    if pinned.returncode != 0:
        print(f"  {tag}: {config} not pinned: {pinned.stderr.strip()[-200:]}")
        return None
    open(f"{r}/{tag}.problem.txt", "w").write(problem + "\n")
    rep = f"{r}/{tag}.report.json"
    if os.path.exists(rep):
        os.remove(rep)
    with open(f"{r}/{tag}.log", "w") as log:
        subprocess.run([bin_, "--problems", f"{r}/{tag}.problem.txt", "--space",
                        f"{r}/{tag}.space.toml", "--strategy", "exhaustive", "--db",
                        f"{r}/{tag}.db.toml", "--journal", f"{r}/{tag}.jsonl", "--report", rep,
                        "--quiet", "--full-timing"], stdout=log, stderr=log, timeout=120)
    try:
        return json.load(open(rep))[0]["time_us"]
    except Exception:
        return None

builds = [("new", bin_)] + ([("old", old_bin)] if old_bin else [])
speeds = {b: [] for b, _ in builds}
print(f"held out {len(held)} of {len(entries)} entries of {db}; the rest is the only database")
for n, i in enumerate(held):
    e = entries[i]
    tuned = time_config(f"t{n}", e["problem"], e["config"])
    for b, binary in builds:
        cfg, source = lookup(binary, e["problem"])
        if tuned is None or cfg is None:
            print(f"{b}: {e['problem']}: tuned {tuned}, lookup {source}: skipped")
            continue
        t = tuned if cfg == e["config"] else time_config(f"{b}{n}", e["problem"], cfg)
        s = tuned / t if t else 0.0  # a fallback that fails to run counts as speed 0
        speeds[b].append(s)
        print(f"{b}: {s:5.2f}x of tuned  ({tuned:8.1f} vs {t or float('nan'):8.1f} us, {source})  {e['problem']}")
for b, v in speeds.items():
    if v:
        g = math.exp(sum(math.log(max(x, 1e-3)) for x in v) / len(v))
        print(f"{b}: geomean {g:.3f} of tuned speed, min {min(v):.3f}, {len(v)} problems "
              f"(target: geomean >= 0.95, none below 0.8)")
PY
