#!/usr/bin/env bash
# The Debian package, installed the way users install it: built by cpack,
# installed by apt into a clean root holding nothing but a minimal Debian,
# the package and what it depends on (checked: every installed program and
# layer finds its libraries), then Intel's driver; then the demo runs there
# from the installed files (scripts/demo.sh --installed) and must be all
# hits when warm. One leg per driver generation:
#   bookworm  Debian 12 and its driver 22.43, the package built on this machine
#             in build-deb/
#   current   Debian 13 and sid's driver 26.x, the package built in the
#             current-driver root (scripts/current-driver.sh) in build-deb-current/
#
#   scripts/package-test.sh [bookworm|current|all]   the legs (default all; needs root)
#   scripts/package-test.sh build BUILD-DIR          only build the package in BUILD-DIR
#
# Each leg's root is a new overlay, thrown away at the end, on a minimal
# debootstrap root kept in ZC_PACKAGE_ROOTS (default /var/tmp/zecache-package-roots)
# and remade only when its recipe changes; the packages apt downloads stay
# in an archive cache there, shared by the runs.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
jobs="${ZC_JOBS:-$(nproc)}"
roots="${ZC_PACKAGE_ROOTS:-/var/tmp/zecache-package-roots}"

# The package in BUILD-DIR, with the demo's programs (ze_sample, cl_bench):
# configured for /usr, the prefix the package installs to.
build_package() { # <build dir>
    local dir="$1"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
        -DZC_BUILD_TESTS=OFF >/dev/null
    cmake --build "$dir" -j "$jobs" >"$dir.build.log" 2>&1 || {
        tail -50 "$dir.build.log"
        return 1
    }
    rm -f "$dir"/zecache_*.deb
    (cd "$dir" && cpack -G DEB >/dev/null)
    dpkg-deb -f "$dir"/zecache_*.deb Package Version Depends Recommends Suggests
}

if [ "${1:-}" = build ]; then
    build_package "${2:?usage: $0 build BUILD-DIR}"
    exit
fi

[ "$(id -u)" -eq 0 ] || {
    echo "package-test: needs root (debootstrap, chroot, mounts)" >&2
    exit 1
}
# shellcheck source=scripts/debian-root.sh
source "$repo/scripts/debian-root.sh"
trap leave_root EXIT

# The minimal root of SUITE, made once per recipe (with its package lists);
# the current leg's also lists sid, pinned low, for the driver.
base_root() { # <suite>
    local suite="$1" recipe="$1 minbase 1" made=0
    root="$roots/$suite"
    mkdir -p "$roots"
    exec 8>"$root.lock"
    flock 8
    if root_is_made_by "$recipe"; then
        made=1
    elif debootstrap_root "$suite"; then
        write_sources "$suite"
        [ "$suite" = bookworm ] || add_sid_low
        mount_system && in_root apt-get update -q >/dev/null && made=1
        unmount_all
        [ "$made" -eq 0 ] || echo "$recipe" >"$root/.zecache-recipe"
    fi
    exec 8>&-
    [ "$made" -eq 1 ]
}

