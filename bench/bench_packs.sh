#!/usr/bin/env bash
# Read-only packs against the cache directory and the driver's own cache:
# P processes of bin/ze_bench (each creating every module of KERNELS) started
# together warm, for P in PROCS (default "1 8 32"), through Intel's real
# driver with a pretend GPU (NEO_CACHE_PREFETCH as set; 0 puts the loads in
# zeModuleCreate), side by side:
#   directory   the layer, hits from NEO_CACHE_DIR
#   pack        the layer, an empty NEO_CACHE_DIR and NEO_CACHE_PACKS=one pack
#               made from that directory by `zecache pack`
#   driver      the driver's own cache, warm
# The kinds take turns within each repetition. For each P, medians of REPS
# (default 5) with their spread (lowest-highest): the wall time of the P
# processes, their CPU time (user+sys) per process, the steadier figure on a
# loaded machine, and the time inside zeModuleCreate (ze_bench's "total
# first", median of the processes), where the kinds differ. Then, for one process of each kind, its system
# calls (strace -f -c: opens, stats, reads; the loader and driver included)
# and how often a pack process opened the pack.
#
# KERNELS: a directory of .spv modules; by default MODULES (48) small ones
# made here from samples/kernels/*.cl, each kernel renamed with -D (so every
# module is another key), as an application with many modules has them.
# OTHERS: that many more entries (2000-byte binaries, by bin/zc_bench_scale)
# in the directory and so in the pack, as a site's shared pack holds other
# programs' entries: each pack process reads and checks the whole index.
#
#   bench/bench_packs.sh [build-dir]     (default: build)
#   needs: cmake --build <build-dir> --target ze_bench zecache_tool; strace
#   (the system calls; skipped without it); clang-14 and llvm-spirv-14 (or
#   19) unless KERNELS is given
#   the current driver: bash scripts/current-driver.sh run bench/bench_packs.sh build-current
set -euo pipefail

