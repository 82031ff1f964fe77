#!/usr/bin/env bash
# Benchmark, not a test: `iolab mdtest` with 2 tasks against IOR's
# mdtest (built from hpc/ior's sources) under `mpirun -n 2`, the same
# options on the same fresh tmpfs. iolab runs its tasks as threads
# (`--tasks 2`, each thread with a descriptor table of its own), or with
# IOLAB_MPI=1 as 2 MPI ranks as mdtest does. Runs alternate (IOR's first
# in odd rounds, iolab's first in even ones), with a pause of SETTLE
# seconds before each, so that neither pays for the kernel freeing the
# other's inodes. For each phase of the SUMMARY rate table (file
# creation, stat, read and removal; tree creation and removal) it prints
# the median rate of each tool and the median of the per-round ratios
# iolab / IOR (>= 1.0: iolab is as fast or faster). Both rates are the
# tools' own Mean column: items over the phase's seconds, as mdtest
# computes them.
#
# The options (OPTS, default `-F -n ITEMS -w 0 -e 0`): files only, every
# file created, stat'ed, opened and closed (read of 0 bytes) and removed,
# in one shared directory.
#
# IOR's mdtest is built beforehand (see bench/ior-vs-ior.sh: the same
# build installs /work/peers/ior/bin/mdtest).
#
# Usage: bench/mdtest-vs-ior.sh MDTEST_BIN [IOLAB_BINARY]
#   MDTEST_BIN    IOR's mdtest
#   IOLAB_BINARY  default target/release/iolab
# Environment: RUNS (5), ITEMS (25000, per task), OPTS, SETTLE (1),
#   IOLAB_MPI (0: threads; 1: under mpirun -n 2).
set -euo pipefail
MDTEST_BIN=${1:?usage: bench/mdtest-vs-ior.sh MDTEST_BIN [IOLAB_BINARY]}
BIN=${2:-target/release/iolab}
RUNS=${RUNS:-5}
ITEMS=${ITEMS:-25000}
OPTS=${OPTS:--F -n $ITEMS -w 0 -e 0}
IOLAB_MPI=${IOLAB_MPI:-0}
TASKS=2

[ -x "$MDTEST_BIN" ] || { echo "$MDTEST_BIN is not an executable: build IOR first (bench/ior-vs-ior.sh says how)" >&2; exit 2; }
[ -x "$BIN" ] || { echo "build first: cargo build --release ($BIN missing)" >&2; exit 2; }
BIN=$(readlink -f "$BIN")
MDTEST_BIN=$(readlink -f "$MDTEST_BIN")
command -v mpirun >/dev/null || { echo "mpirun is missing (apt-get install -y openmpi-bin)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is missing" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CI=1

tmp=$(mktemp -d)
mounted=0
cleanup() {
    [ "$mounted" = 1 ] && umount -l "$tmp/fs" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/fs"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=4g tmpfs "$tmp/fs" 2>/dev/null; then mounted=1; fi

# One run of one tool: its SUMMARY rate table's Mean column, one
# "phase=rate" word per row.
run_one() {
    local tool=$1 dir="$tmp/fs/$1"
    rm -rf "$dir"
    sleep "${SETTLE:-1}"
    # shellcheck disable=SC2086
    case $tool in
        ior) mpirun -n $TASKS --oversubscribe "$MDTEST_BIN" $OPTS -d "$dir" >"$tmp/log" 2>&1 ;;
        iolab)
            if [ "$IOLAB_MPI" = 1 ]; then
                mpirun -n $TASKS --oversubscribe "$BIN" mdtest $OPTS -d "$dir" >"$tmp/log" 2>&1
            else
                "$BIN" mdtest $OPTS -d "$dir" --tasks $TASKS >"$tmp/log" 2>&1
            fi ;;
    esac || { cat "$tmp/log" >&2; exit 1; }
    python3 - "$tmp/log" <<'PY'
import re, sys
rows, on = [], False
for line in open(sys.argv[1]):
    # IOR's mdtest: "SUMMARY rate (in ops/sec):"; iolab, as mdtest 1.9: "SUMMARY:".
    if line.startswith("SUMMARY") and "time" not in line:
        on = True
    elif on:
        m = re.match(r"\s+((?:File|Directory|Tree) \w+)\s+:?\s+[\d.]+\s+[\d.]+\s+([\d.]+)", line)
        if m:
            rows.append(m.group(1).replace(" ", "_") + "=" + m.group(2))
        elif rows:
            break
if not rows:
    sys.exit("no SUMMARY rate table in the output")
print(" ".join(rows))
PY
}

echo "load before: $(uptime)"
echo "tmpfs: $([ $mounted = 1 ] && echo "a fresh one" || echo "none (root needed); $tmp")"
echo "options: $OPTS; iolab as $([ "$IOLAB_MPI" = 1 ] && echo "2 MPI ranks" || echo "2 threads (--tasks 2)")"
: >"$tmp/rounds"
for r in $(seq 1 "$RUNS"); do
    if [ $((r % 2)) = 1 ]; then order="ior iolab"; else order="iolab ior"; fi
    for tool in $order; do
        line=$(run_one "$tool")
        echo "$r $tool $line" >>"$tmp/rounds"
    done
done
python3 - "$tmp/rounds" <<'PY'
import statistics as st, sys
runs = {}
for line in open(sys.argv[1]):
    r, tool, *cells = line.split()
    runs[(r, tool)] = {k: float(v) for k, v in (c.split("=") for c in cells)}
rounds = sorted({r for r, _ in runs})
phases = [p for p in runs[(rounds[0], "ior")] if p in runs[(rounds[0], "iolab")]]
print("%-18s %14s %14s %8s" % ("phase", "IOR mdtest", "iolab", "ratio"))
for p in phases:
    a = [runs[(r, "ior")][p] for r in rounds]
    b = [runs[(r, "iolab")][p] for r in rounds]
    ratio = [y / x for x, y in zip(a, b) if x > 0]
    print("%-18s %14.0f %14.0f %8.2f" % (p.replace("_", " "), st.median(a), st.median(b), st.median(ratio) if ratio else float("nan")))
PY
echo "load after: $(uptime)"
