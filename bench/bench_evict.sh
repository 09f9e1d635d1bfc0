#!/usr/bin/env bash
# Eviction and `zecache stats` against the number of entries (no driver
# needed): for N in ENTRIES (default "1000 10000 100000"), a directory filled
# with N entries of 1000-byte binaries, each with a recipe, every 4 sharing
# one SPIR-V blob (bin/zc_bench_scale fill), synced; then `zecache stats` timed;
# STORES (default 50) stores in a row at the limit (each one's time, max and
# median, and the directory entries one store listed); as many recording
# stores (a store and the recording of its inputs, timed as one, every 4
# sharing new SPIR-V); and, when OLD_BUILD
# names another build (e.g. main's), its one store at the limit
# (zc_bench_scale evict) and its `zecache stats` on the same directory.
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

stats_seconds() { # zecache binary, cache dir
  local start end
  start=$(date +%s%N)
  NEO_CACHE_DIR=$2 "$1" stats >/dev/null
  end=$(date +%s%N)
  awk -v ns=$((end - start)) 'BEGIN { printf "%.2f", ns / 1e9 }'
}

for n in $entries; do
  dir=$work/cache-$n
  mkdir "$dir"
  "$build/bin/zc_bench_scale" fill "$dir" "$n" 1000
  sync # settled: a store must not meet the write-back of what fill wrote
  echo "N=$n: zecache stats $(stats_seconds "$build/bin/zecache" "$dir") s"
  [[ -z $old ]] || echo "N=$n: old zecache stats $(stats_seconds "$old/bin/zecache" "$dir") s"
  "$build/bin/zc_bench_scale" stores "$dir" 1000 "$stores"
  "$build/bin/zc_bench_scale" records "$dir" 1000 "$stores"
  [[ -z $old ]] || { printf 'old: ' && "$old/bin/zc_bench_scale" evict "$dir" 1000; }
  rm -rf "$dir"
done
