#!/bin/bash
# hosts_run_test.sh HOSTS_RUN: hosts-run's own contract, on the host: both
# commands succeed (0, each line prefixed with its host, the addresses each
# side is given); host one fails with 3 (3, and a line naming host one);
# a command sleeping past --timeout (124); a wire dead in the first boot
# (hosts/guest-side's knob): said, both guests booted again, the commands
# run once (0); a wire dead in both boots: 125, said, and no command ran.
# Exit: 0 pass, 1 fail, 77 skip.
hosts_run=$1
if [ "${CORIO_SOFTROCE:-auto}" = disabled ]; then
    echo "SKIP: the Soft-RoCE guests are disabled here (-Dsoftroce_tests=disabled)"
    exit 77
fi
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }

# run CASE EXPECTED_STATUS HOSTS_RUN_ARGS...: output in $out/CASE.{out,err}
run() {
    local name=$1 want=$2 start=$SECONDS st
    shift 2
    "$hosts_run" "$@" >"$out/$name.out" 2>"$out/$name.err"
    st=$?
    echo "## $name: status $st after $((SECONDS - start)) s"
    cat "$out/$name.out" "$out/$name.err"
    if [ "$st" = 77 ]; then echo "SKIP: hosts-run cannot run here (above)"; exit 77; fi
    [ "$st" = "$want" ] || fail "$name: status $st, expected $want"
}
# has CASE STREAM LINE: LINE is a whole line of CASE's STREAM (out or err).
has() { grep -qxF -- "$3" "$out/$1.$2" || fail "$1: no line '$3' on std$2"; }

# shellcheck disable=SC2016  # expanded in the guests
say='echo "$CORIO_HOST $CORIO_RDMA_ADDR $CORIO_PEER_ADDR $CORIO_RDMA_ADDR6 $CORIO_PEER_ADDR6"; echo "to stderr" >&2'
run both-succeed 0 --timeout 120 -- "$say" "$say"
has both-succeed out "one: one 10.78.0.1 10.78.0.2 fd00:78::1 fd00:78::2"
has both-succeed out "two: two 10.78.0.2 10.78.0.1 fd00:78::2 fd00:78::1"
has both-succeed err "one: to stderr"
has both-succeed err "two: to stderr"

run one-fails 3 --timeout 120 -- 'exit 3' 'exit 0'
has one-fails err "hosts-run: host one failed first, with exit status 3"

run timeout 124 --timeout 20 -- 'sleep 300' 'exit 0'
grep -q "^hosts-run: timeout: host one " "$out/timeout.err" || fail "timeout: no line naming host one's timeout"

# The dead wire's check waits 5 s, not 20, to keep this test short.
# shellcheck disable=SC2016
ran='echo "ran on $CORIO_HOST"'
CORIO_HOSTS_WIRE_WAIT=5 CORIO_HOSTS_DEAD_WIRE=1 run dead-wire-once 0 --timeout 200 -- "$ran" "$ran"
has dead-wire-once out "one: ran on one"
has dead-wire-once out "two: ran on two"
[ "$(grep -c '^one: ran on one$' "$out/dead-wire-once.out")" = 1 ] || fail "dead-wire-once: host one's command did not run exactly once"
grep -q "^hosts-run: the wire between the guests carried nothing (host .*: the wire carried nothing: no answer from .* to ARP in 5 s); booting both guests again (2 of 2)$" \
    "$out/dead-wire-once.err" || fail "dead-wire-once: no line saying the wire was dead and both guests boot again"

CORIO_HOSTS_WIRE_WAIT=5 CORIO_HOSTS_DEAD_WIRE=2 run dead-wire-twice 125 --timeout 200 -- "$ran" "$ran"
grep -q "^hosts-run: the wire between the guests carried nothing in 2 boots (host " "$out/dead-wire-twice.err" ||
    fail "dead-wire-twice: no line saying the wire carried nothing in 2 boots"
grep -q "ran on" "$out/dead-wire-twice.out" && fail "dead-wire-twice: a command ran over a dead wire"

if [ "$failed" = 0 ]; then echo PASS; exit 0; fi
exit 1
