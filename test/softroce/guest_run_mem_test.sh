#!/usr/bin/env bash
# guest_run_mem_test.sh GUEST_RUN: CORIO_GUEST_MEM sizes the guest where
# --mem is not given (meson test can set an environment variable but not an
# argument of run-rdma-test's guest-run), --mem still wins over it, and a
# value that is not a size is refused before anything boots.
# Exit: 0 pass, 1 fail, 77 skip (no guest here), guest-run's status otherwise.
set -u
guest_run=${1:?usage: guest_run_mem_test.sh GUEST_RUN}
if [ "${CORIO_SOFTROCE:-auto}" = disabled ]; then
  echo "SKIP: the Soft-RoCE guest is disabled here (-Dsoftroce_tests=disabled)"
  exit 77
fi
failed=0

# Refused at once: exit status 2 and the reason, no boot.
out=$(CORIO_GUEST_MEM=lots "$guest_run" --timeout 60 -- true 2>&1)
status=$?
if [ "$status" != 2 ] || [[ $out != *"CORIO_GUEST_MEM"* ]]; then
  echo "FAIL: CORIO_GUEST_MEM=lots: exit status $status, output: $out"
  failed=1
else
  echo "ok: CORIO_GUEST_MEM=lots refused with status 2"
fi

# The guest's MemTotal in MiB: what the kernel keeps for itself is below
# 200 MiB, so 1536 and 512 cannot be mistaken for the 1024 default.
mem_total() {
  "$@" --timeout 120 -- awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo
}
for case in "1536 env" "512 both"; do
  set -- $case
  if [ "$2" = env ]; then
    total=$(CORIO_GUEST_MEM=$1 mem_total "$guest_run")
  else
    # --mem 512 against CORIO_GUEST_MEM=1536: the argument wins.
    total=$(CORIO_GUEST_MEM=1536 mem_total "$guest_run" --mem "$1")
  fi
  status=$?
  [ "$status" = 77 ] && exit 77
  if [ "$status" != 0 ] || ! [[ $total =~ ^[0-9]+$ ]]; then
    echo "FAIL: $case: guest-run exited $status, printed '$total'"
    failed=1
  elif [ "$total" -gt "$1" ] || [ "$total" -lt $(( $1 - 200 )) ]; then
    echo "FAIL: $case: the guest has $total MiB, asked for $1"
    failed=1
  else
    echo "ok: $case: the guest has $total MiB of $1"
  fi
done
exit "$failed"
