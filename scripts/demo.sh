#!/usr/bin/env bash
# Runs ze_sample twice through the zecache layer with a fresh cache directory
# -- cold (every module compiled and stored), then warm in a new process (every
# module from the cache) -- and prints per-module times and what was saved.
# Uses Intel's real driver with a pretend GPU (no GPU needed).
#
#   scripts/demo.sh               install what is missing, build into build/, run
#   scripts/demo.sh BUILD-DIR     run from an existing build
set -euo pipefail
scripts=$(cd "$(dirname "$0")" && pwd)

if [[ $# -eq 0 ]]; then
  cd "$(dirname "$0")/.."
  bash scripts/install-deps.sh
  cmake -S . -B build >/dev/null
  cmake --build build -j "$(nproc)" --target ze_sample ze_cache_layer >build.demo.log 2>&1 ||
    { tail -40 build.demo.log; exit 1; }
fi
build=$(cd "${1:-build}" && pwd)
sample=$build/samples/ze_sample
layers=$build/layers
if [[ ! -x $sample || ! -e $layers/libze_validation_layer.so.1 ]]; then
  echo "demo: build first: cmake --build $build --target ze_sample ze_cache_layer" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/cache"
cd "$work" # the driver writes a small .aub file into the current directory

source "$scripts/pretend-device.sh"
# Every loader (1.8 to 1.2x) finds the layer in the validation layer's slot
# through LD_LIBRARY_PATH; ZEL_LIBRARY_PATH would make 1.2x look for its
# tracing layer only there.
export LD_LIBRARY_PATH=$layers${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ZE_ENABLE_VALIDATION_LAYER=1
export NEO_CACHE_DIR=$work/cache
unset l0_cache_dir

"$sample" > cold.txt
PrintDebugMessages=1 "$sample" > warm.txt 2> warm.log

echo "zecache demo: ze_sample through the layer, $ProductFamilyOverride, cache in a new directory"
awk '
  FNR == NR && $1 == "module" { cold[$2] = $3; order[++n] = $2; next }
  $1 == "module" { warm[$2] = $3 }
  END {
    printf "%-18s %12s %12s %9s\n", "module", "cold ms", "warm ms", "speed-up"
    for (i = 1; i <= n; i++) {
      m = order[i]; c += cold[m]; w += warm[m]
      printf "%-18s %12.3f %12.3f %8.0fx\n", m, cold[m], warm[m], cold[m] / (warm[m] > 0 ? warm[m] : 1e-6)
    }
    printf "%-18s %12.3f %12.3f %8.0fx\n", "all modules", c, w, c / (w > 0 ? w : 1e-6)
  }' cold.txt warm.txt

entries=$(find "$work/cache" -name '*.l0_cache' | wc -l)
bytes=$(find "$work/cache" -name '*.l0_cache' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
echo "cache: $entries entries, $bytes bytes on disk (zstd-compressed)"
grep -o 'summary: .*' warm.log | sed 's/^/warm run /' || true
