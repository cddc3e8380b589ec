#!/bin/bash
# interop.sh [full]: rdma-core's benchmarks and coriostream across two hosts
# (run in both guests of hosts-run; host one serves, host two connects):
# riostream against coriostream and rstream against coriostream
# --data-path stream, each both ways round (rdma-core's tool as server,
# then coriostream as server), with -T v on both sides in custom rows of
# two sizes (100 bytes: no multiple of 256, so every iteration shifts the
# pattern; 1000000: split into pieces). With "full", each pair also runs
# the default series first (the by-hand check; CI runs the rest).
#   test/softroce/hosts-run -- 'test/softroce/hosts/interop.sh' 'test/softroce/hosts/interop.sh'
# from the build directory, or CORIOSTREAM=path. Exit: 0 pass, 1 fail, 77 skip.
# CORIO_INTEROP_PAIRS: the pairs to run, by number, e.g. "3" or "3 4"
# (default all): 1 riostream serving, coriostream connecting; 2 coriostream
# serving, riostream connecting; 3 rstream serving, coriostream --data-path
# stream connecting; 4 the reverse; each at most once. Both guests see the
# same environment.
. "$(dirname "$0")/pair.bash"

hosts_setup riostream
command -v rstream >/dev/null 2>&1 || skip "rstream not found (install rdmacm-utils)"
coriostream=${CORIOSTREAM:-$PWD/tools/coriostream/coriostream}
[ -x "$coriostream" ] || skip "coriostream not found at $coriostream (build it, or set CORIOSTREAM)"

# command_for NAME: the command line of NAME in $command (stream-pair.bash's,
# with coriostream's options).
command_for() {
    case $1 in
        coriostream) command=("$coriostream" --transport rsocket --timeout 300) ;;
        coriostream-stream) command=("$coriostream" --transport rsocket --data-path stream --timeout 300) ;;
        *) command=("$1") ;;
    esac
}

port=${CORIO_INTEROP_PORT:-20000}
# cross_pair LABEL ROWS SERVER_TOOL CLIENT_TOOL [OPTION...]: the server on
# host one at its address, the client on host two, both checked.
cross_pair() {
    local label=$1 rows=$2 server_tool=$3 client_tool=$4 start=$SECONDS command
    shift 4
    port=$((port + 1))
    if [ "$CORIO_HOST" = one ]; then
        command_for "$server_tool"
        start_server "$label" "$CORIO_RDMA_ADDR" "$port" "${command[@]}" -b "$CORIO_RDMA_ADDR" -p "$port" "$@" ||
            return
        finish_server "$label"
        if [ "$rows" = default ]; then check_table "$workdir/$label.server.out" "$label server ($server_tool)"
        else check_custom "$workdir/$label.server.out" "$label server ($server_tool)"; fi
    else
        command_for "$client_tool"
        run_client "$label" "${command[@]}" -s "$CORIO_PEER_ADDR" -p "$port" "$@" || return
        if [ "$rows" = default ]; then check_table "$workdir/$label.client.out" "$label client ($client_tool)"
        else check_custom "$workdir/$label.client.out" "$label client ($client_tool)"; fi
    fi
    timings+=("$label $((SECONDS - start))s")
}

pairs=("riostream coriostream" "coriostream riostream"
       "rstream coriostream-stream" "coriostream-stream rstream")
selected=${CORIO_INTEROP_PAIRS:-1 2 3 4}
selected=${selected//,/ }
seen=" "
for n in $selected; do
    case $n in
        [1-4]) ;;
        *) fail "CORIO_INTEROP_PAIRS: no pair '$n' (pairs are 1 to 4)"; hosts_finish ;;
    esac
    # A pair run twice would find its own marks of the first run.
    case $seen in *" $n "*) fail "CORIO_INTEROP_PAIRS: pair $n twice"; hosts_finish ;; esac
    seen+="$n "
done
[ -n "${selected// /}" ] || { fail "CORIO_INTEROP_PAIRS names no pair"; hosts_finish; }
for n in $selected; do
    read -r server_tool client_tool <<<"${pairs[n - 1]}"
    name=$server_tool-to-$client_tool
    if [ "${1:-}" = full ]; then
        cross_pair "$name-default" default "$server_tool" "$client_tool"
    fi
    cross_pair "$name-verify-small" custom "$server_tool" "$client_tool" -T v -S 100 -C 5 -I 40
    cross_pair "$name-verify-large" custom "$server_tool" "$client_tool" -T v -S 1000000 -C 3 -I 4
done

note "times: $(IFS=,; echo "${timings[*]}")"
hosts_finish
