#!/usr/bin/env bash
# Benchmark, not a test: `iolab io500` against the io500 app on the same
# ini and task count. Runs alternate (app, iolab, iolab, app, app, ...); for
# each of the 12 scored phases the median score of each tool and the
# median of the per-round ratios iolab / app are printed (>= 1.0: iolab
# is as fast or faster). Each tool's score is what its own [RESULT] line
# says (GiB/s for ior phases, kIOPS for the others), read from its
# result_summary.txt.
#
# The io500 app is built beforehand from its public sources (the steps
# of its README and prepare.sh; it needs the network for git):
#   1. packages: a C compiler, make, git, autoconf, automake, an MPI with
#      mpicc (Debian: apt-get install -y build-essential git autoconf
#      automake pkg-config libopenmpi-dev openmpi-bin)
#   2. git clone https://github.com/IO500/io500 IO500_APP_DIR
#   3. cd IO500_APP_DIR && ./prepare.sh, which: clones IOR (hpc/ior, at
#      the commit prepare.sh names) into build/ior, runs its ./bootstrap
#      and ./configure --prefix=IO500_APP_DIR and installs ior, mdtest and
#      md-workbench into bin/; clones pfind (VI4IO/pfind) into build/pfind
#      and builds it; clones the schema tools; then runs make, which links
#      ./io500 with IOR's and pfind's libraries. It prints "OK" at the end.
#   The app is then IO500_APP_DIR/io500, run under mpirun. This script
#   was run against IO500/io500 02091cf with IOR 5fcf0ba.
#
# Usage: bench/io500-vs-app.sh IO500_APP_DIR [INI] [TASKS] [IOLAB_BINARY]
#   IO500_APP_DIR  the built io500 checkout (holds the io500 binary)
#   INI            an ini; default: a small one on a fresh tmpfs
#                  (stonewall-time 5, invalid by design but quick)
#   TASKS          MPI ranks of both tools (default 2); iolab runs them
#                  as threads (--tasks) unless IOLAB_MPI=1
#   IOLAB_BINARY   default target/release/iolab
# Environment: RUNS (3), IOLAB_MPI (0), MODE (standard; extended runs
#   both tools with --mode=extended and also compares find-easy,
#   find-hard, ior-rnd4K-easy-read and the md-workbench phases).
set -euo pipefail
APP_DIR=${1:?usage: bench/io500-vs-app.sh IO500_APP_DIR [INI] [TASKS] [IOLAB_BINARY]}
INI=${2:-}
TASKS=${3:-2}
BIN=${4:-target/release/iolab}
RUNS=${RUNS:-3}
IOLAB_MPI=${IOLAB_MPI:-0}
MODE=${MODE:-standard}
case "$MODE" in
    standard) MODE_ARGS=() ;;
    extended) MODE_ARGS=(--mode=extended) ;;
    *) echo "MODE=$MODE: standard or extended" >&2; exit 2 ;;
esac
if [ ! -x "$APP_DIR/io500" ]; then
    cat >&2 <<MSG
$APP_DIR/io500 is missing. Build the io500 app from its public sources first:
  1. apt-get install -y build-essential git autoconf automake pkg-config libopenmpi-dev openmpi-bin
  2. git clone https://github.com/IO500/io500 $APP_DIR
  3. cd $APP_DIR && ./prepare.sh
     (clones IOR into build/ior, bootstraps, configures with --prefix=$APP_DIR
     and installs ior, mdtest, md-workbench into bin/; clones and builds pfind
     in build/pfind; then make links ./io500; it ends by printing OK)
Then run: $0 $APP_DIR
MSG
    exit 2
fi
[ -x "$BIN" ] || { echo "build first: cargo build --release ($BIN missing)" >&2; exit 2; }
BIN=$(readlink -f "$BIN")
command -v mpirun >/dev/null || { echo "mpirun is missing (apt-get install -y openmpi-bin)" >&2; exit 2; }

