#!/usr/bin/env bash
# Intel's current Level Zero driver (compute-runtime 26.x, IGC 2.x, loader
# 1.20) beside Debian 12's 22.43, in a root of its own: Debian 13 (trixie)
# from debootstrap, with the Intel stack from Debian unstable (sid) pinned
# low. See ../shared/reference/current-driver.md of the project's workplace
# and BUILD.md, "Both driver generations".
#
#   scripts/current-driver.sh setup         build the root, or reuse it
#   scripts/current-driver.sh test          setup, then build in build-current/
#                                           and run the whole ctest suite in it
#   scripts/current-driver.sh run CMD...    setup, then run CMD in the root,
#                                           in this checkout (same path)
#
# The root is ZC_CURRENT_ROOT (default /var/tmp/zecache-current-root), kept
# between runs: it is rebuilt only when this recipe changes. Needs root.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
root="${ZC_CURRENT_ROOT:-/var/tmp/zecache-current-root}"
# shellcheck source=scripts/debian-root.sh
source "$repo/scripts/debian-root.sh"

# Trixie's loader and toolchain; sid's Intel driver and compiler.
build_packages=(
    build-essential cmake pkg-config ca-certificates
    libzstd-dev libssl-dev spirv-tools libcriterion-dev
    libze1 libze-dev clang-19 llvm-spirv-19
    python3 redis-server libhiredis-dev
    openssl redis-tools libcurl4-openssl-dev nginx-core libnginx-mod-http-dav-ext
    ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo python3-pyopencl
    clblast-tests python3-gpyfft clpeak
)
driver_packages=("${current_driver_packages[@]}")
recipe="trixie+sid 1 ${build_packages[*]} / ${driver_packages[*]}"

[ "$(id -u)" -eq 0 ] || {
    echo "current-driver: needs root (debootstrap, chroot, mounts)" >&2
    exit 1
}

# One run at a time per root: a run unmounts what it mounted when it ends,
# which would pull /proc, /dev and /tmp from under a second one.
mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
flock 9

trap unmount_all EXIT

mount_all() {
    mount_system
    mount_once --bind "$repo" "$root$repo"
}

setup() {
    if root_is_made_by "$recipe"; then
        echo "current-driver: reusing $root"
        return 0
    fi
    debootstrap_root trixie || exit 1
    write_sources trixie
    add_sid_low
    mount_all
    in_root apt-get update -q
    in_root apt-get install -y -q --no-install-recommends "${build_packages[@]}"
    in_root apt-get install -y -q --no-install-recommends -t sid "${driver_packages[@]}"
    unmount_all
    echo "$recipe" >"$root/.zecache-recipe"
}

run_in_root() {
    mount_all
    local status=0
    in_root /bin/sh -c 'cd "$1" && shift && exec "$@"' sh "$repo" "$@" || status=$?
    unmount_all
    return "$status"
}

case "${1:-test}" in
setup) setup ;;
run)
    shift
    setup
    run_in_root "$@"
    ;;
test)
    setup
    run_in_root bash scripts/test-current-driver-leg.sh
    ;;
*)
    echo "usage: $0 setup | test | run CMD..." >&2
    exit 2
    ;;
esac
