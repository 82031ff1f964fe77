#!/usr/bin/env bash
# Side-by-side benchmark of `iolab survey disk` (sgpdd-survey) and fio on
# the same blank loop device.
#
# Not a test: it prints numbers, it asserts nothing. For each survey point
# (1 MiB records, one region, THREADS threads) it runs the survey's write
# and read, and fio's nearest equivalent: sequential O_DIRECT psync I/O
# with the same record size and thread count, the region split into one
# contiguous stretch per job (fio jobs cannot share one sequential cursor
# as the survey's threads do). It prints both MB/s (MiB/s) figures and the
# ratio iolab/fio; the issue's goal is each within 5%.
#
# Needs: root (losetup), fio, a Rust toolchain.
# Usage: bench/survey-vs-fio.sh   (env knobs below)
set -euo pipefail

SIZE_MB=${SIZE_MB:-1024}         # MB per action (the survey's size)
REPS=${REPS:-3}                  # runs of each tool per point (medians, alternating order)
THREADS=${THREADS:-"1 2 4 8"}    # thread counts to compare
IOLAB=${IOLAB:-}                 # path to a built iolab; built in release if empty

here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/iolab-bench.XXXXXX")
dev=

cleanup() {
    set +e
    [ -n "$dev" ] && losetup -d "$dev"
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

die() { echo "survey-vs-fio: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root for a loop device"
command -v fio >/dev/null || die "fio not found: apt-get install fio"

if [ -z "$IOLAB" ]; then
    (cd "$here" && cargo build --release -q -p iolab) || die "cargo build failed"
    IOLAB=$here/target/release/iolab
fi

# A blank (sparse) backing file: the survey refuses a device holding data.
img=$work/disk.img
truncate -s $((SIZE_MB + 16))M "$img"
dev=$(losetup --find --show "$img")
# Zeros everywhere first: a write to a hole allocates blocks in the
# backing file, which only the first tool to write would pay. Zeros hold
# no signature, so the survey still takes the device as blank.
dd if=/dev/zero of="$dev" bs=1M count=$((SIZE_MB + 16)) oflag=direct status=none

# The survey's aggregate MB/s of ACTION ("write"/"read") at THR threads.
survey_mbs() {
    local thr=$1 action=$2
    "$IOLAB" survey disk "$dev" --size "$SIZE_MB" --rszlo 1024 --rszhi 1024 \
        --crglo 1 --crghi 1 --thrlo "$thr" --thrhi "$thr" --actions "$action" \
        --rslt "$work/s" >/dev/null
    awk -v a="$action" 'NR > 1 { for (i = 1; i <= NF; i++) if ($i == a) print $(i + 1) }' "$work/s.summary"
}

# fio's aggregate MiB/s for the same pattern: THR jobs, each one stretch.
fio_mbs() {
    local thr=$1 action=$2
    local per=$((SIZE_MB / thr))
    fio --name=survey --filename="$dev" --rw="$action" --bs=1M --direct=1 \
        --ioengine=psync --numjobs="$thr" --size="${per}M" --offset=1M \
        --offset_increment="${per}M" --group_reporting --output-format=terse \
        --terse-version=3 2>/dev/null |
        awk -F';' -v a="$action" '{ kb = (a == "read") ? $7 : $48; printf "%.2f\n", kb / 1024 }'
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

printf '%-8s %-6s %12s %12s %8s   (medians of %s runs each)\n' threads action "iolab MB/s" "fio MB/s" ratio "$REPS"
for thr in $THREADS; do
    for action in write read; do
        : >"$work/s.runs"; : >"$work/f.runs"
        for r in $(seq "$REPS"); do
            # Alternate which tool goes first, so neither always meets the
            # other's page cache or device state.
            if [ $((r % 2)) -eq 1 ]; then
                survey_mbs "$thr" "$action" >>"$work/s.runs"; fio_mbs "$thr" "$action" >>"$work/f.runs"
            else
                fio_mbs "$thr" "$action" >>"$work/f.runs"; survey_mbs "$thr" "$action" >>"$work/s.runs"
            fi
        done
        s=$(median <"$work/s.runs")
        f=$(median <"$work/f.runs")
        awk -v t="$thr" -v a="$action" -v s="$s" -v f="$f" \
            'BEGIN { printf "%-8s %-6s %12.2f %12.2f %8.3f\n", t, a, s, f, (f > 0 ? s / f : 0) }'
    done
done
