#!/usr/bin/env bash
# Benchmark (not a test): what xdd's -createnewfiles costs per pass with
# -engine uring, and where. On a private tmpfs and on a FUSE file system
# that delays every request (testkit's iolab-delayfs, backed by that
# tmpfs), runs `xdd -op write -passes N -engine uring -qd 8` with and
# without -createnewfiles, interleaved, and prints the medians of: a
# pass's time (what every rate is computed over), the time between two
# passes (the previous file closed, the next one created and opened, the
# barrier) and the run's wall time. The question it answers: is there
# anything a metadata queue could overlap? The create lies between
# passes, outside every figure; see docs/xdd.md.
# Usage: bench/xdd-createnewfiles.sh [PASSES] [REPEATS]   (root)
# IOLAB=path uses that iolab (else a release build); DELAYFS=path that
# iolab-delayfs (else a debug build of crates/testkit); DELAY_US (5000)
# is the delay per request; MB (4) the MiB written per pass.
set -euo pipefail
cd "$(dirname "$0")/.."
passes=${1:-10}
repeats=${2:-5}
delay_us=${DELAY_US:-5000}
mb=${MB:-4}
bin=${IOLAB:-}
if [ -z "$bin" ]; then
    cargo build --release -q
    bin=target/release/iolab
fi
delayfs=${DELAYFS:-}
if [ -z "$delayfs" ]; then
    cargo build -q -p iolab-testkit --bin iolab-delayfs
    delayfs=target/debug/iolab-delayfs
fi
work=$(mktemp -d /tmp/iolab-bench-cnf.XXXXXX)
fuse_pid=
cleanup() {
    [ -n "$fuse_pid" ] && kill "$fuse_pid" 2>/dev/null && wait "$fuse_pid" 2>/dev/null
    umount -l "$work/fuse" 2>/dev/null || true
    umount "$work" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
mount -t tmpfs -o size=2g tmpfs "$work"
mkdir -p "$work/back" "$work/fuse" "$work/tmpfs"
"$delayfs" "$work/back" "$work/fuse" "$delay_us" > "$work/fuse.out" 2> "$work/fuse.err" &
fuse_pid=$!
for _ in $(seq 100); do grep -q mounted "$work/fuse.out" 2>/dev/null && break; sleep 0.1; done
grep -q mounted "$work/fuse.out" || { cat "$work/fuse.err" >&2; exit 1; }
echo "load before: $(uptime)"
python3 - "$bin" "$work" "$passes" "$repeats" "$mb" "$delay_us" <<'PY'
import json, os, statistics, subprocess, sys, time
binary, work, passes, repeats, mb, delay_us = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], int(sys.argv[6])

def run(where, fresh):
    j = os.path.join(work, "out.json")
    cmd = [binary, "xdd", "-op", "write", "-targets", "1", os.path.join(work, where, "f"), "-reqsize", "64",
           "-mbytes", mb, "-passes", str(passes), "-engine", "uring", "-qd", "8", "-deletefile", "--json", j]
    if fresh:
        cmd.append("-createnewfiles")
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, capture_output=True, env=dict(os.environ, CI="1"))
    wall = time.monotonic() - t0
    spans = [(p["targets"][0]["start_s"], p["targets"][0]["end_s"]) for p in json.load(open(j))["payload"]["passes"]]
    pass_ms = statistics.median((e - s) * 1e3 for s, e in spans)
    gap_ms = statistics.median((spans[i + 1][0] - spans[i][1]) * 1e3 for i in range(len(spans) - 1)) if len(spans) > 1 else 0.0
    return pass_ms, gap_ms, wall

for where, label in (("tmpfs", "tmpfs"), ("fuse", f"delayed file system ({delay_us} us per request)")):
    got = {False: [], True: []}
    for _ in range(repeats):  # interleaved: the same file, then a new file per pass
        for fresh in (False, True):
            got[fresh].append(run(where, fresh))
    print(f"\n{label}: {passes} passes of {mb} MiB in 64 KiB writes, -engine uring -qd 8, median of {repeats} rounds")
    print(f"{'':<18} {'pass (ms)':>10} {'between (ms)':>13} {'run wall (s)':>13}")
    for fresh, name in ((False, "one file"), (True, "-createnewfiles")):
        m = lambda i: statistics.median(r[i] for r in got[fresh])
        print(f"{name:<18} {m(0):10.2f} {m(1):13.2f} {m(2):13.3f}")
PY
echo "load after: $(uptime)"
