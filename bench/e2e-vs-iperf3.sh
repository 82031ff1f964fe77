#!/usr/bin/env bash
# Benchmark, not a test: iolab xdd -endtoend on loopback against iperf3
# (null to null: the network path alone) and against cp (file to file on
# tmpfs). Runs alternate (iperf3, e2e, iperf3, e2e, ...); medians and the
# median of the per-round ratios are printed, with CPU seconds per GB
# and peak RSS of both sides. Goal: e2e >= 0.95 x iperf3 at the same
# stream count.
#
# How each rate is computed (10^9 bytes per second, GB/s):
# - iperf3: bytes received / seconds, as iperf3 -J reports for the
#   receiver (sum_received), -l 1M, -P N streams, -t SECS;
# - e2e null: bytes the destination wrote / its pass time (pass start,
#   after the handshake, to the last QThread's end), from its --json;
#   -reqsize 1024 of 1024-byte blocks (1 MiB), -qd N (N connections);
#   every 1 MiB frame's CRC-32C is checked on the destination;
# - e2e keyed: the same with `-e2e key FILE` on both sides (a fresh
#   32-byte key, as xddcp's one-time key): every frame also carries a
#   keyed-BLAKE3 tag that the source computes and the destination checks;
# - file copies (e2e and cp): bytes / wall seconds of the whole command
#   (both e2e sides started, copy done, both exited).
# CPU per GB: user + system seconds of both processes (GNU time) / GB.
#
# Usage: bench/e2e-vs-iperf3.sh [IOLAB_BINARY] (default target/release/iolab)
# Environment: RUNS (5), SECS (iperf3 seconds, 4), MB (MiB per e2e null
# run, 8192), FILE_MB (file copy size, 1024).
set -euo pipefail
BIN=${1:-target/release/iolab}
RUNS=${RUNS:-5}
SECS=${SECS:-4}
MB=${MB:-8192}
FILE_MB=${FILE_MB:-1024}
PORT=${PORT:-47310}
[ -x "$BIN" ] || { echo "build first: cargo build --release ($BIN missing)" >&2; exit 2; }
BIN=$(readlink -f "$BIN")
if ! command -v iperf3 >/dev/null; then
    echo "installing iperf3 (Debian package)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3 >/dev/null ||
        { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3 >/dev/null; }
fi
[ -x /usr/bin/time ] || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null; }

tmp=$(mktemp -d)
mounted=0
cleanup() {
    jobs -p | xargs -r kill 2>/dev/null || true
    [ "$mounted" = 1 ] && umount -l "$tmp/fs" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print 0; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a/b; else print "n/a" }'; }
cpu_of() { awk '{ s += $1 + $2 } END { printf "%.3f", s }' "$@"; }  # time files: "user sys rss"
rss_of() { awk '{ if ($3 > m) m = $3 } END { printf "%.0f", m / 1024 }' "$@"; }  # MiB

# iperf3 with N streams: prints "GB/s cpu_s bytes".
iperf() {
    local n=$1
    /usr/bin/time -f "%U %S %M" -o "$tmp/t.srv" iperf3 -s -1 -p "$PORT" >/dev/null 2>&1 &
    local srv=$!
    sleep 0.3
    /usr/bin/time -f "%U %S %M" -o "$tmp/t.cli" \
        iperf3 -c 127.0.0.1 -p "$PORT" -P "$n" -l 1M -t "$SECS" -J >"$tmp/i.json"
    wait "$srv" || true
    python3 - "$tmp/i.json" "$(cpu_of "$tmp/t.srv" "$tmp/t.cli")" <<'EOF'
import json, sys
e = json.load(open(sys.argv[1]))["end"]["sum_received"]
print(e["bits_per_second"] / 8 / 1e9, sys.argv[2], e["bytes"])
EOF
}

# Starts the destination side of a copy: ARGS...; waits until it listens.
dest_start() {
    : >"$tmp/d.err"
    /usr/bin/time -f "%U %S %M" -o "$tmp/t.dst" "$BIN" xdd "$@" >/dev/null 2>"$tmp/d.err" &
    DPID=$!
    for _ in $(seq 500); do
        grep -q "listening on" "$tmp/d.err" && return 0
        kill -0 "$DPID" 2>/dev/null || break
        sleep 0.01
    done
    cat "$tmp/d.err" >&2
    return 1
}

# A key for the keyed runs, readable by its owner alone.
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/key"
chmod 600 "$tmp/key"

# e2e null to null with N QThreads (KEYED=1: with the key): prints
# "GB/s cpu_s bytes rss_mib".
e2e_null() {
    local n=$1
    local c="-target null -reqsize 1024 -mbytes $MB -qd $n -e2e destination 127.0.0.1:$PORT"
    [ "${KEYED:-0}" = 1 ] && c="$c -e2e key $tmp/key"
    # shellcheck disable=SC2086
    dest_start -op write $c -e2e isdestination --json "$tmp/d.json"
    # shellcheck disable=SC2086
    /usr/bin/time -f "%U %S %M" -o "$tmp/t.src" "$BIN" xdd -op read $c -e2e issource >/dev/null
    wait "$DPID"
    python3 - "$tmp/d.json" "$(cpu_of "$tmp/t.src" "$tmp/t.dst")" "$(rss_of "$tmp/t.src" "$tmp/t.dst")" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))["payload"]["combined"]
