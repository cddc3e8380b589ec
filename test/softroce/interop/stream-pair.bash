# Shared by the rdma-core interop checks in this directory (sourced, not run).
#
# These checks run INSIDE the Soft-RoCE guest (test/softroce/guest-run),
# where CORIO_RDMA_ADDR is the address rxe0 is bound to. They start one of
# rdma-core's rsocket benchmark programs (riostream, rstream), or
# coriostream, as a server in the background, run the same program or
# another as a client against it, and assert that both sides complete the
# run and print the expected table.
#
# Exit statuses follow the automake/meson convention: 0 pass, 77 skip (with
# the reason on stderr), anything else fail.
#
# Knobs:
#   CORIO_INTEROP_STEP_TIMEOUT  seconds allowed for one server/client run
#                               (default 600: the default series takes about
#                               30 s in an idle guest, several times that on
#                               a busy 2-core host)
#   CORIO_INTEROP_PORT          first port to use (default: random)

STEP_TIMEOUT=${CORIO_INTEROP_STEP_TIMEOUT:-600}

# Data rows of the default series, in order: a latency and a bandwidth
# test for each of 64 B, 4 KiB, 64 KiB and 1 MiB transfers.
DEFAULT_ROWS=(64_lat 4k_lat 64k_lat 1m_lat 64_bw 4k_bw 64k_bw 1m_bw)

skip() { echo "SKIP: $*" >&2; exit 77; }
fail() { echo "FAIL: $*" >&2; failed=1; }
note() { echo "# $*"; }

failed=0
server_pid=
workdir=
on_server_cpu=()
on_client_cpu=()

interop_setup() {
    local tool=$1
    [ -n "${CORIO_RDMA_ADDR:-}" ] ||
        skip "CORIO_RDMA_ADDR is not set; run this inside the Soft-RoCE guest: test/softroce/guest-run -- $0"
    command -v "$tool" >/dev/null 2>&1 || skip "$tool not found (install rdmacm-utils)"
    command -v timeout >/dev/null 2>&1 || skip "timeout not found (coreutils)"
    workdir=$(mktemp -d "${TMPDIR:-/tmp}/corio-interop.XXXXXX") || exit 1
    trap interop_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    # Successive pairs must not collide with a port still in TIME_WAIT-like
    # states of a previous pair, nor with another check running in the same
    # guest: start at a random port and move on for every pair.
    next_port=${CORIO_INTEROP_PORT:-$((20000 + RANDOM % 30000))}
    # Server and client busy-poll (riostream spins on the last byte of its
    # buffer, rstream on nonblocking rrecv): each gets a vCPU of its own.
    # Were both ever on one vCPU, every hand-over would wait for the guest
    # scheduler's tick (4 ms). Pinning rules that out; it was not measured
    # to change the times (doc/testing.md), which on a busy host are set by
    # the host scheduler. run-rdma-test asks guest-run for two vCPUs.
    if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null 2>&1; then
        on_server_cpu=(taskset -c 0)
        on_client_cpu=(taskset -c 1)
    else
        note "only $(nproc) CPU (or no taskset): server and client share it, expect a slow run"
    fi
}

interop_cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null
        sleep 0.5
        kill -KILL "$server_pid" 2>/dev/null
    fi
    [ -z "$workdir" ] || rm -rf "$workdir"
}

# Line-buffer stdout where possible, so a run killed by timeout still shows
# how far it got.
linebuf() {
    if command -v stdbuf >/dev/null 2>&1; then stdbuf -oL "$@"; else "$@"; fi
}

