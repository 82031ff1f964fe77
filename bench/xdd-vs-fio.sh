#!/usr/bin/env bash
# Side-by-side benchmark of `iolab xdd` and fio on the same file.
#
# Not a test: it prints numbers, it asserts nothing. For each case it runs
# both tools on the same file, REPEAT times, alternating which tool goes
# first, and prints the medians of
#   - each tool's throughput (from its own report) and iolab/fio ratio,
#   - CPU time (user + system, of the whole process, start-up included)
#     per operation, in microseconds, so small runs overstate it for both
#     tools alike.
# With SYSCALLS=1 it also counts, under `strace -f -c`, the system calls
# each tool makes per operation in the io_uring case (one run each; the
# count does not depend on machine load, unlike the timings).
#
# Where the file lives:
#   - default: a loop-mounted ext4 (or xfs) file system made here, so
#     O_DIRECT works even when /tmp is tmpfs;
#   - DIR=/var/tmp: a file in that directory, on the machine's real disk
#     (refused when DIR is on tmpfs, where O_DIRECT does not work). Use it
#     to compare the engines as a user would see them: a loop device adds
#     its own queue in front of the disk.
#
# The ratio column is the median over rounds of iolab/fio within a round
# (REPEAT rounds, one run of each tool per round).
#
# Cases (CASES picks some of them by name, e.g. CASES="uring"):
#   warm    4 KiB random read, warm page cache, queue depth 1 (xdd vs fio psync)
#   seqw    1 MiB sequential O_DIRECT write                   (xdd vs fio psync)
#   seqr    1 MiB sequential O_DIRECT read                    (xdd vs fio psync)
#   qd32    4 KiB random O_DIRECT read, queue depth 32: xdd QThreads vs fio
#           psync with 32 jobs
#   uring   the same with xdd -engine uring vs fio io_uring iodepth 32
#
# Needs: fio, python3, a Rust toolchain; without DIR also root
# (losetup/mount) and mkfs.ext4 (or mkfs.xfs with FS=xfs).
# Usage: bench/xdd-vs-fio.sh                  (loop-mounted ext4)
#        DIR=/var/tmp REPEAT=5 CASES=uring SYSCALLS=1 bench/xdd-vs-fio.sh
set -euo pipefail

FS=${FS:-ext4}              # ext4 | xfs (loop mode only)
DIR=${DIR:-}                # a directory on a real disk; empty = loop mount
FILE_MB=${FILE_MB:-1024}    # size of the test file
SEQ_MB=${SEQ_MB:-1024}      # data moved by the sequential cases
RAND_MB=${RAND_MB:-128}     # data moved by the random cases
REPEAT=${REPEAT:-3}         # runs per tool and case; medians are printed
CASES=${CASES:-warm seqw seqr qd32 uring}
SYSCALLS=${SYSCALLS:-0}     # 1: count syscalls per op in the uring case
IOLAB=${IOLAB:-}            # path to a built iolab; built in release if empty

here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/iolab-bench.XXXXXX")
mnt=$work/mnt
dev=
file=

