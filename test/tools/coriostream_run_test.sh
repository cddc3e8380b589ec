#!/usr/bin/env bash
# Runs real transfers with the coriostream binary given as $1, over kernel
# TCP on this host, and checks what a user sees: the report's shape, the
# numbers in it, stderr and the exit status. $2 names the case, one per
# meson test, so that meson runs and times them separately.
#
# Every run but those of two cases uses small custom counts: the default
# series makes 100000 round trips of 64 bytes, about 3 s on a 2-core
# machine over TCP loopback in one process, about 30 s against rstream
# (four runs).
# The `default` and `rstream` cases are the real default series.
set -uo pipefail

coriostream=${1:?usage: coriostream_run_test.sh path/to/coriostream CASE}
case_name=${2:?usage: coriostream_run_test.sh path/to/coriostream CASE}
scratch=$(mktemp -d)
helper_pid=
cleanup() {
  [[ -z $helper_pid ]] || kill "$helper_pid" 2>/dev/null
  rm -rf "$scratch"
}
trap cleanup EXIT
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

DEFAULT_ROWS="64_lat 4k_lat 64k_lat 1m_lat 64_bw 4k_bw 64k_bw 1m_bw"
HEADER_PATTERN='^name +bytes +xfers +iters +total +time +Gb/sec +usec/xfer$'
NUMBER='[0-9]+(\.[0-9]+)?'

# Other runs of this suite, or of other build directories, may be on the
# same machine at the same time: every run takes a random port, and a run
# that finds it taken tries another. The ports lie below Linux's ephemeral
# range (32768 and up), which any outgoing connection on the host may hold:
# a listener there once failed with "Address already in use".
random_port() { echo $((10000 + RANDOM % 22768)); }

# run ARGS...: coriostream with ARGS and a free port; leaves stdout, stderr
# and the exit status in $out, $err and $status. The words of run_prefix,
# if any, come before it (prlimit ...).
run_prefix=()
run() {
  local attempt
  for attempt in 1 2 3 4 5; do
    "${run_prefix[@]}" "$coriostream" -p "$(random_port)" "$@" >"$scratch/out" 2>"$scratch/err"
    status=$?
    out=$(cat "$scratch/out")
    err=$(cat "$scratch/err")
    grep -q 'Address already in use' <<<"$err" || return 0
  done
}

# wait_bounded PID SECONDS WHAT: waits for the background process PID, at
# most SECONDS, and leaves its exit status in $waited. On expiry it kills
# PID, fails saying WHAT it waited for, and sets $waited to 124.
wait_bounded() {
  local pid=$1 limit=$2 what=$3 tenths=0
  while kill -0 "$pid" 2>/dev/null; do
    if ((tenths >= limit * 10)); then
      kill -KILL "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
      fail "waited $limit s for $what; killed it"
      waited=124
      return 1
    fi
    sleep 0.1
    tenths=$((tenths + 1))
  done
  wait "$pid"
  waited=$?
}

# expect_success WHAT: the last run exited 0 and said nothing on stderr but
# notices.
expect_success() {
  if [[ $status != 0 ]]; then
    fail "$1 exited $status; stderr: $err"
    return 1
  fi
  if grep -v '^coriostream: no RDMA device; ' <<<"$err" | grep -q .; then
    fail "$1 wrote to stderr: $err"
  fi
}

