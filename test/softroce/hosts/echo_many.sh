#!/bin/bash
# echo_many.sh [ADDRESS_FAMILY]: 64 streams at once from host two to one
# listener on host one, each sending 256 KiB of its own pattern and reading
# the echo back, verified byte for byte (wire_peer echo). The poll mode is
# CORIO_TEST_POLL_MODE's (thread or busy, on both hosts); "6" uses the
# hosts' IPv6 addresses.
. "$(dirname "$0")/pair.bash"
wire_peer_setup
streams=64 bytes=262144 port=7000
here=$CORIO_RDMA_ADDR peer=$CORIO_PEER_ADDR
if [ "${1:-}" = 6 ]; then here=$CORIO_RDMA_ADDR6 peer=$CORIO_PEER_ADDR6; fi
note "poll mode ${CORIO_TEST_POLL_MODE:-thread}, $streams streams x $bytes bytes"
if [ "$CORIO_HOST" = one ]; then
    start_server echo "$here" "$port" "$wire_peer" echo listen "$here" "$port" "$streams" "$bytes" &&
        finish_server echo
    grep -q "^echoed $streams streams to EOF" "$workdir/echo.server.out" || fail "the listener did not see $streams orderly ends"
else
    run_client echo "$wire_peer" echo connect "$peer" "$port" "$streams" "$bytes"
    grep -q "^echo: $streams streams x $bytes bytes, 0 failed" "$workdir/echo.client.out" || fail "not every echo came back whole"
fi
hosts_finish
