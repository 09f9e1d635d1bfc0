#!/usr/bin/env bash
# The scale benchmark: how the cache's costs grow with the work, beside the
# driver's own cache in the same run, through Intel's real driver with a
# pretend GPU (bin/ze_bench times each zeModuleCreate):
#
#   1. P processes started together on one cache directory, cold then warm,
#      for P in PROCS (default "1 4 8"): wall time, and compiles counted
#      (the layer's misses from its summary lines; for the driver's cache,
#      creates slower than 25 ms, as it reports nothing)
#   2. N entries in one directory, for N in ENTRIES (default "1000 10000"):
#      the directory filled with N entries (bin/zc_bench_scale fill, with
#      recipes and shared SPIR-V, as the layer records them), then the
#      project's modules warm through the layer and through the driver's
#      cache filled with as many files; the disk tier's per-hit cost against
#      a plain open+read; `zecache stats` and `zecache verify` times; one
#      store at the size limit (scan, eviction, what was kept)
#   3. one module of LARGE_MIB MiB (default 24) of constant data: compile,
#      the driver's cache warm, the layer warm, and the floor (created from
#      its native binary), medians of WARM_REPS (default 5) new processes
#
#   bench/bench_scale.sh [build-dir]     (default: build)
#   needs: cmake --build <build-dir> --target ze_bench zecache_tool zc_bench_scale
#   both drivers: bash scripts/current-driver.sh run bench/bench_scale.sh build-current
set -euo pipefail

build=$(cd "${1:-build}" && pwd)
bench=$build/bin/ze_bench
tool=$build/bin/zecache
scale=$build/bin/zc_bench_scale
kernels=${KERNELS:-$build/samples/kernels}
layers=$build/layers
for program in "$bench" "$tool" "$scale"; do
  [[ -x $program ]] || {
    echo "bench_scale: build first: cmake --build $build --target ze_bench zecache_tool" \
      "zc_bench_scale" >&2
    exit 1
  }
done
procs=${PROCS:-1 4 8}
entries=${ENTRIES:-1000 10000}
large_mib=${LARGE_MIB:-24}
warm_reps=${WARM_REPS:-5}
module_count=$(find "$kernels" -name '*.spv' | wc -l)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/../scripts/pretend-device.sh"
unset l0_cache_dir NEO_CACHE_DIR ZE_ENABLE_VALIDATION_LAYER ZE_ENABLE_LAYERS ZEL_LIBRARY_PATH
unset PrintDebugMessages NEO_CACHE_MAX_SIZE
export NEO_CACHE_PERSISTENT=0
plain_library_path=${LD_LIBRARY_PATH:-}

layer_env() { # the environment of a run through the layer with cache dir $1
  echo "LD_LIBRARY_PATH=$layers${plain_library_path:+:$plain_library_path}" \
    ZE_ENABLE_VALIDATION_LAYER=1 NEO_CACHE_PERSISTENT=1 "NEO_CACHE_DIR=$1" PrintDebugMessages=1 \
    NEO_CACHE_WAIT_TIMEOUT_MS=600000
}
driver_env() { # the driver's own cache in $1, for either driver generation
  echo "l0_cache_dir=$1 NEO_CACHE_DIR=$1 NEO_CACHE_PERSISTENT=1"
}

