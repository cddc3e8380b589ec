#!/bin/bash
# rdma-core's riostream (rsocket riomap/riowrite zero-copy benchmark)
# completes its default series over Soft-RoCE, server and client both
# printing the header and the 8 rows (64 B .. 1 MiB, latency and bandwidth);
# then the same with data verification (-T v) on both sides.
#
# Runs inside the guest: test/softroce/guest-run -- test/softroce/interop/riostream_default.sh [full]
# Exit: 0 pass, 1 fail, 77 skip (not in the guest, riostream missing).
. "$(dirname "$0")/stream-pair.bash"

interop_setup riostream
# The verified series moves the same sizes and counts as the default one, so
# it alone shows the guest's rsockets work; the default series as well only
# with "full" (suite reference-full, by hand: minutes under TCG).
[ "${1:-}" = full ] && run_pair riostream default
run_pair riostream verify -T v
interop_finish
