#!/usr/bin/env bash
# run_rdma_test_time_factor_test.sh RUN_RDMA_TEST: run-rdma-test multiplies
# the guest's timeout by CORIO_TEST_TIME_FACTOR and refuses a bad factor
# before it runs anything. No guest boots: a bad factor ends run-rdma-test
# first, and a good one is reported before the guest is found disabled.
# Exit: 0 pass, 1 fail, 77 skip (an RDMA device here: no guest to time).
set -u
runner=${1:?usage: run_rdma_test_time_factor_test.sh RUN_RDMA_TEST}
if compgen -G '/sys/class/infiniband/*' >/dev/null; then
  echo "SKIP: this host has an RDMA device, so run-rdma-test runs tests without a guest"
  exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/corio-time-factor.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# run FACTOR|unset: run-rdma-test of a command that leaves a mark, with a
# guest timeout of 50 s and the guest disabled.
run() {
  rm -f "$dir/ran"
  if [ "$1" = unset ]; then
    env -u CORIO_TEST_TIME_FACTOR CORIO_SOFTROCE=disabled CORIO_GUEST_TIMEOUT=50 \
      "$runner" touch "$dir/ran" >"$dir/out" 2>&1
  else
    env CORIO_TEST_TIME_FACTOR="$1" CORIO_SOFTROCE=disabled CORIO_GUEST_TIMEOUT=50 \
      "$runner" touch "$dir/ran" >"$dir/out" 2>&1
  fi
  status=$?
}

for bad in lots 0.5 101 "" 2. " 2"; do
  run "$bad"
  [ "$status" = 2 ] || fail "factor '$bad': exit status $status, not 2"
  grep -qF "CORIO_TEST_TIME_FACTOR must be a number from 1 to 100, not '$bad'" "$dir/out" ||
    fail "factor '$bad': no message naming the variable and the value: $(cat "$dir/out")"
  [ -e "$dir/ran" ] && fail "factor '$bad': the command ran"
done

run 2.5
[ "$status" = 77 ] || fail "factor 2.5: exit status $status, not 77 (guest disabled)"
grep -qF "the guest may run 125 s (CORIO_GUEST_TIMEOUT 50 times CORIO_TEST_TIME_FACTOR 2.5)" "$dir/out" ||
  fail "factor 2.5: the guest's timeout is not reported as 125 s: $(cat "$dir/out")"

run unset
[ "$status" = 77 ] || fail "no factor: exit status $status, not 77 (guest disabled)"
grep -q "the guest may run" "$dir/out" && fail "no factor: a stretched timeout is reported"

[ "$failed" = 0 ] && echo "ok: bad factors refused before anything ran; 50 s times 2.5 is 125 s"
exit "$failed"