# run OUT SETTINGS -- ze_bench arguments: one process in a scratch directory
# (the driver writes files there); stdout to OUT, stderr to OUT.log.
run() {
  local out=$1 settings=$2
  shift 3
  local scratch
  scratch=$(mktemp -d "$work/scratch.XXXXXX")
  # shellcheck disable=SC2086 # the settings are words
  (cd "$scratch" && env $settings "$bench" "$@") >"$out" 2>"$out.log"
}
now_ms() { date +%s%3N; }
median() { sort -g | awk '{ v[NR] = $1 } END {
  if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
total_first() { awk '$1 == "total" { print $3 }' "$@"; }
layer_misses() { cat "$@" | grep -o '[0-9]* misses' | awk '{ s += $1 } END { print s + 0 }'; }
slow_creates() { cat "$@" | awk '$1 == "module" && $4 > 25 { n++ } END { print n + 0 }'; }

echo "bench_scale: $module_count modules from $kernels, $ProductFamilyOverride"

# ---- 1. P processes at once ----
# together NAME P SETTINGS: P processes of ze_bench started at once; wall ms.
together() {
  local name=$1 count=$2 settings=$3 i start pids=()
  start=$(now_ms)
  for ((i = 0; i < count; i++)); do
    run "$work/$name.$i" "$settings" -- "$kernels" &
    pids+=($!)
  done
  wait "${pids[@]}"
  echo $(($(now_ms) - start))
}
echo
echo "1. P processes starting together on one cache ($module_count modules each)"
printf '%-4s %-22s %10s %9s %10s %9s\n' P configuration "cold ms" compiles "warm ms" compiles
for p in $procs; do
  for kind in driver layer; do
    dir=$work/procs-$kind-$p
    mkdir "$dir"
    settings=$([[ $kind == layer ]] && layer_env "$dir" || driver_env "$dir")
    cold=$(together "cold-$kind-$p" "$p" "$settings")
    warm=$(together "warm-$kind-$p" "$p" "$settings")
    if [[ $kind == layer ]]; then
      cold_n=$(layer_misses "$work"/cold-$kind-$p.*.log) warm_n=$(layer_misses "$work"/warm-$kind-$p.*.log)
    else
      cold_n=$(slow_creates "$work"/cold-$kind-$p.[0-9]*) warm_n=$(slow_creates "$work"/warm-$kind-$p.[0-9]*)
    fi
    printf '%-4s %-22s %10s %9s %10s %9s\n' "$p" "$kind cache" "$cold" "$cold_n" "$warm" "$warm_n"
  done
done
echo "compiles: the layer's misses, summed over the processes; the driver's cache reports"
echo "nothing, so its compiles are the creates that took over 25 ms (its hits take a few ms at most);"
echo "a waiting process of the layer (another compiles its module) counts no compile"

# ---- 2. N entries in one directory ----
copy_driver_fillers() { # DIR N: N copies of the driver cache's first file, new names
  local dir=$1 count=$2 first i name
  first=$(find "$dir" -type f -name '*_cache' | head -n 1)
  [[ -n $first ]] || return 0
  for ((i = 0; i < count; i++)); do
    name=$(printf '%064x' "$((i * 7919 + 13))")
    cp "$first" "$(dirname "$first")/$name.${first##*.}"
  done
}
echo
echo "2. N entries in one directory"
printf '%-7s %12s %12s %14s %9s %9s %9s  %s\n' N "driver warm" "layer warm" "tier hit/read" \
  "stats ms" "verify ms" "fill s" "one store at the limit"
for n in $entries; do
  layer_dir=$work/entries-layer-$n driver_dir=$work/entries-driver-$n
  mkdir "$layer_dir" "$driver_dir"
  fill=$("$scale" fill "$layer_dir" "$n" 8192 | awk '{ print $(NF - 1) }')
  run "$work/n-cold-layer-$n" "$(layer_env "$layer_dir")" -- "$kernels"
  run "$work/n-cold-driver-$n" "$(driver_env "$driver_dir")" -- "$kernels"
  copy_driver_fillers "$driver_dir" "$n"
  for ((r = 0; r < warm_reps; r++)); do
    run "$work/n-warm-layer-$n.$r" "$(layer_env "$layer_dir")" -- "$kernels"
    run "$work/n-warm-driver-$n.$r" "$(driver_env "$driver_dir")" -- "$kernels"
  done
  layer_hit=$(total_first "$work"/n-warm-layer-$n.[0-9]* | median)
  driver_hit=$(total_first "$work"/n-warm-driver-$n.[0-9]* | median)
  tier=$("$scale" hits "$layer_dir" "$n" | awk '{ print $5 "/" $11 " us" }')
  start=$(now_ms)
  NEO_CACHE_DIR=$layer_dir "$tool" stats >/dev/null
  stats_ms=$(($(now_ms) - start))
  start=$(now_ms)
  NEO_CACHE_DIR=$layer_dir "$tool" verify >/dev/null || true
  verify_ms=$(($(now_ms) - start))
  evicted=$("$scale" evict "$layer_dir" 8192 | sed 's/^evict at the limit //')
  printf '%-7s %9.3f ms %9.3f ms %14s %9s %9s %9s  %s\n' "$n" "$driver_hit" "$layer_hit" "$tier" \
    "$stats_ms" "$verify_ms" "$fill" "$evicted"
done
echo "driver warm / layer warm: median total ms of the $module_count modules warm in a new process,"
echo "the directory also holding N other entries; tier hit/read: zc_disk_tier_load of one entry"
echo "against a plain open+read of its file (us); one store at the limit: with the limit set to"
echo "what the directory holds, the time of the store that evicts, and what eviction kept"

# ---- 3. a module of tens of MB ----
echo
large=$work/large/large_module.spv
mkdir -p "$work/large/native" "$work/large/driver" "$work/large/layer"
python3 "$(dirname "$0")/make_large_module.py" "$large" "$large_mib"
run "$work/large-compile" "" -- --save-native "$work/large/native" "$large"
native_bytes=$(stat -c %s "$work/large/native/large_module.bin")
run "$work/large-driver-cold" "$(driver_env "$work/large/driver")" -- "$large"
run "$work/large-layer-cold" "$(layer_env "$work/large/layer")" -- "$large"
for ((r = 0; r < warm_reps; r++)); do
  run "$work/large-driver.$r" "$(driver_env "$work/large/driver")" -- "$large"
  run "$work/large-layer.$r" "$(layer_env "$work/large/layer")" -- "$large"
  run "$work/large-floor.$r" "" -- "$work/large/native/large_module.bin"
done
entry_bytes=$(find "$work/large/layer" -name '*.l0_cache' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
compile=$(total_first "$work/large-compile")
driver=$(total_first "$work"/large-driver.[0-9]* | median)
layer=$(total_first "$work"/large-layer.[0-9]* | median)
floor=$(total_first "$work"/large-floor.[0-9]* | median)
echo "3. one module of $large_mib MiB of constant data: native binary $native_bytes bytes," \
  "layer entry $entry_bytes bytes"
awk -v c="$compile" -v d="$driver" -v l="$layer" -v f="$floor" 'BEGIN {
  printf "compile %.1f ms; warm, new process: driver cache %.2f ms, layer %.2f ms, floor %.2f ms\n", c, d, l, f
  printf "layer / driver cache %.3f, layer / floor %.3f, driver cache / floor %.3f\n", l / d, l / f, d / f }'
