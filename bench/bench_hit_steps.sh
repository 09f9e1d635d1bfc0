#!/usr/bin/env bash
# Where a hit's time goes: a small and a large module (bench/make_large_module.py,
# LARGE_MIB MiB of constant data) through Level Zero (bin/ze_bench) and OpenCL
# (bin/cl_bench, Intel's platform), each warm in a new process through
#
#   driver: the driver's own cache (l0_cache_dir / cl_cache_dir and NEO_CACHE_*)
#   layer:  the zecache layer (disk hits)
#   floor:  the module made from its native binary, no cache
#
# with the median create (Level Zero) or create+build (OpenCL) time of REPS
# interleaved runs, and then one more run of each under `perf record`
# (cpu-clock, one sample per 100 us of CPU time, all threads): the CPU time of
# the whole process split into steps by the symbol each sample fell in --
#
#   key      SHA-256 and the key's own code (zc_key*, *sha256*, the digest memo)
#   zstd     decompression and its checksum (libzstd, or ZSTD*, HUF*, FSE*, XXH*)
#   copy     memcpy/memmove/memcmp/memset anywhere (the layer's native check
#            copies the binary out of the driver and compares it)
#   layer    the rest of libze_zecache / libzecache_opencl_layer / libzecache
#   kernel   system calls and page faults: open, read, mmap, fresh memory
#   ld.so    the dynamic linker (start-up: loading the driver and the layer)
#   driver   everything else (the driver creating the module, start-up; for
#            the OpenCL floor also its untimed compile)
#
# so the columns side by side show what the layer pays beyond the floor and
# the driver's cache. With LATER=K (default 3) each timed process also makes
# the module K more times (--repeat K): "later ms" is their median, a hit
# after the process's first (the layer checks the first hit per device and
# options in full, later ones by size: zecache/loaded_check.h). Timings are
# wall clock of the call; steps are CPU time of the process (start-up
# included: compare columns, not absolutes; the perf runs make the module
# once).
#
#   bench/bench_hit_steps.sh [build-dir]     (default: build)
#   needs: cmake --build <build-dir> --target ze_bench cl_bench; perf
#   REPS (default 5), LARGE_MIB (24), SMALL (a .spv, default the build's saxpy),
#   APIS ("ze cl" where both are built)
#   BASE_LAYERS=DIR adds "base": the layers in DIR (another build's layers/,
#   copied aside), run interleaved with the others, for before/after figures
#   On the current driver: bash scripts/current-driver.sh run bash
#   bench/bench_hit_steps.sh build-current-rel (perf comes from the host: set
#   PERF= to skip the step split where it is missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-build}" && pwd)
ze_bench=$build/bin/ze_bench
cl_bench=$build/bin/cl_bench
reps=${REPS:-5}
later=${LATER:-3}
large_mib=${LARGE_MIB:-24}
small=${SMALL:-$(find "$build/bench/native" "$build/samples/kernels" -name 'saxpy.spv' 2>/dev/null | head -1)}
perf=${PERF-$(command -v perf || true)}
[[ -x $ze_bench && -n $small ]] || {
  echo "bench_hit_steps: build first: cmake --build $build --target ze_bench cl_bench" >&2
  exit 1
}
cl_layer=$(find "$build/layers" -maxdepth 1 -name 'lib*opencl*layer*.so' | head -1)
base_layers=${BASE_LAYERS:+$(cd "$BASE_LAYERS" && pwd)}
layer_configs=(layer)
[[ -n $base_layers ]] && layer_configs+=(base)

work=$(mktemp -d)
[[ -n ${KEEP:-} ]] && echo "bench_hit_steps: scratch kept in $work"
[[ -n ${KEEP:-} ]] || trap 'rm -rf "$work"' EXIT
source "$root/scripts/pretend-device.sh"
unset l0_cache_dir cl_cache_dir NEO_CACHE_DIR ZE_ENABLE_VALIDATION_LAYER ZE_ENABLE_LAYERS
unset ZEL_LIBRARY_PATH PrintDebugMessages NEO_CACHE_MAX_SIZE OPENCL_LAYERS
export NEO_CACHE_PERSISTENT=0
plain_library_path=${LD_LIBRARY_PATH:-}

mkdir -p "$work/in" "$work/native" "$work/out"
cp "$small" "$work/in/small.spv"
/usr/bin/python3 "$root/bench/make_large_module.py" "$work/in/large.spv" "$large_mib"

settings_of() { # API CONFIG MODULE: the environment of one configuration
  local dir=$work/cache-$1-$2-$3
  mkdir -p "$dir" # the driver's cache on 22.43 needs it to exist
  case $2 in
  driver) echo "l0_cache_dir=$dir cl_cache_dir=$dir NEO_CACHE_DIR=$dir NEO_CACHE_PERSISTENT=1" ;;
  floor) echo "NEO_CACHE_PERSISTENT=0" ;;
  layer | base)
    local layers=$build/layers
    [[ $2 == base ]] && layers=$base_layers
    if [[ $1 == ze ]]; then
      echo "LD_LIBRARY_PATH=$layers${plain_library_path:+:$plain_library_path}" \
        "ZE_ENABLE_VALIDATION_LAYER=1 NEO_CACHE_PERSISTENT=1 NEO_CACHE_DIR=$dir"
    else
      echo "NEO_CACHE_PERSISTENT=1 OPENCL_LAYERS=$layers/${cl_layer##*/} NEO_CACHE_DIR=$dir"
    fi
    ;;
  esac
}

