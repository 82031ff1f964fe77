#!/usr/bin/env bash
# Benchmark, not a test: `iolab ior` against IOR built from its sources,
# with the same options on the same tmpfs, 2 tasks each. Runs alternate
# (IOR first in odd rounds, iolab first in even ones); for each case and
# access the median bandwidth of each tool and the median of the
# per-round ratios iolab / IOR are printed (>= 1.0: iolab is as fast or
# faster). Each tool's figure is what its own summary says: the
# bwMeanMIB of its `-O summaryFormat=JSON` file (bytes moved / time from
# the first open to the last close), so both are computed the same way.
#
# Cases:
#   easy  a file per task (-F), 1 MiB transfers, BLOCK_MB MiB per task
#   hard  one shared file, 47,008-byte transfers and blocks, SEGMENTS
#         segments (ior-hard's pattern)
# Both write then read (-w -r -e -C -Q 1 -g), as the io500 app's ior
# phases do (without a stonewall: every run moves the same bytes). IOR
# writes its default data (a fixed buffer); iolab its default unique
# data (every 4 KiB stamped, nothing a store could compress).
#
# Free page reporting is paused while the script runs (root; REPORTING=
# keep leaves it): bench/lib/reporting.sh says why. Writing a file of
# the run's size before each run (this script's first way round it)
# favoured whichever tool started sooner after it: mpirun takes a
# second to start IOR's ranks, while iolab's threads start at once.
#
# IOR is built beforehand from its public sources (it needs autotools
# and an MPI; this script was run against hpc/ior 5fcf0ba, IOR 4.1.0+dev):
#   1. apt-get install -y build-essential git autoconf automake pkg-config libopenmpi-dev openmpi-bin
#   2. git clone https://github.com/hpc/ior /work/peers/ior-src
#   3. cd /work/peers/ior-src && ./bootstrap && ./configure --prefix=/work/peers/ior && make -j2 && make install
# IOR is then /work/peers/ior/bin/ior, run under mpirun -n 2.
#
# Usage: bench/ior-vs-ior.sh IOR_BIN [IOLAB_BINARY]
#   IOR_BIN       IOR's binary
#   IOLAB_BINARY  default target/release/iolab
# Environment: RUNS (5), BLOCK_MB (1024), SEGMENTS (20000), CASES
#   ("easy hard"), IOLAB_MPI (0: iolab runs its 2 tasks as threads with
#   --tasks 2; 1: under mpirun -n 2 as IOR does), REPORTING (pause:
#   free page reporting paused while it runs, above; keep: left as is).
set -euo pipefail
IOR_BIN=${1:?usage: bench/ior-vs-ior.sh IOR_BIN [IOLAB_BINARY]}
BIN=${2:-target/release/iolab}
RUNS=${RUNS:-5}
# Sizes that keep each phase near a second or more on a 2-core VM: an
# easy read of 2 x 256 MiB took 55 ms there, so a few ms of scheduling
# moved its ratio by several %.
BLOCK_MB=${BLOCK_MB:-1024}
SEGMENTS=${SEGMENTS:-20000}
CASES=${CASES:-easy hard}
IOLAB_MPI=${IOLAB_MPI:-0}
# Reads and checks REPORTING (exit 2 on a bad value).
. "$(dirname "$0")/lib/reporting.sh"
TASKS=2

if [ ! -x "$IOR_BIN" ]; then
    cat >&2 <<MSG
$IOR_BIN is not an executable. Build IOR from its public sources first:
  1. apt-get install -y build-essential git autoconf automake pkg-config libopenmpi-dev openmpi-bin
  2. git clone https://github.com/hpc/ior /work/peers/ior-src
  3. cd /work/peers/ior-src && ./bootstrap && ./configure --prefix=/work/peers/ior && make -j2 && make install
Then run: $0 /work/peers/ior/bin/ior
MSG
    exit 2
fi
[ -x "$BIN" ] || { echo "build first: cargo build --release ($BIN missing)" >&2; exit 2; }
BIN=$(readlink -f "$BIN")
IOR_BIN=$(readlink -f "$IOR_BIN")
command -v mpirun >/dev/null || { echo "mpirun is missing (apt-get install -y openmpi-bin)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is missing" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

tmp=$(mktemp -d)
mounted=0
cleanup() {
    reporting_restore
    [ "$mounted" = 1 ] && umount -l "$tmp/fs" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/fs"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=8g tmpfs "$tmp/fs" 2>/dev/null; then mounted=1; fi

# The options of a case (both tools take the same).
case_args() {
    case $1 in
        easy) echo "-F -t 1m -b ${BLOCK_MB}m" ;;
        hard) echo "-t 47008 -b 47008 -s $SEGMENTS" ;;
        *) echo "unknown case $1 (easy, hard)" >&2; exit 2 ;;
    esac
}

# One run of one tool: prints "write MiB/s read MiB/s" from its JSON summary.
run_one() {
    local tool=$1 c=$2 out="$tmp/summary-$1.json"
    rm -f "$out"
    local args="-a POSIX -w -r -e -C -Q 1 -g -i 1 -o $tmp/fs/$tool-file $(case_args "$c") -O summaryFormat=JSON -O summaryFile=$out"
    case $tool in
        ior) mpirun -n $TASKS --oversubscribe "$IOR_BIN" $args >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; } ;;
        iolab)
            if [ "$IOLAB_MPI" = 1 ]; then
                mpirun -n $TASKS --oversubscribe "$BIN" ior $args >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
            else
                "$BIN" ior $args --tasks $TASKS >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
            fi ;;
    esac
    python3 - "$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
bw = {s["operation"]: s["bwMeanMIB"] for s in d["summary"]}
print(bw["write"], bw["read"])
PY
}

# Free page reporting paused (above), the value found put back at exit.
reporting_pause
echo "load before: $(uptime)"
echo "tmpfs: $([ $mounted = 1 ] && echo "a fresh one" || echo "none (root needed); $tmp")"
printf "%-6s %-6s %12s %12s %8s\n" case access "IOR MiB/s" "iolab MiB/s" ratio
for c in $CASES; do
    : > "$tmp/rounds"
    for r in $(seq 1 "$RUNS"); do
        if [ $((r % 2)) = 1 ]; then order="ior iolab"; else order="iolab ior"; fi
        for tool in $order; do
            echo "$tool $(run_one "$tool" "$c")" >> "$tmp/rounds.$r"
        done
        python3 - "$tmp/rounds.$r" >> "$tmp/rounds" <<'PY'
import sys
v = {l.split()[0]: l.split()[1:] for l in open(sys.argv[1])}
print(v["ior"][0], v["iolab"][0], v["ior"][1], v["iolab"][1])
PY
        rm -f "$tmp/rounds.$r"
    done
    python3 - "$tmp/rounds" "$c" <<'PY'
import statistics as st, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
for i, access in ((0, "write"), (2, "read")):
    ior = [r[i] for r in rows]
    lab = [r[i + 1] for r in rows]
    ratio = [b / a for a, b in zip(ior, lab) if a > 0]
    print("%-6s %-6s %12.1f %12.1f %8.2f" % (sys.argv[2], access, st.median(ior), st.median(lab), st.median(ratio)))
PY
done
echo "load after: $(uptime)"
