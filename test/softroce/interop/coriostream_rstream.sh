#!/bin/bash
# coriostream --data-path stream (rsend + rrecv, rstream's protocol)
# interoperates with rdma-core's rstream over Soft-RoCE: a coriostream
# client against an rstream server, then an rstream client against a
# coriostream server, each with the default series and again with data
# verification (-T v) on both sides. Both sides must exit 0 and print the
# header and the 8 rows of the default series.
#
# Runs inside the guest:
#   test/softroce/guest-run -- test/softroce/interop/coriostream_rstream.sh
# from the build directory (meson test's working directory), where it finds
# tools/coriostream/coriostream; CORIOSTREAM=path overrides.
# Exit: 0 pass, 1 fail, 77 skip (not in the guest, a program missing).
. "$(dirname "$0")/stream-pair.bash"

coriostream=${CORIOSTREAM:-$PWD/tools/coriostream/coriostream}
# rsockets explicitly: in the guest an RDMA device must be found, not
# fallen back from. A timeout well above the slowest row in a busy guest.
coriostream_options=(--transport rsocket --data-path stream --timeout 300)

# command_for TOOL: the command line that starts TOOL, in $command.
command_for() {
    if [ "$1" = coriostream ]; then
        command=("$coriostream" "${coriostream_options[@]}")
    else
        command=("$1")
    fi
}

# run_mixed_pair LABEL SERVER_TOOL CLIENT_TOOL [OPTION...]: stream-pair.bash's
# run_pair with a different program on each side.
run_mixed_pair() {
    local label=$1 server_tool=$2 client_tool=$3
    shift 3
    local addr=$CORIO_RDMA_ADDR port attempt cst sst start command
    local sout=$workdir/$label.server.out cout=$workdir/$label.client.out

    for attempt in 1 2 3; do
        port=$next_port
        next_port=$((next_port + 1))
        command_for "$server_tool"
        note "$label: ${command[*]} -b $addr -p $port $* (server)"
        linebuf timeout "$STEP_TIMEOUT" "${command[@]}" -b "$addr" -p "$port" "$@" >"$sout" 2>&1 &
        server_pid=$!
        if wait_listening "$addr" "$port"; then break; fi
        kill "$server_pid" 2>/dev/null
        wait "$server_pid" 2>/dev/null
        server_pid=
        note "$label: server did not listen on port $port:"
        sed 's/^/#   /' "$sout"
    done
    if [ -z "$server_pid" ]; then
        fail "$label: $server_tool server never listened"
        return
    fi

    start=$SECONDS
    command_for "$client_tool"
    note "$label: ${command[*]} -s $addr -p $port $* (client)"
    linebuf timeout "$STEP_TIMEOUT" "${command[@]}" -s "$addr" -p "$port" "$@" >"$cout" 2>&1
    cst=$?
    wait "$server_pid"
    sst=$?
    server_pid=
    note "$label: done in $((SECONDS - start)) s"

    echo "## $label client ($client_tool) output"
    cat "$cout"
    echo "## $label server ($server_tool) output"
    cat "$sout"

    [ "$cst" = 0 ] || fail "$label: $client_tool client exited $cst$( [ "$cst" = 124 ] && echo " (timeout after $STEP_TIMEOUT s)")"
    [ "$sst" = 0 ] || fail "$label: $server_tool server exited $sst$( [ "$sst" = 124 ] && echo " (timeout after $STEP_TIMEOUT s)")"
    check_table "$cout" "$label client ($client_tool)"
    check_table "$sout" "$label server ($server_tool)"
}

interop_setup rstream
[ -x "$coriostream" ] || skip "coriostream not found at $coriostream (build it, or set CORIOSTREAM)"

run_mixed_pair corio-client rstream coriostream
run_mixed_pair corio-server coriostream rstream
run_mixed_pair corio-client-verify rstream coriostream -T v
run_mixed_pair corio-server-verify coriostream rstream -T v
interop_finish