build=$(cd "${1:-build}" && pwd)
bench=$build/bin/ze_bench
tool=$build/bin/zecache
procs=${PROCS:-1 8 32}
reps=${REPS:-5}
module_count=${MODULES:-48}
others=${OTHERS:-0}
for program in "$bench" "$tool"; do
  [[ -x $program ]] || { echo "bench_packs: build first: cmake --build $build --target ze_bench zecache_tool" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/../scripts/pretend-device.sh"
source "$(dirname "$0")/bench_lib.sh"
unset l0_cache_dir NEO_CACHE_DIR NEO_CACHE_PACKS ZE_ENABLE_VALIDATION_LAYER PrintDebugMessages
export NEO_CACHE_PERSISTENT=0
mkdir "$work/out" "$work/dir" "$work/empty" "$work/driver" "$work/kernels"

make_kernels() { # MODULES variants of the sample kernels, round robin, in $work/kernels
  local clang spirv version sources i source base
  for version in 14 19; do
    clang=$(command -v "clang-$version" || true)
    spirv=$(command -v "llvm-spirv-$version" || true)
    [[ -n $clang && -n $spirv ]] && break
  done
  [[ -n $clang && -n $spirv ]] || { echo "bench_packs: no clang with llvm-spirv (14 or 19): give KERNELS=DIR" >&2; exit 1; }
  sources=("$(dirname "$0")"/../samples/kernels/*.cl)
  for ((i = 0; i < module_count; i++)); do
    source=${sources[i % ${#sources[@]}]}
    base=$(basename "$source" .cl) # each file's kernel has the file's name
    "$clang" -cc1 -triple spir64-unknown-unknown -cl-std=CL2.0 -emit-llvm-bc -finclude-default-header \
      -O2 "-D$base=${base}_$i" -o "$work/kernels/$i.bc" "$source"
    "$spirv" "$work/kernels/$i.bc" -o "$(printf '%s/%03d_%s.spv' "$work/kernels" "$i" "$base")"
    rm "$work/kernels/$i.bc"
  done
}
if [[ -n ${KERNELS:-} ]]; then
  kernels=$KERNELS
else
  make_kernels
  kernels=$work/kernels
fi

layer="LD_LIBRARY_PATH=$build/layers ZE_ENABLE_VALIDATION_LAYER=1 NEO_CACHE_PERSISTENT=1"
settings_of() { # KIND: the environment of a warm process of that kind
  case $1 in
  directory) echo "$layer NEO_CACHE_DIR=$work/dir" ;;
  pack) echo "$layer NEO_CACHE_DIR=$work/empty NEO_CACHE_PACKS=$work/modules.zcp" ;;
  driver) echo "l0_cache_dir=$work/driver NEO_CACHE_DIR=$work/driver NEO_CACHE_PERSISTENT=1" ;;
  esac
}
now_ms() { date +%s%3N; }
calc() { awk "BEGIN { print $1 }"; } # no bc in the current-driver root
seconds_of() { # bash's `times` figure, e.g. 0m1.250s: seconds
  local value=${1%s}
  calc "${value%%m*} * 60 + ${value#*m}"
}
together() { # KIND P: "wall-ms user sys P" of P processes started at once
  local kind=$1 count=$2 i start pids=() settings wall
  settings=$(settings_of "$kind")
  rm -f "$work/out/$kind".*
  start=$(now_ms)
  for ((i = 0; i < count; i++)); do
    # shellcheck disable=SC2086 # the settings are words
    (cd "$(mktemp -d "$work/scratch.XXXXXX")" && exec env $settings "$bench" "$kernels" >"$work/out/$kind.$i" 2>/dev/null) &
    pids+=($!)
  done
  wait "${pids[@]}"
  wall=$(($(now_ms) - start))
  # The second line of `times`: user and system time of the waited-for
  # children (not in a command substitution: a fork starts with none).
  times >"$work/times.$kind"
  echo "$wall $(tail -1 "$work/times.$kind") $count"
}
measure() { # KIND P: "wall-ms cpu-ms-per-process modules-ms" of one run
  (together "$1" "$2") | {
    read -r wall user sys count
    # ze_bench's "total first": the time inside zeModuleCreate, median of the processes
    echo "$wall $(calc "($(seconds_of "$user") + $(seconds_of "$sys")) * 1000 / $count")" \
      "$(cat "$work/out/$1".* | awk '$1 == "total" { print $3 }' | median)"
  }
}
spread() { # DIGITS: a column of numbers as "median (lowest-highest)"
  local values
  values=$(sort -g)
  printf "%.$1f (%.$1f-%.$1f)" "$(median <<<"$values")" "$(head -1 <<<"$values")" "$(tail -1 <<<"$values")"
}
syscalls() { # KIND: "opens stats reads" of one warm process
  local settings
  settings=$(settings_of "$1")
  # shellcheck disable=SC2086
  (cd "$(mktemp -d "$work/scratch.XXXXXX")" && env $settings strace -f -c -o "$work/strace" \
    -e trace=%file,read,pread64 "$bench" "$kernels" >/dev/null 2>&1)
  awk '$NF ~ /^open/ { o += $4 } $NF ~ /stat/ { s += $4 } $NF ~ /read/ && $NF !~ /link/ { r += $4 }
       END { print o + 0, s + 0, r + 0 }' "$work/strace"
}
pack_opens() { # opens of the pack by one warm pack process (strace -f)
  local settings
  settings=$(settings_of pack)
  # shellcheck disable=SC2086
  (cd "$(mktemp -d "$work/scratch.XXXXXX")" && env $settings strace -f -o "$work/strace.opens" \
    -e trace=open,openat,openat2 "$bench" "$kernels" >/dev/null 2>&1)
  grep -c 'modules\.zcp"' "$work/strace.opens" || true
}

# Fill the directory and the driver's cache, and make the pack.
if ((others > 0)); then
  [[ -x $build/bin/zc_bench_scale ]] || { echo "bench_packs: OTHERS needs: cmake --build $build --target zc_bench_scale" >&2; exit 1; }
  "$build/bin/zc_bench_scale" fill "$work/dir" "$others" 2000 >/dev/null
fi
# shellcheck disable=SC2046
(cd "$work/empty" && env $(settings_of directory) "$bench" "$kernels" >/dev/null 2>&1)
# shellcheck disable=SC2046
(cd "$work/empty" && env $(settings_of driver) "$bench" "$kernels" >/dev/null 2>&1)
"$tool" --dir "$work/dir" pack "$work/modules.zcp" 2>/dev/null
rm -rf "${work:?}/empty"/*
# One pack process first, as the directory had its filling run: it writes the
# usage list the later ones prefetch by (into their otherwise empty directory).
measure pack 1 >/dev/null
modules=$(find "$kernels" -name '*.spv' | wc -l)
echo "bench_packs: $modules modules from $kernels ($others other entries), $ProductFamilyOverride, medians of $reps" \
  "(lowest-highest), load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-3s %-10s %18s %18s %18s %9s\n' P "" directory pack driver pack/dir
for p in $procs; do
  # The kinds take turns within each repetition, so that a burst of load on
  # a shared machine falls on all three alike, not on one kind's runs.
  declare -A wall_runs=() cpu_runs=() modules_runs=()
  for ((r = 0; r < reps; r++)); do
    for kind in directory pack driver; do
      read -r wall cpu modules_ms <<<"$(measure "$kind" "$p")"
      wall_runs[$kind]+="$wall"$'\n'
      cpu_runs[$kind]+="$cpu"$'\n'
      modules_runs[$kind]+="$modules_ms"$'\n'
    done
  done
  for figure in wall cpu modules; do
    declare -n runs=${figure}_runs
    printf '%-3s %-10s' "$p" "$figure ms"
    for kind in directory pack driver; do
      printf ' %18s' "$(printf '%s' "${runs[$kind]}" | spread "$([[ $figure == modules ]] && echo 1 || echo 0)")"
    done
    printf ' %9.2f\n' "$(calc "$(printf '%s' "${runs[pack]}" | median) / $(printf '%s' "${runs[directory]}" | median)")"
    unset -n runs
  done
done
echo "(cpu ms: user+sys per process; modules ms: inside zeModuleCreate, median of the processes)"

command -v strace >/dev/null || { echo "(no strace: no system calls counted)"; exit 0; }
echo
echo "system calls of one warm process (strace -f -c, the loader and driver included)"
printf '%-10s %6s %6s %6s\n' "" opens stats reads
for kind in directory pack driver; do
  read -r opens stats reads <<<"$(syscalls "$kind")"
  printf '%-10s %6s %6s %6s\n' "$kind" "$opens" "$stats" "$reads"
done
echo "opens of the pack by one warm pack process: $(pack_opens) (of $modules modules)"
echo "load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
