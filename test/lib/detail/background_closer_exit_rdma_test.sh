#!/usr/bin/env bash
# background_closer_exit_rdma_test.sh CHILD SLOW_CALLS_LIBRARY [RUNS]
# Runs CHILD (background_closer_exit_child) RUNS times (default 100), eight at
# a time, with every rsocket close and shutdown slowed past the background
# closer's exit grace: each run returns from main while closes are still
# queued or in a call. Every run must exit 0; a crash at exit (139), an
# abort (134) or a hang (killed after 60 s: 124) fails the test.
set -u
child=${1:?usage: background_closer_exit_rdma_test.sh CHILD SLOW_CALLS_LIBRARY [RUNS]}
shim=${2:?usage: background_closer_exit_rdma_test.sh CHILD SLOW_CALLS_LIBRARY [RUNS]}
runs=${3:-100}
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

# Small rooms: priming costs a thread start per 4 places; these runs need 16
# connection-service places and no listener beyond the one make_stream_pair
# opens. The child slows closes only once it is set up.
export CORIO_RSOCKET_CM_CAPACITY=16 CORIO_RSOCKET_LISTEN_CAPACITY=4
export CORIO_SLOW_RSOCKET_MS=${CORIO_SLOW_RSOCKET_MS:-3000} CORIO_SLOW_RSOCKET_LATER=1
export CORIO_TEST_TRANSPORT=rsocket

start=$SECONDS
seq "$runs" | xargs -P 8 -I{} sh -c \
  'timeout 60 env LD_PRELOAD="$2" "$1" >"$3/{}.out" 2>&1; echo $? >"$3/{}.rc"' \
  sh "$child" "$shim" "$results"

ok=0
declare -A statuses=()
for ((i = 1; i <= runs; ++i)); do
  rc=$(cat "$results/$i.rc" 2>/dev/null || echo missing)
  statuses[$rc]=$((${statuses[$rc]:-0} + 1))
  if [[ $rc == 0 ]]; then
    ok=$((ok + 1))
  elif ((${statuses[$rc]} == 1)); then
    echo "run $i exited with status $rc:"
    sed 's/^/  /' "$results/$i.out"
  fi
done
summary=""
for rc in "${!statuses[@]}"; do summary+=" status $rc: ${statuses[$rc]};"; done
echo "$ok of $runs runs exited 0 ($((SECONDS - start)) s;$summary)"
((ok == runs))
