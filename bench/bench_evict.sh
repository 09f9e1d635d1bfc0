#!/usr/bin/env bash
# Eviction and `zecache stats` against the number of entries (no driver
# needed): for N in ENTRIES (default "1000 10000 100000"), a directory filled
# with N entries of 1000-byte binaries, each with a recipe, every 4 sharing
# one SPIR-V blob (bin/zc_bench_scale fill), synced; then `zecache stats` (from
# zecache.accounting) and `zecache stats --scan` (every entry read), REPS
# (default 3) times each, interleaved: median and range; STORES (default 50)
# stores in a row at the limit (each one's time, max and median, and the
# directory entries one store listed), and `zecache stats` once more (the
# accounting kept through the evictions); as many recording stores (a store
# and the recording of its inputs, timed as one, every 4 sharing new SPIR-V);
# and, when OLD_BUILD names another build (e.g. main's), its one store at the
# limit (zc_bench_scale evict) and its `zecache stats` on the same directory.
#
#   bench/bench_evict.sh [build-dir]     (default: build)
#   needs: cmake --build <build-dir> --target zecache_tool zc_bench_scale
set -euo pipefail

build=$(cd "${1:-build}" && pwd)
entries=${ENTRIES:-1000 10000 100000}
stores=${STORES:-50}
old=${OLD_BUILD:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/bench_evict.XXXXXX")
trap 'rm -rf "$work"' EXIT
unset NEO_CACHE_MAX_SIZE PrintDebugMessages

reps=${REPS:-3}

stats_seconds() { # zecache binary, cache dir, options...
  local start end tool=$1 dir=$2
  shift 2
  start=$(date +%s%N)
  NEO_CACHE_DIR=$dir "$tool" stats "$@" >/dev/null
  end=$(date +%s%N)
  awk -v ns=$((end - start)) 'BEGIN { printf "%.3f\n", ns / 1e9 }'
}

median_range() { # seconds, one a line: "median s (min-max)"
  sort -n | awk '{ v[NR] = $1 } END { printf "%.3f s (%.3f-%.3f)", v[int((NR + 1) / 2)], v[1], v[NR] }'
}

stats_both() { # cache dir: stats and stats --scan, interleaved
  local r plain=() scan=()
  for ((r = 0; r < reps; r++)); do
    plain+=("$(stats_seconds "$build/bin/zecache" "$1")")
    scan+=("$(stats_seconds "$build/bin/zecache" "$1" --scan)")
  done
  echo "zecache stats $(printf '%s\n' "${plain[@]}" | median_range)," \
    "--scan $(printf '%s\n' "${scan[@]}" | median_range)"
}

for n in $entries; do
  dir=$work/cache-$n
  mkdir "$dir"
  "$build/bin/zc_bench_scale" fill "$dir" "$n" 1000
  sync # settled: a store must not meet the write-back of what fill wrote
  echo "N=$n: $(stats_both "$dir")"
  [[ -z $old ]] || echo "N=$n: old zecache stats $(stats_seconds "$old/bin/zecache" "$dir") s"
  "$build/bin/zc_bench_scale" stores "$dir" 1000 "$stores"
  echo "N=$n: after the stores, zecache stats $(stats_seconds "$build/bin/zecache" "$dir") s"
  "$build/bin/zc_bench_scale" records "$dir" 1000 "$stores"
  [[ -z $old ]] || { printf 'old: ' && "$old/bin/zc_bench_scale" evict "$dir" 1000; }
  rm -rf "$dir"
done
