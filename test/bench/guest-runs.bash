#!/bin/bash
# Runs a benchmark plan inside the Soft-RoCE guest (test/bench/compare puts
# it there with test/softroce/guest-run). Every line of PLAN is one server and
# client run, in the order given (compare interleaves the programs it
# compares: A B A B ...):
#
#   ID<TAB>SERVER COMMAND<TAB>CLIENT COMMAND
#
# where the commands are words split on spaces; @ADDR@ and @PORT@ become
# the guest's rxe address and a fresh port. The client's and the server's
# output go to OUTDIR/ID.client and OUTDIR/ID.server, their exit statuses
# and the wall time of the run to OUTDIR/ID.status.
#
# Programs start slowly under emulation (70-180 ms each, more on a busy
# host), so this script starts no more of them than the runs need: no
# timeout(1), no sleep(1), no rdma(8). The server is known to listen once it
# has printed the table header (riostream, rstream and coriostream print it
# right after listen; rdma-core's tools need `stdbuf -oL` in the plan for
# the header to reach the file at once), which is watched for with bash
# builtins only.
#
#   guest-runs.bash PLAN OUTDIR [STEP_TIMEOUT]
set -u

plan=$1 outdir=$2 step_timeout=${3:-120}
addr=${CORIO_RDMA_ADDR:?run this inside the guest (test/softroce/guest-run)}
mkdir -p "$outdir"

# A sleep that starts no program: read with a timeout from a FIFO no one
# writes (opened read-write, so the open does not block).
fifo=$(mktemp -u "${TMPDIR:-/tmp}/guest-runs.XXXXXX")
mkfifo "$fifo"
exec {never}<>"$fifo"
rm -f "$fifo"
nap() { read -r -t "$1" -u "$never" _ 2>/dev/null; return 0; }
# The client of the run under way, for the watchdog (a subshell cannot see
# the parent's later variables).
pkill_client() {
  local pid
  [[ -r $outdir/.client_pid ]] && read -r pid <"$outdir/.client_pid" && kill "$pid" 2>/dev/null
}

port=$((20000 + RANDOM % 30000))
total=$(grep -c . "$plan")
n=0
start_all=$SECONDS
while IFS=$'\t' read -r id server client; do
  [[ -n $id ]] || continue
  n=$((n + 1))
  port=$((port + 1))
  server=${server//@ADDR@/$addr} server=${server//@PORT@/$port}
  client=${client//@ADDR@/$addr} client=${client//@PORT@/$port}
  read -r -a server_words <<<"$server"
  read -r -a client_words <<<"$client"
  sout=$outdir/$id.server cout=$outdir/$id.client
  : >"$sout"
  t0=$EPOCHREALTIME
  "${server_words[@]}" >"$sout" 2>&1 &
  server_pid=$!
  # The step timeout, without starting timeout(1) twice per run: a forked
  # subshell that naps, then kills what is left.
  ( nap "$step_timeout"; kill "$server_pid" 2>/dev/null; pkill_client ) &
  watchdog=$!
  listening=0
  for ((i = 0; i < 3000; i++)); do
    if [[ -s $sout ]]; then listening=1; break; fi
    kill -0 "$server_pid" 2>/dev/null || break
    nap 0.01
  done
  if ((listening)); then
    "${client_words[@]}" >"$cout" 2>&1 &
    client_pid=$!
    echo "$client_pid" >"$outdir/.client_pid"
    wait "$client_pid"
    cst=$?
  else
    cst=255
    echo "guest-runs: the server of $id never listened" >"$cout"
    kill "$server_pid" 2>/dev/null
  fi
  wait "$server_pid"
  sst=$?
  kill "$watchdog" 2>/dev/null
  wait "$watchdog" 2>/dev/null
  rm -f "$outdir/.client_pid"
  t1=$EPOCHREALTIME
  echo "client $cst server $sst seconds $(( (${t1/./} - ${t0/./}) / 1000 ))e-3" >"$outdir/$id.status"
  echo "guest-runs: $n/$total $id: client $cst, server $sst ($((SECONDS - start_all)) s so far)" >&2
done <"$plan"
