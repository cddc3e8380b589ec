#!/usr/bin/env bash
# guest_run_rw_test.sh GUEST_RUN: every write-through directory of
# CORIO_GUEST_RW reaches the guest, also two whose paths are equally long and
# one named twice. (guest-run once deduplicated by path length alone, and
# dropped hosts-run's control directory whenever the caller's working
# directory had the same length: no two-host test could start.)
# Exit: 0 pass, 1 fail, 77 skip (no guest here), guest-run's status otherwise.
set -u
guest_run=${1:?usage: guest_run_rw_test.sh GUEST_RUN}
if [ "${CORIO_SOFTROCE:-auto}" = disabled ]; then
  echo "SKIP: the Soft-RoCE guest is disabled here (-Dsoftroce_tests=disabled)"
  exit 77
fi
base=$(mktemp -d "${TMPDIR:-/tmp}/corio-rw-test.XXXXXX") || exit 1
trap 'rm -rf "$base"' EXIT
# Same length: "aa" and "bb"; "a" is shorter, and "aa" is given twice.
mkdir "$base/aa" "$base/bb" "$base/a"
CORIO_GUEST_RW="$base/aa:$base/bb:$base/a:$base/aa" "$guest_run" --timeout 120 -- \
  sh -c 'for d in "$@"; do echo written >"$d/from-guest" || exit 3; done' sh \
  "$base/aa" "$base/bb" "$base/a"
status=$?
[ "$status" = 77 ] && exit 77
if [ "$status" != 0 ]; then
  echo "FAIL: guest-run exited $status"
  exit 1
fi
failed=0
for d in aa bb a; do
  if [ "$(cat "$base/$d/from-guest" 2>/dev/null)" != written ]; then
    echo "FAIL: $d: the guest's write did not reach the host (directory not shared)"
    failed=1
  else
    echo "ok: $d written through"
  fi
done
exit "$failed"