# The demo's files, at the same paths as here: its scripts, the OpenCL C
# kernels, and BUILD-DIR's programs with the SPIR-V ze_sample reads.
copy_demo() { # <build dir, relative>
    local file
    for file in scripts/demo.sh scripts/pretend-device.sh samples/kernels/*.cl \
        "$1"/samples/ze_sample "$1"/samples/kernels/*.spv "$1"/bin/cl_bench; do
        mkdir -p "$(dirname "$root$repo/$file")"
        cp "$file" "$root$repo/$file"
    done
}

# Every ELF file the package installed finds each library it needs.
check_libraries() {
    local unresolved
    unresolved=$(in_root sh -c 'dpkg -L zecache | while read -r f; do
        [ -f "$f" ] && head -c 4 "$f" | grep -q ELF && ldd "$f" | sed "s#^#$f: #"; done' |
        grep 'not found' || true)
    [ -z "$unresolved" ] || {
        echo "package-test: libraries the package's dependencies do not bring:" >&2
        echo "$unresolved" >&2
        return 1
    }
}

# The demo's warm runs are all disk hits, one per kernel, in both APIs.
check_demo() { # <demo output>
    local kernels warm
    kernels=$(find samples/kernels -name '*.cl' | wc -l)
    warm="warm run summary: 0 memory hits, $kernels disk hits, 0 misses (0 failed), 0 bypasses, 0 stores,"
    [ "$(grep -cF "$warm" "$1")" -eq 2 ] &&
        grep -qx "cache: $kernels OpenCL entries beside $kernels Level Zero ones" "$1" &&
        grep -qx "installed: /usr/bin/zecache, layers from /usr/lib/x86_64-linux-gnu/zecache" "$1"
}

# A fresh root on the suite's minimal one, with the apt archive cache and
# the package (a file of BUILD-DIR) and the demo in it.
enter_fresh_root() { # <suite> <build dir>
    base_root "$1" || return 1
    local base="$root"
    run="$(mktemp -d "$roots/run.XXXXXX")" && mkdir "$run/upper" "$run/work" "$run/root" &&
        mkdir -p "$roots/archives-$1" || return 1
    root="$run/root"
    mount_once -t overlay overlay -o "lowerdir=$base,upperdir=$run/upper,workdir=$run/work" \
        "$root" && mount_system &&
        mount_once --bind "$roots/archives-$1" "$root/var/cache/apt/archives" &&
        cp "$2"/zecache_*.deb "$root/tmp/" && copy_demo "$2"
}

leave_root() {
    unmount_all
    [ -n "${run:-}" ] || return 0
    if grep -q " $run/" /proc/mounts; then
        echo "package-test: $run has mounts inside; left in place" >&2
    else
        rm -rf --one-file-system "$run"
    fi
}

# The man page and the completion are where man and bash-completion look.
check_documentation() {
    in_root sh -c 'gzip -dc /usr/share/man/man1/zecache.1.gz | grep -q "^\.TH ZECACHE 1"' &&
        in_root bash -c 'source /usr/share/bash-completion/completions/zecache &&
            complete -p zecache' | grep -qx 'complete -F _zecache zecache' || {
        echo "package-test: no man page or bash completion installed" >&2
        return 1
    }
}

# Installs the package alone, checks its libraries and documentation,
# installs the driver.
install_all() { # <apt-get install arguments of the driver...>
    in_root apt-get update -q &&
        in_root sh -c 'apt-get install -y -q --no-install-recommends /tmp/zecache_*.deb' &&
        check_libraries && check_documentation &&
        in_root apt-get install -y -q --no-install-recommends "$@" &&
        in_root dpkg-query -W -f='     ${Package} ${Version}\n' zecache libze1 intel-opencl-icd &&
        in_root zecache --version | sed -n '1s/^/     /p'
}

leg() { # <suite> <build dir, relative> <apt-get install arguments of the driver...>
    local suite="$1" build="$2" start=$SECONDS status=0 run=""
    shift 2
    echo "==== package on $suite: $build/$(basename "$build"/zecache_*.deb)"
    if enter_fresh_root "$suite" "$build" && install_all "$@" >"$run/install.log" 2>&1; then
        grep -E '^     ' "$run/install.log"
        in_root bash "$repo/scripts/demo.sh" --installed "$repo/$build" >"$run/demo" 2>&1 ||
            status=$?
        cat "$run/demo"
        [ "$status" -ne 0 ] || check_demo "$run/demo" || {
            echo "package-test: the demo's warm runs are not all hits" >&2
            status=1
        }
    else
        status=1
        [ ! -f "$run/install.log" ] || tail -40 "$run/install.log"
    fi
    leave_root
    echo "==== package on $suite: $([ "$status" -eq 0 ] && echo passed || echo FAILED)," \
        "$((SECONDS - start)) s"
    return "$status"
}

status=0
case "${1:-all}" in
bookworm | all)
    build_package build-deb || status=1
    [ "$status" -ne 0 ] || leg bookworm build-deb "${bookworm_driver_packages[@]}" || status=1
    ;;&
current | all)
    bash scripts/current-driver.sh run bash scripts/package-test.sh build build-deb-current &&
        leg trixie build-deb-current -t sid "${current_driver_packages[@]}" || status=1
    ;;
bookworm) ;;
*)
    echo "usage: $0 [bookworm|current|all] | build BUILD-DIR" >&2
    exit 2
    ;;
esac
exit "$status"
