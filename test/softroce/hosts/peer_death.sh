#!/bin/bash
# peer_death.sh: the peer host dies mid-transfer. Host two keeps a write and
# a read pending on each of 4 streams to host one's echo listener, then has
# host one's QEMU killed (fault kill one: a host losing power, no close, no
# carrier change on host two); every pending operation on host two must end
# with timed_out, from corio::stall_timeout of CORIO_HOSTS_STALL seconds
# (default 5), within that plus 10 s of the kill's return.
# hosts-run does not count host one's status (it was killed on purpose);
# should the kill not happen, host one's listener never ends and the run
# times out.
. "$(dirname "$0")/pair.bash"
wire_peer_setup
stall=${CORIO_HOSTS_STALL:-5} keepalive=${CORIO_HOSTS_KEEPALIVE:-5} port=7000
if [ "$CORIO_HOST" = one ]; then
    start_server death "$CORIO_RDMA_ADDR" "$port" "$wire_peer" echo listen "$CORIO_RDMA_ADDR" "$port" 1 0 &&
        finish_server death
    fail "host one outlived its own death"
else
    run_client death "$wire_peer" hold connect "$CORIO_PEER_ADDR" "$port" 4 "$stall" "$keepalive" \
        "$CORIO_HOSTS_FAULT kill peer"
fi
hosts_finish
