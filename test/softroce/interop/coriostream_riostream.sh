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

# check_custom FILE WHO: the header and exactly one `custom` row.
check_custom() {
    local file=$1 who=$2 rows
    if ! grep -Eq '^name +bytes +xfers +iters +total +time +Gb/sec +usec/xfer' "$file"; then
        fail "$who: no result header"
        return
    fi
    rows=$(awk 'NF == 8 && $1 != "name" { print $1 }' "$file" | tr '\n' ' ')
    if [ "$rows" != "custom " ]; then
        fail "$who: expected one custom row, got: $rows"
    else
        note "$who: header + custom row ok"
    fi
}

# Seconds each check took, for the summary at the end.
timings=()

# run_mixed_pair LABEL ROWS SERVER_TOOL CLIENT_TOOL [OPTION...]: stream-pair.bash's
# run_pair with a different program on each side; ROWS is default (the 8
# rows of the default series) or custom (one row). Both listen and connect
# at $pair_addr, CORIO_RDMA_ADDR unless the caller sets it.
run_mixed_pair() {
    local label=$1 rows=$2 server_tool=$3 client_tool=$4
    shift 4
    local addr=${pair_addr:-$CORIO_RDMA_ADDR} port cst sst start command
    local sout=$workdir/$label.server.out cout=$workdir/$label.client.out

    for _ in 1 2 3; do
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
    timings+=("$label $((SECONDS - start)) s")

    echo "## $label client ($client_tool) output"
    cat "$cout"
    echo "## $label server ($server_tool) output"
    cat "$sout"

    [ "$cst" = 0 ] || fail "$label: $client_tool client exited $cst$( [ "$cst" = 124 ] && echo " (timeout after $STEP_TIMEOUT s)")"
    [ "$sst" = 0 ] || fail "$label: $server_tool server exited $sst$( [ "$sst" = 124 ] && echo " (timeout after $STEP_TIMEOUT s)")"
    if [ "$rows" = default ]; then
        check_table "$cout" "$label client ($client_tool)"
        check_table "$sout" "$label server ($server_tool)"
    else
        check_custom "$cout" "$label client ($client_tool)"
        check_custom "$sout" "$label server ($server_tool)"
    fi
}

interop_setup riostream
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
