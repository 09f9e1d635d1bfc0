#!/usr/bin/env bash
# The OpenCL benchmark: clCreateProgramWith* + clBuildProgram as the
# application sees them (bin/cl_bench times each program), through one
# OpenCL driver, in one run:
#
#   (a)  no cache: every program built by the driver
#   (b)  the driver's own cache, warm, in a new process (Intel: cl_cache_dir
#        up to 23.30, NEO_CACHE_* from 23.35, both set; PoCL: its kernel
#        cache, POCL_KERNEL_CACHE=1 with POCL_CACHE_DIR)
#   (c)  the zecache layer, cold: built and stored
#   (d)  the layer, warm, in a new process: disk hits
#   (e)  the layer, every program again in the same process: memory hits
#   floor: each program made from its binary (clCreateProgramWithBinary +
#        clBuildProgram), no cache, in a new process that compiled nothing:
#        the binaries (a) saved, read before the clock starts, as the Level
#        Zero benchmark's floor does
#   floor after compiling: the same in a process that first built each
#        program from its source or IL (untimed), the earlier definition;
#        its driver has already made and freed that program's memory once
#
# Every run is a fresh process in a fresh scratch directory; the warm
# configurations run WARM_REPS times, interleaved, and the table shows
# medians. A check run at the end asserts nothing but prints the layer's
# summary line (hits, misses, bypasses) and whether each program's binary
# was the same in (a), (c) and (d).
#
#   bench/bench_opencl.sh [build-dir]     (default: build)
#   needs: cmake --build <build-dir> --target cl_bench zecache_opencl_layer
#
# DRIVER=intel (the default: Intel's driver with the pretend GPU) or pocl;
# KERNELS names a directory of .cl and .spv programs (default: the sample
# kernels, as source and, but on PoCL, as SPIR-V); OPTIONS the build options; COLD_REPS
# (default 1), WARM_REPS (5) and REPEAT (5) can be set; KEEP=DIR keeps every
# run's output.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-build}" && pwd)
bench=$build/bin/cl_bench
layer=${CL_LAYER:-$(find "$build/layers" -maxdepth 1 -name 'lib*opencl*layer*.so' | head -1)}
if [[ ! -x $bench || -z $layer ]]; then
  echo "bench_opencl: build first: cmake --build $build --target cl_bench and the OpenCL layer" >&2
  exit 1
fi
driver=${DRIVER:-intel}
cold_reps=${COLD_REPS:-1}
warm_reps=${WARM_REPS:-5}
repeat=${REPEAT:-5}
options=${OPTIONS:-}

work=$(mktemp -d)
trap '[[ -n ${KEEP:-} ]] && mkdir -p "$KEEP" && cp -r "$work/out" "$KEEP"; rm -rf "$work"' EXIT
mkdir "$work/out" "$work/driver-cache" "$work/kernels" "$work/binaries"

if [[ -n ${KERNELS:-} ]]; then
  kernels=$(cd "$KERNELS" && pwd)
else
  kernels=$work/kernels
  for f in "$root"/samples/kernels/*.cl; do ln -s "$f" "$kernels/src_${f##*/}"; done
  # PoCL 3.1 builds no SPIR-V (clCreateProgramWithIL is refused): sources only there.
  if [[ ${DRIVER:-intel} != pocl ]]; then
    for f in "$build"/samples/kernels/*.spv; do [[ -e $f ]] && ln -s "$f" "$kernels/il_${f##*/}"; done
  fi
fi
program_count=$(find -L "$kernels" -maxdepth 1 \( -name '*.cl' -o -name '*.spv' \) | wc -l)

unset cl_cache_dir NEO_CACHE_DIR OPENCL_LAYERS PrintDebugMessages POCL_CACHE_DIR
case $driver in
intel)
  source "$root/scripts/pretend-device.sh"
  platform=Intel
  no_cache="NEO_CACHE_PERSISTENT=0"
  driver_cache="cl_cache_dir=$work/driver-cache NEO_CACHE_DIR=$work/driver-cache NEO_CACHE_PERSISTENT=1"
  ;;
pocl)
  platform=Portable
  no_cache="POCL_KERNEL_CACHE=0"
  driver_cache="POCL_KERNEL_CACHE=1 POCL_CACHE_DIR=$work/driver-cache"
  ;;
*)
  echo "bench_opencl: DRIVER is intel or pocl" >&2
  exit 1
  ;;
esac

# run NAME REP [VAR=value...] -- cl_bench arguments (bench_lib.sh).
bench_args=(--platform "$platform" --options "$options")
source "$(dirname "$0")/bench_lib.sh"
with_layer() { # the environment of a run through the layer with cache dir $1
  echo "$no_cache" OPENCL_LAYERS="$layer" NEO_CACHE_PERSISTENT=1 "NEO_CACHE_DIR=$1"
}

