#!/usr/bin/env bash
# The cluster benchmark: N nodes (processes, each with its own NEO_CACHE_DIR,
# as on separate machines) sharing one Redis server that this script starts
# on a Unix socket in a scratch directory, running bin/ze_bench over the
# project's kernels (bench/layer_kernels) through the layer and Intel's real
# driver with a pretend GPU:
#
#   (1) one node, cold, alone with an empty Redis
#   (N) N nodes, cold, started at the same moment, empty Redis
#   (r) a fresh node (empty NEO_CACHE_DIR) against the warm Redis: remote hits
#   (d) that node again in a new process: local disk hits
#
# Figures: compiles per module in the cold start of N nodes (the layer's
# `misses` summed over the nodes / modules: goal 1.0), wall time of (N)
# against (1), the (r) total against the (d) total (goal at most 1.5 on
# localhost), and what Redis holds (keys, MEMORY USAGE of the entries,
# used_memory) against the local entry files.
#
#   bench/bench_cluster.sh [build-dir]     (default: build)
#   needs: cmake --build <build-dir> --target ze_bench zecache_tool; redis-server, redis-cli
#
# NODES (default 4), REPS (warm repetitions, default 5) and WAIT_MS (how long
# a node waits for another compiling the same module, NEO_CACHE_WAIT_TIMEOUT_MS,
# default 600000: a busy machine can take longer than the 30 s default for the
# largest module, and a node that stops waiting compiles it again) can be set
# in the environment. It relies on the remote tier's interface: NEO_CACHE_REMOTE
# (redis+unix://SOCKET) and the remote_* counters of `zecache stats --json`.
set -euo pipefail

build=$(cd "${1:-build}" && pwd)
bench=$build/bin/ze_bench
tool=$build/bin/zecache
kernels=$build/bench/layer_kernels
layers=$build/layers
if [[ ! -x $bench || ! -x $tool || ! -e $layers/libze_validation_layer.so.1 || ! -d $kernels ]]; then
  echo "bench_cluster: build first: cmake --build $build --target ze_bench zecache_tool" >&2
  exit 1
fi
for program in redis-server redis-cli; do
  command -v "$program" >/dev/null || { echo "bench_cluster: needs $program" >&2; exit 1; }
done
if ! "$tool" config | grep NEO_CACHE_REMOTE >/dev/null; then
  echo "bench_cluster: this build has no remote tier (NEO_CACHE_REMOTE)" >&2
  exit 1
fi
nodes=${NODES:-4}
reps=${REPS:-5}
wait_ms=${WAIT_MS:-600000}
module_count=$(find "$kernels" -name '*.spv' | wc -l)