print(c["write_bytes"] / c["elapsed_s"] / 1e9, sys.argv[2], c["write_bytes"], sys.argv[3])
EOF
}

now() { date +%s.%N; }

# File to file on tmpfs, N QThreads: prints "GB/s".
e2e_file() {
    local n=$1 bytes=$((FILE_MB << 20))
    rm -f "$tmp/fs/dst"
    local c="-reqsize 1024 -mbytes $FILE_MB -qd $n -e2e destination 127.0.0.1:$PORT"
    local t0
    t0=$(now)
    # shellcheck disable=SC2086
    dest_start -op write -target "$tmp/fs/dst" $c -e2e isdestination
    # shellcheck disable=SC2086
    "$BIN" xdd -op read -target "$tmp/fs/src" $c -e2e issource >/dev/null
    wait "$DPID"
    local t1
    t1=$(now)
    cmp -s "$tmp/fs/src" "$tmp/fs/dst" || { echo "e2e copy differs!" >&2; exit 1; }
    awk -v b="$bytes" -v a="$t0" -v z="$t1" 'BEGIN { print b / (z - a) / 1e9 }'
}

cp_file() {
    local bytes=$((FILE_MB << 20))
    rm -f "$tmp/fs/dst"
    local t0 t1
    t0=$(now)
    cp "$tmp/fs/src" "$tmp/fs/dst"
    t1=$(now)
    awk -v b="$bytes" -v a="$t0" -v z="$t1" 'BEGIN { print b / (z - a) / 1e9 }'
}

echo "machine: $(nproc) CPUs, $(uname -r); iperf3 $(iperf3 --version | head -1 | awk '{print $2}')"
for n in 1 4; do
    : >"$tmp/ip" ; : >"$tmp/ee" ; : >"$tmp/r" ; : >"$tmp/ek" ; : >"$tmp/rk"
    for _ in $(seq "$RUNS"); do
        i=$(iperf "$n")
        e=$(e2e_null "$n")
        k=$(KEYED=1 e2e_null "$n")
        echo "$i" >>"$tmp/ip"
        echo "$e" >>"$tmp/ee"
        echo "$k" >>"$tmp/ek"
        ratio "$(echo "$e" | cut -d' ' -f1)" "$(echo "$i" | cut -d' ' -f1)" >>"$tmp/r"
        echo >>"$tmp/r"
        ratio "$(echo "$k" | cut -d' ' -f1)" "$(echo "$e" | cut -d' ' -f1)" >>"$tmp/rk"
        echo >>"$tmp/rk"
    done
    ig=$(cut -d' ' -f1 "$tmp/ip" | median)
    eg=$(cut -d' ' -f1 "$tmp/ee" | median)
    icpu=$(awk '{ print $2 / ($3 / 1e9) }' "$tmp/ip" | median)
    ecpu=$(awk '{ print $2 / ($3 / 1e9) }' "$tmp/ee" | median)
    rss=$(cut -d' ' -f4 "$tmp/ee" | median)
    printf '== null to null, %d stream(s), 1 MiB buffers ==\n' "$n"
    printf 'iperf3: %.3f GB/s  %.3f CPU s/GB\n' "$ig" "$icpu"
    printf 'e2e:    %.3f GB/s  %.3f CPU s/GB  peak RSS per side %s MiB (%s MiB moved)\n' "$eg" "$ecpu" "$rss" "$MB"
    printf 'ratio e2e/iperf3 (median of %d rounds): %s\n' "$RUNS" "$(grep -v '^$' "$tmp/r" | median)"
    kg=$(cut -d' ' -f1 "$tmp/ek" | median)
    kcpu=$(awk '{ print $2 / ($3 / 1e9) }' "$tmp/ek" | median)
    printf 'e2e keyed: %.3f GB/s  %.3f CPU s/GB\n' "$kg" "$kcpu"
    printf 'ratio keyed/unkeyed e2e (median of %d rounds): %s\n' "$RUNS" "$(grep -v '^$' "$tmp/rk" | median)"
done

echo "== RSS is flat in the amount: 4 GiB null copy, 4 QThreads =="
MB=4096 e2e_null 4 | awk '{ printf "peak RSS per side: %s MiB\n", $4 }'

mkdir -p "$tmp/fs"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=$((FILE_MB * 2 + 256))m tmpfs "$tmp/fs"; then
    mounted=1
    head -c $((FILE_MB << 20)) /dev/urandom >"$tmp/fs/src"
    : >"$tmp/cp" ; : >"$tmp/ef" ; : >"$tmp/r"
    for _ in $(seq "$RUNS"); do
        c=$(cp_file)
        e=$(e2e_file 4)
        echo "$c" >>"$tmp/cp"
        echo "$e" >>"$tmp/ef"
        ratio "$e" "$c" >>"$tmp/r"
        echo >>"$tmp/r"
    done
    printf '== file to file on tmpfs, %d MiB, 4 QThreads (wall time of the whole command) ==\n' "$FILE_MB"
    printf 'cp:  %.3f GB/s\ne2e: %.3f GB/s\nratio e2e/cp (median of %d rounds): %s\n' \
        "$(median <"$tmp/cp")" "$(median <"$tmp/ef")" "$RUNS" "$(grep -v '^$' "$tmp/r" | median)"
else
    echo "(file to file skipped: needs root to mount a tmpfs)"
fi
