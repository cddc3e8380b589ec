#!/bin/sh
# bad_address_test.sh PROGRAM: a doc/examples program given an address this
# host does not have (192.0.2.1, TEST-NET-1: bind fails, nothing is sent)
# must exit with status 1 and say why in one line on stderr, naming itself
# and the failed bind: not crash, not hang.
set -eu
program=$1
name=$(basename "$program")
err=$(mktemp)
trap 'rm -f "$err"' EXIT
status=0
"$program" 192.0.2.1 >/dev/null 2>"$err" || status=$?
cat "$err"
if [ "$status" -ne 1 ]; then
  echo "bad_address_test: $name exited $status, not 1" >&2
  exit 1
fi
if [ "$(wc -l <"$err")" -ne 1 ] || ! grep -q "^$name: bind: " "$err"; then
  echo "bad_address_test: $name's stderr is not one '$name: bind: ...' line" >&2
  exit 1
fi
