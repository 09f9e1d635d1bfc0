#!/usr/bin/env bash
# The current-driver leg of scripts/test-all.sh, run inside the root that
# scripts/current-driver.sh builds (Intel's 26.x driver, IGC 2.x, loader
# 1.20): the whole ctest suite, unit and end-to-end, in build-current/. The
# sanitizer and fuzz steps do not depend on the driver and run once, on the
# machine's own leg.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${ZC_JOBS:-$(nproc)}"
dir=build-current
echo "==== $dir: configure and build (inside the current-driver root)"
dpkg-query -W -f='     ${Package} ${Version}\n' libze-intel-gpu1 libigc2 libigdfcl2 libze1
# Debug: gcc 14 at -O0 also proves the Debug build type builds (-Werror)
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$dir" -j "$jobs" >"$dir.build.log" 2>&1 || {
    tail -50 "$dir.build.log"
    exit 1
}
echo "==== $dir: test"
cd "$dir" && ctest --output-on-failure
