# shellcheck shell=bash disable=SC2034
# Sourced by scripts/current-driver.sh and scripts/package-test.sh: Debian
# roots made by debootstrap, kept between runs and remade only when their
# recipe changes, and the mounts a chroot into one needs. The caller sets
# `root` (the root's directory) and runs as root.

# The registry this machine's own apt uses (its first Debian URI), so the
# roots come from where the machine's packages come from.
host_mirror() {
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
        2>/dev/null | grep -oE 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -n 1 |
        tr -d ' ' | sed 's#/$##'
}
mirror="${ZC_DEBIAN_MIRROR:-$(host_mirror || true)}"
mirror="${mirror:-http://deb.debian.org/debian}"
security="${ZC_DEBIAN_SECURITY_MIRROR:-${mirror}-security}"

# Intel's driver and compiler: Debian 12's own (22.43, IGC 1.x), and the
# current one (26.x, IGC 2.x) from sid.
bookworm_driver_packages=(intel-opencl-icd libigc1 libigdfcl1)
current_driver_packages=(intel-opencl-icd libze-intel-gpu1 libigc2 libigdfcl2)

in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }

# What was mounted, unmounted in reverse order (the caller traps EXIT to
# unmount_all).
mounted=()
unmount_all() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount -l "${mounted[$i]}" 2>/dev/null || true
    done
    mounted=()
}

mount_once() { # <mount args...> <target>
    local target="${*: -1}"
    mountpoint -q "$target" && return 0
    mkdir -p "$target"
    mount "$@"
    mounted+=("$target")
}

# What any program run in the root needs: name resolution, /proc, /sys,
# /dev, and a private /tmp.
mount_system() {
    cp -L /etc/resolv.conf "$root/etc/resolv.conf"
    mount_once -t proc proc "$root/proc"
    mount_once --rbind /sys "$root/sys"
    mount_once --rbind /dev "$root/dev"
    mount_once -t tmpfs tmpfs "$root/tmp"
}

# A release's main, updates and security archives.
write_sources() { # <suite>
    cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $1 main
deb $mirror $1-updates main
deb $security $1-security main
EOF
}

# Debian unstable, for Intel's current driver, below the release's own
# packages: installed only when asked for with -t sid.
add_sid_low() {
    echo "deb $mirror sid main" >>"$root/etc/apt/sources.list"
    cat >"$root/etc/apt/preferences.d/sid-low" <<'EOF'
Package: *
Pin: release n=sid
Pin-Priority: 100
EOF
    # The registry's copy of sid is frozen and its Release file has expired.
    echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99zecache-no-valid-until"
}

# Whether the root was made by this recipe.
root_is_made_by() { # <recipe>
    [ -f "$root/.zecache-recipe" ] && [ "$(cat "$root/.zecache-recipe")" = "$1" ]
}

# Removes the root, unless anything is still mounted inside it, then makes
# a minimal one of the suite.
debootstrap_root() { # <suite>
    command -v debootstrap >/dev/null || {
        apt-get update -q
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap
    }
    unmount_all
    if [ -e "$root" ]; then
        # Never remove a root with anything still mounted inside it.
        if grep -q " $root/" /proc/mounts; then
            echo "debian-root: $root has mounts inside; unmount them first" >&2
            return 1
        fi
        rm -rf --one-file-system "$root"
    fi
    echo "debian-root: debootstrap $1 into $root"
    local log
    log="$(mktemp)"
    debootstrap --variant=minbase --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
        "$1" "$root" "$mirror" >"$log" 2>&1 || {
        tail -30 "$log"
        rm -f "$log"
        return 1
    }
    rm -f "$log"
}
