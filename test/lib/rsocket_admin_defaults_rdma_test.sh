#!/usr/bin/env bash
# rsocket_admin_defaults_rdma_test.sh TEST
# Runs TEST (rsocket_admin_defaults_rdma_test) with an administrator's
# defaults for rsockets in /etc/rdma/rsocket, as the rsocket man page has them, written to a
# tmpfs in a mount namespace of its own: nothing outside this run sees them.
# The values differ from rdma-core's built-in defaults and are ones v44
# keeps as written; wake_up_interval is a minute. Needs root (the Soft-RoCE
# guest runs it as root) and /etc/rdma, which rdma-core installs.
set -u
test_exe=$(realpath -- "${1:?usage: rsocket_admin_defaults_rdma_test.sh TEST}") || exit 2
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: writing /etc/rdma/rsocket in a mount namespace needs root (the guest runs as root)"
  exit 77
fi
if [[ ! -d /etc/rdma ]]; then
  echo "SKIP: /etc/rdma is missing (rdma-core is not installed)"
  exit 77
fi
exec unshare --mount --propagation private -- bash -c '
  set -eu
  mount -t tmpfs corio-rsocket-defaults /etc/rdma
  mkdir /etc/rdma/rsocket
  cd /etc/rdma/rsocket || exit 1
  echo 200000 >mem_default
  echo 300000 >wmem_default
  echo 200 >sqsize_default
  echo 100 >rqsize_default
  echo 32 >inline_default
  echo 8 >iomap_size
  echo 60000 >wake_up_interval
  echo 20 >polling_time
  for f in *; do echo "/etc/rdma/rsocket/$f: $(<"$f")"; done
  cd - >/dev/null
  exec "$0"
' "$test_exe"
