#!/usr/bin/env bash
# Benchmark, not a test: what live figures cost. The same runs with and
# without `--live FILE --live-format openmetrics --live-interval 0.1`,
# alternating (plain, live, live, plain, ...: the first of a round
# alternates, with a pause of SETTLE seconds before each run), medians of RUNS rounds
# and the median of the per-round ratios (live / plain). Goal: within 1 %
# (ratio >= 0.99) for both:
# - mdtest -n ITEMS (default 100000) on tmpfs, one task: the rate of each
#   phase as mdtest reports it (items / phase seconds); the figure is the
#   sum of the rates of file creation, stat, read and removal and of
#   directory creation, stat and removal;
# - xdd 4 KiB random reads at queue depth 1 from a file in the page cache
#   (tmpfs): IOPS = operations / pass seconds, from xdd's --json
#   (payload.combined.iops), OPS (default 400000) requests per run.
# The textfile is rewritten atomically every 0.1 s during the live runs.
# Besides the rates, the CPU time of each run (user + system, the
# sampler thread's included) is compared the same way: each run does the
# same work, so the CPU ratio is what live figures cost, and it is far
# less shaken than a rate by other programs on a shared machine.
# Prints the machine's load (uptime) before and after: the figures are
# only as quiet as the machine.
#
# With INSTR=1 (needs valgrind), it also counts instructions, which no
# other program on the machine shakes: mdtest -n VG_ITEMS (10000) and
# xdd's reads (VG_OPS requests, 100000) under callgrind, plain, with one
# interval (--live-interval 3600) and at 0.1 s, and prints what live
# figures add per operation and per interval (user space only: the
# kernel's work, most of either run, is not counted).
#
# Usage: bench/live-overhead.sh [IOLAB_BINARY] (default target/release/iolab)
# Environment: RUNS (5), ITEMS (100000), OPS (400000), SETTLE (1),
# INSTR (0), VG_ITEMS (10000), VG_OPS (100000).
set -euo pipefail
BIN=${1:-target/release/iolab}
RUNS=${RUNS:-5}
ITEMS=${ITEMS:-100000}
OPS=${OPS:-400000}
[ -x "$BIN" ] || { echo "build first: cargo build --release --features mpi ($BIN missing)" >&2; exit 2; }
BIN=$(readlink -f "$BIN")

tmp=$(mktemp -d)
mounted=0
cleanup() {
    [ "$mounted" = 1 ] && umount -l "$tmp/fs" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/fs"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=2g tmpfs "$tmp/fs"; then
    mounted=1
else
    echo "not root: $tmp/fs is not a fresh tmpfs" >&2
fi
fs=$tmp/fs
export CI=1

TIMEFORMAT='%3U %3S'
# Runs a command quietly; its CPU seconds (user + system) go to $tmp/cpu.
cpu() {
    { time "$@" >/dev/null 2>/dev/null; } 2>"$tmp/t"
    awk '{print $1 + $2}' "$tmp/t" >"$tmp/cpu"
}

# Lets the kernel finish freeing what the last run removed.
settle() { sleep "${SETTLE:-1}"; }

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print 0; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.4f", a/b; else print "n/a" }'; }
live_args=(--live "$tmp/iolab.prom" --live-format openmetrics --live-interval 0.1)

# mdtest: prints the sum of the phase rates (items/s) and its CPU seconds.
md() {
    rm -rf "$fs/md"
    cpu "$BIN" mdtest -n "$ITEMS" -w 0 -e 0 -d "$fs/md" --json "$tmp/md.json" "$@"
    printf '%s ' "$(cat "$tmp/cpu")"
    python3 - "$tmp/md.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
keep = {"dir_create", "dir_stat", "dir_remove", "file_create", "file_stat", "file_read", "file_remove"}
print(sum(p["rate"] for it in d["payload"]["tests"][0]["iterations"] for p in it["phases"] if p["phase"] in keep))
PY
}

# xdd: prints the read IOPS and its CPU seconds.
xd() {
    cpu "$BIN" xdd -op read -target "$fs/data" -reqsize 1 -blocksize 4096 -numreqs "$OPS" \
        -seek random -seek range 65536 -qd 1 --json "$tmp/x.json" "$@"
    printf '%s ' "$(cat "$tmp/cpu")"
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["payload"]["combined"]["iops"])' "$tmp/x.json"
}

