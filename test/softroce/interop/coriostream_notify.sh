#!/bin/bash
# coriostream's --notify message over Soft-RoCE, both ends coriostream (the
# notice is not riostream's protocol): after its last riowrite of an
# iteration the sender sends the marker through the stream, and the
# receiver reads that notice instead of watching the marker byte.
#
#   1. a server and a client process, -T v, small transfers, poller thread;
#   2. the same with 1 MB transfers (riowrite in pieces) and busy polling;
#   3. --loopback (both ends in one io_context), -T v;
#   4. a client with --notify marker against a server with --notify message
#      must fail at once on both sides, each naming --notify: both announce
#      their test in the handshake;
#   5. riostream's client, which announces nothing and only sets the marker
#      byte, against a --notify message server: the server must fail through
#      --timeout, not pass: it waits for notices, not for the marker byte,
#      so message mode cannot be passing by watching the byte after all.
#
# Runs inside the guest (the rdma suite runs it there through
# run-rdma-test); finds coriostream in $CORIOSTREAM or the build directory.
# Exit: 0 pass, 1 fail, 77 skip.
. "$(dirname "$0")/stream-pair.bash"

coriostream=${CORIOSTREAM:-$PWD/tools/coriostream/coriostream}
common=(--transport rsocket --timeout 60)

if [ -n "${CORIO_RDMA_ADDR:-}" ] && [ ! -x "$coriostream" ]; then
    skip "coriostream not found at $coriostream (build it, or set CORIOSTREAM)"
fi
interop_setup "$coriostream"
command -v riostream >/dev/null 2>&1 || skip "riostream not found (install rdmacm-utils)"

# start_server LABEL OPTION...: a coriostream server in the background, in
# $server_pid, once it listens; its output in $workdir/LABEL.server.out.
start_server() {
    local label=$1
    shift
    local _
    for _ in 1 2 3; do
        port=$next_port
        next_port=$((next_port + 1))
        note "$label: coriostream -b $CORIO_RDMA_ADDR -p $port $* (server)"
        linebuf timeout "$STEP_TIMEOUT" "$coriostream" "${common[@]}" -b "$CORIO_RDMA_ADDR" \
            -p "$port" "$@" >"$workdir/$label.server.out" 2>&1 &
        server_pid=$!
        wait_listening "$CORIO_RDMA_ADDR" "$port" && return 0
        kill "$server_pid" 2>/dev/null
        wait "$server_pid" 2>/dev/null
        server_pid=
    done
    return 1
}

# run_notify_pair LABEL OPTION...: both processes with the same options.
run_notify_pair() {
    local label=$1 start cst sst
    shift
    if ! start_server "$label" "$@"; then
        fail "$label: server never listened"
        return
    fi
    start=$SECONDS
    note "$label: coriostream -s $CORIO_RDMA_ADDR -p $port $* (client)"
    linebuf timeout "$STEP_TIMEOUT" "$coriostream" "${common[@]}" -s "$CORIO_RDMA_ADDR" -p "$port" \
        "$@" >"$workdir/$label.client.out" 2>&1
    cst=$?
    wait "$server_pid"
    sst=$?
    server_pid=
    note "$label: done in $((SECONDS - start)) s"
    sed 's/^/#   client: /' "$workdir/$label.client.out"
    sed 's/^/#   server: /' "$workdir/$label.server.out"
    [ "$cst" = 0 ] || fail "$label: client exited $cst"
    [ "$sst" = 0 ] || fail "$label: server exited $sst"
    check_custom "$workdir/$label.client.out" "$label client"
    check_custom "$workdir/$label.server.out" "$label server"
}

run_notify_pair message-small --notify message -T v -S 100 -C 5 -I 40
run_notify_pair message-large-busy --notify message --poll-mode busy -T v -S 1000000 -C 3 -I 4

label=message-loopback
note "$label: coriostream --loopback -b $CORIO_RDMA_ADDR --notify message -T v"
start=$SECONDS
linebuf timeout "$STEP_TIMEOUT" "$coriostream" "${common[@]}" --loopback -b "$CORIO_RDMA_ADDR" \
    -p "$next_port" --notify message -T v -S 4000 -C 4 -I 25 >"$workdir/$label.out" 2>&1
status=$?
next_port=$((next_port + 1))
note "$label: done in $((SECONDS - start)) s"
sed 's/^/#   /' "$workdir/$label.out"
[ "$status" = 0 ] || fail "$label: exited $status"
check_custom "$workdir/$label.out" "$label"

# A marker client against a message server: the server's first wait for a
# notice would never end. Both ends announce their test in the handshake
# (test_announcement), so both must stop there, each naming --notify (until
# session 41 both gave up only after --timeout 5).
label=mismatch
if start_server "$label" --notify message --timeout 5 -S 100 -C 1 -I 3; then
    start=$SECONDS
    linebuf timeout "$STEP_TIMEOUT" "$coriostream" "${common[@]}" --timeout 5 -s "$CORIO_RDMA_ADDR" \
        -p "$port" --notify marker -S 100 -C 1 -I 3 >"$workdir/$label.client.out" 2>&1
    cst=$?
    wait "$server_pid"
    sst=$?
    server_pid=
    note "$label: done in $((SECONDS - start)) s"
    sed 's/^/#   client: /' "$workdir/$label.client.out"
    sed 's/^/#   server: /' "$workdir/$label.server.out"
    # coriostream exits 1 for every failure: 0 passed, 124 hung until the
    # step timeout, 128+N died of signal N (139: a segfault), none of which
    # is the failure expected here.
    [ "$sst" = 1 ] || fail "$label: the message server exited $sst, expected 1 (a failure of its own)"
    [ "$cst" = 1 ] || fail "$label: the marker client exited $cst, expected 1 (a failure of its own)"
    grep -q -- '--notify marker there, --data-path iomap --notify message here' \
        "$workdir/$label.server.out" || fail "$label: the server's line does not name --notify"
    grep -q -- '--notify message there, --data-path iomap --notify marker here' \
        "$workdir/$label.client.out" || fail "$label: the client's line does not name --notify"
else
    fail "$label: server never listened"
fi

label=riostream-marker
if start_server "$label" --notify message --timeout 5 -S 100 -C 1 -I 3; then
    start=$SECONDS
    note "$label: riostream -s $CORIO_RDMA_ADDR -p $port -S 100 -C 1 -I 3 (client)"
    # riostream spins on its marker for ever once the server stops: it gets
    # 12 s, and its status is not the point.
    linebuf timeout 12 riostream -s "$CORIO_RDMA_ADDR" -p "$port" -S 100 -C 1 -I 3 \
        >"$workdir/$label.client.out" 2>&1
    cst=$?
    wait "$server_pid"
    sst=$?
    server_pid=
    note "$label: done in $((SECONDS - start)) s, riostream exit $cst"
    sed 's/^/#   client: /' "$workdir/$label.client.out"
    sed 's/^/#   server: /' "$workdir/$label.server.out"
    [ "$sst" = 1 ] || fail "$label: the message server exited $sst, expected 1 (a failure of its own)"
    grep -q 'timed out: no progress from the peer' "$workdir/$label.server.out" ||
        fail "$label: the server did not report its --timeout"
else
    fail "$label: server never listened"
fi

interop_finish
