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
# The registry this machine's own apt uses (its first Debian URI), so the
# root comes from where the machine's packages come from.
host_mirror() {
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
        2>/dev/null | grep -oE 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -n 1 |
        tr -d ' ' | sed 's#/$##'
}
mirror="${ZC_DEBIAN_MIRROR:-$(host_mirror || true)}"
mirror="${mirror:-http://deb.debian.org/debian}"
security="${ZC_DEBIAN_SECURITY_MIRROR:-${mirror}-security}"

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
driver_packages=(intel-opencl-icd libze-intel-gpu1 libigc2 libigdfcl2)
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

in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }

mounted=()
unmount_all() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount -l "${mounted[$i]}" 2>/dev/null || true
    done
    mounted=()
}
trap unmount_all EXIT

mount_once() { # <mount args...> <target>
    local target="${*: -1}"
    mountpoint -q "$target" && return 0
    mkdir -p "$target"
    mount "$@"
    mounted+=("$target")
}

mount_all() {
    cp -L /etc/resolv.conf "$root/etc/resolv.conf"
    mount_once -t proc proc "$root/proc"
    mount_once --rbind /sys "$root/sys"
    mount_once --rbind /dev "$root/dev"
    mount_once -t tmpfs tmpfs "$root/tmp"
    mount_once --bind "$repo" "$root$repo"
}

write_sources() {
    cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror trixie main
deb $mirror trixie-updates main
deb $security trixie-security main
deb $mirror sid main
EOF
    cat >"$root/etc/apt/preferences.d/sid-low" <<'EOF'
Package: *
Pin: release n=sid
Pin-Priority: 100
EOF
    # The registry's copy of sid is frozen and its Release file has expired.
    echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99zecache-no-valid-until"
}

setup() {
    if [ -f "$root/.zecache-recipe" ] && [ "$(cat "$root/.zecache-recipe")" = "$recipe" ]; then
        echo "current-driver: reusing $root"
        return 0
    fi
    command -v debootstrap >/dev/null || {
        apt-get update -q
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap
    }
    unmount_all
    if [ -e "$root" ]; then
        # Never remove a root with anything still mounted inside it.
        if grep -q " $root/" /proc/mounts; then
            echo "current-driver: $root has mounts inside; unmount them first" >&2
            exit 1
        fi
        rm -rf --one-file-system "$root"
    fi
    echo "current-driver: debootstrap trixie into $root"
    debootstrap --variant=minbase --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
        trixie "$root" "$mirror" >/tmp/zecache-debootstrap.log 2>&1 || {
        tail -30 /tmp/zecache-debootstrap.log
        exit 1
    }
    write_sources
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
