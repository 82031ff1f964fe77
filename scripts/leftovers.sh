#!/usr/bin/env bash
# What a test run left in the temporary directories: every test and
# fixture cleans up after itself (on drop, and the fixtures also after a
# killed test), so an iolab-* entry or one of weed's sockets and logs
# that appeared during the run and is still there afterwards is a
# leftover.
#
#   scripts/leftovers.sh snapshot FILE   # before the run: what is there
#   scripts/leftovers.sh check FILE      # after it: exit 1 naming each new one
#
# Looked at: /tmp (weed puts its sockets there whatever TMPDIR says) and
# $TMPDIR. Names: iolab-*, seaweedfs-*.sock, weed.* (glog's files).
# An entry still in use is not a leftover: a unix socket something
# listens on, or a name holding the pid of a live process (a test of a
# concurrent run, on a shared machine).
set -euo pipefail

dirs() {
    echo /tmp
    if [ -n "${TMPDIR:-}" ] && [ "${TMPDIR%/}" != /tmp ]; then echo "${TMPDIR%/}"; fi
}

entries() {
    local d
    while read -r d; do
        [ -d "$d" ] || continue
        find "$d" -mindepth 1 -maxdepth 1 \( -name 'iolab-*' -o -name 'seaweedfs-*.sock' -o -name 'weed.*' \) -print
    done < <(dirs) | sort
}

# True when $1 is still someone's: a listening socket, or a name with
# the pid of a live process in it (iolab-NAME-PID, iolab-s3-PID-N).
in_use() {
    local e=$1 n
    if [ -S "$e" ]; then
        ss -xlH 2>/dev/null | grep -qF -- " $e "
        return
    fi
    for n in $(basename "$e" | grep -oE '[0-9]{2,}' || true); do
        [ -d "/proc/$n" ] && [ "$n" != "$$" ] && return 0
    done
    return 1
}

case "${1:-}" in
snapshot)
    entries >"${2:?snapshot FILE}"
    ;;
check)
    before=${2:?check FILE}
    left=0
    while read -r e; do
        in_use "$e" && continue
        echo "left by the tests: $e" >&2
        left=1
    done < <(entries | comm -13 "$before" -)
    exit "$left"
    ;;
*)
    echo "usage: $0 snapshot FILE | check FILE" >&2
    exit 2
    ;;
esac