# check_table WHAT ROWS...: the header, then exactly ROWS (names), each with
# riostream's eight columns of sensible values.
check_table() {
  local what=$1
  shift
  local want="$*"
  [[ $(head -n 1 <<<"$out") =~ $HEADER_PATTERN ]] || fail "$what: header is '$(head -n 1 <<<"$out")'"
  local names
  names=$(tail -n +2 <<<"$out" | awk '{ print $1 }' | tr '\n' ' ')
  names=${names% }
  [[ $names == "$want" ]] || fail "$what: rows are '$names', expected '$want'"
  local row
  while read -r row; do
    [[ -n $row ]] || continue
    # name bytes xfers iters total time Gb/sec usec/xfer, as show_perf prints
    local fields
    read -ra fields <<<"$row"
    if ((${#fields[@]} != 8)); then
      fail "$what: row has ${#fields[@]} columns: $row"
      continue
    fi
    [[ ${fields[1]} =~ ^$NUMBER[km]?$ && ${fields[2]} =~ ^[0-9]+[kmb]?$ &&
       ${fields[3]} =~ ^[0-9]+[kmb]?$ && ${fields[4]} =~ ^$NUMBER[kmg]?$ &&
       ${fields[5]} =~ ^${NUMBER}s$ && ${fields[6]} =~ ^$NUMBER$ &&
       ${fields[7]} =~ ^$NUMBER$ ]] || fail "$what: a column does not parse: $row"
  done < <(tail -n +2 <<<"$out")
}

case $case_name in
default)
  # riostream's default series: a latency and a bandwidth series, on two
  # connections, four sizes each.
  run --loopback --transport tcp --data-path stream
  expect_success "--loopback (default series)" && check_table "default series" $DEFAULT_ROWS
  ;;

custom)
  run --loopback --transport tcp --data-path stream -S 4096 -C 100 -I 10
  expect_success "-S 4096 -C 100 -I 10" && check_table "custom test" custom
  [[ $(awk 'NR == 2 { print $2, $3, $4, $5 }' <<<"$out") == "4k 100 10 7.8m" ]] ||
    fail "custom test columns: $(sed -n 2p <<<"$out")"
  ;;

verify)
  run --loopback --transport tcp --data-path stream -T v -S 4096 -C 100 -I 10
  expect_success "-T v" && check_table "-T v" custom
  # A transfer shorter than rstream's 16-byte handshake, and counters that
  # wrap around 256 many times.
  run --loopback --transport tcp --data-path stream -T v -S 1 -C 3 -I 700
  expect_success "-T v -S 1" && check_table "-T v -S 1" custom
  run --loopback --transport tcp --data-path stream -T v -S 1000 -C 7 -I 50 --poll-mode busy
  expect_success "-T v --poll-mode busy" && check_table "-T v --poll-mode busy" custom
  # A peer that sends no pattern (its client runs without -T v): the
  # verifying server stops at the first wrong byte with status 1 and says
  # which byte; the client, whose connection closes under it, fails with
  # status 1 too instead of waiting.
  for attempt in 1 2 3 4 5; do
    port=$(random_port)
    : >"$scratch/server"
    stdbuf -oL "$coriostream" --transport tcp --data-path stream -T v -S 64 -C 10 -I 2 \
      --timeout 30 -b 127.0.0.1 -p "$port" >"$scratch/server" 2>&1 &
    helper_pid=$!
    for _ in $(seq 100); do
      [[ -s $scratch/server ]] || ! kill -0 "$helper_pid" 2>/dev/null && break
      sleep 0.05
    done
    kill -0 "$helper_pid" 2>/dev/null && break
    wait "$helper_pid"
    helper_pid=
    grep -q 'Address already in use' "$scratch/server" ||
      { fail "the -T v server did not start: $(cat "$scratch/server")"; break; }
  done
  if [[ -n $helper_pid ]]; then
    timeout 60 "$coriostream" --transport tcp --data-path stream -S 64 -C 10 -I 2 --timeout 30 \
      -s 127.0.0.1 -p "$port" >"$scratch/out" 2>"$scratch/err"
    status=$?
    wait_bounded "$helper_pid" 60 "the -T v server to exit after a peer without the pattern"
    server_status=$waited
    helper_pid=
    [[ $server_status == 1 ]] ||
      fail "-T v against a peer without the pattern: server exited $server_status, expected 1: $(cat "$scratch/server")"
    grep -Eq '^coriostream: data verification failed byte [0-9]+$' "$scratch/server" ||
      fail "-T v against a peer without the pattern: no verification error: $(cat "$scratch/server")"
    [[ $status == 1 ]] ||
      fail "-T v against a peer without the pattern: client exited $status, expected 1: $(cat "$scratch/err")"
  fi
  # -B far below the transfer size: every transfer crosses many full
  # socket buffers, on both data paths (iomap through the tcp emulation).
  for path in stream iomap; do
    run --loopback --transport tcp --data-path "$path" -B 4096 -T v -S 100000 -C 5 -I 4
    [[ $status == 0 ]] || fail "-B 4096 on the $path path exited $status: $err"
    check_table "-B 4096 on the $path path" custom
  done
  # The size reaches setsockopt on every connection, both ends.
  if command -v strace >/dev/null; then
    # LeakSanitizer cannot run under ptrace and aborts at exit: an ASan
    # build of coriostream checks leaks in every other run of this script.
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -e trace=setsockopt -o "$scratch/strace" \
      "$coriostream" -p "$(random_port)" --loopback --transport tcp --data-path stream -B 4096 \
      -S 1000 -C 2 >/dev/null 2>"$scratch/strace.err" ||
      fail "-B 4096 under strace failed: $(cat "$scratch/strace.err")"
    for option in SO_SNDBUF SO_RCVBUF; do
      n=$(grep -c "$option, \[4096\]" "$scratch/strace")
      ((n >= 2)) || fail "-B 4096: $option set to 4096 on $n sockets, expected both ends"
    done
  fi
  ;;

streams)
  run --loopback --transport tcp --data-path stream --streams 4 --threads 2 -S 4096 -C 100 -I 10
  expect_success "--streams 4 --threads 2" && check_table "--streams 4" custom
  # The row counts the transfers of all four streams.
  [[ $(awk 'NR == 2 { print $3, $4, $5 }' <<<"$out") == "400 10 31m" ]] ||
    fail "--streams 4 row: $(sed -n 2p <<<"$out")"
  run --loopback --transport tcp --data-path stream --streams 3 --threads 3 -T v -S 512 -C 20 -I 20
  expect_success "--streams 3 -T v" && check_table "--streams 3 -T v" custom
  # A thread the system refuses (here for want of address space for its
  # stack: 1,024 stacks of 8 MiB in 512 MiB) ends the run with an error
  # before any row, not with std::terminate after some (session 32).
  # A sanitizer's runtime cannot start at all under such a limit.
  if prlimit --as=$((512 << 20)) "$coriostream" --help >/dev/null 2>&1; then
    run_prefix=(prlimit --as=$((512 << 20)))
    run --loopback --transport tcp --data-path stream --threads 1024 -S 64 -C 2 -I 2
    [[ $status == 1 ]] || fail "--threads 1024 in 512 MiB: exit status $status, not 1; stderr: $err"
    grep -qE '^coriostream: cannot start I/O thread [0-9]+ of 1024: ' <<<"$err" ||
      fail "--threads 1024 in 512 MiB: no error naming the thread: $err"
    [[ -z $out ]] || fail "--threads 1024 in 512 MiB: printed before it failed: $out"
    run_prefix=()
  else
    echo "note: coriostream does not start in 512 MiB of address space (a sanitizer build?): the refused-thread check did not run"
  fi
  ;;

