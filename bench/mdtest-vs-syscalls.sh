#!/usr/bin/env bash
# Benchmark (not a test): iolab mdtest against a bare C system-call loop
# doing the same operations on a private tmpfs, with 1 and 2 tasks. Prints
# per phase the ratio iolab/baseline (goal: >= 1.0, i.e. iolab as fast as
# a bare loop) and iolab's CPU time per operation; then the peak RSS of
# `-n 1000000 -F` (goal: under 64 MiB).
# Usage: bench/mdtest-vs-syscalls.sh [ITEMS_PER_TASK] [REPEATS]   (root)
# IOLAB=path uses that iolab (else a release build); RSS_ITEMS (1000000)
# sizes the memory run. The test suite runs it small (tests/bench.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
items=${1:-100000}
repeats=${2:-3}
rss_items=${RSS_ITEMS:-1000000}
bin=${IOLAB:-}
if [ -z "$bin" ]; then
    cargo build --release -q
    bin=target/release/iolab
fi
work=$(mktemp -d /tmp/iolab-bench.XXXXXX)
cleanup() { umount "$work" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
mount -t tmpfs -o size=4g tmpfs "$work"
cc -O2 -pthread -o "$work/baseline" bench/mdtest_baseline.c

python3 - "$bin" "$work" "$items" "$repeats" "$rss_items" <<'PY'
import json, os, resource, subprocess, sys
binary, work, items, repeats, rss_items = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
phases = ["dir_create", "dir_stat", "dir_remove", "file_create", "file_stat", "file_read", "file_remove"]

def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def baseline(tasks):
    d = os.path.join(work, "base"); os.mkdir(d)
    out = subprocess.run([os.path.join(work, "baseline"), d, str(items), str(tasks)], check=True, capture_output=True, text=True).stdout
    os.rmdir(d)
    return {l.split()[0]: float(l.split()[3]) for l in out.splitlines()}

def iolab(tasks):
    d = os.path.join(work, "io"); j = os.path.join(work, "out.json")
    before = children_cpu()
    subprocess.run([binary, "mdtest", "-u", "-n", str(items), "--tasks", str(tasks), "-d", d, "--json", j],
                   check=True, capture_output=True, env=dict(os.environ, CI="1"))
    cpu = children_cpu() - before
    # The figures are under "payload" since the results envelope (iolab.mdtest/2).
    test = json.load(open(j))["payload"]["tests"][0]
    rates = {p["phase"]: p["rate"] for p in test["iterations"][0]["phases"]}
    ops = sum(p["items"] for p in test["iterations"][0]["phases"])
    return rates, cpu, ops

for tasks in (1, 2):
    best_b, best_i, cpu_per_op = {}, {}, []
    for _ in range(repeats):  # best of N, run side by side, for each tool
        b = baseline(tasks)
        i, cpu, ops = iolab(tasks)
        for p in phases:
            best_b[p] = max(best_b.get(p, 0), b[p])
            best_i[p] = max(best_i.get(p, 0), i[p])
        cpu_per_op.append(cpu / ops * 1e9)
    print(f"\n{tasks} task(s), {items} items per task, best of {repeats}")
    print(f"{'phase':<12} {'baseline ops/s':>15} {'iolab ops/s':>15} {'ratio':>7}")
    for p in phases:
        print(f"{p:<12} {best_b[p]:15.0f} {best_i[p]:15.0f} {best_i[p]/best_b[p]:7.2f}")
    print(f"iolab CPU time per operation (whole process, all phases): {min(cpu_per_op):.0f} ns")

d = os.path.join(work, "rss")
before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
for phase in ("-C", "-r"):
    subprocess.run([binary, "mdtest", "-F", phase, "-n", str(rss_items), "-d", d], check=True, capture_output=True, env=dict(os.environ, CI="1"))
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"\npeak RSS of -n {rss_items} -F (create run, then remove run): {rss/1024:.1f} MiB (goal < 64 MiB)")
PY
