#!/usr/bin/env bash
# The crash soak: fault_worker processes loading, storing and evicting in one
# cache are SIGKILLed KILLS times at random moments (test_faults_crash), then
# every entry left is verified byte for byte and the accounting repaired; and
# the 8 processes x 8 threads stress (test_faults_stress) runs for
# STRESS_SECONDS. CI runs both small (100 kills, 3 s); this runs them big.
#   scripts/crash-soak.sh [KILLS=1000] [MAX_DELAY_US=20000] [SEED=<n>]
#                         [STRESS_SECONDS=30] [SANITIZE=address,undefined]
# Prints the figures RELIABILITY.md records; fails if either test fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
KILLS=1000 MAX_DELAY_US=20000 SEED="" STRESS_SECONDS=30 SANITIZE=""
for setting in "$@"; do
    case "$setting" in
    KILLS=* | MAX_DELAY_US=* | SEED=* | STRESS_SECONDS=* | SANITIZE=*) declare "$setting" ;;
    *)
        sed -n '2,10p' "$0"
        exit 2
        ;;
    esac
done
build="build-soak${SANITIZE:+-${SANITIZE//,/-}}"

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZC_SANITIZE="$SANITIZE" \
    -DZC_BUILD_LAYER=OFF -DZC_BUILD_TOOLS=OFF -DZC_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "${ZC_JOBS:-2}" --target test_faults_crash test_faults_stress \
    fault_worker >"$build/build.log" 2>&1 || {
    tail -40 "$build/build.log"
    exit 1
}

status=0
run_checked() {
    local test="$1" log
    shift
    log="$(mktemp)"
    if env "$@" "$build/unit_tests/$test" --jobs 1 --verbose >"$log" 2>&1; then
        grep -E '^\[(----|PASS)\]' "$log" | grep -v 'Criterion v'
    else
        status=1
        tail -30 "$log"
    fi
    rm -f "$log"
}
echo "==== crash: $KILLS kills, delays up to $MAX_DELAY_US us"
run_checked test_faults_crash ZC_CRASH_KILLS="$KILLS" ZC_CRASH_MAX_DELAY_US="$MAX_DELAY_US" \
    ${SEED:+ZC_CRASH_SEED="$SEED"}
echo "==== stress: 8 processes x 8 threads for $STRESS_SECONDS s"
run_checked test_faults_stress ZC_STRESS_SECONDS="$STRESS_SECONDS"
[ "$status" -eq 0 ] && echo "crash-soak: passed" || echo "crash-soak: FAILED"
exit "$status"
