#!/usr/bin/env bash
# Tunes a problem list across a Slurm cluster: submits tune-array.sbatch as an N-task array (one
# shard and one GPU per task) and merge.sbatch as a job that starts only when every task
# succeeded (afterok), checks coverage and merges the shard databases into OUTDIR/merged.toml.
#
# Usage: scripts/slurm/submit.sh LIST OUTDIR N [convtune args...]
#   e.g. scripts/slurm/submit.sh scripts/suites/resnet50.txt /shared/tune 8 --budget 64
#        GRES= scripts/slurm/submit.sh six.txt /tmp/out 3 --dry-run --arch gfx90a --budget 4
# Env:
#   GRES        unset: one GPU per task (the script's gpu:1); a value: --gres=VALUE instead;
#               empty or "none": no GPU request (Slurm without GPUs configured, dry runs).
#   CONVTUNE    convtune binary (default: this checkout's target/release/convtune, else PATH).
#               LIST, OUTDIR and the binary must be on a file system every node sees.
#   SBATCH_OPTS extra sbatch options for both jobs, e.g. "--partition=gpu --account=me".
#   WAIT=1      block until the merge job ends and print its output (exit status is its own).
set -euo pipefail

[[ $# -ge 3 ]] || { sed -n '6,8p' "$0" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
list=$(realpath "$1")
out=$(realpath -m "$2")
n=$3
shift 3
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "submit.sh: N must be a positive integer, got '$n'" >&2; exit 2; }
[[ -r $list ]] || { echo "submit.sh: cannot read $list" >&2; exit 2; }

# Absolute binary path: the jobs run from a spool copy of the script, not from this checkout.
if [[ -z ${CONVTUNE:-} ]]; then
    CONVTUNE=$here/../../target/release/convtune
    [[ -x $CONVTUNE ]] || CONVTUNE=$(command -v convtune) ||
        { echo "submit.sh: no convtune binary; set CONVTUNE" >&2; exit 2; }
fi
CONVTUNE=$(realpath "$CONVTUNE")

gres=()
if [[ -v GRES ]]; then gres=(--gres="${GRES:-none}"); fi
read -r -a opts <<<"${SBATCH_OPTS:-}"
mkdir -p "$out"

array=$(sbatch --parsable "${opts[@]}" "${gres[@]}" --array="0-$((n - 1))" \
    --export="ALL,CONVTUNE=$CONVTUNE" --output="$out/slurm-tune-%A_%a.out" \
    "$here/tune-array.sbatch" "$list" "$out" "$@")
array=${array%%;*} # --parsable prints "jobid[;cluster]"
echo "array job $array: $n task(s) over $list -> $out"

wait_opt=()
if [[ ${WAIT:-0} == 1 ]]; then wait_opt=(--wait); fi
merge_out="$out/slurm-merge-%j.out"
# kill-on-invalid-dep: if a shard fails, the merge job is cancelled rather than left pending.
set +e
merge=$(sbatch --parsable "${opts[@]}" "${wait_opt[@]}" --dependency="afterok:$array" \
    --kill-on-invalid-dep=yes --export="ALL,CONVTUNE=$CONVTUNE" --output="$merge_out" \
    "$here/merge.sbatch" "$list" "$out" "$n")
rc=$?
set -e
merge=${merge%%;*}
[[ -n $merge ]] || { echo "submit.sh: merge job not submitted (array $array stays)" >&2; exit 1; }
echo "merge job $merge (after all of $array succeed) -> ${merge_out/\%j/$merge}"
if [[ ${WAIT:-0} == 1 ]]; then
    # sbatch --wait exits 0 for a merge job cancelled because a shard failed: ask for its state.
    squeue --states=all --jobs="$array,$merge" -o "%.10i %.16j %.10T %.10M %R" || true
    cat "${merge_out/\%j/$merge}" 2>/dev/null || true
    state=$(scontrol show job "$merge" | grep -o 'JobState=[A-Z_]*' || true)
    [[ $rc -eq 0 && $state == JobState=COMPLETED ]] ||
        { echo "submit.sh: merge job $merge ${state:-state unknown}" >&2; exit 1; }
fi
