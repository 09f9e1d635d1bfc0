#!/usr/bin/env bash
# Sets everything up on a Debian 12 machine and runs every test:
#   1. the whole suite (unit + end-to-end on Debian 12's Intel driver, 22.43)
#      in build/
#   2. the unit tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   3. the threaded tests under ThreadSanitizer
#   4. each libFuzzer target for ZC_FUZZ_SECONDS (default 60) under ASan+UBSan
#   5. the whole suite again on Intel's current driver (26.x, IGC 2.x, loader
#      1.20) in a Debian 13 root with sid's Intel packages, built or reused by
#      scripts/current-driver.sh (needs root or sudo; ZC_CURRENT_DRIVER=0
#      skips it, for a quick local run only: CI runs it)
#   6. the Debian package, built on each leg, installed by apt into a clean
#      Debian 12 root and a clean Debian 13 root with sid's driver, and the
#      demo run there from the installed files (scripts/package-test.sh; the
#      Debian 12 leg only with ZC_CURRENT_DRIVER=0)
# Each step prints its summary; the script fails if any step fails, and its
# last lines name each failed step and, for the suites, each failed test (CI
# keeps only the tail of the output).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
jobs="${ZC_JOBS:-$(nproc)}"

bash scripts/install-deps.sh

failures=()
fail() { # <step> <detail>
    failures+=("$1${2:+: $2}")
}

failed_tests() { # <ctest's LastTestsFailed.log>: the names, on one line
    [ -f "$1" ] && tr '\n' ' ' <"$1" | sed 's/[0-9]*://g'
}

# Notes a failure itself: a failed build, or the tests this ctest run failed
# (read only after it failed, so never an earlier run's list).
build_and_test() { # <build dir> <ctest label regex or ""> <cmake args...>
    local dir="$1" label="$2"
    shift 2
    echo "==== $dir: configure and build"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null || {
        fail "$dir" "the configuration"
        return
    }
    cmake --build "$dir" -j "$jobs" >"$dir.build.log" 2>&1 || {
        tail -50 "$dir.build.log"
        fail "$dir" "the build (see $dir.build.log)"
        return
    }
    echo "==== $dir: test${label:+ (label $label)}"
    (cd "$dir" && ctest --output-on-failure ${label:+-L "$label"}) ||
        fail "$dir" "$(failed_tests "$dir/Testing/Temporary/LastTestsFailed.log")"
}

build_and_test build ""
build_and_test build-asan unit -DZC_SANITIZE=address,undefined -DZC_BUILD_BENCH=OFF
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    build_and_test build-tsan threaded -DZC_SANITIZE=thread -DZC_BUILD_BENCH=OFF \
    -DZC_BUILD_TOOLS=OFF

echo "==== fuzz: each target for ${ZC_FUZZ_SECONDS:-60} s"
bash scripts/fuzz.sh "${ZC_FUZZ_SECONDS:-60}" || fail fuzz "$(find build-fuzz/artifacts -type f 2>/dev/null | tr '\n' ' ')"

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
if [ "${ZC_CURRENT_DRIVER:-1}" != 0 ]; then
    echo "==== current driver: scripts/current-driver.sh test"
    start=$SECONDS
    "${sudo_cmd[@]}" bash scripts/current-driver.sh test ||
        fail "current driver" "$(failed_tests build-current/Testing/Temporary/LastTestsFailed.log)"
    echo "==== current driver: $((SECONDS - start)) s"
fi

legs=all
[ "${ZC_CURRENT_DRIVER:-1}" != 0 ] || legs=bookworm
echo "==== package: scripts/package-test.sh $legs"
start=$SECONDS
"${sudo_cmd[@]}" bash scripts/package-test.sh "$legs" || fail package
echo "==== package: $((SECONDS - start)) s"

if [ "${#failures[@]}" -eq 0 ]; then
    echo "test-all: every step passed"
    exit 0
fi
echo "test-all: FAILED (details above)"
printf '  failed: %s\n' "${failures[@]}"
exit 1
