#!/usr/bin/env bash
# What the bash completion of zecache offers, case by case: values of the
# options that take one (directories, files, --sort's orders), operands
# (files, programs, 'remote check', commands for 'help'), and the command
# found after the tool's own options.
#
#   check_completion.sh COMPLETION-SCRIPT
set -u
source "$1" || exit 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" && mkdir adir && touch afile
failures=0

# expect "WANTED REPLIES" WORDS...: completing the last of WORDS after
# 'zecache' offers exactly WANTED (sorted, space-separated).
expect() {
    local wanted="$1"
    shift
    COMP_WORDS=(zecache "$@") COMP_CWORD=$# COMP_LINE="zecache $*"
    COMPREPLY=()
    _zecache
    local got
    got=$(printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//')
    if [ "$got" != "$wanted" ]; then
        echo "zecache $*<TAB>: got '$got', wanted '$wanted'"
        failures=$((failures + 1))
    fi
}

expect "adir" --dir a                        # directories only
expect "adir" --dir = a                      # --dir=a, '=' breaking words
expect "--dir=adir" --dir=a                  # --dir=a as one word
expect "--dir --help --json --pack --sort=" ls --
expect "last-use size" ls --sort = ""
expect "--sort=size" ls --sort=s
expect "--json" --dir adir ls --j            # the command after --dir's value
expect "--json" --dir = adir ls --j
expect "adir afile" prewarm --from a         # files
expect "adir afile" prewarm --keys a
expect "" prewarm --jobs ""                  # a number: nothing to offer
expect "" trim --older-than ""
expect "--jobs" prewarm --j
expect "adir afile" export a
expect "adir afile" import a
expect "adir afile" pack --list a
expect "adir afile" pack --from a
expect "adir afile" show --pack a
expect "" show --pack afile ""              # then a key prefix
expect "" show ""                            # a key prefix
expect "check" remote ""
expect "exec export" help ex
expect "zero-stats" z
expect "adir afile" record a                 # FILE, then the program
expect "./adir ./afile" exec ./a                 # a program by its path
expect "adir afile" exec -- bash a           # the program's arguments
expect "adir afile" record out.zcr bash -- a
expect "" exec bash --no-such-option-prefix
# A program by its name: commands on PATH.
mkdir "$work/bin" && touch "$work/bin/zc-tool" && chmod +x "$work/bin/zc-tool"
PATH="$work/bin:$PATH"
expect "zc-tool" exec zc-
expect "zc-tool" exec -- zc-
expect "zc-tool" record out.zcr zc-
expect "zc-tool" --dir adir exec zc-

echo "bash completion: $failures failures"
[ "$failures" -eq 0 ]
