#!/usr/bin/env bash
# The test suite. GPU-only tests print a skip message when no GPU is present
# (run them on a GPU machine with scripts/gpu-tests.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --all-features --release "$@"
