#!/usr/bin/env bash
# Benchmark, not a test: how fast iolab removes what an interrupted run
# left, against GNU `rm -r` removing the same tree, on a private tmpfs
# (when root; else a temporary directory). The tree is io500's
# mdtest-easy layout, made by `iolab mdtest -C -F -u`: TASKS trees of
# ITEMS empty files each. iolab's time is `iolab io500 --cleanup` on an
# ini naming that datadir: it lists the tree once to count it (for its
# progress), then removes it through directory descriptors, following no
# link. Prints the load average before each round, the median seconds of
# each tool over RUNS rounds (the tool that goes first alternates), and
# rm/iolab (goal >= 1.0: iolab as fast as rm -r).
# Usage: bench/cleanup-vs-rm.sh [IOLAB_BINARY]   (default target/release/iolab)
# RUNS (3), ITEMS (250000), TASKS (4).
set -euo pipefail
BIN=${1:-target/release/iolab}
RUNS=${RUNS:-3}
ITEMS=${ITEMS:-250000}
TASKS=${TASKS:-4}
[ -x "$BIN" ] || { echo "build first: cargo build --release ($BIN missing)" >&2; exit 2; }
work=$(mktemp -d)
mounted=
cleanup() {
    if [ -n "$mounted" ]; then umount -l "$work" || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=8g tmpfs "$work" 2>/dev/null; then
    mounted=1
fi
data=$work/data
printf '[global]\ndatadir = %s\nresultdir = %s/results\ntimestamp-datadir = FALSE\ntimestamp-resultdir = FALSE\n' \
    "$data" "$work" >"$work/c.ini"

make_tree() {
    mkdir -p "$data"
    CI=1 "$BIN" mdtest -C -F -u -n "$ITEMS" --tasks "$TASKS" -d "$data/mdtest-easy" >/dev/null
}

# Nanoseconds the command takes.
ns() {
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s%N)
    echo $((t1 - t0))
}

iolab_run() { ns env CI=1 "$BIN" io500 --cleanup "$work/c.ini"; }
rm_run() { ns rm -r "$data/mdtest-easy"; }

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

iolab_ns=()
rm_ns=()
for round in $(seq 1 "$RUNS"); do
    echo "round $round: load $(cut -d' ' -f1-3 /proc/loadavg)"
    for tool in $( ((round % 2)) && echo "iolab rm" || echo "rm iolab"); do
        make_tree
        case $tool in
            iolab) iolab_ns+=("$(iolab_run)") ;;
            rm) rm_ns+=("$(rm_run)") ;;
        esac
        if [ -e "$data/mdtest-easy" ]; then
            echo "$tool left $data/mdtest-easy" >&2
            exit 1
        fi
    done
done
i=$(printf '%s\n' "${iolab_ns[@]}" | median)
r=$(printf '%s\n' "${rm_ns[@]}" | median)
entries=$((TASKS * (ITEMS + 1) + 1))
echo
echo "removing $entries entries ($TASKS trees of $ITEMS files), median of $RUNS rounds"
printf '%-22s %10s\n' tool seconds
printf '%-22s %10.3f\n' "iolab io500 --cleanup" "$(awk -v n="$i" 'BEGIN {print n / 1e9}')"
printf '%-22s %10.3f\n' "rm -r" "$(awk -v n="$r" 'BEGIN {print n / 1e9}')"
printf 'rm/iolab %.2f\n' "$(awk -v a="$r" -v b="$i" 'BEGIN {print a / b}')"
