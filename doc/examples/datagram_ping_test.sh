#!/bin/sh
# datagram_ping_test.sh SERVER CLIENT: five pings through the example server
# and client on 127.0.0.1, each echoed; then the client alone, which must
# fail with status 1 and a message, within its one-second wait.
set -u
server=$1
client=$2
out=$(mktemp)
trap 'rm -f "$out" "$out.err" "$out.server"' EXIT
port=$((20000 + $$ % 10000))
timeout 30 "$server" 127.0.0.1 "$port" 5 >"$out.server" &
server_pid=$!
sleep 0.5
timeout 30 "$client" 127.0.0.1 "$port" 5 >"$out" || { echo "client failed" >&2; exit 1; }
wait "$server_pid" || { echo "server failed" >&2; exit 1; }
grep -q '^serving on 127.0.0.1:' "$out.server" || { echo "server said nothing" >&2; exit 1; }
[ "$(grep -c '^ping [0-4]: [0-9]* us$' "$out")" = 5 ] || { cat "$out"; exit 1; }
timeout 30 "$client" 127.0.0.1 "$port" 1 >"$out" 2>"$out.err"
status=$?
[ "$status" = 1 ] || { echo "client without server exited $status" >&2; exit 1; }
[ -s "$out.err" ] || { echo "client without server gave no reason" >&2; exit 1; }
