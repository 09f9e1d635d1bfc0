#!/usr/bin/env bash
# Sets everything up on a Debian 12 machine and runs every test:
#   1. the whole suite (unit + end-to-end on Intel's real driver) in build/
#   2. the unit tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   3. the threaded tests under ThreadSanitizer
#   4. each libFuzzer target for ZC_FUZZ_SECONDS (default 60) under ASan+UBSan
# Each step prints its summary; the script fails if any step fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
jobs="${ZC_JOBS:-$(nproc)}"

bash scripts/install-deps.sh

build_and_test() { # <build dir> <ctest label regex or ""> <cmake args...>
    local dir="$1" label="$2"
    shift 2
    echo "==== $dir: configure and build"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
    cmake --build "$dir" -j "$jobs" >"$dir.build.log" 2>&1 || {
        tail -50 "$dir.build.log"
        return 1
    }
    echo "==== $dir: test${label:+ (label $label)}"
    (cd "$dir" && ctest --output-on-failure ${label:+-L "$label"})
}

status=0
build_and_test build "" || status=1
build_and_test build-asan unit -DZC_SANITIZE=address,undefined -DZC_BUILD_BENCH=OFF || status=1
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    build_and_test build-tsan threaded -DZC_SANITIZE=thread -DZC_BUILD_BENCH=OFF \
    -DZC_BUILD_TOOLS=OFF || status=1

echo "==== fuzz: each target for ${ZC_FUZZ_SECONDS:-60} s"
bash scripts/fuzz.sh "${ZC_FUZZ_SECONDS:-60}" || status=1

if [ "$status" -eq 0 ]; then
    echo "test-all: every step passed"
else
    echo "test-all: FAILED (see above)"
fi
exit "$status"