csv)
  run --loopback --transport tcp --data-path stream --format csv -S 4096 -C 10 -I 10
  expect_success "--format csv" || exit 1
  [[ $(head -n 1 <<<"$out") == "name,bytes,transfers,iterations,total_bytes,seconds,gbps,usec_per_xfer,role,transport,data_path,notify,streams,threads" ]] ||
    fail "csv header: $(head -n 1 <<<"$out")"
  (($(wc -l <<<"$out") == 2)) || fail "csv: expected one row: $out"
  IFS=, read -ra fields <<<"$(sed -n 2p <<<"$out")"
  [[ ${fields[0]} == custom && ${fields[1]} == 4096 && ${fields[4]} == 819200 &&
     ${fields[5]} =~ ^$NUMBER(e-?[0-9]+)?$ && ${fields[6]} =~ ^$NUMBER(e-?[0-9]+)?$ &&
     ${fields[8]} == loopback && ${fields[9]} == tcp && ${fields[10]} == stream ]] ||
    fail "csv row: $(sed -n 2p <<<"$out")"
  ;;

json)
  run --loopback --transport tcp --data-path stream --format json -S 4096 -C 10 -I 10 \
    --output "$scratch/report.json"
  expect_success "--format json --output" || exit 1
  [[ -z $out ]] || fail "--output still wrote to stdout: $out"
  python3 - "$scratch/report.json" <<'PY' || fail "json report: $(cat "$scratch/report.json")"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert len(rows) == 1, rows
row = rows[0]
assert row["name"] == "custom" and row["bytes"] == 4096 and row["total_bytes"] == 819200, row
assert row["seconds"] > 0 and row["usec_per_xfer"] > 0, row
assert row["role"] == "loopback" and row["transport"] == "tcp", row
assert row["data_path"] == "stream" and row["streams"] == 1, row
PY
  ;;

