#!/bin/bash
# How coriostream ends when its peer is not what it expects, on rsockets in
# the guest (run-rdma-test). Exit: 0 pass, 1 fail, 77 skip.
#
# 1. A peer killed while this end waits for its marker (iomap path, a
#    bandwidth row: the server spends the test waiting for the last
#    transfer's marker). riostream would spin forever; coriostream once only
#    gave up after --timeout. It must end at once with the peer's end
#    ("the peer closed the connection" or a reset), not "timed out": the
#    server runs with --timeout 300 inside a `timeout 120`, so a wait that
#    misses the end exits 124.
# 2. Two ends with different --data-path: the iomap end's riomap finds no
#    iomap slot (its peer set no RDMA_IOMAPSIZE). rdma-core says ENOMEM,
#    which read as memory it could not pin ("raise ulimit -l"); the line must
#    name the data paths instead.
# 3. Two ends given different tests (-S here; riostream's protocol does not
#    carry the test). A client writing past the server's mapping spun inside
#    rdma-core v44's riowrite until the server's --timeout closed the
#    connection, and ends that expect different byte counts waited for it.
#    Both ends must now stop at the handshake with exit 1 and a line naming
#    both tests, long before the --timeout 300 and the `timeout 60` around
#    them (exit 124).
# 4. A bandwidth row that outlasts --timeout while its transfers flow
#    (iomap, marker): the server hears nothing from the client until the
#    row's last transfer, since the NIC writes the others into its mapping.
#    It once gave up after --timeout ("timed out: no progress"). Now every
#    transfer that lands is progress (landing_probe.hpp): with --timeout 1,
#    a row of several seconds must pass at both ends, in both poll modes.
#    The client, whose waits in the row are short, has --timeout 30: in the
#    guest a connection can take over a second to set up.
# 5. That must not hide a writer that stops: a client stopped (SIGSTOP)
#    mid-row must still be given up on after --timeout, with the timeout's
#    line.
set -uo pipefail

coriostream=${CORIOSTREAM:?set CORIOSTREAM to the coriostream binary}
[[ -n ${CORIO_RDMA_ADDR:-} ]] || { echo "SKIP: no RDMA address (CORIO_RDMA_ADDR)"; exit 77; }
addr=$CORIO_RDMA_ADDR
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Waits until a server listens on $1 (the header is printed once it does).
wait_listening() {
  for _ in $(seq 600); do
    [[ -s $2 ]] && return 0
    sleep 0.1
  done
  return 1
}

# True once the server's end of a connection on $1 is established. An
# rsocket is not a kernel socket (ss cannot see it); its rdma_cm id is
# visible through the rdma tool. Without a usable rdma tool, a fixed grace.
wait_connected() {
  if ! rdma resource show cm_id >/dev/null 2>&1; then
    sleep 3
    return 0
  fi
  for _ in $(seq 600); do
    rdma resource show cm_id 2>/dev/null | grep 'state CONNECT' |
      grep -q "src-addr $addr:$1 " && return 0
    sleep 0.1
  done
  return 1
}

for poll in busy thread; do
  port=$((10000 + RANDOM % 22768))
  timeout 120 "$coriostream" -b "$addr" -p "$port" --poll-mode "$poll" --timeout 300 \
    -S 1048576 -C 100000 -I 1 >"$work/server.out" 2>"$work/server.err" &
  server=$!
  wait_listening "$port" "$work/server.out" || fail "$poll: the server never listened"
  "$coriostream" -s "$addr" -p "$port" --poll-mode "$poll" --timeout 300 \
    -S 1048576 -C 100000 -I 1 >/dev/null 2>&1 &
  client=$!
  # Well into the row: the server is in its marker wait.
  wait_connected "$port" || fail "$poll: the client never connected"
  sleep 2
  kill -KILL "$client"
  wait "$client" 2>/dev/null
  wait "$server"
  status=$?
  err=$(cat "$work/server.err")
  echo "$poll, killed client: server exit $status: $err"
  [[ $status == 1 ]] || fail "$poll: server exit $status, expected 1 (124: it waited on)"
  grep -Eq 'the peer closed the connection|Connection reset by peer' <<<"$err" ||
    fail "$poll: the server did not report the peer's end"
  grep -q 'timed out' <<<"$err" && fail "$poll: the server timed out instead"
done

port=$((10000 + RANDOM % 22768))
timeout 120 "$coriostream" -b "$addr" -p "$port" --data-path stream --timeout 30 \
  -S 64 -C 1 -I 10 >"$work/server.out" 2>"$work/server.err" &
server=$!
wait_listening "$port" "$work/server.out" || fail "mismatch: the server never listened"
err=$(timeout 120 "$coriostream" -s "$addr" -p "$port" --data-path iomap --timeout 30 \
        -S 64 -C 1 -I 10 2>&1 >/dev/null)