tmp=$(mktemp -d)
mounted=0
cleanup() {
    [ "$mounted" = 1 ] && umount -l "$tmp/fs" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/fs"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=4g tmpfs "$tmp/fs" 2>/dev/null; then mounted=1; fi

# The ini of one tool's run: datadir and resultdir of its own, no
# timestamps, everything else from INI (or the small default).
make_ini() {
    local tool=$1 out=$2
    {
        echo "[global]"
        echo "datadir = $tmp/fs/$tool-data"
        echo "resultdir = $tmp/$tool-results"
        echo "timestamp-datadir = FALSE"
        echo "timestamp-resultdir = FALSE"
        if [ -n "$INI" ]; then
            # The user's ini without its own [global] datadir/resultdir lines.
            grep -v -E '^[[:space:]]*(datadir|resultdir|timestamp-datadir|timestamp-resultdir)[[:space:]]*=' "$INI"
        else
            printf '[debug]\nstonewall-time = 5\n[ior-easy]\ntransferSize = 1m\nblockSize = 256m\n'
            printf '[ior-hard]\nsegmentCount = 2000\n[mdtest-easy]\nn = 20000\n[mdtest-hard]\nn = 10000\n'
            # md-workbench sized alike for both (the app's sizing follows
            # each tool's own mdtest-easy-write rate, so the faster tool
            # would get more objects, possibly more than the tmpfs holds).
            if [ "$MODE" = extended ]; then
                printf '[mdworkbench]\nprecreatePerSet = 10000\nfilesPerProc = 5000\n'
            fi
        fi
    } > "$out"
}

run_app() {
    make_ini app "$tmp/app.ini"
    rm -rf "$tmp/app-results"
    (cd "$APP_DIR" && mpirun --allow-run-as-root --oversubscribe -n "$TASKS" ./io500 "$tmp/app.ini" ${MODE_ARGS[@]+"${MODE_ARGS[@]}"}) > "$tmp/app.out" 2>&1 ||
        { echo "the io500 app failed; its output:" >&2; tail -20 "$tmp/app.out" >&2; exit 1; }
    cat "$tmp/app-results/result_summary.txt" 2>/dev/null || grep '^\[RESULT\]' "$tmp/app.out"
}

run_iolab() {
    make_ini iolab "$tmp/iolab.ini"
    rm -rf "$tmp/iolab-results"
    if [ "$IOLAB_MPI" = 1 ]; then
        mpirun --allow-run-as-root --oversubscribe -n "$TASKS" "$BIN" io500 ${MODE_ARGS[@]+"${MODE_ARGS[@]}"} "$tmp/iolab.ini" > "$tmp/iolab.out" 2>&1
    else
        "$BIN" io500 --tasks "$TASKS" ${MODE_ARGS[@]+"${MODE_ARGS[@]}"} "$tmp/iolab.ini" > "$tmp/iolab.out" 2>&1
    fi || { echo "iolab io500 failed; its output:" >&2; tail -20 "$tmp/iolab.out" >&2; exit 1; }
    cat "$tmp/iolab-results/result_summary.txt"
}

# "phase value" per [RESULT] line (and per unscored "[      ]" line).
scores() { awk '/^\[(RESULT|      )\]/ { split(substr($0, 10), f, " "); print f[1], f[2] }'; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print 0; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

: > "$tmp/all"
: > "$tmp/load"
load() { cut -d' ' -f1 /proc/loadavg >> "$tmp/load"; }
for r in $(seq 1 "$RUNS"); do
    # The tool that goes first alternates, so neither always runs on the
    # page cache and the machine state the other left.
    for tool in $( [ $((r % 2)) = 1 ] && echo app iolab || echo iolab app ); do
        load
        "run_$tool" | scores | sed "s/^/$r $tool /" >> "$tmp/all"
    done
    echo "round $r of $RUNS done" >&2
done
load
echo "load average (1 min) before each run and at the end: $(tr '\n' ' ' < "$tmp/load")($(nproc) cores)"

printf '%-20s %14s %14s %8s  %s\n' phase app iolab ratio "ratio of each round"
PHASES="ior-easy-write mdtest-easy-write ior-hard-write mdtest-hard-write find
        ior-easy-read mdtest-easy-stat ior-hard-read mdtest-hard-stat
        mdtest-easy-delete mdtest-hard-read mdtest-hard-delete"
if [ "$MODE" = extended ]; then
    PHASES="ior-easy-write mdtest-easy-write mdworkbench-create find-easy
        ior-hard-write mdtest-hard-write find find-hard mdworkbench-bench
        ior-easy-read mdtest-easy-stat ior-hard-read mdtest-hard-stat
        mdworkbench-delete mdtest-easy-delete mdtest-hard-read
        mdtest-hard-delete ior-rnd4K-easy-read"
fi
for p in $PHASES; do
    a=$(awk -v p="$p" '$2 == "app" && $3 == p { print $4 }' "$tmp/all" | median)
    i=$(awk -v p="$p" '$2 == "iolab" && $3 == p { print $4 }' "$tmp/all" | median)
    each=$(for r in $(seq 1 "$RUNS"); do
        awk -v p="$p" -v r="$r" '$1 == r && $3 == p { v[$2] = $4 } END { if (v["app"] > 0) printf "%.4f\n", v["iolab"] / v["app"] }' "$tmp/all"
    done)
    ratio=$(echo "$each" | median)
    printf '%-20s %14.4f %14.4f %8.3f  %s\n' "$p" "$a" "$i" "$ratio" "$(echo "$each" | awk '{printf "%.2f ", $1}')"
done
