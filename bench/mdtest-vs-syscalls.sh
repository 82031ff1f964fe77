#!/usr/bin/env bash
# Benchmark (not a test): iolab mdtest against a bare C system-call loop
# doing the same operations on a private tmpfs, with 1 and 2 tasks, for
# the sync engine and for --engine uring --qd 16. Prints per phase the
# median rates of interleaved rounds and the ratio iolab/baseline (goal:
# >= 1.0 for the sync engine, above 1.0 for uring's create, stat and
# remove with 1 task), and iolab's CPU time per operation. The baseline
# names each item by its whole path, as mdtest does; iolab names it in
# its directory held open, so the kernel walks one name, not the path:
# the same loop by name ("by name", bench/mdtest_baseline.c's "at") is
# printed beside it, with uring's ratio to it. Then the peak
# RSS of `-n 1000000 -F` (goal: under 64 MiB); then, on a FUSE file
# system that delays every request (testkit's iolab-delayfs, backed by
# the tmpfs), --engine uring at QD 16 against QD 1 (goal: >= 8 x in
# create and stat), and io500's md-workbench phases through the queue at
# QD 16 against QD 1. The load (uptime) is printed before and after.
# Usage: bench/mdtest-vs-syscalls.sh [ITEMS_PER_TASK] [REPEATS]   (root)
# IOLAB=path uses that iolab (else a release build); DELAYFS=path that
# iolab-delayfs (else a debug build of crates/testkit); RSS_ITEMS
# (1000000) sizes the memory run; DELAY_US (5000) is the delayed file
# system's delay per request and DELAY_ITEMS (50) its files per
# directory (16 leaf directories); MDWB_PER_SET (10) is md-workbench's
# objects per set there (half of them per iteration), for io500's
# md-workbench phases alone at QD 16 against QD 1. The test suite runs
# it small (tests/bench.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
items=${1:-100000}
repeats=${2:-3}
rss_items=${RSS_ITEMS:-1000000}
delay_us=${DELAY_US:-5000}
delay_items=${DELAY_ITEMS:-50}
mdwb_per_set=${MDWB_PER_SET:-10}
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
work=$(mktemp -d /tmp/iolab-bench.XXXXXX)
fuse_pid=
cleanup() {
    [ -n "$fuse_pid" ] && kill "$fuse_pid" 2>/dev/null && wait "$fuse_pid" 2>/dev/null
    umount -l "$work/fuse" 2>/dev/null || true
    umount "$work" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
mount -t tmpfs -o size=4g tmpfs "$work"
cc -O2 -pthread -o "$work/baseline" bench/mdtest_baseline.c
echo "load before: $(uptime)"

python3 - "$bin" "$work" "$items" "$repeats" "$rss_items" <<'PY'
import json, os, resource, statistics, subprocess, sys
binary, work, items, repeats, rss_items = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
phases = ["dir_create", "dir_stat", "dir_remove", "file_create", "file_stat", "file_read", "file_remove"]
URING = ["--engine", "uring", "--qd", "16"]

def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def baseline(tasks, by_name=False):
    d = os.path.join(work, "base"); os.mkdir(d)
    args = [os.path.join(work, "baseline"), d, str(items), str(tasks)] + (["at"] if by_name else [])
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    os.rmdir(d)
    return {l.split()[0]: float(l.split()[3]) for l in out.splitlines()}

def iolab(tasks, extra):
    d = os.path.join(work, "io"); j = os.path.join(work, "out.json")
    before = children_cpu()
    subprocess.run([binary, "mdtest", "-u", "-n", str(items), "--tasks", str(tasks), "-d", d, "--json", j] + extra,
                   check=True, capture_output=True, env=dict(os.environ, CI="1"))
    cpu = children_cpu() - before
    # The figures are under "payload" since the results envelope (iolab.mdtest/2).
    test = json.load(open(j))["payload"]["tests"][0]
    rates = {p["phase"]: p["rate"] for p in test["iterations"][0]["phases"]}
    ops = sum(p["items"] for p in test["iterations"][0]["phases"])
    return rates, cpu / ops * 1e9

engines = [("sync", []), ("uring", URING)]
for tasks in (1, 2):
    base, at, runs, cpu = [], [], {e: [] for e, _ in engines}, {e: [] for e, _ in engines}
    for _ in range(repeats):  # interleaved rounds: baseline, by name, sync, uring
        base.append(baseline(tasks))
        at.append(baseline(tasks, by_name=True))
        for name, extra in engines:
            r, c = iolab(tasks, extra)
            runs[name].append(r)
            cpu[name].append(c)
    med = lambda rs, p: statistics.median(r[p] for r in rs)
    print(f"\n{tasks} task(s), {items} items per task, median of {repeats} interleaved rounds (ops/s)")
    print(f"{'phase':<12} {'baseline':>12} {'by name':>12} {'sync':>12} {'uring qd16':>12} {'sync/base':>10} {'uring/base':>11} {'uring/name':>11}")
    for p in phases:
        b, a, s, u = med(base, p), med(at, p), med(runs["sync"], p), med(runs["uring"], p)
        print(f"{p:<12} {b:12.0f} {a:12.0f} {s:12.0f} {u:12.0f} {s/b:10.2f} {u/b:11.2f} {u/a:11.2f}")
    for name, _ in engines:
        print(f"iolab {name} CPU time per operation (whole process, all phases): {statistics.median(cpu[name]):.0f} ns")

d = os.path.join(work, "rss")
for phase in ("-C", "-r"):
    subprocess.run([binary, "mdtest", "-F", phase, "-n", str(rss_items), "-d", d], check=True, capture_output=True, env=dict(os.environ, CI="1"))
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"\npeak RSS of -n {rss_items} -F (create run, then remove run): {rss/1024:.1f} MiB (goal < 64 MiB)")
PY

