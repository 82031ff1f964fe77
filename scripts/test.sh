#!/usr/bin/env bash
# The whole test suite: unit tests, integration tests that run the real
# binary on real file systems (tmpfs and loop-mounted ext4 made by the
# tests), and MPI tests under a real mpirun. Needs root for mounts.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# OpenMPI refuses root without these; the tests also pass --oversubscribe.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Whatever a test leaves in TMP (a fixture's socket, a unit test's
# directory) fails the run, as a failed test does.
before=$(mktemp)
trap 'rm -f "$before"' EXIT
bash scripts/leftovers.sh snapshot "$before"
status=0
# Every test binary runs, so that one failure does not hide the others.
cargo test --workspace --no-fail-fast --features iolab/mpi,iolab-comm/mpi 2>&1 || status=$?
if ! bash scripts/leftovers.sh check "$before" && [ "$status" = 0 ]; then
    status=1
fi
exit "$status"
