#!/usr/bin/env bash
# What the layer adds to the calls it wraps so that hits answer image
# arguments as compiles do (level_zero_layer/layer_image_arguments.c):
# zeKernelSetArgumentValue, zeKernelCreate/Destroy, zeImageCreate/Destroy,
# in ns per call (bin/ze_bench_arguments), on an image module and on one
# without images, side by side:
#
#   driver  the driver alone, module compiled from SPIR-V (no layer)
#   hit     the layer, warm: the module is a disk hit
#   floor   the module made from its native binary, no layer
#
# and the ratio hit / floor. An image module's hit pays a hash lookup per
# call; a module without images pays one atomic load.
#
#   bench/bench_arguments.sh [build-dir]     (default: build)
#   needs: cmake --build <build-dir> --target ze_bench ze_bench_arguments
set -euo pipefail

build=$(cd "${1:-build}" && pwd)
args=$build/bin/ze_bench_arguments
kernels=$build/bench/layer_kernels
if [[ ! -x $args || ! -x $build/bin/ze_bench ]]; then
  echo "bench_arguments: build first: cmake --build $build --target ze_bench ze_bench_arguments" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/../scripts/pretend-device.sh"
unset l0_cache_dir NEO_CACHE_DIR ZE_ENABLE_VALIDATION_LAYER ZE_ENABLE_LAYERS ZEL_LIBRARY_PATH
export NEO_CACHE_PERSISTENT=0
layer=(env "LD_LIBRARY_PATH=$build/layers${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  ZE_ENABLE_VALIDATION_LAYER=1 NEO_CACHE_PERSISTENT=1 "NEO_CACHE_DIR=$work/cache")
cd "$work"

# module kernel image-index buffer-index
cases=("bench_image_filter box_filter 0 -1" "bench_saxpy saxpy -1 0")
for c in "${cases[@]}"; do
  read -r module kernel image buffer <<<"$c"
  spv=$kernels/$module.spv
  "$build/bin/ze_bench" --save-native "$work" "$spv" >/dev/null
  "${layer[@]}" "$build/bin/ze_bench" "$spv" >/dev/null # fills the cache
  "$args" "$spv" "$kernel" "$image" "$buffer" >"driver.$module"
  "${layer[@]}" "$args" "$spv" "$kernel" "$image" "$buffer" >"hit.$module"
  "$args" "$work/$module.bin" "$kernel" "$image" "$buffer" >"floor.$module"
  echo "== $module ($kernel): ns per call, median"
  printf '%-28s %10s %10s %10s %10s\n' call driver hit floor hit/floor
  paste "driver.$module" "hit.$module" "floor.$module" | awk -F'\t' '{
    split($1, d, "  +"); split($2, h, "  +"); split($3, f, "  +")
    nd = d[2] + 0; nh = h[2] + 0; nf = f[2] + 0
    printf "%-28s %10.1f %10.1f %10.1f %10.2f   %s | %s | %s\n", d[1], nd, nh, nf, (nf > 0 ? nh / nf : 0),
      d[3], h[3], f[3] }'
done
