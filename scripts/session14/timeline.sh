#!/usr/bin/env bash
# Session 14, device call 4 (H200, < 120 s): where the tuner's measured time of a 3-launch
# bwd-weight 1x1 plan (zero, GEMM, split-K finish) goes. Nsight Systems traces the pinned
# config's timed runs; the GPU trace's last rows show each kernel's in-stream duration and the
# gaps between them, to set beside the event-timed median and Nsight Compute's isolated
# durations (scripts/session14/diag.sh). Results: $OUT/timeline.txt.
#   Usage (repo root, on the device): bash scripts/session14/timeline.sh
set -uo pipefail
. scripts/session11/lib.sh
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
say "nsys=$NSYS"
R=/tmp/tl; mkdir -p "$R"
P="convbfp16 -F 4 -n 64 -c 128 -H 28 -W 28 -k 512 -y 1 -x 1 --layout NHWC"
C="v2:bm=128,bn=64,bk=64,wm=64,wn=64,st=8,va=8,vb=8,vc=8,lds=swz,sk=16,rs=1,mma=wg1"
echo "$P" > "$R/p.txt"
"$B" space --problem "$P" --arch sm_90 --pin "$C" > "$R/s.toml"
timeout 60 "$NSYS" profile --trace=cuda --sample=none --cpuctxsw=none -o "$R/tl" --force-overwrite true \
  "$B" --problems "$R/p.txt" --space "$R/s.toml" --strategy exhaustive --full-timing --db "$R/db.toml" \
  --journal "$R/j.jsonl" --quiet > "$R/run.txt" 2>&1
say "nsys rc=$? $(grep -h summary: "$R/run.txt" | grep -o 'best [0-9.]* us')"
timeout 60 "$NSYS" stats --report cuda_gpu_trace --format csv -o "$R/trace" "$R/tl.nsys-rep" > /dev/null 2>&1
ls "$R" | tee -a "$S"
python3 - "$R" <<'PY' | tee -a "$S"
import csv, glob, sys, statistics
f = sorted(glob.glob(sys.argv[1] + "/trace*.csv"))[0]
rows = list(csv.DictReader(open(f)))
key = lambda r, *ks: next((r[k] for k in ks if k in r), "")
ev = [(int(key(r, "Start (ns)", "Start")), int(key(r, "Duration (ns)", "Duration")), key(r, "Name")) for r in rows]
ev.sort()
# the timed runs: the last 40 rows
for s, d, n in ev[-24:]:
    print(f"{s/1000:14.2f} us  dur {d/1000:8.2f} us  {n[:60]}")
# per-run gaps: between a memset's end and the next finish kernel's end
runs = []
for i, (s, d, n) in enumerate(ev):
    if "splitk_finish" in n:
        j = i
        while j > 0 and "memset" not in ev[j][2].lower() and "memset" not in ev[j][2]:
            j -= 1
        if j > 0:
            runs.append(((s + d) - (ev[j][0] + ev[j][1])) / 1000)
if runs:
    print(f"flush end -> finish end, median of {len(runs)}: {statistics.median(runs):.2f} us")
for name in ("convtune_zero", "convtune_gemm", "splitk_finish", "memset", "Memset"):
    ds = [d / 1000 for s, d, n in ev if name in n]
    if ds:
        print(f"{name:16} n={len(ds):4} median {statistics.median(ds):8.2f} us")
PY
