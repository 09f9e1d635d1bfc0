#!/usr/bin/env bash
# bench_record.sh [BUILD_DIR] [RUNS]: what recording inputs costs (issue 17).
# Compiles the benchmark kernels cold through the layer RUNS times (fresh
# cache directory each time, pretend Tiger Lake device) and prints:
#   - the time recording took on each miss against the compile it follows
#     (the layer's own measurement, PrintDebugMessages), as a ratio;
#   - the bytes of recorded inputs (.recipe and .spirv files) against the
#     bytes of the entries (.l0_cache), as a ratio.
#   needs: cmake --build <build-dir> --target ze_bench
set -euo pipefail

build=$(cd "${1:-build}" && pwd)
runs=${2:-3}
bench=$build/bin/ze_bench
kernels=$build/bench/layer_kernels
layers=$build/layers
if [[ ! -x $bench || ! -e $layers/libze_validation_layer.so.1 || ! -d $kernels ]]; then
  echo "bench_record: build first: cmake --build $build --target ze_bench" >&2
  exit 1
fi
source "$(dirname "$0")/../scripts/pretend-device.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

record_ms=0 compile_ms=0 misses=0
for ((run = 0; run < runs; run++)); do
  cache=$work/cache$run
  mkdir -p "$cache"
  LD_LIBRARY_PATH=$layers ZE_ENABLE_VALIDATION_LAYER=1 NEO_CACHE_DIR=$cache PrintDebugMessages=1 \
    "$bench" "$kernels" >/dev/null 2>"$work/log$run"
  read -r r c n < <(awk '/inputs of .* recorded in/ {
      for (i = 1; i <= NF; i++) { if ($i == "in") r += $(i + 1); if ($i == "a") c += $(i + 1) }
      n++ } END { printf "%f %f %d\n", r, c, n }' "$work/log$run")
  record_ms=$(awk -v a="$record_ms" -v b="$r" 'BEGIN { print a + b }')
  compile_ms=$(awk -v a="$compile_ms" -v b="$c" 'BEGIN { print a + b }')
  misses=$((misses + n))
done
size_of() { find "$work/cache0" -name "$1" -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
entries=$(size_of '*.l0_cache')
inputs=$(($(size_of '*.recipe') + $(size_of '*.spirv')))
echo "modules recorded: $misses over $runs cold runs of $(ls "$kernels" | wc -l) kernels"
awk -v r="$record_ms" -v c="$compile_ms" 'BEGIN {
  printf "recording: %.3f ms against %.3f ms of compiling: ratio %.4f (%.2f%%)\n", r, c, r / c, 100 * r / c }'
awk -v i="$inputs" -v e="$entries" 'BEGIN {
  printf "recorded inputs: %d bytes against %d bytes of entries: ratio %.3f\n", i, e, i / e }'
