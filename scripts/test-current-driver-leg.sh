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
status=0
(cd "$dir" && ctest --output-on-failure) || status=1

# The OpenCL layer under the other loaders users have: the newest ocl-icd
# (sid's) and the Khronos loader, each put first in LD_LIBRARY_PATH for the
# OpenCL tests; ldd proves that is the loader the programs get.
opencl_under_loader() { # <package>
    local package="$1" work
    work="$(mktemp -d)"
    (cd "$work" && apt-get download -q "$package" >/dev/null) &&
        dpkg-deb -x "$work"/*.deb "$work/root" || return 1
    local lib="$work/root/usr/lib/x86_64-linux-gnu"
    # ldd's whole answer first: `ldd | grep -q` under pipefail fails whenever
    # grep quits before ldd has written its last line (SIGPIPE).
    local loaded
    loaded="$(LD_LIBRARY_PATH="$lib" ldd "$(command -v clinfo)")" || return 1
    grep -qF "libOpenCL.so.1 => $lib/" <<<"$loaded" || {
        echo "the loader of $package is not the one loaded" >&2
        return 1
    }
    echo "==== $dir: OpenCL tests under $package: $(LD_LIBRARY_PATH="$lib" clinfo 2>/dev/null |
        grep -E 'ICD loader (Name|Version)' | tr -s ' ' | tr '\n' ' ')"
    (cd "$dir" && LD_LIBRARY_PATH="$lib" ctest --output-on-failure -R '^test_opencl_(layer|parity|programs)$')
}
opencl_under_loader ocl-icd-libopencl1/sid || status=1
opencl_under_loader khronos-opencl-icd-libopencl1 || status=1
exit "$status"
