#!/usr/bin/env bash
# Benchmark, not a test: does each limit `iolab qualify` prints equal the
# same point run alone by its tool (goal: within 10 %)? ROUNDS times:
# - the qualification runs (`iolab qualify [PLAN] --out DIR`, the
#   embedded default without a plan) into a fresh directory;
# - each figure's limit is read from its results store as the verdict
#   reads it: the point with the best mean over its repeats (lst's
#   ping rpc_rate and brw bandwidth, xdd's write and read bandwidth, mdtest's
#   file_create, file_stat and file_remove rates);
# - that point's recorded command line runs again, alone: once
#   unmeasured (a read point's write first, so that the files it reads
#   exist as they did), then ALONE times, in the qualification's own
#   work directory (made again, removed after; marked a top directory,
#   chattr +T, as qualify marks it for its metadata layer, where the
#   file system has the flag).
#   An mdtest point runs each time in a directory of its own name
#   (its recorded -d with `.aloneK` added), as each of qualify's repeats
#   does, all made before the first run, as qualify makes its points':
#   see own_dir and make_own_dirs below. Each run follows a sync: what the qualification or the run before
#   left dirty is written back first, as before each of qualify's
#   storage repeats.
# - FORGET=1 (the default; as root): before each round's qualification
#   and before an mdtest point's unmeasured run, after the sync, the
#   clean page cache is dropped (/proc/sys/vm/drop_caches, 1). An ext4
#   without a journal skips, on every create, the inodes its block
#   group freed in the last minutes, but only those whose inode table
#   block is still cached (docs/qualify.md, "A limit and its tool run
#   alone"): so no round pays for the removals of the bench's runs
#   before it, and no run alone for those of the qualification, whose
#   limit is then held against what the point does without that
#   history. The unmeasured run warms the cache again (the runs alone
#   each go in a block group of their own: make_own_dirs). Data points
#   keep their cache (a read alone reads what its write left, as in the
#   qualification). FORGET=0 leaves the cache; so does a user who may
#   not write the file (a note says so).
# Per figure it prints the median of the rounds' limits, the median of
# every alone run, and the median of the rounds' ratios (alone / limit;
# 1.0 is equal). The limit is the best of a curve's points, so on a
# noisy machine it is biased up by the noise it was picked from: a
# ratio a little below 1 is expected where a curve is flat.
# Prints the machine's load (uptime) before and after: the figures are
# only as quiet as the machine. Free page reporting is paused while the
# script runs (root; REPORTING=keep leaves it): a data point's writes
# allocate page cache, and on a VM that reports freed memory to its
# host the same write swings 2-4 x with it (bench/lib/reporting.sh).
#
# Usage: bench/qualify-vs-alone.sh [IOLAB_BINARY] [PLAN.toml]
#        (default target/release/iolab, the embedded default plan)
# Environment: ROUNDS (3), ALONE (3), SETTLE (1: seconds of pause after
# the sync before each point's unmeasured run; 0 where only the script's
# working is checked), FORGET (1, above), REPORTING (pause: free page
# reporting paused while it runs, above; keep: left as is).
set -euo pipefail
BIN=${1:-target/release/iolab}
PLAN=${2:-}
ROUNDS=${ROUNDS:-3}
ALONE=${ALONE:-3}
SETTLE=${SETTLE:-1}
FORGET=${FORGET:-1}
# Reads and checks REPORTING (exit 2 on a bad value).
. "$(dirname "$0")/lib/reporting.sh"
[ -x "$BIN" ] || { echo "build first: cargo build --release ($BIN missing)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is missing" >&2; exit 2; }
BIN=$(readlink -f "$BIN")
[ -z "$PLAN" ] || PLAN=$(readlink -f "$PLAN")

tmp=$(mktemp -d)
trap 'reporting_restore; rm -rf "$tmp"' EXIT
reporting_pause
echo "load before: $(uptime)"
CI=1 python3 - "$BIN" "$tmp" "$ROUNDS" "$ALONE" "$PLAN" "$SETTLE" "$FORGET" <<'PY'
import json, os, re, shutil, statistics, subprocess, sys, time, tomllib
from pathlib import Path

bin_, tmp, rounds, alone, plan = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
settle = float(sys.argv[6])
forget = sys.argv[7] == "1"
# No run here is expected to take more than this; a hung one fails the script.
TIMEOUT = 900

def run(args, what):
    p = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT)
    if p.returncode != 0:
        sys.exit(f"{what}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p.stdout

def results(store, *args):
    return run([bin_, "results", "--store", str(store), *args], "iolab results " + " ".join(args))

def wanted(tool, phase, metric):
    """The figures the verdict takes from each tool."""
    if tool == "lst":
        return metric == ("rpc_rate" if phase == "ping" else "bandwidth")
    if tool == "xdd":
        return phase in ("write", "read") and metric == "bandwidth"
    if tool == "mdtest":
        return phase in ("file_create", "file_stat", "file_remove") and metric == "rate"
    return False

def series(store):
    """(label, tool) of every series, from `results list`'s first table."""
    out, rows = results(store, "list").splitlines(), []
    for line in out[1:]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip())
        rows.append((cells[0], cells[1]))
    return rows

def command(store, run_id, json_path):
    """A recorded run's command line, to run again writing its JSON to json_path."""
    env = json.loads(results(store, "export", str(run_id), "--json"))
    words = env["command_line"].split(" ")
    j = words.index("--json")
    del words[j:j + 2]
    return [bin_] + words[1:] + ["--json", str(json_path)]

