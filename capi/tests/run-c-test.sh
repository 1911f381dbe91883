#!/usr/bin/env bash
# Builds the C library (release, lookup only), checks it carries no LLVM, then compiles
# tests/c/test_lookup.c with the system cc against include/convtune.h and runs it, linked
# statically and dynamically. Called by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -p convtune_c
if cargo tree -p convtune_c -e normal --prefix none | grep -E '^(inkwell|llvm-sys|cudarc) '; then
  echo "FAIL: the C library depends on the code generator or the GPU runtime (above)" >&2
  exit 1
fi
lib=target/release
out=target/c-test
mkdir -p "$out"
flags=(-std=c99 -Wall -Wextra -Werror -pedantic -Icapi/include)
cc "${flags[@]}" capi/tests/c/test_lookup.c "$lib/libconvtune_c.a" -lpthread -ldl -lm \
  -o "$out/test_lookup_static"
cc "${flags[@]}" capi/tests/c/test_lookup.c -L"$lib" -lconvtune_c -Wl,-rpath,"$PWD/$lib" \
  -o "$out/test_lookup_shared"
echo "C API test, static library:"
"$out/test_lookup_static"
echo "C API test, shared library:"
"$out/test_lookup_shared"
