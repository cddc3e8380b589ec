#!/usr/bin/env bash
# callgrind_per_transfer_test.sh CALLGRIND_PER_TRANSFER: two small profiles
# shaped as a coriostream client's part after compare's --dump-before cut,
# where main's call into the work was under way at the cut ("calls=0").
# main spends 10 instructions of its own in both; the work 1,000 and 3,000,
# two transfers apart. Per transfer, the tool must give the work 1,000 and
# main nothing, and its --group components must add up to the total:
# valgrind 3.19's callgrind_annotate alone gives main the call's cost too.
set -euo pipefail
tool=$1

command -v callgrind_annotate >/dev/null 2>&1 ||
  { echo "SKIP: callgrind_annotate is not installed (Debian: valgrind; tools/install-deps --bench installs it)"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# profile FILE WORK: main (10 of its own) calls work (WORK of its own).
profile() {
  cat >"$1" <<PROFILE
# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 1
cmd: prog
part: 2

positions: line
events: Ir
summary: $(($2 + 10))

ob=(1) /usr/bin/prog
fl=(1) /src/main.cpp
fn=(1) main
5 10
cfl=(2) /src/work.cpp
cfn=(2) work
calls=0 20
6 $2

fl=(2)
fn=(2)
20 $2

totals: $(($2 + 10))
PROFILE
}
profile "$work/small" 1000
profile "$work/large" 3000

"$tool" "$work/small" "$work/large" 2 >"$work/self"
fail() { echo "$1"; cat "$work/$2"; exit 1; }
grep -Eq '^ +1,000  PROGRAM TOTAL \(1,010 and 3,010\)$' "$work/self" || fail "the total is not 1,000 per transfer:" self
grep -Eq '^ +1,000  /src/work.cpp:work$' "$work/self" || fail "work does not spend 1,000 per transfer:" self
if grep -q 'main' "$work/self"; then fail "main is charged with its call's cost:" self; fi

"$tool" --group "$work/small" "$work/large" 2 >"$work/group"
python3 - "$work/group" <<'PY'
import sys

lines = [l.split(None, 1) for l in open(sys.argv[1]) if not l.startswith("#")]
total = int(lines[0][0].replace(",", ""))
parts = sum(int(v.replace(",", "")) for v, _ in lines[1:])
if parts != total:
    sys.exit(f"--group's components add up to {parts}, not the total {total}:\n" + open(sys.argv[1]).read())
PY
echo "callgrind-per-transfer: self costs right across a cut's unfinished calls"
