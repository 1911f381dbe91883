#!/usr/bin/env bash
# Builds the C library (release, lookup only), checks it carries no LLVM, then compiles
# tests/c/test_lookup.c with the system cc against include/convtune.h and runs it, linked
# statically and dynamically; then tests/c/test_tensor_map.c (the tensor maps of seed 003's
# ld=tma kernel, read from the manifest that `convtune compile --manifest` writes, encoded by
# the header's inline helper over a recording stand-in for the driver). Called by
# scripts/test.sh (after its cargo test, whose build of the CLI this reuses).
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
# Seed 003's entry in the shipped database, the home device's (a lookup that names no GPU
# serves it; scripts/lib/tuned_db.py).
shipped=$(python3 - <<'PY'
import sys
sys.path.insert(0, "scripts/lib")
from tuned_db import load
key = ("convbfp16 -F 2 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 -j 1 "
       "-g 1 -I NHWGC -f GKYXC -O NHWGC")
print(next((e["config"] for e in load("tuned-db/sm_90.toml")[2] if e["problem"] == key), ""))
PY
)
[ -n "$shipped" ] || { echo "FAIL: seed 003 is not in tuned-db/sm_90.toml" >&2; exit 1; }
echo "C API test, static library:"
"$out/test_lookup_static" "$shipped"
echo "C API test, shared library:"
"$out/test_lookup_shared" "$shipped"
# Tensor maps: the CLI (all features, as scripts/test.sh's cargo test builds it) writes the
# manifest of an ld=tma config of seed 003's shape on an odd width (511: dy's last column pair
# reads past its 255 pixels, so dy goes through an im2col map; on seed 003's 512 it is a plain
# tiled matrix); the C test reads it through the library.
cargo build --release --all-features --bin convtune
target/release/convtune compile --arch sm_90 --no-system-db \
  --problem "convbfp16 -n 16 -c 2048 -H 1 -W 511 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 -j 1 -g 1 -F 2 --layout NHWC" \
  --config "v3:bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=2,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=tma" \
  -o "$out/seed003.ptx" --manifest "$out/seed003.json" > /dev/null
cc "${flags[@]}" capi/tests/c/test_tensor_map.c "$lib/libconvtune_c.a" -lpthread -ldl -lm \
  -o "$out/test_tensor_map"
echo "C API test, tensor maps:"
"$out/test_tensor_map" "$out/seed003.json"