work=$(mktemp -d)
redis_pid=
cleanup() {
  if [[ -n $redis_pid ]]; then
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/out" "$work/redis"

# ---- a private Redis as the README's Clusters section sets it up ----
socket=$work/redis/redis.sock
redis-server --port 0 --unixsocket "$socket" --unixsocketperm 700 --save '' --appendonly no \
  --dir "$work/redis" --maxmemory 1gb --maxmemory-policy allkeys-lru \
  --logfile "$work/redis/redis.log" &
redis_pid=$!
redis() { redis-cli -s "$socket" "$@"; }
for ((i = 0; i < 100; i++)); do
  [[ -S $socket ]] && redis PING >/dev/null 2>&1 && break
  sleep 0.05
done
redis PING >/dev/null || { echo "bench_cluster: redis-server did not start" >&2; exit 1; }

source "$(dirname "$0")/../scripts/pretend-device.sh"
unset l0_cache_dir NEO_CACHE_DIR NEO_CACHE_PERSISTENT ZE_ENABLE_VALIDATION_LAYER ZE_ENABLE_LAYERS
unset ZEL_LIBRARY_PATH PrintDebugMessages NEO_CACHE_REMOTE NEO_CACHE_REMOTE_SECRET_FILE
plain_library_path=${LD_LIBRARY_PATH:-}
remote="redis+unix://$socket"

# node NAME CACHE-DIR [ze_bench arguments]: one process of one node, its
# output in out/NAME; the driver writes a .aub file into the current directory.
node() {
  local name=$1 cache=$2
  shift 2
  mkdir -p "$work/scratch-$name" "$cache"
  (cd "$work/scratch-$name" &&
    env "LD_LIBRARY_PATH=$layers${plain_library_path:+:$plain_library_path}" \
      ZE_ENABLE_VALIDATION_LAYER=1 "NEO_CACHE_DIR=$cache" \
      "NEO_CACHE_REMOTE=$remote" "NEO_CACHE_WAIT_TIMEOUT_MS=$wait_ms" "$bench" "$@" "$kernels") \
    >"$work/out/$name"
}

now_ms() { date +%s%3N; }
total_of() { awk '$1 == "total" { print $3 }' "$work/out/$1"; }
# counter CACHE-DIR NAME: a persistent counter of that node's directory.
counter() {
  "$tool" --dir "$1" stats --json | python3 -c \
    'import json, sys; print(json.load(sys.stdin)["counters"].get(sys.argv[1], "nan"))' "$2"
}
median() { sort -g | awk '{ v[NR] = $1 } END {
  if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v x="$1" -v y="$2" 'BEGIN { print (y > 0 ? x / y : "nan") }'; }

echo "bench_cluster: $module_count modules from $kernels, $ProductFamilyOverride, $nodes nodes," \
  "Redis $(redis-server --version | grep -o 'v=[0-9.]*'), warm x$reps"

# ---- (1) one node, cold ----
start=$(now_ms)
node one "$work/one"
one_wall=$(($(now_ms) - start))
one_compiles=$(counter "$work/one" misses)
redis FLUSHALL >/dev/null

# ---- (N) N nodes, cold, at the same moment ----
start=$(now_ms)
pids=()
for ((n = 0; n < nodes; n++)); do
  node "cold-$n" "$work/node-$n" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
cold_wall=$(($(now_ms) - start))
cold_compiles=0 cold_remote_hits=0
for ((n = 0; n < nodes; n++)); do
  cold_compiles=$((cold_compiles + $(counter "$work/node-$n" misses)))
  cold_remote_hits=$((cold_remote_hits + $(counter "$work/node-$n" remote_hits)))
done
cold_per_node=$(for ((n = 0; n < nodes; n++)); do total_of "cold-$n"; done | median)

# ---- what Redis holds ----
keys=$(redis DBSIZE)
redis_entry_bytes=$(redis --scan | while read -r key; do redis MEMORY USAGE "$key"; done |
  awk '{ s += $1 } END { print s + 0 }')
used_memory=$(redis INFO memory | awk -F: '/^used_memory:/ { print $2 + 0 }')
local_bytes=$(find "$work/node-0" -name '*.l0_cache' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')

# ---- (r) fresh nodes against the warm Redis, (d) the same nodes again ----
for ((rep = 0; rep < reps; rep++)); do
  node "remote-$rep" "$work/fresh-$rep"
  node "disk-$rep" "$work/fresh-$rep"
done
remote_total=$(for ((rep = 0; rep < reps; rep++)); do total_of "remote-$rep"; done | median)
disk_total=$(for ((rep = 0; rep < reps; rep++)); do total_of "disk-$rep"; done | median)
fresh_remote_hits=$(counter "$work/fresh-0" remote_hits)
fresh_disk_hits=$(counter "$work/fresh-0" disk_hits)
fresh_compiles=$(counter "$work/fresh-0" misses)

echo
printf '%-52s %12s\n' measure value
printf '%-52s %12s\n' "(1) one node cold: wall ms" "$one_wall"
printf '%-52s %12s\n' "(1) one node cold: compiles" "$one_compiles"
printf '%-52s %12s\n' "($nodes) $nodes nodes cold together: wall ms" "$cold_wall"
printf '%-52s %12s\n' "($nodes) median zeModuleCreate total per node, ms" "$cold_per_node"
printf '%-52s %12s\n' "($nodes) compiles, all nodes" "$cold_compiles"
printf '%-52s %12s\n' "($nodes) remote hits, all nodes" "$cold_remote_hits"
printf '%-52s %12s\n' "(r) fresh node, remote hits: total ms (median)" "$remote_total"
printf '%-52s %12s\n' "(d) same node again, disk hits: total ms (median)" "$disk_total"
printf '%-52s %12s\n' "fresh node's counters: remote hits / disk hits / compiles" \
  "$fresh_remote_hits/$fresh_disk_hits/$fresh_compiles"
printf '%-52s %12s\n' "Redis keys (DBSIZE)" "$keys"
printf '%-52s %12s\n' "Redis MEMORY USAGE of all keys, bytes" "$redis_entry_bytes"
printf '%-52s %12s\n' "Redis used_memory, bytes" "$used_memory"
printf '%-52s %12s\n' "one node's .l0_cache files, bytes" "$local_bytes"

goal() { # LABEL VALUE LIMIT
  awk -v l="$1" -v v="$2" -v lim="$3" 'BEGIN {
    printf "%-52s %7.3f <= %-5s %s\n", l, v, lim, v <= lim ? "PASS" : "MISS" }'
}
echo
goal "compiles per module, $nodes nodes cold" "$(ratio "$cold_compiles" "$module_count")" 1.0
goal "(r) remote hits / (d) disk hits" "$(ratio "$remote_total" "$disk_total")" 1.5
echo "wall time of $nodes cold nodes / one cold node: $(ratio "$cold_wall" "$one_wall")"
echo "Redis bytes / local entry bytes: $(ratio "$redis_entry_bytes" "$local_bytes")"