errors)
  # Nobody listens: riostream's "rconnect: ..." as one line, exit non-zero.
  port=$(random_port)
  "$coriostream" -s 127.0.0.1 -p "$port" --transport tcp --data-path stream \
    >"$scratch/out" 2>"$scratch/err"
  status=$?
  err=$(cat "$scratch/err")
  # coriostream exits 1 for every failure; anything else (139: a crash) fails.
  [[ $status == 1 ]] || fail "connecting to a closed port exited $status, expected 1"
  [[ $err == "coriostream: connect 127.0.0.1:$port: Connection refused" ]] ||
    fail "closed port: stderr is '$err'"

  # The iomap path runs on tcp through corio's emulation, whose receiver
  # sees iowrites land only in a receive: riostream's marker cannot work.
  "$coriostream" -s 127.0.0.1 --transport tcp --notify marker >"$scratch/out" 2>"$scratch/err"
  status=$?
  err=$(cat "$scratch/err")
  [[ $status == 1 ]] || fail "the marker on tcp exited $status"
  [[ $err == "coriostream: --notify marker needs rsockets: over tcp an iowrite lands only during a receive, so use --notify message or --data-path stream" ]] ||
    fail "the marker on tcp: stderr is '$err'"
  [[ ! -s $scratch/out ]] || fail "the marker on tcp printed a report"

  "$coriostream" -s no-such-host.invalid --transport tcp --data-path stream \
    >"$scratch/out" 2>"$scratch/err"
  status=$?
  [[ $status == 1 ]] || fail "an unknown host exited $status, expected 1"
  grep -q '^coriostream: getaddrinfo no-such-host.invalid:7471: ' "$scratch/err" ||
    fail "unknown host: stderr is '$(cat "$scratch/err")'"

  # rdma_getaddrinfo needs an RDMA device, which this host has not (the
  # fallback case, below, skips on one that has).
  if [[ ! -e /sys/class/infiniband ]] || [[ -z $(ls /sys/class/infiniband) ]]; then
    "$coriostream" -s 127.0.0.1 -f gid >"$scratch/out" 2>"$scratch/err"
    status=$?
    [[ $status == 1 && $(cat "$scratch/err") == "coriostream: -f gid needs rsockets; kernel TCP has no AF_IB (no RDMA device here)" ]] ||
      fail "-f gid: exited $status: $(cat "$scratch/err")"
    port=$(random_port)
    "$coriostream" -s 127.0.0.1 -p "$port" -T r --transport tcp --data-path stream \
      >"$scratch/out" 2>"$scratch/err"
    status=$?
    [[ $status == 1 && $(cat "$scratch/err") == "coriostream: rdma_getaddrinfo 127.0.0.1:$port: No such device" ]] ||
      fail "-T r without a device: exited $status: $(cat "$scratch/err")"
  fi

  # mismatched_pair WHAT SERVER_OPTION... -- CLIENT_OPTION...: a tcp server
  # and its client, given different options, each waited for at most 30 s;
  # their exit statuses in $client_status and $server_status, their stderr
  # in $scratch/err and $scratch/server.err.
  mismatched_pair() {
    local what=$1 server_options=() client
    shift
    while [[ $1 != -- ]]; do
      server_options+=("$1")
      shift
    done
    shift
    port=$(random_port)
    "$coriostream" -b 127.0.0.1 -p "$port" --transport tcp --timeout 300 "${server_options[@]}" \
      >"$scratch/server.out" 2>"$scratch/server.err" &
    helper_pid=$!
    for _ in $(seq 100); do
      [[ -s $scratch/server.out ]] && break
      sleep 0.1
    done
    "$coriostream" -s 127.0.0.1 -p "$port" --transport tcp --timeout 300 "$@" \
      >"$scratch/out" 2>"$scratch/err" &
    client=$!
    wait_bounded "$client" 30 "the client of $what"
    client_status=$waited
    wait_bounded "$helper_pid" 30 "the server of $what"
    server_status=$waited
    helper_pid=
  }

  # Ends given different tests stop at the handshake, each naming both
  # tests, instead of waiting until --timeout: a custom server against a
  # client that runs the default series (64_lat first: -S 64 -C 1 -I 100000).
  for path in stream iomap; do
    mismatched_pair "$path, different tests" --data-path "$path" -S 64 -C 2 -I 3 -- \
      --data-path "$path"
    [[ $client_status == 1 && $server_status == 1 ]] ||
      fail "$path, different tests: client exited $client_status, server $server_status"
    grep -qx "coriostream: the peer runs a different test (-S 64 -C 2 -I 3 there, -S 64 -C 1 -I 100000 here): give both ends the same -S, -C and -I, or none" "$scratch/err" ||
      fail "$path, different tests: client stderr is '$(cat "$scratch/err")'"
    grep -qx "coriostream: the peer runs a different test (-S 64 -C 1 -I 100000 there, -S 64 -C 2 -I 3 here): give both ends the same -S, -C and -I, or none" "$scratch/server.err" ||
      fail "$path, different tests: server stderr is '$(cat "$scratch/server.err")'"
  done

  # Over tcp only the iomap path frames its bytes: a stream-path client's
  # are not corio's hello, and the iomap server's line must say which
  # option differs, not only that the protocol was violated.
  mismatched_pair "a stream client of an iomap server" --data-path iomap -S 64 -C 2 -I 3 -- \
    --data-path stream -S 64 -C 2 -I 3
  [[ $client_status == 1 && $server_status == 1 ]] ||
    fail "stream client, iomap server: client exited $client_status, server $server_status"
  grep -qx "coriostream: recv: The peer violated the corio protocol: is the peer running the stream data path (--data-path stream, rstream)? Both ends need the same --data-path" "$scratch/server.err" ||
    fail "stream client, iomap server: server stderr is '$(cat "$scratch/server.err")'"

  # A run whose report cannot be written ends with the reason and exit 1,
  # after the whole run (its peer expects the series).
  if [[ -w /dev/full ]]; then
    run --loopback --transport tcp --data-path stream -S 64 -C 1 -I 3 --output /dev/full
    [[ $status == 1 && $err == "coriostream: cannot write /dev/full: No space left on device" ]] ||
      fail "a run into a full --output exited $status: $err"
  else
    fail "no writable /dev/full to check a report that cannot be written"
  fi

  # Descriptors 0, 1 and 2 closed: the sockets opened next must not take
  # their numbers, or the report goes into one of them. stdout closed
  # without --output is refused; with it, and with stdin and stderr closed,
  # the run reports as usual.
  port=$(random_port)
  "$coriostream" -p "$port" --loopback --transport tcp --data-path stream -S 64 -C 1 -I 3 \
    >&- 2>"$scratch/err"
  status=$?
  [[ $status == 1 && $(cat "$scratch/err") == "coriostream: standard output is closed; give --output FILE for the report" ]] ||
    fail "a run with stdout closed exited $status: $(cat "$scratch/err")"
  port=$(random_port)
  "$coriostream" -p "$port" --loopback --transport tcp --data-path stream -S 64 -C 1 -I 3 \
    --output "$scratch/closed.txt" <&- >&- 2>&-
  status=$?
  [[ $status == 0 && $(grep -c '^custom ' "$scratch/closed.txt") == 1 ]] ||
    fail "a run with 0, 1 and 2 closed exited $status: $(cat "$scratch/closed.txt")"
  port=$(random_port)
  "$coriostream" -p "$port" --loopback --transport tcp --data-path stream -S 64 -C 1 -I 3 \
    <&- 2>&- >"$scratch/out"
  status=$?
  [[ $status == 0 && $(grep -c '^custom ' "$scratch/out") == 1 ]] ||
    fail "a run with stdin and stderr closed exited $status: $(cat "$scratch/out")"
  ;;

