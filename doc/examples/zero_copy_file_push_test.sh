#!/bin/sh
# zero_copy_file_push_test.sh PROGRAM: pushes PROGRAM's own file through it
# and checks that the copy is byte for byte the same; also that a missing
# input is a clear error, not a crash.
set -eu
program=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$program" "$program" "$out"
cmp "$program" "$out"
if "$program" /nonexistent/input "$out" 2>"$out.err"; then
  echo "a missing input was not refused" >&2
  exit 1
fi
grep -q "cannot open /nonexistent/input" "$out.err"
rm -f "$out.err"
