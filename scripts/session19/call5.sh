#!/usr/bin/env bash
# Session 19, device call 5 (H200, < 480 s): call 3's steps (scripts/session19/call3.sh:
# selfchecks of the walk and of strided bwd-data, the A/B on the shipped strided entries, the
# tuner's cost of a 4-phase bf16 candidate) on the shipped build, whose persistent walks share
# one consumer body across phases (mma=wg; the producer, and mma=wg1 walks, keep a body per
# phase).
#   Usage (repo root, on the device): [LIMIT=470] bash scripts/session19/call5.sh
exec bash "$(dirname "$0")/call3.sh" "$@"
