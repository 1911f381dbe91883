#!/usr/bin/env bash
# The long fuzz run (issue 18): N generated problem lines, databases and search spaces (60/30/10 %)
# through the library's parsers; prints inputs, acceptances, panics, inputs over 2 s, the slowest
# input per kind and peak RSS. Exits 1 on any panic or slow input.
#   scripts/fuzz.sh [N=1000000] [SEED=18]
# The same generators run as property tests in CI (tests/robustness.rs, PROPTEST_CASES scales).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --example fuzz
exec target/release/examples/fuzz "${1:-1000000}" "${2:-18}"
