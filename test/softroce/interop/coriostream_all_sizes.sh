#!/bin/bash
# coriostream -S all (riostream's 33 sizes, each in both series, on the
# default counts) between two coriostream processes over Soft-RoCE, run to
# the end: both sides must exit 0 and print the header and exactly the 66
# rows the plan names (coriostream --dry-run -S all), in order. Minutes in
# the guest, so it is not part of CI: its suite is all-sizes, run by hand
# (doc/testing.md has the time it took).
#
# Runs inside the guest, from the build directory:
#   test/softroce/guest-run -- test/softroce/interop/coriostream_all_sizes.sh [OPTION...]
# OPTIONs go to both sides (for example --data-path stream).
# Exit: 0 pass, 1 fail, 77 skip (not in the guest, a program missing).
# The whole run is one step: the default 600 s is not enough for it on a
# busy host (10 minutes got to 512k_bw of 66 rows at load 3).
CORIO_INTEROP_STEP_TIMEOUT=${CORIO_INTEROP_STEP_TIMEOUT:-3000}
. "$(dirname "$0")/stream-pair.bash"

coriostream=${CORIOSTREAM:-$PWD/tools/coriostream/coriostream}
[ -x "$coriostream" ] || skip "coriostream not found at $coriostream (build it, or set CORIOSTREAM)"
interop_setup "$coriostream"

# The rows check_table expects: the plan's, not the default series'.
mapfile -t DEFAULT_ROWS < <("$coriostream" --dry-run -S all | awk '$1 ~ /_(lat|bw)$/ { print $1 }')
[ "${#DEFAULT_ROWS[@]}" = 66 ] || fail "the plan of -S all has ${#DEFAULT_ROWS[@]} rows, not 66"

run_pair "$coriostream" all-sizes --transport rsocket --timeout 300 -S all "$@"
interop_finish