timeout)
  # A peer that accepts and then says nothing: riostream would wait
  # forever, coriostream gives up after --timeout.
  port=$(random_port)
  python3 -c '
import socket, sys, time
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", int(sys.argv[1])))
listener.listen(1)
listener.settimeout(30)
print("listening", flush=True)
peer, _ = listener.accept()
time.sleep(30)
' "$port" >"$scratch/peer" &
  helper_pid=$!
  for _ in $(seq 100); do
    [[ -s $scratch/peer ]] && break
    sleep 0.1
  done
  [[ -s $scratch/peer ]] || fail "a silent peer: the Python peer was not listening within 10 s"
  start=$SECONDS
  "$coriostream" -s 127.0.0.1 -p "$port" --transport tcp --data-path stream --timeout 1 \
    >"$scratch/out" 2>"$scratch/err"
  status=$?
  err=$(cat "$scratch/err")
  [[ $status == 1 ]] || fail "a silent peer: exited $status, expected 1"
  [[ $err == "coriostream: timed out: no progress from the peer for 1 s (--timeout)" ]] ||
    fail "a silent peer: stderr is '$err'"
  ((SECONDS - start <= 10)) || fail "a silent peer: gave up only after $((SECONDS - start)) s"
  ;;

long_row)
  # A bandwidth row on the iomap path that outlasts --timeout while its
  # transfers flow. The receiver hears nothing from its peer until the
  # row's last transfer: the others land in its mapping (corio's emulation
  # of riowrite here, the NIC on rsockets). It once gave up after --timeout
  # ("timed out: no progress"), and the writer then failed with "Connection
  # reset by peer". Now each landing is progress (landing_probe.hpp), which
  # must not hide a writer that stops: stopped mid-row, it must still be
  # given up on after --timeout.
  # Socket buffers of one byte make each 4 KiB transfer slow (about 0.3 ms
  # on 2 cores): 12,000 of them take several seconds on any machine.
  slow_row=(--transport tcp --data-path iomap --timeout 1 -B 1 -S 4096 -I 1)
  tcp_notice="coriostream: on tcp, --data-path iomap through corio's emulation of riomap and riowrite, with --notify message (the peer must be coriostream)"
  run --loopback "${slow_row[@]}" -T v -C 12000
  [[ $status == 0 ]] || fail "a row longer than --timeout exited $status: $err"
  [[ $err == "$tcp_notice" ]] || fail "a row longer than --timeout: stderr is '$err'"
  check_table "a row longer than --timeout" custom
  seconds=$(awk '$1 == "custom" { sub(/s$/, "", $6); print $6 }' <<<"$out")
  echo "the row took ${seconds:-?} s with --timeout 1"
  # Skip only when nothing failed: a failed check above must not become a skip.
  if ((failures == 0)) && awk -v s="${seconds:-0}" 'BEGIN { exit !(s < 2) }'; then
    echo "SKIP: the row took ${seconds} s, under twice --timeout: nothing to check"
    exit 77
  fi

  port=$(random_port)
  "$coriostream" -b 127.0.0.1 -p "$port" "${slow_row[@]}" -C 1000000 \
    >"$scratch/server" 2>"$scratch/server.err" &
  server=$!
  for _ in $(seq 100); do
    [[ -s $scratch/server ]] && break
    sleep 0.1
  done
  "$coriostream" -s 127.0.0.1 -p "$port" "${slow_row[@]}" -C 1000000 \
    >"$scratch/out" 2>"$scratch/err" &
  helper_pid=$!
  # Well into the row (the server's rows take no time to start), then the
  # writer stops without closing anything.
  sleep 3
  kill -STOP "$helper_pid"
  stopped_at=$SECONDS
  wait_bounded "$server" 15 "the server to give up on a stopped writer"
  server_err=$(grep -vxF "$tcp_notice" "$scratch/server.err")
  echo "stopped writer: server exit $waited after $((SECONDS - stopped_at)) s: $server_err"
  [[ $waited == 1 ]] || fail "stopped writer: server exited $waited, expected 1"
  [[ $server_err == "coriostream: timed out: no progress from the peer for 1 s (--timeout)" ]] ||
    fail "stopped writer: the server's stderr is '$server_err'"
  kill -KILL "$helper_pid"
  wait "$helper_pid" 2>/dev/null
  helper_pid=
  ;;

