#!/usr/bin/env bash
# coriostream --datagram over kernel UDP on this host ($1 is the binary):
# against itself, and against rdma-core's udpong -T s in both directions
# when udpong is installed (rdmacm-utils); the udpong cases say SKIP
# otherwise. Checks udpong's table (header, row names, numbers) and the exit
# statuses. Every wait is bounded: servers get --timeout or `timeout`.
set -uo pipefail

coriostream=${1:?usage: coriostream_datagram_test.sh path/to/coriostream}
scratch=$(mktemp -d)
server_pid=
cleanup() {
  [[ -z $server_pid ]] || kill "$server_pid" 2>/dev/null
  rm -rf "$scratch"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

HEADER='name      bytes   xfers   total       time     Gb/sec    usec/xfer'
ROW='^[0-9a-z._]+ +[0-9.]+[kmg]? +[0-9]+[kmb]? +[0-9.]+[kmg]? +[0-9]+\.[0-9]{2}s +[0-9.]+ +[0-9.]+$'
DEFAULT_ROWS="64_lat 128_lat 192_lat 256_lat 384_lat 512_lat 768_lat 1k_lat 1.5k_lat 64_bw 128_bw 192_bw 256_bw 384_bw 512_bw 768_bw 1k_bw 1.5k_bw"
port=$((10000 + RANDOM % 22000))

# check_table FILE NAMES...: udpong's header, then one well-formed row per name.
check_table() {
  local file=$1; shift
  [[ $(head -n 1 "$file") == "$HEADER" ]] || fail "$file: header is '$(head -n 1 "$file")'"
  local names
  names=$(tail -n +2 "$file" | awk '{print $1}' | tr '\n' ' ')
  [[ $names == "$* " ]] || fail "$file: rows '$names', want '$* '"
  while IFS= read -r line; do
    [[ $line =~ $ROW ]] || fail "$file: malformed row '$line'"
  done < <(tail -n +2 "$file")
}

start_server() { # COMMAND...: in the background, ready when it binds
  "$@" >"$scratch/server.out" 2>"$scratch/server.err" &
  server_pid=$!
  for _ in $(seq 50); do
    ss -Hulpn "sport = :$port" 2>/dev/null | grep -q . && return
    sleep 0.1
  done
}
stop_server() { kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; server_pid=; }

# 1. coriostream against itself: a custom test each way of -T e, and json.
start_server "$coriostream" --datagram --transport tcp -b 127.0.0.1 -p "$port" --timeout 10
timeout 60 "$coriostream" --datagram --transport tcp -s 127.0.0.1 -p "$port" -C 2000 -S 512 \
  >"$scratch/custom.out" 2>"$scratch/custom.err"
status=$?
[[ $status == 0 ]] || fail "custom run exited $status: $(cat "$scratch/custom.err")"
check_table "$scratch/custom.out" custom
timeout 60 "$coriostream" --datagram --transport tcp -s 127.0.0.1 -p "$port" -C 500 -S 1000 -T e \
  --format json >"$scratch/echo.json" 2>"$scratch/echo.err"
status=$?
[[ $status == 0 ]] || fail "echo run exited $status: $(cat "$scratch/echo.err")"
grep -q '"name":"custom","bytes":1000,"datagrams":500,"echo":true,"transfers":1000,' \
  "$scratch/echo.json" || fail "echo json: $(cat "$scratch/echo.json")"
stop_server

# 1b. A report that cannot be written: the client's --output and the
# server's login lines, each exit 1 with the reason.
if [[ -w /dev/full ]]; then
  port=$((port + 1))
  "$coriostream" --datagram --transport tcp -b 127.0.0.1 -p "$port" --timeout 3 \
    >/dev/full 2>"$scratch/full-server.err" &
  server_pid=$!
  for _ in $(seq 50); do
    ss -Hulpn "sport = :$port" 2>/dev/null | grep -q . && break
    sleep 0.1
  done
  timeout 60 "$coriostream" --datagram --transport tcp -s 127.0.0.1 -p "$port" -C 10 -S 64 \
    --output /dev/full 2>"$scratch/full-client.err"
  status=$?
  [[ $status == 1 && $(cat "$scratch/full-client.err") == "coriostream: cannot write /dev/full: No space left on device" ]] ||
    fail "client into a full --output exited $status: $(cat "$scratch/full-client.err")"
  timeout 30 tail --pid="$server_pid" -f /dev/null
  wait "$server_pid"
  status=$?
  server_pid=
  [[ $status == 1 && $(cat "$scratch/full-server.err") == "coriostream: cannot write standard output: No space left on device" ]] ||
    fail "server into a full stdout exited $status: $(cat "$scratch/full-server.err")"
else
  fail "no writable /dev/full to check a report that cannot be written"
fi
grep -q '^client login from 127.0.0.1$' "$scratch/server.out" ||
  fail "server did not report the login: $(cat "$scratch/server.out")"

# 2. Bad input: exit status 1 and a reason.
"$coriostream" --datagram -S 15 >/dev/null 2>"$scratch/bad.err"
status=$?
[[ $status == 1 ]] && grep -q 'between 16 and 2032' "$scratch/bad.err" ||
  fail "-S 15 gave $status: $(head -n 1 "$scratch/bad.err")"
"$coriostream" -T e -s 127.0.0.1 >/dev/null 2>"$scratch/bad.err"
status=$?
[[ $status == 1 ]] || fail "-T e without --datagram gave $status"

# 3. The progress line: a row that runs longer than 2 s shows one on stderr
# when stderr is a terminal (script(1) gives it one), erased before the row
# is printed; nothing when it is not. The peer speaks udpong's protocol and
# answers each of 6 round trips after 0.6 s, and each repeat of one (the
# client sends again every 1 ms) not at all, so the row takes about 3.6 s.
slow_peer() { # PORT: in the background, ready when it binds
  : >"$scratch/peer.out" # the last peer's "bound" must not count
  python3 -c '
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.settimeout(30)
print("bound", flush=True)
echoes = 0
answered = None
while True:
    try:
        data, peer = s.recvfrom(4096)
    except socket.timeout:
        sys.exit("slow peer: nothing from coriostream for 30 s")
    op, seqno = data[0], data[2]
    if op == 3:  # echo: the first of each sequence number, late
        if seqno == answered:
            continue
        time.sleep(0.6)
        answered = seqno
        echoes += 1
    elif op == 4:  # end: the count, as udpong server does
        data = data[:4] + struct.pack(">I", echoes) + data[8:]
        s.sendto(data, peer)
        if echoes == 6:
            sys.exit(0)
        continue
    s.sendto(data, peer)
' "$1" >"$scratch/peer.out" 2>"$scratch/peer.err" &
  server_pid=$!
  for _ in $(seq 100); do
    [[ -s $scratch/peer.out ]] && return 0
    sleep 0.1
  done
  fail "progress: the slow peer was not bound within 10 s: $(cat "$scratch/peer.err")"
  return 1
}
slow_run=(--datagram --transport tcp -s 127.0.0.1 -C 6 -S 64 -T e)
no_terminal=
if ! command -v script >/dev/null; then
  no_terminal="script(1) not found (util-linux)"
elif ! timeout 10 script -q -e -c 'test -t 2' /dev/null </dev/null >/dev/null 2>"$scratch/script.err"; then
  no_terminal="script(1) cannot give a command a terminal here ($(cat "$scratch/script.err"); is /dev/pts mounted?)"
fi
port=$((port + 1))
if [[ -n $no_terminal ]]; then
  echo "progress (terminal): not run: $no_terminal"
elif slow_peer "$port"; then
  timeout 30 script -q -e -c "$(printf '%q ' "$coriostream" "${slow_run[@]}" -p "$port") >$scratch/progress.out" \
    "$scratch/tty" </dev/null >/dev/null 2>"$scratch/script.err"
  status=$?
  [[ $status == 0 ]] || fail "progress (terminal): exited $status: $(cat "$scratch/script.err")"
  tty=$(tr -d '\r' <"$scratch/tty")
  grep -Eq 'coriostream: custom +[0-9]+%' <<<"$tty" ||
    fail "progress (terminal): no progress line on stderr: $(cat -v <<<"$tty")"
  grep -q $'\e\[K' <<<"$tty" || fail "progress (terminal): the line is never erased: $(cat -v <<<"$tty")"
  check_table "$scratch/progress.out" custom
  stop_server
fi
port=$((port + 1))
if slow_peer "$port"; then
  timeout 30 "$coriostream" "${slow_run[@]}" -p "$port" >"$scratch/progress.out" 2>"$scratch/progress.err"
  status=$?
  [[ $status == 0 ]] || fail "progress (no terminal): exited $status: $(cat "$scratch/progress.err")"
  ! grep -q '%' "$scratch/progress.err" ||
    fail "progress (no terminal): a progress line on a stderr that is no terminal: $(cat -v "$scratch/progress.err")"
  check_table "$scratch/progress.out" custom
  stop_server
fi

# 4. udpong, both directions; coriostream's client runs udpong's default series.
if ! command -v udpong >/dev/null; then
  echo "SKIP: udpong (rdmacm-utils) not installed: the interop half did not run"
  [[ -z $no_terminal ]] || echo "SKIP: and the progress line needs a terminal: $no_terminal"
  [[ $failures == 0 ]] || exit 1
  exit 77
fi
port=$((port + 1))
# udpong as the client runs custom tests only: it sends again after 1 ms
# without an answer and again for every stale answer, so on a loaded host
# its echo series can feed itself into a flood that never ends (seen here at
# load 4); coriostream's client does not (doc/riostream-compatibility.md).
start_server "$coriostream" --datagram --transport tcp -b 127.0.0.1 -p "$port" --timeout 20
timeout 60 udpong -T s -s 127.0.0.1 -p "$port" -C 5000 -S 1024 >"$scratch/udpong-client.out" 2>&1
status=$?
[[ $status == 0 ]] || fail "udpong client exited $status"
check_table "$scratch/udpong-client.out" custom
timeout 60 udpong -T s -s 127.0.0.1 -p "$port" -C 200 -S 64 -T e >"$scratch/udpong-echo.out" 2>&1
status=$?
[[ $status == 0 ]] || fail "udpong -T e client exited $status"
check_table "$scratch/udpong-echo.out" custom
grep -q '^custom    64      400 ' "$scratch/udpong-echo.out" ||
  fail "udpong -T e: 200 round trips are 400 transfers: $(tail -n 1 "$scratch/udpong-echo.out")"
stop_server

port=$((port + 1))
start_server timeout 120 udpong -T s -b 127.0.0.1 -p "$port"
timeout 120 "$coriostream" --datagram -T s -s 127.0.0.1 -p "$port" \
  >"$scratch/client.out" 2>"$scratch/client.err"
status=$?
[[ $status == 0 ]] || fail "coriostream client against udpong exited $status: $(cat "$scratch/client.err")"
check_table "$scratch/client.out" $DEFAULT_ROWS
timeout 60 "$coriostream" --datagram -T s -s 127.0.0.1 -p "$port" -C 300 -S 256 -T e \
  >"$scratch/client-echo.out" 2>"$scratch/client-echo.err"
status=$?
[[ $status == 0 ]] || fail "coriostream -T e against udpong exited $status"
check_table "$scratch/client-echo.out" custom
stop_server

if [[ $failures != 0 ]]; then
  for f in "$scratch"/*.out; do echo "--- $f"; cat "$f"; done
  exit 1
fi
if [[ -n $no_terminal ]]; then
  echo "SKIP: the rest passed, but the progress line needs a terminal: $no_terminal"
  exit 77
fi
echo "PASS"
