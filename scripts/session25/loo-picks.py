#!/usr/bin/env python3
"""Offline (no GPU): for every entry of a database matching --only, the lookup's pick with that
entry left out, beside the tuned config, field by field. Shows which fields the fallback gets
wrong before anything is timed.
  Usage: scripts/session25/loo-picks.py [--db tuned-db/sm_90.toml] [--bin target/release/convtune]
         [--only REGEX] [--out out/loo-picks]
"""
import argparse, json, os, re, subprocess, tomllib

ap = argparse.ArgumentParser()
ap.add_argument("--db", default="tuned-db/sm_90.toml")
ap.add_argument("--bin", default="target/release/convtune")
ap.add_argument("--only", default="")
ap.add_argument("--out", default="out/loo-picks")
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
text = open(a.db).read()
head, *blocks = text.split("\n[[entry]]\n")
doc = tomllib.load(open(a.db, "rb"))
entries, arch = doc["entry"], doc["header"]["arch"]
fields = lambda c: dict(kv.split("=") for kv in c.split(":", 1)[1].split(","))
for i, e in enumerate(entries):
    if not re.search(a.only, e["problem"]):
        continue
    path = f"{a.out}/loo{i}.toml"
    keep = [b for j, b in enumerate(blocks) if j != i]
    h = re.sub(r"entries = \d+", f"entries = {len(keep)}", head)
    open(path, "w").write(h + "".join("\n[[entry]]\n" + b for b in keep))
    o = subprocess.run([a.bin, "lookup", "--problem", e["problem"], "--arch", arch, "--db", path,
                        "--no-system-db", "--json"], capture_output=True, text=True)
    if o.returncode:
        print(i, "error", o.stderr[-200:]); continue
    j = json.loads(o.stdout)
    t, p = fields(e["config"]), fields(j["config"])
    diff = " ".join(f"{k}:{t.get(k)}->{p.get(k)}" for k in sorted(set(t) | set(p)) if t.get(k) != p.get(k))
    print(f"{i}\t{e['time_us']:.1f}\t{j['source']['kind']}\t{e['problem']}\t{diff}")