# The delayed file system: every request waits DELAY_US at the server,
# up to 64 served at once. 16 leaf directories, so that 16 creates in
# flight are in 16 directories (the kernel serialises creates in one).
mkdir -p "$work/back" "$work/fuse"
"$delayfs" "$work/back" "$work/fuse" "$delay_us" > "$work/fuse.out" 2> "$work/fuse.err" &
fuse_pid=$!
for _ in $(seq 100); do grep -q mounted "$work/fuse.out" 2>/dev/null && break; sleep 0.1; done
grep -q mounted "$work/fuse.out" || { cat "$work/fuse.err" >&2; exit 1; }
python3 - "$bin" "$work/fuse" "$delay_items" "$repeats" "$delay_us" <<'PY'
import json, os, statistics, subprocess, sys
binary, mnt, per_dir, repeats, delay_us = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
phases = ["file_create", "file_stat", "file_read", "file_remove"]

def run(qd):
    j = os.path.join(os.path.dirname(mnt), "fuse.json")
    subprocess.run([binary, "mdtest", "-F", "-b", "16", "-z", "1", "-L", "-I", str(per_dir), "-d", os.path.join(mnt, "x"),
                    "--engine", "uring", "--qd", str(qd), "--json", j], check=True, capture_output=True, env=dict(os.environ, CI="1"))
    test = json.load(open(j))["payload"]["tests"][0]
    return {p["phase"]: p["rate"] for p in test["iterations"][0]["phases"]}

rounds = {1: [], 16: []}
for _ in range(repeats):  # interleaved: QD 1, then QD 16
    for qd in (1, 16):
        rounds[qd].append(run(qd))
print(f"\ndelayed file system ({delay_us} us per request), 1 task, {16 * per_dir} files in 16 directories, median of {repeats} rounds (ops/s)")
print(f"{'phase':<12} {'qd 1':>10} {'qd 16':>10} {'qd16/qd1':>9}")
for p in phases:
    a = statistics.median(r[p] for r in rounds[1])
    b = statistics.median(r[p] for r in rounds[16])
    print(f"{p:<12} {a:10.0f} {b:10.0f} {b/a:9.2f}")
PY
# io500's md-workbench phases alone (--mode=extended, every other phase
# off) on the same delayed file system, through the queue at QD 1 and 16.
python3 - "$bin" "$work/fuse" "$mdwb_per_set" "$repeats" "$delay_us" "$work" <<'PY'
import json, os, shutil, statistics, subprocess, sys
binary, mnt, per_set, repeats, delay_us, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
files = max(1, per_set // 2)
phases = ["mdworkbench-create", "mdworkbench-bench", "mdworkbench-delete"]
off = "".join(f"[{s}]\nrun = FALSE\n" for s in ["ior-easy", "mdtest-easy", "ior-hard", "mdtest-hard", "find", "find-easy", "find-hard", "ior-rnd4K-easy-read"])

def run(qd):
    data, res = os.path.join(mnt, "mdwb"), os.path.join(work, "mdwb-res")
    os.mkdir(data)
    ini = os.path.join(work, "mdwb.ini")
    with open(ini, "w") as f:
        f.write(f"[global]\ndatadir = {data}\nresultdir = {res}\ntimestamp-datadir = FALSE\ntimestamp-resultdir = FALSE\n"
                f"[debug]\nstonewall-time = 1\n{off}[mdworkbench]\nprecreatePerSet = {per_set}\nfilesPerProc = {files}\n")
    subprocess.run([binary, "io500", "--mode=extended", ini, "--engine", "uring", "--qd", str(qd)], check=True, capture_output=True, env=dict(os.environ, CI="1"))
    doc = json.load(open(os.path.join(res, "result.json")))
    os.rmdir(data)
    shutil.rmtree(res)
    # The phase's figures (the bench's second iteration, as scored).
    return {p["phase"]: p["detail"]["mdworkbench"]["iterations"][-1]["ops_per_sec"] for p in doc["payload"]["phases"] if p["phase"] in phases}

rounds = {1: [], 16: []}
for _ in range(repeats):  # interleaved: QD 1, then QD 16
    for qd in (1, 16):
        rounds[qd].append(run(qd))
print(f"\nmd-workbench on the delayed file system ({delay_us} us per request), 1 task, 10 sets of {per_set} objects, {files} per set per iteration, median of {repeats} rounds (ops/s)")
print(f"{'phase':<19} {'qd 1':>10} {'qd 16':>10} {'qd16/qd1':>9}")
for p in phases:
    a = statistics.median(r[p] for r in rounds[1])
    b = statistics.median(r[p] for r in rounds[16])
    print(f"{p:<19} {a:10.0f} {b:10.0f} {b/a:9.2f}")
PY
echo "load after: $(uptime)"
