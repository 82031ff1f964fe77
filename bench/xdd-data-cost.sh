#!/usr/bin/env bash
# What iolab's default write data costs: `iolab xdd -op write` at 1 MiB
# requests with the default data (unique incompressible blocks, stamped
# per 4 KiB at I/O time) against `-datapattern 0x00` (XDD's zeros, no
# per-request work), on the same file.
#
# Not a test: it prints numbers, it asserts nothing. The goal is a cost
# under 2% of throughput. Each round runs both, alternating which goes
# first; the medians over REPEAT rounds are printed: MB/s of each, the
# default/zeros ratio, the same ratio of CPU time (user + system) per
# request, which a loaded machine disturbs less than wall time, and the
# share of the default's time spent stamping (the JSON's pattern_fill_s
# over elapsed_s).
#
# Where: by default a file on a tmpfs mounted here (root) or in TMPDIR:
# writes then cost a memory copy each, the case where the data's own
# cost shows most; DIR=/var/tmp puts the file on a disk instead (add
# DIO=1 for O_DIRECT there).
#
# Usage: bench/xdd-data-cost.sh
#        REPEAT=7 QD=4 DIR=/var/tmp DIO=1 bench/xdd-data-cost.sh
set -euo pipefail

REPEAT=${REPEAT:-5}        # rounds; medians are printed
FILE_MB=${FILE_MB:-512}    # file size (1 MiB requests)
PASSES=${PASSES:-4}        # passes over the file per run
QD=${QD:-1}                # QThreads
DIR=${DIR:-}               # empty: a tmpfs mounted here (root) or TMPDIR
DIO=${DIO:-0}              # 1: -dio (not on tmpfs)
IOLAB=${IOLAB:-}           # path to a built iolab; built in release if empty

here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/iolab-data-bench.XXXXXX")
mounted=0
cleanup() {
    set +e
    rm -f "${dir:-$work}/f"
    [ "$mounted" = 1 ] && umount "$work/mnt"
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

if [ -z "$IOLAB" ]; then
    (cd "$here" && cargo build --release -q -p iolab)
    IOLAB=${CARGO_TARGET_DIR:-$here/target}/release/iolab
fi
if [ -n "$DIR" ]; then
    dir=$DIR
elif [ "$(id -u)" = 0 ] && mkdir -p "$work/mnt" &&
    mount -t tmpfs -o size=$((FILE_MB + 64))m tmpfs "$work/mnt"; then
    mounted=1
    dir=$work/mnt
else
    dir=$work
fi
extra=()
[ "$DIO" = 1 ] && extra+=(-dio)

# One run; prints "MB/s fill_share cpu_us_per_op".
run() {
    local json=$work/r.json
    (cd "$dir" && "$IOLAB" xdd -op write -target f -reqsize 1024 -blocksize 1024 \
        -numreqs "$FILE_MB" -passes "$PASSES" -qd "$QD" "${extra[@]}" "$@" \
        --json "$json" >/dev/null 2>&1)
    python3 - "$json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))["payload"]["combined"]
print(c["bandwidth_mb_per_s"], c["pattern_fill_s"] / max(c["elapsed_s"], 1e-9), c["cpu"]["us_per_op"])
EOF
}

run >/dev/null # warm-up: the file exists and is in memory
unique=() zeros=() ratios=() fills=() cpus=()
for i in $(seq 1 "$REPEAT"); do
    if [ $((i % 2)) = 1 ]; then
        read -r u f uc < <(run); read -r z _ zc < <(run -datapattern 0x00)
    else
        read -r z _ zc < <(run -datapattern 0x00); read -r u f uc < <(run)
    fi
    unique+=("$u") zeros+=("$z") fills+=("$f")
    ratios+=("$(python3 -c "print($u / $z)")")
    cpus+=("$(python3 -c "print($uc / max($zc, 1e-9))")")
    printf 'round %d: default %.0f MB/s, 0x00 %.0f MB/s\n' "$i" "$u" "$z"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '\n%s, %s MiB x %s passes, 1 MiB requests, qd %s%s\n' \
    "$(df -T "$dir" | awk 'NR==2 {print $2}')" "$FILE_MB" "$PASSES" "$QD" \
    "$([ "$DIO" = 1 ] && echo ', O_DIRECT')"
printf 'median MB/s: default %.0f, 0x00 %.0f\n' "$(median "${unique[@]}")" "$(median "${zeros[@]}")"
printf 'median default/0x00: %.4f (cost %.2f%%)\n' "$(median "${ratios[@]}")" \
    "$(python3 -c "print((1 - $(median "${ratios[@]}")) * 100)")"
printf 'median CPU per request, default/0x00: %.4f\n' "$(median "${cpus[@]}")"
printf 'median share of time stamping: %.4f%%\n' "$(python3 -c "print($(median "${fills[@]}") * 100)")"
