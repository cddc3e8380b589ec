#!/bin/bash
# link_cut.sh: the wire cut mid-transfer, then put back. Host two keeps a
# write and a read pending on each of 4 streams to host one's echo
# listener, pulls host one's cable (fault wire down one: host one's NIC
# loses its carrier, nothing passes), and every pending operation on host
# two must end with timed_out, from corio::stall_timeout of
# CORIO_HOSTS_STALL seconds (default 5), within that plus 10 s of the cut's
# return (doc/testing.md says why nothing below corio ends them). Then the cable goes back
# and a new stream to the same listener must echo 1 MiB.
. "$(dirname "$0")/pair.bash"
wire_peer_setup
stall=${CORIO_HOSTS_STALL:-5} keepalive=${CORIO_HOSTS_KEEPALIVE:-5} port=7000
if [ "$CORIO_HOST" = one ]; then
    # Done once one stream (the one after the repair) ended in order.
    start_server cut "$CORIO_RDMA_ADDR" "$port" "$wire_peer" echo listen "$CORIO_RDMA_ADDR" "$port" 1 0 &&
        finish_server cut
else
    run_client cut "$wire_peer" hold connect "$CORIO_PEER_ADDR" "$port" 4 "$stall" "$keepalive" \
        "$CORIO_HOSTS_FAULT wire down peer" "$CORIO_HOSTS_FAULT wire up peer"
fi
hosts_finish
