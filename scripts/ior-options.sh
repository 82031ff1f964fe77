#!/usr/bin/env bash
# Measures which of IOR's options IOR accepts and which iolab ior
# accepts, on the same command lines, and prints the table that
# crates/cli/tests/data/ior_options.tsv records (tests/ior_options.rs
# checks iolab's column of it on every run of the suite; this script is
# how its IOR column was measured, and re-measures both).
#
# Each case of the table is added to `-o DIR/f -b 256k -t 64k` and run
# with 2 tasks on a fresh directory (a tmpfs when root): IOR under
# mpirun -n 2, iolab with --tasks 2. A case is accepted when the run
# exits 0. In a case, SCRIPT stands for a two-test -f script, FILE, SW,
# SUM, RANK and PEROP for files in the run's directory.
#
# IOR is built from its sources (see bench/ior-vs-ior.sh for the steps).
# Usage: scripts/ior-options.sh IOR_BIN [IOLAB_BINARY]
# Output: case, IOR (measured), iolab (measured), the table's two
# verdicts, and "differs" where a measurement differs from the table.
set -euo pipefail
IOR_BIN=${1:?usage: scripts/ior-options.sh IOR_BIN [IOLAB_BINARY]}
BIN=${2:-target/release/iolab}
TABLE=${TABLE:-crates/cli/tests/data/ior_options.tsv}
[ -x "$IOR_BIN" ] || { echo "$IOR_BIN: not an executable (see bench/ior-vs-ior.sh to build IOR)" >&2; exit 2; }
[ -x "$BIN" ] || { echo "$BIN: build iolab first" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "mpirun is missing" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# No S3 service here: iolab must not find one in the environment either.
unset AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY

base=$(mktemp -d)
mounted=0
cleanup() {
    [ "$mounted" = 1 ] && umount -l "$base" 2>/dev/null
    rm -rf "$base"
}
trap cleanup EXIT
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=2g tmpfs "$base" 2>/dev/null; then mounted=1; fi

verdict() { [ "$1" = 0 ] && echo accept || echo refuse; }

run_case() {
    local tool=$1 c=$2 d
    d=$(mktemp -d "$base/run.XXXX")
    printf 'IOR START\n  api=POSIX\n  blockSize=256k\n  transferSize=64k\n  testFile=%s/sf\nRUN\n  segmentCount=2\nRUN\nIOR STOP\n' "$d" > "$d/script"
    local args=${c//SCRIPT/$d/script}
    args=${args//FILE/$d/other}; args=${args//SW/$d/sw}; args=${args//SUM/$d/sum}
    args=${args//RANK/$d/rank.csv}; args=${args//PEROP/$d/perop}
    local rc=0
    case $tool in
        ior) timeout 120 mpirun -n 2 --oversubscribe "$IOR_BIN" -o "$d/f" -b 256k -t 64k $args >/dev/null 2>&1 </dev/null || rc=$? ;;
        iolab) timeout 120 "$BIN" ior -o "$d/f" -b 256k -t 64k $args --tasks 2 >/dev/null 2>&1 </dev/null || rc=$? ;;
    esac
    rm -rf "$d"
    echo "$rc"
}

printf "%-60s %-7s %-7s %-7s %-7s\n" case IOR iolab "IOR(t)" "iolab(t)"
grep -v '^#' "$TABLE" | while IFS=$'\t' read -r c t_ior t_lab _note; do
    m_ior=$(verdict "$(run_case ior "$c")")
    m_lab=$(verdict "$(run_case iolab "$c")")
    mark=""
    [ "$m_ior" = "$t_ior" ] && [ "$m_lab" = "$t_lab" ] || mark="differs"
    printf "%-60s %-7s %-7s %-7s %-7s %s\n" "$c" "$m_ior" "$m_lab" "$t_ior" "$t_lab" "$mark"
done
