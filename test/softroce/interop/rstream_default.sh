#!/bin/bash
# rdma-core's rstream (rsocket streaming benchmark) completes its default
# series with data verification (-T v) on both sides over Soft-RoCE, server
# and client both printing the header and the 8 rows (64 B .. 1 MiB, latency
# and bandwidth); with the argument "full", the unverified default series
# first.
#
# Runs inside the guest: test/softroce/guest-run -- test/softroce/interop/rstream_default.sh [full]
# Exit: 0 pass, 1 fail, 77 skip (not in the guest, rstream missing).
. "$(dirname "$0")/stream-pair.bash"

interop_setup rstream
# The verified series moves the same sizes and counts as the default one, so
# it alone shows the guest's rsockets work; the default series as well only
# with "full" (suite reference-full, by hand: minutes under TCG).
[ "${1:-}" = full ] && run_pair rstream default
run_pair rstream verify -T v
interop_finish