progress)
  # A row that takes longer than 2 s shows a progress line on stderr when
  # stderr is a terminal, erased before the row is printed; none when it is
  # not. The peer speaks rstream's protocol and answers each of 6 transfers
  # after 0.6 s, so the row takes about 3.6 s on any machine.
  #
  # Every wait here is bounded and names what it waited for. In a fresh
  # Debian 12 minbase root this test once hung until meson's timeout with
  # no output: without a mounted /dev/pts, script(1) cannot open a
  # pseudo-terminal and exits at once (its message went to /dev/null), so
  # coriostream never connected, the peer sat in accept() forever, and an
  # unbounded `wait` on it never returned.
  command -v script >/dev/null || { echo "SKIP: script(1) not found (util-linux)"; exit 77; }
  slow_peer() {
    : >"$scratch/peer"
    python3 -c '
import socket, sys, time
def exactly(s, n, what):
    data = b""
    while len(data) < n:
        try:
            chunk = s.recv(n - len(data))
        except socket.timeout:
            sys.exit("slow peer: no %s from coriostream within 20 s" % what)
        if not chunk:
            sys.exit("slow peer: coriostream closed the connection before its %s" % what)
        data += chunk
    return data
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", int(sys.argv[1])))
listener.listen(1)
listener.settimeout(20)
print("listening", flush=True)
try:
    peer, _ = listener.accept()
except socket.timeout:
    sys.exit("slow peer: coriostream did not connect within 20 s")
print("connected", flush=True)
peer.settimeout(20)
peer.sendall(exactly(peer, 16, "handshake"))
for i in range(6):
    data = exactly(peer, 64, "transfer %d" % (i + 1))
    time.sleep(0.6)
    peer.sendall(data)
    print("answered transfer %d" % (i + 1), flush=True)
' "$1" >"$scratch/peer" 2>"$scratch/peer.err" &
    helper_pid=$!
    for _ in $(seq 100); do
      [[ -s $scratch/peer ]] && return 0
      kill -0 "$helper_pid" 2>/dev/null || break
      sleep 0.1
    done
    fail "progress: the slow peer was not listening within 10 s: $(cat "$scratch/peer.err")"
    return 1
  }
  # end_slow_peer WHAT: once coriostream has ended, its peer of run WHAT
  # has nothing left to wait for; a few seconds bound its exit.
  end_slow_peer() {
    wait_bounded "$helper_pid" 5 "the slow peer (Python) of '$1' to exit after coriostream ended (its last words: $(tail -n 1 "$scratch/peer"))"
    helper_pid=
    [[ $waited == 0 || $waited == 124 ]] ||
      fail "progress ($1): the slow peer exited $waited: $(cat "$scratch/peer.err")"
  }
  # --timeout: coriostream itself gives up on a peer that stops answering.
  slow_run=(--transport tcp --data-path stream -S 64 -C 1 -I 6 --timeout 10)

  # stderr on a terminal: script(1) gives the command a pty, and records
  # only stderr, since stdout goes to a file. First make sure it can: it
  # needs a pseudo-terminal (/dev/pts), and with stdin closed it runs the
  # command without one.
  no_terminal=
  timeout 10 script -q -e -c 'test -t 2' /dev/null </dev/null >/dev/null 2>"$scratch/script.err"
  status=$?
  if [[ $status != 0 ]]; then
    no_terminal="script(1) cannot give a command a terminal here (status $status: $(cat "$scratch/script.err"); is /dev/pts mounted?)"
    echo "progress (terminal): not run: $no_terminal"
  else
    port=$(random_port)
    if slow_peer "$port"; then
      timeout 30 script -q -e -c "$(printf '%q ' "$coriostream" "${slow_run[@]}" -s 127.0.0.1 -p "$port") >$scratch/out" \
        "$scratch/tty" </dev/null >/dev/null 2>"$scratch/script.err"
      status=$?
      ((status != 124)) || fail "progress (terminal): coriostream under script(1) did not finish within 30 s"
      end_slow_peer terminal
      out=$(cat "$scratch/out")
      tty=$(tr -d '\r' <"$scratch/tty")
      [[ $status == 0 ]] || fail "progress (terminal): exited $status: $tty $(cat "$scratch/script.err")"
      grep -Eq 'coriostream: custom +[0-9]+%' <<<"$tty" ||
        fail "progress (terminal): no progress line on stderr: $(cat -v <<<"$tty")"
      grep -q $'\e\[K' <<<"$tty" || fail "progress (terminal): the line is never erased: $(cat -v <<<"$tty")"
      check_table "progress (terminal)" custom
    fi
  fi

  # stderr not a terminal: nothing on it.
  port=$(random_port)
  if slow_peer "$port"; then
    timeout 30 "$coriostream" "${slow_run[@]}" -s 127.0.0.1 -p "$port" >"$scratch/out" 2>"$scratch/err"
    status=$?
    ((status != 124)) || fail "progress (no terminal): coriostream did not finish within 30 s"
    end_slow_peer "no terminal"
    out=$(cat "$scratch/out")
    err=$(cat "$scratch/err")
    expect_success "progress (no terminal)" && check_table "progress (no terminal)" custom
  fi
  if ((failures == 0)) && [[ -n $no_terminal ]]; then
    echo "SKIP: the no-terminal half passed, but the progress line needs a terminal: $no_terminal"
    exit 77
  fi
  ;;