status=$?
wait "$server"
echo "iomap client against a stream server: exit $status: $err"
[[ $status == 1 ]] || fail "mismatch: client exit $status, expected 1"
grep -qF 'riomap: the peer offered no iomap slot for this test'"'"'s mapping: is the peer running the stream data path (--data-path stream, rstream)? Both ends need the same --data-path' <<<"$err" ||
  fail "mismatch: the line does not ask for the same --data-path"
grep -Eq 'ulimit|RLIMIT_MEMLOCK|could not pin' <<<"$err" && fail "mismatch: the line blames locked memory"

for path in iomap stream; do
  for sizes in '64 4096' '4096 64'; do
    read -r server_size client_size <<<"$sizes"
    port=$((10000 + RANDOM % 22768))
    timeout 60 "$coriostream" -b "$addr" -p "$port" --data-path "$path" --poll-mode busy \
      --timeout 300 -S "$server_size" -C 1 -I 10 >"$work/server.out" 2>"$work/server.err" &
    server=$!
    wait_listening "$port" "$work/server.out" || fail "$path $sizes: the server never listened"
    err=$(timeout 60 "$coriostream" -s "$addr" -p "$port" --data-path "$path" --poll-mode busy \
            --timeout 300 -S "$client_size" -C 1 -I 10 2>&1 >/dev/null)
    status=$?
    wait "$server"
    server_status=$?
    server_err=$(cat "$work/server.err")
    echo "$path, server -S $server_size, client -S $client_size: client exit $status: $err"
    echo "  server exit $server_status: $server_err"
    [[ $status == 1 ]] || fail "$path $sizes: client exit $status, expected 1"
    [[ $server_status == 1 ]] || fail "$path $sizes: server exit $server_status, expected 1"
    grep -q -- "different test (-S $server_size -C 1 -I 10 there, -S $client_size -C 1 -I 10 here)" \
      <<<"$err" || fail "$path $sizes: the client's line does not name both tests"
    grep -q -- "different test (-S $client_size -C 1 -I 10 there, -S $server_size -C 1 -I 10 here)" \
      <<<"$server_err" || fail "$path $sizes: the server's line does not name both tests"
  done
done

# 4. About 10 ms per 1 MiB transfer in the guest: 400 take some 4 s.
for poll in busy thread; do
  port=$((10000 + RANDOM % 22768))
  long_row=(--poll-mode "$poll" -S 1048576 -C 400 -I 1)
  timeout 120 "$coriostream" -b "$addr" -p "$port" "${long_row[@]}" --timeout 1 \
    >"$work/server.out" 2>"$work/server.err" &
  server=$!
  wait_listening "$port" "$work/server.out" || fail "long row $poll: the server never listened"
  timeout 120 "$coriostream" -s "$addr" -p "$port" "${long_row[@]}" --timeout 30 \
    >"$work/client.out" 2>"$work/client.err"
  status=$?
  # A client that failed leaves the server waiting for its first client.
  [[ $status == 0 ]] || kill "$server" 2>/dev/null
  wait "$server"
  server_status=$?
  row=$(grep '^custom ' "$work/client.out")
  echo "long row, $poll: client exit $status, server exit $server_status: $row"
  [[ $status == 0 ]] || fail "long row $poll: client exit $status: $(cat "$work/client.err")"
  [[ $server_status == 0 ]] ||
    fail "long row $poll: server exit $server_status: $(cat "$work/server.err")"
  seconds=$(awk '{ sub(/s$/, "", $6); print $6 }' <<<"$row")
  awk -v s="${seconds:-0}" 'BEGIN { exit !(s >= 2) }' ||
    fail "long row $poll: the row took ${seconds:-no} s, not over twice --timeout (raise -C)"
done

# 5. The stopped writer.
port=$((10000 + RANDOM % 22768))
stopped_row=(--poll-mode busy -S 1048576 -C 100000 -I 1)
timeout 60 "$coriostream" -b "$addr" -p "$port" "${stopped_row[@]}" --timeout 1 \
  >"$work/server.out" 2>"$work/server.err" &
server=$!
wait_listening "$port" "$work/server.out" || fail "stopped writer: the server never listened"
"$coriostream" -s "$addr" -p "$port" "${stopped_row[@]}" --timeout 30 >/dev/null 2>&1 &
client=$!
wait_connected "$port" || fail "stopped writer: the client never connected"
sleep 2
kill -STOP "$client"
stopped_at=$SECONDS
wait "$server"
status=$?
err=$(cat "$work/server.err")
echo "stopped writer: server exit $status after $((SECONDS - stopped_at)) s: $err"
kill -KILL "$client"
wait "$client" 2>/dev/null
[[ $status == 1 ]] || fail "stopped writer: server exit $status, expected 1 (124: it waited on)"
# The one line coriostream wrote (under ASan, LeakSanitizer's summary of
# the suppressed riomap table may follow it).
[[ $(grep '^coriostream: ' <<<"$err") == "coriostream: timed out: no progress from the peer for 1 s (--timeout)" ]] ||
  fail "stopped writer: the server's line is not the timeout's"

exit $((failures > 0))