dd if=/dev/urandom of="$fs/data" bs=1M count=256 status=none
echo "load before: $(uptime)"
for what in md xd; do
    for f in plain live ratio cplain clive cratio; do : >"$tmp/$f"; done
    for r in $(seq "$RUNS"); do
        # Which run goes first alternates by round, with a pause before
        # each: a run right after another pays for the kernel's deferred
        # freeing of the last one's inodes (measured: whichever of the
        # two ran second was 10-20 % slower, plain or live alike).
        if [ $((r % 2)) = 1 ]; then
            settle; read -r pc p <<<"$($what)"
            settle; read -r lc l <<<"$($what "${live_args[@]}")"
        else
            settle; read -r lc l <<<"$($what "${live_args[@]}")"
            settle; read -r pc p <<<"$($what)"
        fi
        grep -q '^# EOF$' "$tmp/iolab.prom" || { echo "the textfile does not end in # EOF" >&2; exit 1; }
        echo "$p" >>"$tmp/plain"; echo "$l" >>"$tmp/live"; ratio "$l" "$p" >>"$tmp/ratio"; echo >>"$tmp/ratio"
        echo "$pc" >>"$tmp/cplain"; echo "$lc" >>"$tmp/clive"; ratio "$lc" "$pc" >>"$tmp/cratio"; echo >>"$tmp/cratio"
        echo "  $what round $r: plain $p ($pc s CPU), live $l ($lc s CPU)" >&2
    done
    name=$([ "$what" = md ] && echo "mdtest -n $ITEMS, sum of phase rates (items/s)" || echo "xdd 4 KiB QD1 random reads, page cache (IOPS)")
    # Both the median of the rounds' ratios and the ratio of the medians:
    # with the order alternating, a machine that favours the first (or
    # second) run of a pair shakes the first and not the second.
    mp=$(median <"$tmp/plain"); ml=$(median <"$tmp/live")
    printf '%s\n  plain median %.0f, live median %.0f, ratio of medians %s, median ratio live/plain %s (goal >= 0.99)\n' \
        "$name" "$mp" "$ml" "$(ratio "$ml" "$mp")" "$(grep . "$tmp/ratio" | median)"
    mp=$(median <"$tmp/cplain"); ml=$(median <"$tmp/clive")
    printf '  CPU seconds: plain median %s, live median %s, ratio of medians %s, median ratio live/plain %s (goal <= 1.01)\n' \
        "$mp" "$ml" "$(ratio "$ml" "$mp")" "$(grep . "$tmp/cratio" | median)"
done
echo "load after: $(uptime)"

[ "${INSTR:-0}" = 1 ] || exit 0
command -v valgrind >/dev/null || { echo "INSTR=1 needs valgrind (apt-get install -y valgrind)" >&2; exit 2; }
VG_ITEMS=${VG_ITEMS:-10000}
VG_OPS=${VG_OPS:-100000}
# Instructions of one run under callgrind (every thread's).
instr() {
    rm -rf "$fs/vg"
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$BIN" "$@" >/dev/null 2>"$tmp/cg.err"
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/cg.err"
}
# Counts one workload ($1: its name, $2: its operations, the rest: its
# command line) plain, with one interval and at 0.1 s.
count() {
    local name=$1 ops=$2
    shift 2
    local plain once many elapsed
    plain=$(instr "$@")
    once=$(instr "$@" --live "$tmp/vg1.prom" --live-format openmetrics --live-interval 3600)
    many=$(instr "$@" --live "$tmp/vg2.prom" --live-format openmetrics --live-interval 0.1)
    # The intervals of the 0.1 s run: the last textfile says how long it ran.
    elapsed=$(sed -n 's/^iolab_live_elapsed_seconds{.*} \(.*\)$/\1/p' "$tmp/vg2.prom")
    python3 - "$plain" "$once" "$many" "$elapsed" "$ops" "$name" <<'PY'
import sys
plain, once, many = (int(x) for x in sys.argv[1:4])
intervals = round(float(sys.argv[4]) / 0.1) + 1
ops = int(sys.argv[5])
per_interval = (many - once) / max(intervals - 1, 1)
per_op = (once - plain - per_interval) / ops
print(f"instructions (callgrind, {sys.argv[6]}): plain {plain:,} ({plain / ops:.0f} per operation), "
      f"one interval {once:,}, {intervals} intervals at 0.1 s {many:,}")
print(f"  live figures add {per_interval:,.0f} per interval and {per_op:.0f} per operation")
PY
}
# mdtest's seven phases, each of every item.
count "mdtest -n $VG_ITEMS" $((7 * VG_ITEMS)) mdtest -n "$VG_ITEMS" -d "$fs/vg"
count "xdd $VG_OPS 4 KiB QD1 reads" "$VG_OPS" xdd -op read -target "$fs/data" -reqsize 1 -blocksize 4096 \
    -numreqs "$VG_OPS" -seek random -seek range 65536 -qd 1