rstream)
  # Wire compatibility with rdma-core's rstream over kernel TCP (rstream -T s
  # uses plain sockets, so this runs on any host): the whole default series
  # with -T v on both sides, in both directions, then without. Beyond the guest's small
  # -T v checks, this proves that coriostream's pattern counters continue
  # across the tests and the two connections of a series exactly as
  # common.c's static counters do in an rdma-core process.
  command -v rstream >/dev/null || { echo "SKIP: rstream not found (install rdmacm-utils)"; exit 77; }
  # start_server PORT CMD...: CMD in the background, once its header (printed
  # after listen) is out; leaves its pid in $helper_pid.
  start_server() {
    local port=$1
    shift
    : >"$scratch/server"
    stdbuf -oL "$@" -b 127.0.0.1 -p "$port" >"$scratch/server" 2>&1 &
    helper_pid=$!
    for _ in $(seq 100); do
      [[ -s $scratch/server ]] && return 0
      kill -0 "$helper_pid" 2>/dev/null || return 1
      sleep 0.05
    done
    return 1
  }
  # Then once more without -T v, when coriostream's 16 sync bytes carry its
  # test (test_announcement): rstream sends back what it received last, so
  # a coriostream server meets its own announcement of the test before.
  for pass in verified announced; do
    extra=()
    [[ $pass == announced ]] || extra=(-T v)
    corio=("$coriostream" --transport tcp --data-path stream "${extra[@]}" --timeout 60)
    reference=(rstream -T s -T b "${extra[@]}")
    for side in corio-client corio-server; do
      direction="$side, $pass"
      port=$(random_port)
      if [[ $side == corio-client ]]; then
        server=("${reference[@]}") client=("${corio[@]}")
      else
        server=("${corio[@]}") client=("${reference[@]}")
      fi
      if ! start_server "$port" "${server[@]}"; then
        fail "$direction: ${server[0]} server did not start: $(cat "$scratch/server")"
        continue
      fi
      timeout 240 "${client[@]}" -s 127.0.0.1 -p "$port" >"$scratch/out" 2>"$scratch/err"
      status=$?
      ((status != 124)) || fail "$direction: the ${client[0]} client did not finish within 240 s"
      # The server ends with its client; rstream has no timeout of its own.
      wait_bounded "$helper_pid" 60 "the ${server[0]} server to exit after its client ($direction)"
      server_status=$waited
      helper_pid=
      out=$(cat "$scratch/out")
      err=$(cat "$scratch/err")
      expect_success "$direction: ${client[0]} client" && check_table "$direction client" $DEFAULT_ROWS
      [[ $server_status == 0 ]] || fail "$direction: ${server[0]} server exited $server_status: $(cat "$scratch/server")"
      out=$(cat "$scratch/server")
      check_table "$direction server" $DEFAULT_ROWS
      # rstream reports a verification failure on stdout and carries on.
      ! grep -q 'verification failed' "$scratch/server" "$scratch/out" ||
        fail "$direction: data verification failed: $(grep -h 'verification failed' "$scratch/server" "$scratch/out")"
    done
  done
  ;;

admission)
  # --allow and --max-streams: an admitted run succeeds; a refused client
  # fails at once (its connection is closed by the server), never hangs.
  small=(--loopback --transport tcp --data-path stream -S 64 -C 4 -I 4 --timeout 20)
  run "${small[@]}" --allow 127.0.0.0/8 --allow ::1/128 --max-streams 2 --streams 2
  expect_success "--allow and --max-streams admitting the run" && check_table "admitted" custom

  started=$SECONDS
  run "${small[@]}" --allow 192.0.2.0/24
  [[ $status == 1 ]] || fail "a client outside --allow: exited $status, stderr: $err"
  ((SECONDS - started < 15)) || fail "a client outside --allow waited $((SECONDS - started)) s"
  [[ -n $err && $(wc -l <<<"$err") == 1 ]] || fail "a client outside --allow: stderr is '$err'"

  started=$SECONDS
  run "${small[@]}" --max-streams 1 --streams 2
  [[ $status == 1 ]] || fail "a stream beyond --max-streams: exited $status, stderr: $err"
  ((SECONDS - started < 15)) || fail "a stream beyond --max-streams waited $((SECONDS - started)) s"
  ;;

client_bind)
  # -b on a client binds that address before connect, as rstream's client
  # does: a run from 127.0.0.2 works, and an address this host does not have
  # (TEST-NET-1: bind fails locally, nothing is sent) is refused by bind.
  port=$(random_port)
  "$coriostream" --transport tcp --data-path stream -b 127.0.0.1 -p "$port" -S 64 -C 10 -I 10 \
    --timeout 30 >"$scratch/server" 2>&1 &
  helper_pid=$!
  for _ in $(seq 100); do
    [[ -s $scratch/server ]] && break
    sleep 0.05
  done
  timeout 60 "$coriostream" --transport tcp --data-path stream -s 127.0.0.1 -b 127.0.0.2 \
    -p "$port" -S 64 -C 10 -I 10 --timeout 30 >"$scratch/out" 2>"$scratch/err"
  status=$?
  out=$(cat "$scratch/out")
  err=$(cat "$scratch/err")
  expect_success "client -b 127.0.0.2" && check_table "client -b 127.0.0.2" custom
  wait_bounded "$helper_pid" 30 "the server to exit after its client"
  helper_pid=
  [[ $waited == 0 ]] || fail "server exited $waited: $(cat "$scratch/server")"
  run --transport tcp --data-path stream -s 127.0.0.1 -b 192.0.2.1 -S 64 -C 10 -I 10 --timeout 10
  [[ $status == 1 ]] || fail "client -b 192.0.2.1 exited $status, expected 1"
  [[ $err == "coriostream: bind 192.0.2.1:0: Cannot assign requested address" ]] ||
    fail "client -b 192.0.2.1: stderr '$err'"
  ;;

