#!/usr/bin/env bash
# Benchmark, not a test: iolab lst against sockperf/qperf (ping) and
# iperf3 (bulk) on loopback. Prints medians and ratios; goal >= 0.9.
# Usage: bench/lst-vs-sockperf.sh [IOLAB_BINARY] (default target/release/iolab)
set -euo pipefail
BIN=${1:-target/release/iolab}
RUNS=${RUNS:-5}
SECS=${SECS:-5}
P1=17941 P2=17942
[ -x "$BIN" ] || { echo "build first: cargo build --release ($BIN missing)" >&2; exit 2; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print 0; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a/b; else print "n/a" }'; }

"$BIN" lst agent --listen 127.0.0.1:$P1 & pids+=($!)
"$BIN" lst agent --listen 127.0.0.1:$P2 & pids+=($!)
sleep 0.5

lst_field() { # test-words... -> the clients' mean field from JSON ($FIELD)
    "$BIN" lst run "$@" --from 127.0.0.1:$P1 --to 127.0.0.1:$P2 --duration "$SECS" \
        --json "$tmp/r.json" >/dev/null
    python3 -c "import json,sys; d=json.load(open('$tmp/r.json')); print(d['payload'][0]['mean']['clients']$FIELD)"
}

echo "== ping, concurrency 1 (RPC/s) =="
FIELD="['w_rpc_per_s']['avg']"
lst_ping=$(for i in $(seq "$RUNS"); do lst_field ping --concurrency 1; done | median)
peer_ping=0 peer=none
if command -v sockperf >/dev/null; then
    peer=sockperf
    sockperf server --tcp -i 127.0.0.1 -p 17943 >/dev/null 2>&1 & pids+=($!)
    sleep 0.5
    # sockperf reports the average one-way latency (half the round
    # trip) in usec: rate = 1e6 / (2 x latency).
    peer_ping=$(for i in $(seq "$RUNS"); do
        sockperf ping-pong --tcp -i 127.0.0.1 -p 17943 -t "$SECS" 2>&1 |
            grep -o 'avg-lat[a-z]*= *[0-9.]*' | tail -1 | grep -o '[0-9.]*$' |
            awk '{ if ($1 > 0) print 1e6/(2*$1); else print 0 }'
    done | median)
elif command -v qperf >/dev/null; then
    peer=qperf
    qperf >/dev/null 2>&1 & pids+=($!)
    sleep 0.5
    # qperf tcp_lat reports one-way latency: rate = 1 / (2 x latency).
    peer_ping=$(for i in $(seq "$RUNS"); do
        qperf -t "$SECS" --use_bits_per_sec localhost tcp_lat | awk '/latency/ {
            v=$3; u=$4; if (u=="ns") v/=1000; if (u=="ms") v*=1000; print 1e6/(2*v) }'
    done | median)
fi
echo "iolab lst: $lst_ping RPC/s   $peer: $peer_ping RPC/s   ratio: $(ratio "$lst_ping" "$peer_ping")"

echo "== brw write 1 MiB, concurrency 4 (MiB/s) =="
FIELD="['w_mib_per_s']['avg']"
lst_bw=$(for i in $(seq "$RUNS"); do lst_field brw write size=1M --concurrency 4; done | median)
peer_bw=0
if command -v iperf3 >/dev/null; then
    iperf3 -s -p 17944 >/dev/null 2>&1 & pids+=($!)
    sleep 0.5
    peer_bw=$(for i in $(seq "$RUNS"); do
        iperf3 -c 127.0.0.1 -p 17944 -P 4 -l 1M -t "$SECS" -J |
            python3 -c "import json,sys; print(json.load(sys.stdin)['end']['sum_received']['bits_per_second']/8/1048576)"
    done | median)
fi
echo "iolab lst: $lst_bw MiB/s   iperf3: $peer_bw MiB/s   ratio: $(ratio "$lst_bw" "$peer_bw")"
