#!/usr/bin/env bash
# Read-only packs against the cache directory and the driver's own cache:
# P processes of bin/ze_bench (each creating every module of KERNELS) started
# together warm, for P in PROCS (default "1 8 32"), through Intel's real
# driver with a pretend GPU. Prints the wall time of each P, and for one
# process of each kind the files it opened and the stats it made (strace -c),
# and how often a pack process opened the pack (once: the pack is read with
# pread through the one descriptor, however many modules it serves),
# side by side:
#   directory   the layer, hits from NEO_CACHE_DIR
#   pack        the layer, an empty NEO_CACHE_DIR and NEO_CACHE_PACKS=one pack
#               made from that directory by `zecache pack`
#   driver      the driver's own cache, warm
#
#   bench/bench_packs.sh [build-dir]     (default: build)
#   needs: cmake --build <build-dir> --target ze_bench zecache_tool; strace
set -euo pipefail

build=$(cd "${1:-build}" && pwd)
bench=$build/bin/ze_bench
tool=$build/bin/zecache
kernels=${KERNELS:-$build/samples/kernels}
procs=${PROCS:-1 8 32}
reps=${REPS:-5}
for program in "$bench" "$tool"; do
  [[ -x $program ]] || { echo "bench_packs: build first: cmake --build $build --target ze_bench zecache_tool" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/../scripts/pretend-device.sh"
source "$(dirname "$0")/bench_lib.sh"
unset l0_cache_dir NEO_CACHE_DIR NEO_CACHE_PACKS ZE_ENABLE_VALIDATION_LAYER PrintDebugMessages
export NEO_CACHE_PERSISTENT=0
mkdir "$work/out" "$work/dir" "$work/empty" "$work/driver"
layer="LD_LIBRARY_PATH=$build/layers ZE_ENABLE_VALIDATION_LAYER=1 NEO_CACHE_PERSISTENT=1"
settings_of() { # KIND: the environment of a warm process of that kind
  case $1 in
  directory) echo "$layer NEO_CACHE_DIR=$work/dir" ;;
  pack) echo "$layer NEO_CACHE_DIR=$work/empty NEO_CACHE_PACKS=$work/modules.zcp" ;;
  driver) echo "l0_cache_dir=$work/driver NEO_CACHE_DIR=$work/driver NEO_CACHE_PERSISTENT=1" ;;
  esac
}
now_ms() { date +%s%3N; }
together() { # KIND P: wall ms of P processes started at once
  local kind=$1 count=$2 i start pids=() settings
  settings=$(settings_of "$kind")
  start=$(now_ms)
  for ((i = 0; i < count; i++)); do
    # shellcheck disable=SC2086 # the settings are words
    (cd "$(mktemp -d "$work/scratch.XXXXXX")" && env $settings "$bench" "$kernels" >/dev/null 2>&1) &
    pids+=($!)
  done
  wait "${pids[@]}"
  echo $(($(now_ms) - start))
}
syscalls() { # KIND: "opens stats" of one warm process
  local settings
  settings=$(settings_of "$1")
  # shellcheck disable=SC2086
  (cd "$(mktemp -d "$work/scratch.XXXXXX")" && env $settings strace -f -c -o "$work/strace" \
    -e trace=open,openat,openat2,stat,lstat,fstat,newfstatat,statx "$bench" "$kernels" >/dev/null 2>&1)
  awk '$NF ~ /^open/ { o += $4 } $NF ~ /stat/ { s += $4 } END { print o + 0, s + 0 }' "$work/strace"
}

# Fill the directory and the driver's cache, and make the pack.
# shellcheck disable=SC2046
(cd "$work/empty" && env $(settings_of directory) "$bench" "$kernels" >/dev/null 2>&1)
# shellcheck disable=SC2046
(cd "$work/empty" && env $(settings_of driver) "$bench" "$kernels" >/dev/null 2>&1)
"$tool" --dir "$work/dir" pack "$work/modules.zcp" 2>/dev/null
rm -rf "$work/empty"/*
modules=$(find "$kernels" -name '*.spv' | wc -l)
echo "bench_packs: $modules modules from $kernels, $ProductFamilyOverride, medians of $reps"
printf '%-4s %14s %14s %14s %10s\n' P "directory ms" "pack ms" "driver ms" "pack/dir"
for p in $procs; do
  # The kinds take turns within each repetition, so that a burst of load on
  # a shared machine falls on all three alike, not on one kind's runs.
  declare -A ms=() runs=()
  for ((r = 0; r < reps; r++)); do
    for kind in directory pack driver; do
      runs[$kind]+="$(together "$kind" "$p")"$'\n'
    done
  done
  for kind in directory pack driver; do
    ms[$kind]=$(printf '%s' "${runs[$kind]}" | median)
  done
  printf '%-4s %14s %14s %14s %10.2f\n' "$p" "${ms[directory]}" "${ms[pack]}" "${ms[driver]}" \
    "$(echo "${ms[pack]} / ${ms[directory]}" | bc -l)"
done
pack_opens() { # opens of the pack by one warm pack process (strace -f)
  local settings
  settings=$(settings_of pack)
  # shellcheck disable=SC2086
  (cd "$(mktemp -d "$work/scratch.XXXXXX")" && env $settings strace -f -o "$work/strace.opens" \
    -e trace=open,openat,openat2 "$bench" "$kernels" >/dev/null 2>&1)
  grep -c 'modules\.zcp"' "$work/strace.opens" || true
}

echo
echo "system calls of one warm process (opens, stats; strace -f -c, the loader and driver included)"
for kind in directory pack driver; do
  printf '%-10s %s\n' "$kind" "$(syscalls "$kind")"
done
echo "opens of the pack by one warm pack process: $(pack_opens) (of $modules modules)"
