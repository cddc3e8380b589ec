#!/bin/bash
# rsocket-config.bash NAME=VALUE... -- COMMAND [ARGS...]
#
# Runs COMMAND with rsockets' administrator defaults /etc/rdma/rsocket/NAME
# set to VALUE (the rsocket man page, section 7: polling_time, mem_default, ...), in a private
# mount namespace: /etc/rdma is copied to a tmpfs, the files are written
# there and the tmpfs is bind-mounted over /etc/rdma, so only COMMAND and
# its children see them and nothing is written to the real /etc. Needs root
# (the Soft-RoCE guest runs commands as root) and /etc/rdma, which rdma-core
# installs. test/bench/compare's guest-instructions group runs its plan
# under `rsocket-config.bash polling_time=0 --`, so that rsockets' own spin
# before it sleeps (10 us by default in every rpoll and blocking call) is
# not counted as instructions; see doc/performance.md.
set -u
settings=()
while (($#)) && [[ $1 != -- ]]; do
  [[ $1 == [a-z]*=* ]] || { echo "rsocket-config.bash: not NAME=VALUE: $1" >&2; exit 2; }
  settings+=("$1")
  shift
done
(($# >= 2)) || { echo "usage: rsocket-config.bash NAME=VALUE... -- COMMAND [ARGS...]" >&2; exit 2; }
shift
if [[ $(id -u) != 0 ]]; then
  echo "rsocket-config.bash: writing /etc/rdma/rsocket in a mount namespace needs root" >&2
  exit 2
fi
if [[ ! -d /etc/rdma ]]; then
  echo "rsocket-config.bash: /etc/rdma is missing (rdma-core is not installed)" >&2
  exit 2
fi
# shellcheck disable=SC2016 # expanded by the inner bash
exec unshare --mount --propagation private -- bash -c '
  set -eu
  n=$1; shift
  stage=$(mktemp -d "${TMPDIR:-/tmp}/rsocket-config.XXXXXX")
  mount -t tmpfs corio-rsocket-config "$stage"
  cp -a /etc/rdma/. "$stage"/
  mkdir -p "$stage/rsocket"
  for ((i = 0; i < n; i++)); do
    echo "${1#*=}" >"$stage/rsocket/${1%%=*}"
    shift
  done
  mount --bind "$stage" /etc/rdma
  umount "$stage"
  rmdir "$stage"
  for f in /etc/rdma/rsocket/*; do echo "rsocket-config: $f: $(<"$f")" >&2; done
  exec "$@"
' rsocket-config "${#settings[@]}" "${settings[@]}" "$@"
