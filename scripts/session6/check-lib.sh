# Helpers of the session's GPU check scripts (sourced; bash). The single-config search spaces,
# the A/B table over reports and the journal listing that scripts/session4/tma-check.sh wrote
# inline, shared so that each check script only says what it checks.

# space NAME CONFIG-FIELDS [KEY=VALUE ...] -> a search-space file on stdout holding exactly that
# config (fields as in a config string without the version, e.g. "bm=128,...,mma=wg"); each
# KEY=VALUE overrides or adds a field (ld=ws).
space() {
  python3 - "$@" <<'PY'
import sys
names = {"bm": "block_m", "bn": "block_n", "bk": "block_k", "wm": "warp_m", "wn": "warp_n",
         "st": "stages", "va": "vec_a", "vb": "vec_b", "vc": "vec_c", "lds": "lds",
         "sk": "split_k", "rs": "raster", "mma": "mma", "red": "red", "ld": "ld"}
fields = dict(f.split("=") for f in sys.argv[2].split(","))
fields.update(dict(kv.split("=") for kv in sys.argv[3:]))
print(f'name = "{sys.argv[1]}"\nvendor = "nvidia"\n[params]')
for k, v in fields.items():
    key = names.get(k, k)
    print(f'{key} = ["{v}"]' if k in ("lds", "mma", "ld", "red") else f"{key} = [{v}]")
print("[constraints]\nmax_threads = 1024\nmin_warps = 1\nmax_warps = 32")
PY
}

# ab_table DIR LD... -> one line per problem: each DIR/report-LD.json's time, the ratios to the
# first, and the last one's TFLOP/s.
ab_table() {
  python3 - "$@" <<'PY'
import json, sys
r, lds = sys.argv[1], sys.argv[2:]
def load(ld):
    try:
        return {x["problem"]: x for x in json.load(open(f"{r}/report-{ld}.json"))}
    except Exception as e:
        print(f"report-{ld}: {e}")
        return {}
reps = {ld: load(ld) for ld in lds}
print("".join(f"{ld + ' us':>10}" for ld in lds)
      + "".join(f"{lds[0] + '/' + ld:>9}" for ld in lds[1:]) + f"  {lds[-1] + ' TFLOP/s':>12}  problem")
for p in sorted(set().union(*reps.values())):
    t = [reps[ld].get(p, {}).get("time_us") for ld in lds]
    ratios = "".join(f"{t[0] / x:9.3f}" if t[0] and x else "        -" for x in t[1:])
    tf = reps[lds[-1]].get(p, {}).get("tflops")
    print("".join(f"{x or float('nan'):10.1f}" for x in t) + ratios
          + f"  {tf or float('nan'):12.1f}  {p}")
PY
}

# journals DIR -> every measured candidate of DIR/journal-*.jsonl: outcome, time, config,
# problem (a timeout or a failed check shows here with its detail).
journals() {
  python3 - "$1" <<'PY'
import glob, json, sys
for f in sorted(glob.glob(f"{sys.argv[1]}/journal-*.jsonl")):
    for line in open(f):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        o = d.get("outcome")
        kind = o if isinstance(o, str) else next(iter(o or {"?": 0}))
        detail = "" if kind == "Ok" or isinstance(o, str) else str(o[kind])[:120]
        print(f"{f.split('/')[-1]:24} {kind:12} {d.get('time_us') or 0:9.1f}  {d.get('config')}  {d.get('problem_key', '')[:70]} {detail}")
PY
}

# ptxas_report NAME PTX DIR -> one line: ptxas -arch=sm_90a -v exit status, the warnings that
# mean a wgmma pipeline was serialised (C7510/C7511/C7514/C7515) or setmaxnreg ignored (C7508),
# registers, and HGMMA / UTMALDG counts in the SASS. Needs PTXAS (and CUOBJDUMP) set.
ptxas_report() {
  local name=$1 ptx=$2 dir=$3
  "$PTXAS" -arch=sm_90a -v -o "$dir/$name.cubin" "$ptx" > "$dir/$name.ptxas.txt" 2>&1
  local rc=$?
  local ser ign regs hg tl
  ser=$(grep -c -E "C751[0145]|serializ" "$dir/$name.ptxas.txt")
  ign=$(grep -c -E "C7508" "$dir/$name.ptxas.txt")
  regs=$(grep -o "Used [0-9]* registers" "$dir/$name.ptxas.txt" | head -1)
  if [ -x "$CUOBJDUMP" ]; then
    "$CUOBJDUMP" --dump-sass "$dir/$name.cubin" > "$dir/$name.sass" 2>/dev/null
    hg=$(grep -c HGMMA "$dir/$name.sass"); tl=$(grep -c UTMALDG "$dir/$name.sass")
  fi
  echo "$name: ptxas exit $rc, serialisation warnings (C7510/11/14/15) $ser, setmaxnreg ignored (C7508) $ign, $regs, HGMMA ${hg:-?}, UTMALDG ${tl:-?}"
}