fallback)
  # Without --transport, a host without RDMA falls back to tcp, where the
  # iomap path runs through corio's emulation (both ends are coriostream),
  # with one notice saying both. A host with an RDMA device would take
  # rsockets instead, which cannot use 127.0.0.1.
  devices=(/sys/class/infiniband/*)
  if [[ -e ${devices[0]} ]]; then
    echo "SKIP: this host has an RDMA device"
    exit 77
  fi
  run --loopback -S 64 -C 10 -I 10
  expect_success "--loopback with auto transport" && check_table "auto transport" custom
  [[ $err == "coriostream: no RDMA device; using --transport tcp and --data-path iomap through corio's emulation of riomap and riowrite, with --notify message (the peer must be coriostream)" ]] ||
    fail "fallback notice: '$err'"
  # Asked for, tcp runs the same path, verified, and says so first.
  run --loopback --transport tcp -T v -S 100000 -C 20 -I 3
  [[ $status == 0 ]] || fail "--loopback --transport tcp exited $status: $err"
  check_table "iomap on tcp" custom
  [[ $err == "coriostream: on tcp, --data-path iomap through corio's emulation of riomap and riowrite, with --notify message (the peer must be coriostream)" ]] ||
    fail "iomap on tcp notice: '$err'"
  ;;

loopback_busy)
  # --loopback with fewer threads than halves (one thread, or two threads
  # for two streams): a server half may run only once its client lets the
  # thread go, so a busy call that would block is made once before it waits,
  # not the 128 times of streams whose peers are elsewhere, which made the
  # 64_lat row 12 times slower on one thread (doc/performance.md, session
  # 39). Counted as the reads that fail with EAGAIN, on both data paths:
  # about one at each end per round trip, where 128 calls made 256.
  command -v strace >/dev/null || { echo "SKIP: strace is not installed"; exit 77; }
  iterations=200
  for layout in "--threads 1 --streams 1" "--threads 2 --streams 2"; do
    read -r _ threads _ streams <<<"$layout"
    for path in stream iomap; do
      what="busy --loopback $layout on the $path path"
      # LeakSanitizer cannot run under ptrace (see the -B case above).
      run_prefix=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
                  strace -f -qq -Z -e trace=read,readv,recvfrom,recvmsg -o "$scratch/strace")
      run --loopback --transport tcp --data-path "$path" --poll-mode busy --threads "$threads" \
        --streams "$streams" -S 64 -C 1 -I "$iterations"
      run_prefix=()
      [[ $status == 0 ]] || fail "$what exited $status: $err"
      check_table "$what" custom
      would_block=$(grep -c 'EAGAIN' "$scratch/strace")
      # Every stream's round trips, and its sync's one.
      round_trips=$((streams * (iterations + 1)))
      ((would_block > 0)) || fail "$what: strace saw no read that would block"
      ((would_block <= 3 * round_trips)) ||
        fail "$what: $would_block reads would block in $round_trips round trips, over 3 each"
    done
  done
  ;;

loopback_pacing)
  # --loopback on one thread: a bandwidth row's writing half lets the
  # reading half run every 256 KiB (writer_pacing.hpp). A writer that went
  # on until its socket would block filled the reader's TCP window, and for
  # transfers of 10-14 KiB Linux then often sent no window update when the
  # reader emptied its queue: the writer waited out TCP's persist timer,
  # about 200 ms each time (the 12k_bw row 30 times slower than 8k_bw).
  # Counted, not timed: the writes that would block, each one such a full
  # window, were 58-102 per row of 3,000 transfers before; with the pacing
  # none did here.
  command -v strace >/dev/null || { echo "SKIP: strace is not installed"; exit 77; }
  for path in stream iomap; do
    for size in 10240 12288 14336; do
      what="--loopback $path -S $size"
      # LeakSanitizer cannot run under ptrace (see the -B case above).
      run_prefix=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
                  strace -f -qq -e trace=sendto,sendmsg,writev,write -o "$scratch/strace")
      run --loopback --transport tcp --data-path "$path" -S "$size" -C 3000 -I 1
      run_prefix=()
      [[ $status == 0 ]] || fail "$what exited $status: $err"
      check_table "$what" custom
      full=$(grep -c 'EAGAIN' "$scratch/strace")
      echo "$what: $full writes would block in 3000 transfers"
      ((full <= 5)) || fail "$what: $full writes would block, over 5: the writer fills the window"
    done
  done
  ;;

*)
  echo "unknown case $case_name"
  exit 2
  ;;
esac

if ((failures)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks of $case_name passed"
