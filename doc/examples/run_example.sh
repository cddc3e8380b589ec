#!/bin/sh
# run_example.sh PROGRAM [EXPECTED...]: runs a doc/examples program on this
# host's address for rsockets (CORIO_RDMA_ADDR, which the Soft-RoCE guest
# sets; 127.0.0.1 elsewhere) and checks that it exits 0, that it says it ran
# over the transport corio::transport::automatic picks here (rsocket where an
# RDMA device exists, else tcp), and that its output holds every EXPECTED
# line (fixed strings).
set -eu
program=$1
shift
if [ -e /sys/class/infiniband ] && [ -n "$(ls /sys/class/infiniband)" ]; then
  transport=rsocket
else
  transport=tcp
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
"$program" "${CORIO_RDMA_ADDR:-127.0.0.1}" >"$out" 2>&1 || status=$?
cat "$out"
if [ "$status" -ne 0 ]; then
  echo "run_example: $program exited $status" >&2
  exit 1
fi
for line in "over $transport" "$@"; do
  grep -qF -- "$line" "$out" || { echo "run_example: no '$line' in the output" >&2; exit 1; }
done
