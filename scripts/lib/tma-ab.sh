# Sourced by the TMA device checks (scripts/session4/tma-check.sh,
# scripts/session6/im2col-check.sh): one-config search spaces, ptxas/SASS inspection, the
# ld=cp vs ld=tma verification and timing through the tuner's worker, and the summary tables.
# Needs BIN (the convtune binary), R (the results folder), S (the summary file) and a log
# function `log`; runs from the repo root.

# tma_space CONFIG-FIELDS LD: a one-config space file (the config with its ld replaced).
tma_space() {
  python3 - "$1" "$2" <<'PY'
import sys
names = {"bm": "block_m", "bn": "block_n", "bk": "block_k", "wm": "warp_m", "wn": "warp_n",
         "st": "stages", "va": "vec_a", "vb": "vec_b", "vc": "vec_c", "lds": "lds",
         "sk": "split_k", "rs": "raster", "mma": "mma"}
fields = dict(f.split("=") for f in sys.argv[1].split(","))
fields["ld"] = sys.argv[2]
print('name = "tma-check"\nvendor = "nvidia"\n[params]')
for k, v in fields.items():
    key = names.get(k, k)
    print(f'{key} = ["{v}"]' if k in ("lds", "mma", "ld") else f"{key} = [{v}]")
print("[constraints]\nmax_threads = 1024\nmin_warps = 1\nmax_warps = 32")
PY
}

PTXAS=$(command -v ptxas || ls /usr/local/cuda*/bin/ptxas 2>/dev/null | head -1)
CUOBJDUMP=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)

# tma_ptxas NAME PROBLEM CONFIG-FIELDS: compiles the ld=tma kernel, runs ptxas -arch=sm_90a -v
# (wgmma serialisation warnings C7510/C7511/C7515 are failures) and counts SASS lines.
tma_ptxas() {
  local name=$1 prob=$2 cfg=$3
  "$BIN" compile --arch sm_90 --problem "$prob" --config "v3:$cfg,red=atomic,ld=tma" -o "$R/$name.ptx" > "$R/$name.compile.txt" 2>&1 \
    || { log "$name: compile refused: $(tail -1 "$R/$name.compile.txt")"; return; }
  local im=$(grep -c "global.im2col" "$R/$name.ptx") tile=$(grep -c "global.tile" "$R/$name.ptx") cp=$(grep -c "cp.async.cg" "$R/$name.ptx")
  if [ -x "$PTXAS" ]; then
    "$PTXAS" -arch=sm_90a -v -o "$R/$name.cubin" "$R/$name.ptx" > "$R/$name.ptxas.txt" 2>&1
    local rc=$? w=$(grep -c -E "C751[015]|serializ" "$R/$name.ptxas.txt")
    local regs=$(grep -o "Used [0-9]* registers" "$R/$name.ptxas.txt" | head -1)
    local sass="" utma="?" hg="?"
    if [ -x "$CUOBJDUMP" ]; then
      sass=$("$CUOBJDUMP" --dump-sass "$R/$name.cubin" 2>/dev/null)
      utma=$(grep -c "UTMALDG" <<< "$sass"); hg=$(grep -c "HGMMA" <<< "$sass")
    fi
    log "$name: PTX im2col/tile/cp.async.cg copies $im/$tile/$cp; ptxas exit $rc, serialisation warnings $w, $regs, SASS UTMALDG $utma HGMMA $hg"
    grep -i "warn" "$R/$name.ptxas.txt" | head -3 | sed 's/^/    /' | tee -a "$S"
  else
    log "$name: PTX im2col/tile/cp.async.cg copies $im/$tile/$cp (ptxas not found)"
  fi
}

# tma_ab NAME PROBLEM CONFIG-FIELDS [TIMEOUT]: verification and timing of the config with
# ld=cp and ld=tma through the tuner's worker (every candidate is checked against the
# reference kernel; a hung pipeline is the worker's measure timeout, recorded in the journal).
tma_ab() {
  local name=$1 prob=$2 cfg=$3 t=${4:-60}
  mkdir -p "$R/spaces"
  echo "$prob" > "$R/spaces/$name.txt"
  for ld in cp tma; do
    tma_space "$cfg" "$ld" > "$R/spaces/$name-$ld.toml"
    timeout "$t" "$BIN" --problems "$R/spaces/$name.txt" --space "$R/spaces/$name-$ld.toml" \
      --arch sm_90 --strategy exhaustive --quiet --db "$R/db-$ld.toml" \
      --journal "$R/journal-$ld.jsonl" --report "$R/report-$ld.json" >> "$R/log-$ld.txt" 2>&1
    log "$name ld=$ld: exit $?"
  done
}

# tma_tables: the A/B table of the two reports and every journal entry.
tma_tables() {
  python3 - "$R" <<'PY' | tee -a "$S"
import json, sys
r = sys.argv[1]
def load(ld):
    try:
        return {x["problem"]: x for x in json.load(open(f"{r}/report-{ld}.json"))}
    except Exception as e:
        print(f"report-{ld}: {e}")
        return {}
cp, tma = load("cp"), load("tma")
print(f"{'cp us':>9} {'tma us':>9} {'cp/tma':>7}  {'tma TFLOP/s':>11}  problem")
for p in sorted(set(cp) | set(tma)):
    a, b = cp.get(p, {}).get("time_us"), tma.get(p, {}).get("time_us")
    ratio = f"{a / b:7.3f}" if a and b else "      -"
    tf = tma.get(p, {}).get("tflops")
    print(f"{a or float('nan'):9.1f} {b or float('nan'):9.1f} {ratio}  {tf or float('nan'):11.1f}  {p}")
PY
  log "-- every measured candidate (journals): outcome, time, config, problem"
  python3 - "$R" <<'PY' | tee -a "$S"
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

# tma_cudnn SECONDS: cuDNN and the bf16 matmul rate on the ld=tma report's problems.
tma_cudnn() {
  timeout "${1:-240}" python3 scripts/compare-cudnn.py --convtune "$R/report-tma.json" --json "$R/cudnn.json" > "$R/compare.txt" 2>&1
  tail -n 14 "$R/compare.txt" | tee -a "$S"
}
