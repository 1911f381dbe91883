# Helpers of the GPU check scripts (sourced; bash): scripts/session4/tma-check.sh,
# scripts/session6/im2col-check.sh and scripts/session6/ws-check.sh. Single-config search
# spaces, ptxas/SASS inspection, the A/B table over reports and the journal listing live here
# once, so that each check script only says what it checks. The tma_* functions need BIN (the
# convtune binary), R (the results folder), S (the summary file) and a `log` function; all run
# from the repo root.

PTXAS=${PTXAS:-$(command -v ptxas || ls /usr/local/cuda*/bin/ptxas 2>/dev/null | head -1)}
CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)}

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

# tma_ptxas NAME PROBLEM CONFIG-FIELDS: compiles the ld=tma kernel, counts its im2col/tile TMA
# and cp.async.cg copies, and (with ptxas) adds ptxas_report's line.
tma_ptxas() {
  local name=$1 prob=$2 cfg=$3
  "$BIN" compile --arch sm_90 --problem "$prob" --config "v3:$cfg,red=atomic,ld=tma" -o "$R/$name.ptx" > "$R/$name.compile.txt" 2>&1 \
    || { log "$name: compile refused: $(tail -1 "$R/$name.compile.txt")"; return; }
  local im tile cp
  im=$(grep -c "global.im2col" "$R/$name.ptx"); tile=$(grep -c "global.tile" "$R/$name.ptx"); cp=$(grep -c "cp.async.cg" "$R/$name.ptx")
  if [ -x "$PTXAS" ]; then
    log "$name: PTX im2col/tile/cp.async.cg copies $im/$tile/$cp; $(ptxas_report "$name" "$R/$name.ptx" "$R")"
    grep -i "warn" "$R/$name.ptxas.txt" | head -3 | sed 's/^/    /' | tee -a "$S"
  else
    log "$name: PTX im2col/tile/cp.async.cg copies $im/$tile/$cp (ptxas not found)"
  fi
}

# worker_run NAME PROBLEM CONFIG-FIELDS LD [TIMEOUT]: the config with that ld through the
# tuner's worker (every candidate is checked against the reference kernel; a hung pipeline is the
# worker's measure timeout, recorded in the journal) into R's db/journal/report/log-LD files.
worker_run() {
  local name=$1 prob=$2 cfg=$3 ld=$4 t=${5:-60}
  mkdir -p "$R/spaces"
  echo "$prob" > "$R/spaces/$name.txt"
  space check "$cfg" "ld=$ld" > "$R/spaces/$name-$ld.toml"
  timeout "$t" "$BIN" --problems "$R/spaces/$name.txt" --space "$R/spaces/$name-$ld.toml" \
    --arch sm_90 --strategy exhaustive --quiet --db "$R/db-$ld.toml" \
    --journal "$R/journal-$ld.jsonl" --report "$R/report-$ld.json" >> "$R/log-$ld.txt" 2>&1
  log "$name ld=$ld: exit $? (${SECONDS} s)"
}

# tma_ab NAME PROBLEM CONFIG-FIELDS [TIMEOUT]: worker_run with ld=cp and ld=tma.
tma_ab() {
  local ld
  for ld in cp tma; do worker_run "$1" "$2" "$3" "$ld" "${4:-60}"; done
}

# tables LD...: ab_table over R's reports of those lds, then every journal entry.
tables() {
  ab_table "$R" "$@" | tee -a "$S"
  log "-- every measured candidate (journals): outcome, time, config, problem"
  journals "$R" | tee -a "$S"
}

# cudnn_compare LD SECONDS: cuDNN and the bf16 matmul rate on the ld=LD report's problems.
cudnn_compare() {
  timeout "${2:-240}" python3 scripts/compare-cudnn.py --convtune "$R/report-$1.json" --json "$R/cudnn.json" > "$R/compare.txt" 2>&1
  log "compare-cudnn exit $?"
  tail -n 14 "$R/compare.txt" | tee -a "$S"
}
