#!/bin/bash
# coriostream --data-path stream (rsend + rrecv, rstream's protocol)
# interoperates with rdma-core's rstream over Soft-RoCE: a coriostream
# client against an rstream server, then an rstream client against a
# coriostream server, each with the default series, then both directions
# again with data verification (-T v) on both sides in small custom tests
# (see below). Both sides must exit 0 and print the header and the 8 rows
# of the default series, or the one custom row.
#
# With the argument `preload` it runs instead the checks of rdma-core's
# preload library (the rsocket man page: librspreload under the library directory's
# rsocket/ folder turns an unmodified program's kernel sockets into
# rsockets): rstream -T s (rstream on kernel sockets) preloaded, with -T v,
# as client of a coriostream server and as server of a coriostream client,
# and test/bench/asio_pingpong (a Boost.Asio tcp client) preloaded against a
# coriostream server.
#
# Runs inside the guest:
#   test/softroce/guest-run -- test/softroce/interop/coriostream_rstream.sh [preload]
# from the build directory (meson test's working directory), where it finds
# tools/coriostream/coriostream; CORIOSTREAM=path overrides.
# Exit: 0 pass, 1 fail, 77 skip (not in the guest, a program missing).
. "$(dirname "$0")/stream-pair.bash"

coriostream=${CORIOSTREAM:-$PWD/tools/coriostream/coriostream}
# rsockets explicitly: in the guest an RDMA device must be found, not
# fallen back from. A timeout well above the slowest row in a busy guest.
coriostream_options=(--transport rsocket --data-path stream --timeout 300)

asio_pingpong=${ASIO_PINGPONG:-$PWD/test/bench/asio_pingpong}
rspreload=

# command_for TOOL: the command line that starts TOOL, in $command. The
# -preloaded tools run with LD_PRELOAD of librspreload (find_rspreload).
command_for() {
    case $1 in
        coriostream) command=("$coriostream" "${coriostream_options[@]}") ;;
        rstream-preloaded) command=(env LD_PRELOAD="$rspreload" rstream -T s) ;;
        asio-preloaded) command=(env LD_PRELOAD="$rspreload" "$asio_pingpong") ;;
        *) command=("$1") ;;
    esac
}

# find_rspreload: librspreload beside the librdmacm the programs load, in
# $rspreload, or skip.
find_rspreload() {
    local librdmacm
    librdmacm=$(ldconfig -p | awk '$1 == "librdmacm.so.1" { print $NF; exit }')
    [ -n "$librdmacm" ] || skip "librdmacm.so.1 is not in the linker's cache"
    rspreload=$(dirname "$(realpath "$librdmacm")")/rsocket/librspreload.so
    [ -e "$rspreload" ] || skip "no preload library at $rspreload (librdmacm1 installs it)"
    note "preload library: $rspreload"
}

interop_setup rstream
# The mixed pairs run unpinned, as they always have: stream-pair.bash pins
# its own pairs, each rdma-core tool a single spinning thread, but
# coriostream's threads were never measured on one vCPU.
on_server_cpu=() on_client_cpu=()
[ -x "$coriostream" ] || skip "coriostream not found at $coriostream (build it, or set CORIOSTREAM)"

if [ "${1:-}" = preload ]; then
    find_rspreload
    [ -x "$asio_pingpong" ] || skip "asio_pingpong not found at $asio_pingpong (set ASIO_PINGPONG)"
    # The connection is an rsocket at both ends: coriostream runs with
    # --transport rsocket, and an rsocket connects only to an rsocket.
    run_mixed_pair preloaded-client custom coriostream rstream-preloaded -T v -S 1000 -C 50 -I 4
    run_mixed_pair preloaded-server custom rstream-preloaded coriostream -T v -S 1000 -C 50 -I 4
    # asio_pingpong checks no data (it sends zeros), so neither end verifies.
    run_mixed_pair preloaded-asio-client custom coriostream asio-preloaded -S 4096 -C 100 -I 5
    note "times: $(IFS=,; echo "${timings[*]}")"
    interop_finish
fi

# The default series exactly as rstream runs it, in both directions.
run_mixed_pair corio-client default rstream coriostream
run_mixed_pair corio-server default coriostream rstream
# -T v on both sides, both directions, as custom tests with small counts:
# the default series' counts take minutes under emulation and add nothing
# to what these check. Several transfers and iterations per test, so the
# pattern's counters must continue across transfers as rstream's do; sizes
# that are no multiple of 256, so every iteration shifts them; one large
# size, so transfers are split into several pieces (at offsets of the
# peer's buffer on the iomap path). The counters' continuation across the
# tests and connections of a default series is checked on the host against
# rstream -T s (test/tools/coriostream_run_test.sh, case rstream).
run_mixed_pair corio-client-verify-small custom rstream coriostream -T v -S 100 -C 5 -I 40
run_mixed_pair corio-server-verify-small custom coriostream rstream -T v -S 100 -C 5 -I 40
run_mixed_pair corio-client-verify-large custom rstream coriostream -T v -S 1000000 -C 3 -I 4
run_mixed_pair corio-server-verify-large custom coriostream rstream -T v -S 1000000 -C 3 -I 4
# -T r: both ends look their address up with rdma_getaddrinfo.
run_mixed_pair corio-client-rdma-cm custom rstream coriostream -T r -T v -S 1000 -C 20 -I 5
run_mixed_pair corio-server-rdma-cm custom coriostream rstream -T r -T v -S 1000 -C 20 -I 5
# -f gid reads the rxe device's GID as an InfiniBand (AF_IB) address, which
# corio refuses with one line (rdma-core's own tools fail to bind it on
# RoCE: doc/architecture.md).
gid=$(cat /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null) || gid=
if [ -z "$gid" ]; then
    fail "no GID 1 on rxe0 to try -f gid with"
else
    command_for coriostream
    "${command[@]}" -f gid -s "$gid" >"$workdir/gid.out" 2>"$workdir/gid.err"
    st=$?
    want="coriostream: rdma_getaddrinfo $gid:7471: InfiniBand (AF_IB) addresses are not supported: corio connects to IP addresses"
    if [ "$st" != 1 ] || [ "$(cat "$workdir/gid.err")" != "$want" ]; then
        fail "-f gid $gid: exit $st, stderr: $(cat "$workdir/gid.err")"
    else
        note "-f gid $gid: refused with exit 1 as expected"
    fi
fi

note "times: $(IFS=,; echo "${timings[*]}")"
interop_finish