cleanup() {
    set +e
    [ -n "$DIR" ] && [ -n "$file" ] && rm -f "$file"
    mountpoint -q "$mnt" && umount "$mnt"
    [ -n "$dev" ] && losetup -d "$dev"
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

die() { echo "xdd-vs-fio: $*" >&2; exit 1; }

command -v fio >/dev/null || die "fio not found: apt-get install fio"
command -v python3 >/dev/null || die "python3 not found"
[ "$REPEAT" -ge 1 ] 2>/dev/null || die "REPEAT must be a number >= 1 (got '$REPEAT')"
if [ "$SYSCALLS" = 1 ]; then
    command -v strace >/dev/null || die "SYSCALLS=1 needs strace: apt-get install strace"
fi

if [ -z "$IOLAB" ]; then
    (cd "$here" && cargo build --release -q -p iolab) || die "cargo build failed"
    IOLAB=$here/target/release/iolab
fi

# The test file: on DIR's file system, or on a loop-mounted one made here.
if [ -n "$DIR" ]; then
    [ -d "$DIR" ] || die "DIR=$DIR is not a directory"
    fstype=$(df --output=fstype "$DIR" | tail -1)
    [ "$fstype" != tmpfs ] || die "DIR=$DIR is on tmpfs: O_DIRECT needs a disk file system"
    where="$fstype in $DIR ($(df --output=source "$DIR" | tail -1))"
    file=$(mktemp "$DIR/iolab-bench.XXXXXX")
else
    [ "$(id -u)" -eq 0 ] || die "needs root to loop-mount a $FS file system (O_DIRECT); or set DIR"
    command -v "mkfs.$FS" >/dev/null || die "mkfs.$FS not found: apt-get install e2fsprogs (ext4) or xfsprogs (xfs)"
    img=$work/fs.img
    truncate -s $((FILE_MB + FILE_MB / 4 + 256))M "$img"
    "mkfs.$FS" -q "$img" >/dev/null 2>&1 || "mkfs.$FS" -f -q "$img" >/dev/null
    dev=$(losetup --find --show "$img")
    mkdir -p "$mnt"
    mount "$dev" "$mnt"
    file=$mnt/testfile
    where="$FS on loop device $dev"
fi
dd if=/dev/zero of="$file" bs=1M count="$FILE_MB" oflag=direct status=none
sync

# Runs a command, recording wall/user/sys seconds into $work/time.
timed() {
    local TIMEFORMAT='%R %U %S'
    { time "$@" >"$work/out" 2>"$work/err"; } 2>"$work/time" || {
        echo "  command failed: $*" >&2
        sed 's/^/    /' "$work/err" >&2
        return 1
    }
}

# Bytes/s and ops from fio's JSON (the one job group).
fio_numbers() {
    python3 - "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
bw = ops = 0
for job in j["jobs"]:
    for d in ("read", "write"):
        bw += job[d]["bw_bytes"]
        ops += job[d]["total_ios"]
print(bw, ops)
PY
}

# Bytes/s and ops from iolab xdd's JSON document (nanosecond elapsed time;
# the table's 3-decimal Elapsed column would quantize short runs).
xdd_numbers() {
    python3 - "$1" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["payload"]["combined"]
print(round(c["bytes"] / c["elapsed_s"]), c["ops"])
PY
}

# CPU microseconds per op from $work/time and an op count.
cpu_us_per_op() {
    awk -v ops="$1" '{ if (ops > 0) printf "%.2f", ($2 + $3) * 1e6 / ops; else print "nan" }' "$work/time"
}

# Median of the numbers on stdin ("nan" when there are none).
median() {
    sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "nan"; exit }
        if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Drops the page cache (and warms the file again when WARM=1), so that
# every run starts the same way whichever tool ran before it.
settle() {
    sync
    echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
    if [ "${WARM:-0}" = 1 ]; then cat "$file" >/dev/null; fi
}

# One run of one tool; appends "MB/s cpu_us_per_op" to $work/$tool.
run_xdd() {
    settle
    # shellcheck disable=SC2086
    if timed "$IOLAB" xdd $1 --json "$work/xdd.json" && read -r bw ops < <(xdd_numbers "$work/xdd.json"); then
        echo "$(awk -v b="$bw" 'BEGIN{printf "%.2f", b/1e6}') $(cpu_us_per_op "$ops")" >>"$work/iolab"
    else
        echo "0 nan" >>"$work/iolab" # keeps the rounds paired
    fi
}
run_fio() {
    settle
    # shellcheck disable=SC2086
    if timed fio --output-format=json --filename="$file" --name=bench --group_reporting $1 &&
        read -r bw ops < <(fio_numbers "$work/out"); then
        echo "$(awk -v b="$bw" 'BEGIN{printf "%.2f", b/1e6}') $(cpu_us_per_op "$ops")" >>"$work/fio"
    else
        echo "0 nan" >>"$work/fio"
    fi
}

row() { printf '%-44s %10s %10s %7s %10s %10s\n' "$@"; }

# compare NAME "xdd args..." "fio args...": REPEAT interleaved runs each,
# the tool that goes first alternating, so a load change hits both alike.
compare() {
    local name=$1 xargs=$2 fargs=$3 i
    : >"$work/iolab"
    : >"$work/fio"
    for ((i = 0; i < REPEAT; i++)); do
        if ((i % 2 == 0)); then run_xdd "$xargs"; run_fio "$fargs"
        else run_fio "$fargs"; run_xdd "$xargs"; fi
    done
    local xbw fbw xcpu fcpu ratio
    xbw=$(cut -d' ' -f1 "$work/iolab" | median)
    fbw=$(cut -d' ' -f1 "$work/fio" | median)
    xcpu=$(cut -d' ' -f2 "$work/iolab" | median)
    fcpu=$(cut -d' ' -f2 "$work/fio" | median)
    # The median of each round's ratio: a load change during the run
    # moves both runs of a round, so this varies less than the ratio of
    # the medians when the machine is shared.
    ratio=$(paste -d' ' "$work/iolab" "$work/fio" |
        awk '$1 > 0 && $3 > 0 { printf "%.3f\n", $1 / $3 }' | median)
    row "$name" "$xbw" "$fbw" "$ratio" "$xcpu" "$fcpu"
    if [ "${VERBOSE:-0}" = 1 ]; then
        echo "    iolab runs (MB/s us/op): $(tr '\n' ';' <"$work/iolab")"
        echo "    fio runs   (MB/s us/op): $(tr '\n' ';' <"$work/fio")"
    fi
}

# System calls per op of one command under strace -f -c (threads included).
syscalls_per_op() {
    local ops=$1
    shift
    settle
    strace -f -c -o "$work/strace" "$@" >"$work/out" 2>"$work/err" || return 1
    # strace -c columns: % time, seconds, usecs/call, calls, [errors,] name.
    awk -v ops="$ops" '$NF == "total" { printf "%.2f", $4 / ops }' "$work/strace"
}

# The top syscalls of the last strace run, per op.
syscall_breakdown() {
    awk -v ops="$1" 'NR > 2 && $NF != "total" && $1 !~ /^-/ && $4 >= ops / 100 {
        printf "%s=%.2f ", $NF, $4 / ops }' "$work/strace"
}

