#!/usr/bin/env bash
# Side-by-side benchmark of `iolab xdd` and fio on the same file.
#
# Not a test: it prints numbers, it asserts nothing. For each case it runs
# both tools on one file of a loop-mounted ext4 (or xfs) file system made
# here, so O_DIRECT works even when /tmp is tmpfs, and prints
#   - iolab/fio throughput ratio (from each tool's own report),
#   - CPU time (user + system, of the whole process, start-up included)
#     per operation, so small runs overstate it for both tools alike.
#
# Cases:
#   1. 4 KiB random read, warm page cache, queue depth 1 (xdd vs fio psync)
#   2. 1 MiB sequential O_DIRECT write                   (xdd vs fio psync)
#   3. 1 MiB sequential O_DIRECT read                    (xdd vs fio psync)
#   4. 4 KiB random O_DIRECT read, queue depth 32:
#        xdd QThreads  vs fio psync with 32 jobs
#        xdd -engine uring vs fio io_uring iodepth 32
#
# Needs: root (losetup/mount), fio, mkfs.ext4 (or mkfs.xfs with FS=xfs),
# a Rust toolchain. Usage: bench/xdd-vs-fio.sh   (env knobs below)
set -euo pipefail

FS=${FS:-ext4}              # ext4 | xfs
FILE_MB=${FILE_MB:-1024}    # size of the test file
SEQ_MB=${SEQ_MB:-1024}      # data moved by the sequential cases
RAND_MB=${RAND_MB:-128}     # data moved by the random cases
IOLAB=${IOLAB:-}            # path to a built iolab; built in release if empty

here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/iolab-bench.XXXXXX")
mnt=$work/mnt
dev=

cleanup() {
    set +e
    mountpoint -q "$mnt" && umount "$mnt"
    [ -n "$dev" ] && losetup -d "$dev"
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

die() { echo "xdd-vs-fio: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root to loop-mount a $FS file system (O_DIRECT)"
command -v fio >/dev/null || die "fio not found: apt-get install fio"
command -v "mkfs.$FS" >/dev/null || die "mkfs.$FS not found: apt-get install e2fsprogs (ext4) or xfsprogs (xfs)"

if [ -z "$IOLAB" ]; then
    (cd "$here" && cargo build --release -q -p iolab) || die "cargo build failed"
    IOLAB=$here/target/release/iolab
fi

# A file system image big enough for the file plus metadata.
img=$work/fs.img
truncate -s $((FILE_MB + FILE_MB / 4 + 256))M "$img"
"mkfs.$FS" -q "$img" >/dev/null 2>&1 || "mkfs.$FS" -f -q "$img" >/dev/null
dev=$(losetup --find --show "$img")
mkdir -p "$mnt"
mount "$dev" "$mnt"
file=$mnt/testfile
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
    python3 - "$work/out" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
bw = ops = 0
for job in j["jobs"]:
    for d in ("read", "write"):
        bw += job[d]["bw_bytes"]
        ops += job[d]["total_ios"]
print(bw, ops)
EOF
}

# Bytes/s and ops from iolab xdd's JSON document (nanosecond elapsed time;
# the table's 3-decimal Elapsed column would quantize short runs).
xdd_numbers() {
    python3 - "$work/xdd.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))["payload"]["combined"]
print(round(c["bytes"] / c["elapsed_s"]), c["ops"])
EOF
}

# cpu ns per op from $work/time and an op count.
cpu_ns_per_op() {
    awk -v ops="$1" '{ if (ops > 0) printf "%.0f", ($2 + $3) * 1e9 / ops; else print "n/a" }' "$work/time"
}

row() { printf '%-44s %12s %12s %8s %12s %12s\n' "$@"; }

# compare NAME "xdd args..." "fio args..."
compare() {
    local name=$1 xargs=$2 fargs=$3 xbw xops fbw fops xcpu fcpu
    sync
    echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
    if [ "${WARM:-0}" = 1 ]; then cat "$file" >/dev/null; fi
    # shellcheck disable=SC2086
    if timed "$IOLAB" xdd $xargs --json "$work/xdd.json" && read -r xbw xops < <(xdd_numbers); then
        xcpu=$(cpu_ns_per_op "$xops")
    else
        xbw=0 xops=0 xcpu=n/a
    fi
    echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
    if [ "${WARM:-0}" = 1 ]; then cat "$file" >/dev/null; fi
    # shellcheck disable=SC2086
    timed fio --output-format=json --filename="$file" --name=bench --group_reporting $fargs
    read -r fbw fops < <(fio_numbers)
    fcpu=$(cpu_ns_per_op "$fops")
    local ratio
    ratio=$(awk -v a="$xbw" -v b="$fbw" 'BEGIN { if (a > 0 && b > 0) printf "%.3f", a / b; else print "n/a" }')
    row "$name" "$(awk -v b="$xbw" 'BEGIN{printf "%.1f", b/1e6}')" \
        "$(awk -v b="$fbw" 'BEGIN{printf "%.1f", b/1e6}')" "$ratio" "$xcpu" "$fcpu"
}

blocks=$((FILE_MB * 1024)) # file size in 1024-byte blocks, the xdd range
rand_common="-blocksize 1024 -reqsize 4 -mbytes $RAND_MB -seek random -seek range $blocks"
fio_rand="--rw=randread --bs=4k --size=${FILE_MB}m --io_size=${RAND_MB}m --randrepeat=1 --norandommap"

echo "iolab xdd vs fio on $FS ($dev), file $FILE_MB MiB; MB = 10^6 bytes"
row "case" "iolab MB/s" "fio MB/s" "ratio" "iolab ns/op" "fio ns/op"

# fio drops the file's page cache before a job unless told not to
# (invalidate=1 by default); the warm case must keep it on both sides.
WARM=1 compare "4k randread warm cache qd1 (psync)" \
    "-op read -target $file $rand_common -queuedepth 1" \
    "$fio_rand --ioengine=psync --iodepth=1 --invalidate=0"

compare "1M seq write O_DIRECT (psync)" \
    "-op write -target $file -blocksize 1024 -reqsize 1024 -mbytes $SEQ_MB -dio" \
    "--rw=write --bs=1m --size=${SEQ_MB}m --direct=1 --ioengine=psync"

compare "1M seq read O_DIRECT (psync)" \
    "-op read -target $file -blocksize 1024 -reqsize 1024 -mbytes $SEQ_MB -dio" \
    "--rw=read --bs=1m --size=${SEQ_MB}m --direct=1 --ioengine=psync"

compare "4k randread O_DIRECT qd32 (qthreads/psync x32)" \
    "-op read -target $file $rand_common -queuedepth 32 -dio" \
    "$fio_rand --direct=1 --ioengine=psync --numjobs=32 --io_size=$((RAND_MB / 32))m"

compare "4k randread O_DIRECT qd32 (uring/io_uring)" \
    "-op read -target $file $rand_common -queuedepth 32 -dio -engine uring" \
    "$fio_rand --direct=1 --ioengine=io_uring --iodepth=32"