# True once the rsocket server listens on ADDR:PORT. An rsocket is not a
# kernel socket (ss cannot see it); its rdma_cm id is visible through the
# rdma tool. Without a usable rdma tool, fall back to a fixed grace period.
wait_listening() {
    local addr=$1 port=$2
    if ! rdma resource show cm_id >/dev/null 2>&1; then
        sleep 2
        return 0
    fi
    for _ in $(seq 100); do
        kill -0 "$server_pid" 2>/dev/null || return 1
        if rdma resource show cm_id 2>/dev/null | grep 'state LISTEN' |
            grep -q "src-addr $addr:$port "; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

# has_header FILE WHO: true when FILE has the table's header; else fails WHO.
has_header() {
    grep -Eq '^name +bytes +xfers +iters +total +time +Gb/sec +usec/xfer' "$1" && return 0
    fail "$2: no result header"
    return 1
}

# check_table FILE WHO: header plus exactly the rows of DEFAULT_ROWS (the 8
# of the default series unless the caller sets it).
check_table() {
    local file=$1 who=$2 rows
    has_header "$file" "$who" || return
    # Data rows: NAME BYTES XFERS ITERS TOTAL TIME GBPS USEC (8 columns).
    rows=$(awk 'NF == 8 && $1 ~ /^[0-9.]+[km]?_(lat|bw)$/ { print $1 }' "$file" | tr '\n' ' ')
    rows=${rows% }
    local want="${DEFAULT_ROWS[*]}"
    local n
    n=$(wc -w <<<"$rows")
    if [ "$rows" != "$want" ]; then
        fail "$who: expected $((${#DEFAULT_ROWS[@]})) rows ($want), got $n ($rows)"
    else
        note "$who: header + $n rows ok"
    fi
}

# check_custom FILE WHO: the header and exactly one `custom` row.
check_custom() {
    local file=$1 who=$2 rows
    has_header "$file" "$who" || return
    rows=$(awk 'NF == 8 && $1 != "name" { print $1 }' "$file" | tr '\n' ' ')
    if [ "$rows" != "custom " ]; then
        fail "$who: expected one custom row, got: $rows"
    else
        note "$who: header + custom row ok"
    fi
}

# command_for TOOL: the command line that starts TOOL, in $command. A script
# whose tools need options or a wrapper defines its own after sourcing this
# file (the coriostream interop checks do).
command_for() {
    command=("$1")
}

# Seconds each run_mixed_pair took, for a summary at the end of a script.
timings=()

# run_mixed_pair LABEL ROWS SERVER_TOOL CLIENT_TOOL [OPTION...]: one
# server/client run, SERVER_TOOL listening and CLIENT_TOOL connecting (each
# started as command_for says), with the same extra options on both sides.
# ROWS is default (the rows of DEFAULT_ROWS) or custom (one row). Both
# listen and connect at $pair_addr, CORIO_RDMA_ADDR unless the caller sets
# it; server and client run on on_server_cpu and on_client_cpu.
run_mixed_pair() {
    local label=$1 rows=$2 server_tool=$3 client_tool=$4
    shift 4
    local addr=${pair_addr:-$CORIO_RDMA_ADDR} port cst sst start command
    local sout=$workdir/$label.server.out cout=$workdir/$label.client.out

    for _ in 1 2 3; do
        port=$next_port
        next_port=$((next_port + 1))
        command_for "$server_tool"
        note "$label: ${command[*]} -b $addr -p $port${*:+ $*} (server)"
        linebuf "${on_server_cpu[@]}" timeout "$STEP_TIMEOUT" "${command[@]}" -b "$addr" -p "$port" "$@" >"$sout" 2>&1 &
        server_pid=$!
        if wait_listening "$addr" "$port"; then break; fi
        # The server died (port taken?) or never listened: try another port.
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
    note "$label: ${command[*]} -s $addr -p $port${*:+ $*} (client)"
    linebuf "${on_client_cpu[@]}" timeout "$STEP_TIMEOUT" "${command[@]}" -s "$addr" -p "$port" "$@" >"$cout" 2>&1
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

# run_pair TOOL LABEL [OPTION...]: one server/client run of the default
# series, TOOL at both ends, with the given extra options on both sides.
run_pair() {
    local tool=$1 label=$2
    shift 2
    run_mixed_pair "$label" default "$tool" "$tool" "$@"
}

interop_finish() {
    if [ "$failed" = 0 ]; then
        echo "PASS"
        exit 0
    fi
    echo "FAIL" >&2
    exit 1
}
