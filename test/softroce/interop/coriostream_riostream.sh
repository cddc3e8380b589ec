#!/bin/bash
# coriostream's default data path (riomap + riowrite, riostream's protocol)
# interoperates with rdma-core's riostream over Soft-RoCE: a coriostream
# client against a riostream server, then a riostream client against a
# coriostream server, each with the default series, then both directions
# again with data verification (-T v) on both sides in small custom tests
# (see below), last over IPv6 (-f ipv6 at the rxe device's IPv6 address,
# CORIO_RDMA_ADDR6). Both sides must exit 0 and print the header and the 8 rows
# of the default series, or the one custom row.
#
# Runs inside the guest:
#   test/softroce/guest-run -- test/softroce/interop/coriostream_riostream.sh
# from the build directory (meson test's working directory), where it finds
# tools/coriostream/coriostream; CORIOSTREAM=path overrides.
# Exit: 0 pass, 1 fail, 77 skip (not in the guest, a program missing).
. "$(dirname "$0")/stream-pair.bash"

coriostream=${CORIOSTREAM:-$PWD/tools/coriostream/coriostream}
# rsockets explicitly: in the guest an RDMA device must be found, not
# fallen back from. A timeout well above the slowest row in a busy guest.
coriostream_options=(--transport rsocket --timeout 300)

# command_for TOOL: the command line that starts TOOL, in $command.
command_for() {
    if [ "$1" = coriostream ]; then
        command=("$coriostream" "${coriostream_options[@]}")
    else
        command=("$1")
    fi
}

interop_setup riostream
# The mixed pairs run unpinned, as they always have: stream-pair.bash pins
# its own pairs, each rdma-core tool a single spinning thread, but
# coriostream's threads were never measured on one vCPU.
on_server_cpu=() on_client_cpu=()
[ -x "$coriostream" ] || skip "coriostream not found at $coriostream (build it, or set CORIOSTREAM)"

# The default series exactly as riostream runs it, in both directions.
run_mixed_pair corio-client default riostream coriostream
run_mixed_pair corio-server default coriostream riostream
# -T v on both sides, both directions, as custom tests with small counts:
# the default series' counts take minutes under emulation and add nothing
# to what these check. Several transfers and iterations per test, so the
# pattern's counters must continue across transfers as riostream's do; sizes
# that are no multiple of 256, so every iteration shifts them; one large
# size, so transfers are split into several pieces (at offsets of the
# peer's buffer on the iomap path). The counters' continuation across the
# tests and connections of a default series is checked on the host against
# rstream -T s (test/tools/coriostream_run_test.sh, case rstream).
run_mixed_pair corio-client-verify-small custom riostream coriostream -T v -S 100 -C 5 -I 40
run_mixed_pair corio-server-verify-small custom coriostream riostream -T v -S 100 -C 5 -I 40
# The large pairs also run a -B below the transfer size on both sides, so
# each transfer outgrows the rsockets' buffers.
run_mixed_pair corio-client-verify-large custom riostream coriostream -T v -S 1000000 -C 3 -I 4 -B 262144
run_mixed_pair corio-server-verify-large custom coriostream riostream -T v -S 1000000 -C 3 -I 4 -B 262144
# IPv6 on rsockets: riostream resolves -f ipv6 as a numeric host, as -f ip.
if [ -n "${CORIO_RDMA_ADDR6:-}" ]; then
    pair_addr=$CORIO_RDMA_ADDR6 run_mixed_pair corio-client-ipv6 custom riostream coriostream \
        -f ipv6 -T v -S 4096 -C 100 -I 5
    pair_addr=$CORIO_RDMA_ADDR6 run_mixed_pair corio-server-ipv6 custom coriostream riostream \
        -f ipv6 -T v -S 4096 -C 100 -I 5
else
    fail "CORIO_RDMA_ADDR6 is not set: guest-run gives the rxe device an IPv6 address too"
fi

note "times: $(IFS=,; echo "${timings[*]}")"
interop_finish