def with_dir(cmd):
    """Whether cmd is an mdtest run in a -d directory."""
    return "mdtest" in cmd[1:2] and "-d" in cmd

def own_dir(cmd, k):
    """An mdtest command with a directory of its own for run k: on an ext4
    without a journal, a tree made again within a minute under the same
    name goes in the block group the last one freed (a spread directory's
    group is picked from its name's hash) and walks past every inode it
    freed, as qualify's repeats, each under a name of its own, do not."""
    if not with_dir(cmd):
        return cmd
    d = cmd.index("-d")
    return cmd[:d + 1] + [f"{cmd[d + 1]}.alone{k}"] + cmd[d + 2:]

def make_own_dirs(cmd, runs):
    """Makes the directories of an mdtest point's runs alone all at once,
    before the first, as qualify makes its points' (mdtest works in a -d
    it is given and leaves it): each counts against its block group when
    the next is placed, so that no run alone goes where the one before
    it just freed its files."""
    if not with_dir(cmd):
        return
    for k in range(runs):
        c = own_dir(cmd, k)
        Path(c[c.index("-d") + 1]).mkdir()

def written_back(drop):
    """sync(2); with drop (and FORGET=1), the clean page cache dropped
    too: see FORGET above. A user who may not drop it gets one note."""
    global forget
    os.sync()
    if not (drop and forget):
        return
    try:
        Path("/proc/sys/vm/drop_caches").write_text("1\n")
    except OSError as e:
        print(f"FORGET: cannot drop the page cache ({e}); runs keep it", file=sys.stderr)
        forget = False

def figures(json_path):
    env = json.loads(Path(json_path).read_text())
    return {(f["phase"], f["metric"]): f["stat"]["mean"] for f in env["figures"] if f["scope"] == ""}

limits, alones, ratios, at = {}, {}, {}, {}
for r in range(rounds):
    out = tmp / f"q{r}"
    args = [bin_, "qualify"] + ([plan] if plan else []) + ["--out", str(out)]
    written_back(True)
    run(args, "iolab qualify")
    store = out / "results.sqlite"
    ran = tomllib.loads((out / "plan.toml").read_text())
    work = Path(ran["dir"]) / f"iolab-qualify.{ran['token']}"
    exported = {label: (tool, json.loads(results(store, "export", label, "--json")))
                for label, tool in series(store)}
    # Each point a limit was found at, and the figures found there.
    points = {}
    for label, (tool, sv) in exported.items():
        best = {}
        for p in sv["points"]:
            for f in p["figures"]:
                k = (f["phase"], f["metric"])
                if wanted(tool, *k) and (k not in best or f["spread"]["mean"] > best[k][1]):
                    best[k] = (p, f["spread"]["mean"])
        for k, (p, mean) in best.items():
            points.setdefault((label, p["key"]), (p, []))[1].append((k, mean))
    for (label, key), (p, figs) in points.items():
        run_id = p["runs"][0]["run_id"]
        j = tmp / "alone.json"
        cmd = command(store, run_id, j)
        if not work.exists():
            work.mkdir(parents=True)
            # As qualify makes it: each point's tree in a block group of
            # its own on an ext2/3/4 (elsewhere chattr fails: nothing to do).
            subprocess.run(["chattr", "+T", str(work)], capture_output=True)
        if label.startswith("data read "):
            _, wsv = exported[label.replace("data read ", "data write ", 1)]
            wp = next(q for q in wsv["points"] if q["key"] == key)
            run(command(store, wp["runs"][0]["run_id"], j), f"{label} {key}: its write")
        make_own_dirs(cmd, alone + 1)
        # What the qualification left to write back (its data and
        # metadata layers' files) is written now, not during the runs.
        written_back(with_dir(cmd))
        time.sleep(settle)
        run(own_dir(cmd, 0), f"{label} {key}, unmeasured")
        values = []
        for k in range(alone):
            written_back(False)
            run(own_dir(cmd, k + 1), f"{label} {key} alone")
            values.append(figures(j))
        shutil.rmtree(work, ignore_errors=True)
        for k, mean in figs:
            name = f"{label}: {k[0]} {k[1]}"
            got = [v[k] for v in values]
            limits.setdefault(name, []).append(mean)
            alones.setdefault(name, []).extend(got)
            ratios.setdefault(name, []).append(statistics.mean(got) / mean if mean > 0 else float("nan"))
            at.setdefault(name, set()).add(key)
    print(f"round {r + 1} of {rounds}: {len(points)} limit points, each run {alone} times alone", file=sys.stderr)

w = max(len(n) for n in limits)
print(f"{'figure':<{w}}  {'at':<22}  {'limit':>12}  {'alone':>12}  {'alone/limit':>11}  within 10 %")
worst = 1.0
for name in limits:
    lim, alo, rat = (statistics.median(limits[name]), statistics.median(alones[name]),
                     statistics.median(ratios[name]))
    if abs(rat - 1) > abs(worst - 1):
        worst = rat
    print(f"{name:<{w}}  {', '.join(sorted(at[name])):<22}  {lim:>12.4g}  {alo:>12.4g}  {rat:>11.3f}  "
          f"{'yes' if abs(rat - 1) <= 0.10 else 'no'}")
print(f"{len(limits)} figures, {rounds} rounds, {alone} alone runs a limit a round; "
      f"the ratio furthest from 1: {worst:.3f}")
PY
echo "load after: $(uptime)"
