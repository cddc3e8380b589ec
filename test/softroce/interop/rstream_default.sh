#!/bin/bash
# rdma-core's rstream (rsocket streaming benchmark) completes its default
# series over Soft-RoCE, server and client both printing the header and the
# 8 rows (64 B .. 1 MiB, latency and bandwidth); then the same with data
# verification (-T v) on both sides.
#
# Runs inside the guest: test/softroce/guest-run -- test/softroce/interop/rstream_default.sh
# Exit: 0 pass, 1 fail, 77 skip (not in the guest, rstream missing).
. "$(dirname "$0")/stream-pair.bash"

interop_setup rstream
run_pair rstream default
run_pair rstream verify -T v
interop_finish
