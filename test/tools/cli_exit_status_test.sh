#!/usr/bin/env bash
# Runs the coriostream binary given as $1 and checks what a shell script
# sees: exit statuses, and which stream carries the usage text.
set -uo pipefail

coriostream=${1:?usage: cli_exit_status_test.sh path/to/coriostream}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect STATUS ARGS...: runs coriostream, keeps stdout and stderr in $out, $err.
expect() {
  local want=$1
  shift
  "$coriostream" "$@" >"$scratch/out" 2>"$scratch/err"
  local got=$?
  out=$(cat "$scratch/out")
  err=$(cat "$scratch/err")
  if [[ $got != "$want" ]]; then
    fail "coriostream $* exited $got, expected $want; stderr: $err"
    return 1
  fi
}

# A usage error: one line naming the problem, then the usage text, both on
# stderr, nothing on stdout, exit 1.
expect_usage_error() {
  local message=$1
  shift
  expect 1 "$@" || return
  [[ -z $out ]] || fail "coriostream $* wrote to stdout: $out"
  [[ $(head -n 1 <<<"$err") == "coriostream: $message" ]] ||
    fail "coriostream $*: first stderr line is '$(head -n 1 <<<"$err")', expected 'coriostream: $message'"
  [[ $(sed -n 2p <<<"$err") == "usage: $coriostream" ]] ||
    fail "coriostream $*: no usage text after the message"
}

expect 0 --help
[[ $(head -n 1 <<<"$out") == "usage: $coriostream" ]] || fail "--help does not start with the usage line"
grep -q -- '--transport' <<<"$out" || fail "--help does not list the long options"
[[ -z $err ]] || fail "--help wrote to stderr: $err"

expect_usage_error "unknown -T test option 'x'" -T x
expect_usage_error "unknown -T test option 'A'" -T A
expect_usage_error "-I needs a whole number, got 'abc'" -I abc
expect_usage_error "-C must be between 1 and 2147483647, got 0" -C 0
expect_usage_error "-S must be between 1 and 6291456, got 0" -S 0
expect_usage_error "--streams must be at least 1" --streams 0
expect_usage_error "-f takes name, ip, ipv6 or gid, got 'mac'" -f mac
expect_usage_error "unrecognised option '-h'" -h
expect_usage_error "the required argument for option '-S' is missing" -S
expect_usage_error "unexpected argument 'extra'" -s host extra
expect_usage_error "--loopback runs both ends here; -s names a remote server" --loopback -s host

# Valid options, but no server listens on port 1: one clear line naming the
# address and the reason, exit 1. riostream prints its table header before it
# connects, and so does coriostream; no row may follow it.
expect 1 -s 127.0.0.1 -p 1 -T b --transport tcp --data-path stream
[[ $err == "coriostream: connect 127.0.0.1:1: Connection refused" ]] || fail "connection refused reported as: $err"
[[ $(wc -l <<<"$out") == 1 && $out == name* ]] || fail "a refused run printed more than the header: $out"

expect 0 --dry-run
[[ $(head -n 1 <<<"$out") == "name      bytes   xfers   iters   total" ]] || fail "--dry-run header: $(head -n 1 <<<"$out")"
[[ $(grep -c '_lat ' <<<"$out") == 4 && $(grep -c '_bw ' <<<"$out") == 4 ]] ||
  fail "--dry-run does not plan the default four sizes twice: $out"

expect 0 --dry-run -S all
[[ $(grep -c '_lat ' <<<"$out") == 33 && $(grep -c '_bw ' <<<"$out") == 33 ]] ||
  fail "--dry-run -S all does not plan 33 sizes twice"

expect 0 --dry-run -C 7 --format csv --output "$scratch/plan.csv"
[[ -z $out ]] || fail "--output still wrote to stdout: $out"
[[ $(sed -n 2p "$scratch/plan.csv") == 1,custom,,custom,1000,7,1,14000,server,auto,iomap,marker,1,1 ]] ||
  fail "--output plan.csv holds: $(cat "$scratch/plan.csv")"

expect 1 --dry-run --output "$scratch/missing-dir/plan.txt"
[[ $err == "coriostream: cannot write $scratch/missing-dir/plan.txt: No such file or directory" ]] ||
  fail "unwritable --output: $err"

# A report that cannot be written is a failure with its reason, not exit 0
# with the table lost (riostream's printf loses it so).
if [[ -w /dev/full ]]; then
  "$coriostream" --dry-run >/dev/full 2>"$scratch/err"
  status=$?
  [[ $status == 1 && $(cat "$scratch/err") == "coriostream: cannot write standard output: No space left on device" ]] ||
    fail "--dry-run into a full stdout exited $status: $(cat "$scratch/err")"
  expect 1 --dry-run --output /dev/full
  [[ $err == "coriostream: cannot write /dev/full: No space left on device" ]] ||
    fail "--dry-run --output /dev/full: $err"
  "$coriostream" --help >/dev/full 2>"$scratch/err"
  status=$?
  [[ $status == 1 && $(cat "$scratch/err") == "coriostream: cannot write standard output: No space left on device" ]] ||
    fail "--help into a full stdout exited $status: $(cat "$scratch/err")"
else
  fail "no writable /dev/full to check a report that cannot be written"
fi

# A closed standard output is refused unless --output takes the report.
"$coriostream" --dry-run >&- 2>"$scratch/err"
status=$?
[[ $status == 1 && $(cat "$scratch/err") == "coriostream: standard output is closed; give --output FILE for the report" ]] ||
  fail "--dry-run with stdout closed exited $status: $(cat "$scratch/err")"
"$coriostream" --dry-run --output "$scratch/closed.txt" >&- 2>"$scratch/err"
status=$?
[[ $status == 0 && $(head -n 1 "$scratch/closed.txt") == "name      bytes   xfers   iters   total" ]] ||
  fail "--dry-run --output with stdout closed exited $status: $(cat "$scratch/err")"

if ((failures)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
