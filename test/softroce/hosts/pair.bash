# Shared by the two-host tests in this directory (sourced, not run). Each
# test is one script that hosts-run runs in both guests; CORIO_HOST (one or
# two) says which side it plays. On top of interop/stream-pair.bash (skip,
# fail, note, wait_listening, check_table, check_custom, linebuf,
# interop_finish) it has a rendezvous between the guests, through
# hosts-run's control directory, which both guests see.
. "$(dirname "${BASH_SOURCE[0]}")/../interop/stream-pair.bash"

# Seconds a side waits for the other at a rendezvous: the other side may
# be a whole transfer behind on a busy host.
AWAIT_TIMEOUT=${CORIO_HOSTS_AWAIT_TIMEOUT:-300}

# hosts_setup TOOL: skips outside hosts-run or without TOOL; a scratch
# directory ($workdir) and the traps of stream-pair.bash's interop_setup.
hosts_setup() {
    [ -n "${CORIO_HOSTS_CTL:-}" ] && [ -n "${CORIO_PEER_ADDR:-}" ] ||
        skip "not in a hosts-run guest; run it as: test/softroce/hosts-run -- '$0' '$0'"
    interop_setup "$1"
    # Both guests, one vCPU each: nothing to pin.
    on_server_cpu=() on_client_cpu=()
}

# wire_peer_setup: hosts_setup for the tests that run wire_peer (from the
# build directory, or CORIO_WIRE_PEER=path).
wire_peer_setup() {
    wire_peer=${CORIO_WIRE_PEER:-$PWD/test/softroce/hosts/wire_peer}
    hosts_setup timeout
    [ -x "$wire_peer" ] || skip "wire_peer not found at $wire_peer (build it, or set CORIO_WIRE_PEER)"
}

# mark NAME: tells the other side that NAME happened.
mark() { : >"$CORIO_HOSTS_CTL/mark.$1"; }

# await NAME [LABEL]: waits (bounded) until the other side has marked
# NAME; fails at once when it has marked LABEL.failed instead.
await() {
    local i
    for ((i = 0; i < AWAIT_TIMEOUT * 10; i++)); do
        [ -e "$CORIO_HOSTS_CTL/mark.$1" ] && return 0
        if [ -n "${2:-}" ] && [ -e "$CORIO_HOSTS_CTL/mark.$2.failed" ]; then
            fail "$2: the other host failed before '$1'"
            return 1
        fi
        sleep 0.1
    done
    fail "the other host never got to '$1' ($AWAIT_TIMEOUT s)"
    return 1
}

# start_server LABEL ADDR PORT COMMAND...: COMMAND in the background (its
# output in $workdir/LABEL.server.out, its pid in server_pid), returns once
# its rsocket listens on ADDR:PORT, then marks LABEL.listening.
start_server() {
    local label=$1 addr=$2 port=$3
    shift 3
    note "$label: $* (server on host $CORIO_HOST)"
    linebuf timeout "$STEP_TIMEOUT" "$@" >"$workdir/$label.server.out" 2>&1 &
    server_pid=$!
    if ! wait_listening "$addr" "$port"; then
        fail "$label: the server never listened on $addr:$port"
        cat "$workdir/$label.server.out"
        mark "$label.failed"
        return 1
    fi
    mark "$label.listening"
}

# finish_server LABEL: waits for the server, shows its output, checks its
# status; the output stays in $workdir/LABEL.server.out. A server whose
# client has failed (LABEL.failed), or whose host's peer has ended in
# failure, is stopped: it might wait for it for ever.
finish_server() {
    local label=$1 st
    while kill -0 "$server_pid" 2>/dev/null; do
        if [ -e "$CORIO_HOSTS_CTL/mark.$label.failed" ] ||
           [ -e "$CORIO_HOSTS_CTL/mark.failed.$CORIO_PEER_HOST" ]; then
            fail "$label: the client on host $CORIO_PEER_HOST failed; server stopped"
            kill "$server_pid" 2>/dev/null
            break
        fi
        sleep 0.2
    done
    wait "$server_pid"
    st=$?
    server_pid=
    echo "## $label server output"
    cat "$workdir/$label.server.out"
    [ "$st" = 0 ] || fail "$label: server exited $st"
    return "$st"
}

# run_client LABEL COMMAND...: waits for the other host's server, runs
# COMMAND (output in $workdir/LABEL.client.out), shows its output and
# checks its status, then marks LABEL.done.
run_client() {
    local label=$1 st start=$SECONDS
    shift
    await "$label.listening" "$label" || return 1
    note "$label: $* (client on host $CORIO_HOST)"
    linebuf timeout "$STEP_TIMEOUT" "$@" >"$workdir/$label.client.out" 2>&1
    st=$?
    echo "## $label client output ($((SECONDS - start)) s)"
    cat "$workdir/$label.client.out"
    [ "$st" = 0 ] || { fail "$label: client exited $st"; mark "$label.failed"; }
    mark "$label.done"
    return "$st"
}

# dump_wire_state: what this guest's wire and RDMA stack look like now, for
# a failure nobody has explained yet (an EOF or a connect that never came,
# doc/testing.md): the link and its counters, the neighbour entries the
# connection manager resolves through (FAILED: the peer did not answer ARP),
# rxe's port, its queue pairs with their states and its counters, and the
# kernel's last words. Each command is bounded; one that is missing or hangs
# costs its line, not the test.
dump_wire_state() {
    local c
    echo "## host $CORIO_HOST: wire and RDMA state at $(date +%T)"
    for c in "ip -s link show dev rxenet0" "ip neigh show dev rxenet0" \
             "cat /sys/class/infiniband/rxe0/ports/1/state" "rdma resource show qp" \
             "rdma statistic show link rxe0/1" "tc -s qdisc show dev rxenet0" "dmesg --notime"; do
        echo "### $c"
        # shellcheck disable=SC2086  # each command is its words
        timeout 10 $c 2>&1 | tail -n 40
    done
}

# hosts_finish: interop_finish, telling the other host first when this one
# failed, and showing its state when either did.
hosts_finish() {
    [ "$failed" = 0 ] || mark "failed.$CORIO_HOST"
    if [ "$failed" != 0 ] || [ -e "$CORIO_HOSTS_CTL/mark.failed.$CORIO_PEER_HOST" ]; then
        dump_wire_state
    fi
    interop_finish
}