input_of() { # API CONFIG MODULE: what the benchmark program is given
  if [[ $1 == ze && $2 == floor ]]; then
    echo "$work/native/$3.bin"
  else
    echo "$work/in/$3.spv"
  fi
}

# measure OUT API CONFIG MODULE [PREFIX...]: one process in a scratch directory.
measure() {
  local out=$1 api=$2 config=$3 module=$4
  shift 4
  local program=$ze_bench extra=()
  [[ $api == cl ]] && program=$cl_bench && extra=(--platform Intel)
  [[ $api == cl && $config == floor ]] && extra+=(--floor)
  [[ $later -gt 0 && $# -eq 0 ]] && extra+=(--repeat "$later") # not under perf
  local scratch
  scratch=$(mktemp -d "$work/scratch.XXXXXX")
  # shellcheck disable=SC2046 # the settings are words
  (cd "$scratch" && env $(settings_of "$api" "$config" "$module") "$@" "$program" "${extra[@]}" \
    "$(input_of "$api" "$config" "$module")") >"$out" 2>"$out.log"
}

median() { sort -g | awk '{ v[NR] = $1 } END {
  if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
first_of() { awk '$1 == "total" { print $3 }' "$@"; }
later_of() { awk '$1 == "total" && $4 == "repeat" { print $5 }' "$@"; }
spread() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3f-%.3f", lo, hi }'; }

# The steps of one perf.data, as "key zstd copy layer kernel ld.so driver" in ms.
steps_of() {
  "$perf" report -i "$1" --stdio --no-children --sort dso,sym -F sample,dso,sym 2>/dev/null |
    awk '/^#/ || NF < 3 { next }
      { n = $1; dso = $2; sym = $NF; step = "driver"
        if (sym ~ /sha256|SHA256|zc_key|digest_memo|spirv_digest/) step = "key"
        else if (sym ~ /^(ZSTD|HUF|FSE|XXH)/ || dso ~ /libzstd/) step = "zstd"
        else if (sym ~ /mem(cpy|move|cmp|set)/) step = "copy"
        else if (dso ~ /kernel/) step = "kernel"
        else if (dso ~ /^ld-linux/) step = "ld.so"
        else if (dso ~ /zecache|ze_cache_layer|opencl_layer/) step = "layer"
        t[step] += n }
      END { printf "%6.1f %6.1f %6.1f %6.1f %6.1f %6.1f %6.1f\n", t["key"] / 10, t["zstd"] / 10,
        t["copy"] / 10, t["layer"] / 10, t["kernel"] / 10, t["ld.so"] / 10, t["driver"] / 10 }'
}

apis=(ze)
[[ -x $cl_bench && -n $cl_layer ]] && apis+=(cl)
[[ -n ${APIS:-} ]] && read -r -a apis <<<"$APIS"
echo "bench_hit_steps: small $(stat -c %s "$small") B SPIR-V, large $large_mib MiB; ${apis[*]};" \
  "$ProductFamilyOverride; $reps warm runs each"

# Native binaries for the Level Zero floor; the caches filled by a cold run.
(cd "$work" && "$ze_bench" --save-native "$work/native" "$work/in/small.spv" "$work/in/large.spv" \
  >/dev/null)
for api in "${apis[@]}"; do
  for module in small large; do
    for config in driver "${layer_configs[@]}"; do
      measure "$work/out/$api-$config-$module-cold" "$api" "$config" "$module"
    done
  done
done

for ((rep = 0; rep < reps; rep++)); do
  for api in "${apis[@]}"; do
    for module in small large; do
      for config in driver "${layer_configs[@]}" floor; do
        measure "$work/out/$api-$config-$module.$rep" "$api" "$config" "$module"
      done
    done
  done
done

printf '%-4s %-6s %-7s %9s %9s %-17s   %s\n' api module config 'ms' 'later ms' 'spread' \
  'CPU ms:  key   zstd   copy  layer kernel  ld.so driver'
for api in "${apis[@]}"; do
  for module in small large; do
    declare -A ms=() later_ms=()
    for config in floor driver "${layer_configs[@]}"; do
      ms[$config]=$(first_of "$work/out/$api-$config-$module".[0-9]* | median)
      later_ms[$config]=$(later_of "$work/out/$api-$config-$module".[0-9]* | median)
      steps=""
      if [[ -n $perf ]]; then
        measure "$work/out/$api-$config-$module.perf" "$api" "$config" "$module" \
          "$perf" record -q -e cpu-clock -c 100000 -o "$work/$api-$config-$module.data" --
        steps=$(steps_of "$work/$api-$config-$module.data")
      fi
      printf '%-4s %-6s %-7s %9.3f %9.3f %-17s   %s\n' "$api" "$module" "$config" "${ms[$config]}" \
        "${later_ms[$config]}" "$(first_of "$work/out/$api-$config-$module".[0-9]* | spread)" "$steps"
    done
    awk -v l="${ms[layer]}" -v d="${ms[driver]}" -v f="${ms[floor]}" -v a="$api" -v m="$module" \
      'BEGIN { printf "%-4s %-6s layer/driver %.3f  layer/floor %.3f  driver/floor %.3f\n",
        a, m, l / d, l / f, d / f }'
    [[ -n $base_layers ]] && awk -v l="${ms[base]}" -v d="${ms[driver]}" -v f="${ms[floor]}" \
      -v a="$api" -v m="$module" 'BEGIN { printf "%-4s %-6s base/driver  %.3f  base/floor  %.3f\n",
        a, m, l / d, l / f }'
    unset ms later_ms
  done
done