echo "bench_opencl: $program_count programs from $kernels on $driver, options '$options'," \
  "cold x$cold_reps, warm x$warm_reps, (e) $repeat passes"

# shellcheck disable=SC2086 # word splitting of the settings is wanted
for ((rep = 0; rep < cold_reps; rep++)); do
  save=()
  ((rep == 0)) && save=(--save-binaries "$work/binaries")
  run a "$rep" $no_cache -- --digest "${save[@]}" "$kernels"
  mkdir "$work/layer-cache-$rep"
  # shellcheck disable=SC2046
  run c "$rep" $(with_layer "$work/layer-cache-$rep") -- --digest "$kernels"
done
# shellcheck disable=SC2086
run b0 0 $driver_cache -- "$kernels"
for ((rep = 0; rep < warm_reps; rep++)); do
  # shellcheck disable=SC2086
  run b "$rep" $driver_cache -- "$kernels"
  # shellcheck disable=SC2046
  run d "$rep" $(with_layer "$work/layer-cache-0") -- --digest --repeat "$repeat" "$kernels"
  # shellcheck disable=SC2086
  run floor "$rep" $no_cache -- "$work"/binaries/*.bin
  # shellcheck disable=SC2086
  run floor_compiled "$rep" $no_cache -- --floor "$kernels"
done

mkdir "$work/scratch-check"
# shellcheck disable=SC2046
(cd "$work/scratch-check" && env $(with_layer "$work/layer-cache-0") PrintDebugMessages=1 \
  "$bench" --platform "$platform" --options "$options" "$kernels" 2>"$work/check.log" >/dev/null)
check=$(grep -o 'summary: .*' "$work/check.log" | tail -1) || check="no summary line"

values() { cat "$work"/out/"$1".* | awk -v f="$2" '$1 == "total" { for (i = 2; i < NF; i++) if ($i == f) print $(i + 1) }'; }
total() { values "$1" "$2" | median; }
bytes_of() { find "$1" -type f \( -name "${2:-*}" \) -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }

a=$(total a first) floor=$(total floor first)
row() { # LABEL NAME FIELD [BYTES]
  awk -v l="$1" -v t="$(total "$2" "$3")" -v a="$a" -v f="$floor" -v by="${4:--}" 'BEGIN {
    printf "%-44s %11.3f %9.4f %9.3f %10s\n", l, t, t / a, t / f, by }'
}
echo
printf '%-44s %11s %9s %9s %10s\n' configuration "total ms" "/ (a)" "/ floor" bytes
row "(a)  no cache" a first
row "(b)  driver's own cache, warm, new process" b first "$(bytes_of "$work/driver-cache")"
row "(c)  layer, cold" c first "$(bytes_of "$work/layer-cache-0" '*.cl_cache')"
row "(d)  layer, warm, new process: disk hits" d first
row "(e)  layer, again in-process: memory hits" d repeat
row "floor: programs from binaries, new process" floor first
row "floor after compiling them in that process" floor_compiled first
awk -v d="$(total d first)" -v b="$(total b first)" \
  'BEGIN { printf "(d) / (b) = %.3f   (layer warm against the driver'"'"'s own cache)\n", d / b }'
echo "start-up, platform through context (median ms): driver cache" \
  "$(cat "$work"/out/b.* | awk '$1 == "start" { print $2 }' | median), layer" \
  "$(cat "$work"/out/d.* | awk '$1 == "start" { print $2 }' | median)"
echo "layer check run: $check"

# The same binary in (a), (c) and (d), program by program (a driver that
# embeds nothing run-specific gives identical digests).
digests() { awk '$1 == "program" { print $2, $NF }' "$work/out/$1"; }
if diff <(digests a.0) <(digests c.0) >/dev/null && diff <(digests a.0) <(digests d.0) >/dev/null; then
  echo "binaries: the same in (a), (c) and (d) for all $program_count programs"
else
  echo "binaries: DIFFER between (a), (c) and (d):"
  paste <(digests a.0) <(digests c.0) <(digests d.0)
fi

echo
printf '%-32s %10s %10s %9s %9s %9s %9s\n' "program (median ms)" "(a)" "(c)" "(b)" "(d)" "(e)" floor
program_median() { # NAME FIELD PROGRAM
  cat "$work"/out/"$1".* | awk -v f="$2" -v m="$3" '$1 == "program" && $2 == m {
    for (i = 3; i < NF; i++) if ($i == f) print $(i + 1) }' | median
}
for p in $(awk '$1 == "program" { print $2 }' "$work/out/a.0"); do
  printf '%-32s %10.1f %10.1f %9.3f %9.3f %9.3f %9.3f\n' "$p" "$(program_median a first "$p")" \
    "$(program_median c first "$p")" "$(program_median b first "$p")" \
    "$(program_median d first "$p")" "$(program_median d repeat "$p")" \
    "$(program_median floor first "$p")"
done
