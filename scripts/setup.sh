#!/usr/bin/env bash
# Installs the system packages the build needs (Debian 12): LLVM 19 for codegen (linked
# statically, which also needs Polly and zstd), lld to link AMDGPU code objects, and the HIP
# headers so the `hip` feature keeps compiling.
set -euo pipefail
pkgs=(llvm-19-dev libpolly-19-dev libzstd-dev zlib1g-dev libxml2-dev lld-19 libamdhip64-dev)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true
