#!/usr/bin/env bash
# Runs real programs twice through zecache with a fresh cache directory --
# cold (every module compiled and stored), then warm in a new process (every
# module from the cache) -- and prints per-module times and what was saved:
# ze_sample through the Level Zero layer, then cl_bench building the same
# kernels from OpenCL C source through the OpenCL layer (zecache exec).
# Uses Intel's real driver with a pretend GPU (no GPU needed).
#
#   scripts/demo.sh               install what is missing, build into build/, run
#   scripts/demo.sh BUILD-DIR     run from an existing build
#   scripts/demo.sh --installed BUILD-DIR
#                                 run the installed zecache (PATH) and the layers
#                                 it finds (zecache exec), with BUILD-DIR's programs
set -euo pipefail
scripts=$(cd "$(dirname "$0")" && pwd)

installed=0
if [[ ${1:-} == --installed ]]; then
  installed=1
  shift
elif [[ $# -eq 0 ]]; then
  cd "$(dirname "$0")/.."
  bash scripts/install-deps.sh
  cmake -S . -B build >/dev/null
  cmake --build build -j "$(nproc)" --target ze_sample ze_cache_layer cl_bench zecache_opencl_layer zecache_tool >build.demo.log 2>&1 ||
    { tail -40 build.demo.log; exit 1; }
fi
build=$(cd "${1:-build}" && pwd)
sample=$build/samples/ze_sample
layers=$build/layers
cl_bench=$build/bin/cl_bench
if [[ $installed == 1 ]]; then
  zecache=$(command -v zecache) || { echo "demo: no zecache on PATH: install it first" >&2; exit 1; }
  # Both programs through zecache exec, which finds the installed layers
  # beside the installed tool.
  through_layer=("$zecache" exec --)
else
  zecache=$build/bin/zecache
  if [[ ! -x $sample || ! -e $layers/libze_validation_layer.so.1 ]]; then
    echo "demo: build first: cmake --build $build --target ze_sample ze_cache_layer" >&2
    exit 1
  fi
  through_layer=()
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/cache"
cd "$work" # the driver writes a small .aub file into the current directory

source "$scripts/pretend-device.sh"
if [[ $installed == 0 ]]; then
  # Every loader (1.8 to 1.2x) finds the layer in the validation layer's slot
  # through LD_LIBRARY_PATH; ZEL_LIBRARY_PATH would make 1.2x look for its
  # tracing layer only there.
  export LD_LIBRARY_PATH=$layers${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export ZE_ENABLE_VALIDATION_LAYER=1
fi
export NEO_CACHE_DIR=$work/cache
unset l0_cache_dir

"${through_layer[@]}" "$sample" > cold.txt
PrintDebugMessages=1 "${through_layer[@]}" "$sample" > warm.txt 2> warm.log

echo "zecache demo: ze_sample through the layer, $ProductFamilyOverride, cache in a new directory"
if [[ $installed == 1 ]]; then
  "$zecache" exec -- sh -c 'echo "installed: $0, layers from ${LD_LIBRARY_PATH%%:*}"' "$zecache"
fi
# times_table WORD FIELD COLD WARM: the lines "WORD <name> ..." of both runs,
# their times in field FIELD, side by side with the speed-up.
times_table() {
  awk -v word="$1" -v f="$2" '
    FNR == NR && $1 == word { cold[$2] = $f; order[++n] = $2; next }
    $1 == word { warm[$2] = $f }
    END {
      printf "%-18s %12s %12s %9s\n", word, "cold ms", "warm ms", "speed-up"
      for (i = 1; i <= n; i++) {
        m = order[i]; c += cold[m]; w += warm[m]
        printf "%-18s %12.3f %12.3f %8.0fx\n", m, cold[m], warm[m], cold[m] / (warm[m] > 0 ? warm[m] : 1e-6)
      }
      printf "%-18s %12.3f %12.3f %8.0fx\n", "all " word "s", c, w, c / (w > 0 ? w : 1e-6)
    }' "$3" "$4"
}
times_table module 3 cold.txt warm.txt

entries=$(find "$work/cache" -name '*.l0_cache' | wc -l)
bytes=$(find "$work/cache" -name '*.l0_cache' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
echo "cache: $entries entries, $bytes bytes on disk (zstd-compressed)"
grep -o 'summary: .*' warm.log | sed 's/^/warm run /' || true

# OpenCL: the same kernels from OpenCL C source, built by cl_bench through
# `zecache exec`, which enables the OpenCL layer (OPENCL_LAYERS) and keeps the
# driver's own OpenCL cache off; the same cache directory holds .cl_cache
# entries beside the .l0_cache ones.
if [[ -x $cl_bench && -x $zecache ]]; then
  kernels=$(cd "$scripts/../samples/kernels" && pwd)
  "$zecache" exec -- "$cl_bench" --platform Intel "$kernels" > cl_cold.txt
  PrintDebugMessages=1 "$zecache" exec -- "$cl_bench" --platform Intel "$kernels" \
    > cl_warm.txt 2> cl_warm.log
  echo
  echo "zecache demo: cl_bench (clCreateProgramWithSource + clBuildProgram) through the OpenCL layer"
  times_table program 4 cl_cold.txt cl_warm.txt
  echo "cache: $(find "$work/cache" -name '*.cl_cache' | wc -l) OpenCL entries beside $entries Level Zero ones"
  grep -o 'summary: .*' cl_warm.log | tail -1 | sed 's/^/warm run /' || true
fi
