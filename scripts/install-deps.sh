#!/usr/bin/env bash
# Installs the Debian 12 packages zecache needs to build and test. Idempotent:
# when every package is already installed it changes nothing and touches no
# network.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libzstd-dev libssl-dev spirv-tools libcriterion-dev
  libze1 libze-dev
  clang-14 llvm-spirv-14 libclang-rt-14-dev
  intel-opencl-icd libigc1 libigdfcl1
  python3 clang-format
  redis-server libhiredis-dev
  openssl redis-tools libcurl4-openssl-dev nginx-core libnginx-mod-http-dav-ext
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo python3-pyopencl
  clblast-tests python3-gpyfft clpeak
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
