#!/bin/bash
# coriostream under a locked-memory limit too low for rsockets, in the guest
# (run-rdma-test): the run fails with one line naming RLIMIT_MEMLOCK, its
# value and the fix (ulimit -l, limits.conf), never a bare "Cannot allocate
# memory", and never hangs. Root holds CAP_IPC_LOCK, which lifts the limit,
# so the run drops it with setpriv. Exit: 0 pass, 1 fail, 77 skip.
set -uo pipefail

coriostream=${CORIOSTREAM:?set CORIOSTREAM to the coriostream binary}
[[ -n ${CORIO_RDMA_ADDR:-} ]] || { echo "SKIP: no RDMA address (CORIO_RDMA_ADDR)"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: setpriv not found"; exit 77; }

limit_kib=64
err=$( (ulimit -l "$limit_kib" &&
        timeout 60 setpriv --bounding-set -ipc_lock --inh-caps -ipc_lock -- \
          "$coriostream" --loopback --transport rsocket -b "$CORIO_RDMA_ADDR" \
          -p $((10000 + RANDOM % 22768)) -S 64 -C 1 -I 1 --timeout 20) 2>&1 >/dev/null)
status=$?
echo "exit $status: $err"
failures=0
[[ $status == 1 ]] || { echo "FAIL: expected exit 1"; failures=1; }
[[ $(wc -l <<<"$err") == 1 ]] || { echo "FAIL: expected one line"; failures=1; }
grep -q "RLIMIT_MEMLOCK is $((limit_kib * 1024)) bytes" <<<"$err" ||
  { echo "FAIL: the limit is not named"; failures=1; }
grep -q 'ulimit -l' <<<"$err" && grep -q 'limits.conf' <<<"$err" ||
  { echo "FAIL: the fix is not named"; failures=1; }
exit $failures