case_on() { [[ " $CASES " == *" $1 "* ]]; }

blocks=$((FILE_MB * 1024)) # file size in 1024-byte blocks, the xdd range
rand_ops=$((RAND_MB * 256))
rand_common="-blocksize 1024 -reqsize 4 -mbytes $RAND_MB -seek random -seek range $blocks"
fio_rand="--rw=randread --bs=4k --size=${FILE_MB}m --io_size=${RAND_MB}m --randrepeat=1 --norandommap"
uring_x="-op read -target $file $rand_common -queuedepth 32 -dio -engine uring"
uring_f="$fio_rand --direct=1 --ioengine=io_uring --iodepth=32"

echo "iolab xdd vs fio on $where, file $FILE_MB MiB, medians of $REPEAT runs; MB = 10^6 bytes"
row "case" "iolab MB/s" "fio MB/s" "ratio" "iolab us/op" "fio us/op"

# fio drops the file's page cache before a job unless told not to
# (invalidate=1 by default); the warm case must keep it on both sides.
case_on warm && WARM=1 compare "4k randread warm cache qd1 (psync)" \
    "-op read -target $file $rand_common -queuedepth 1" \
    "$fio_rand --ioengine=psync --iodepth=1 --invalidate=0"

case_on seqw && compare "1M seq write O_DIRECT (psync)" \
    "-op write -target $file -blocksize 1024 -reqsize 1024 -mbytes $SEQ_MB -dio" \
    "--rw=write --bs=1m --size=${SEQ_MB}m --direct=1 --ioengine=psync"

case_on seqr && compare "1M seq read O_DIRECT (psync)" \
    "-op read -target $file -blocksize 1024 -reqsize 1024 -mbytes $SEQ_MB -dio" \
    "--rw=read --bs=1m --size=${SEQ_MB}m --direct=1 --ioengine=psync"

case_on qd32 && compare "4k randread O_DIRECT qd32 (qthreads/psync x32)" \
    "-op read -target $file $rand_common -queuedepth 32 -dio" \
    "$fio_rand --direct=1 --ioengine=psync --numjobs=32 --io_size=$((RAND_MB / 32))m"

case_on uring && compare "4k randread O_DIRECT qd32 (uring/io_uring)" "$uring_x" "$uring_f"

if [ "$SYSCALLS" = 1 ] && case_on uring; then
    echo
    echo "system calls per op, 4k randread O_DIRECT qd32 (uring/io_uring), $rand_ops ops"
    # shellcheck disable=SC2086
    x=$(syscalls_per_op "$rand_ops" "$IOLAB" xdd $uring_x) && echo "  iolab: $x  ($(syscall_breakdown "$rand_ops"))"
    # shellcheck disable=SC2086
    f=$(syscalls_per_op "$rand_ops" fio --output-format=json --filename="$file" --name=bench $uring_f) &&
        echo "  fio:   $f  ($(syscall_breakdown "$rand_ops"))"
fi
true
