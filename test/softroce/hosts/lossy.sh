#!/bin/bash
# lossy.sh: a lossy, reordering wire. Both hosts put netem on their NIC
# (CORIO_HOSTS_NETEM, default: 1 % loss, 1 ms delay, 1 % of the packets
# sent ahead of the others), then host two sends 32 MiB through the
# zero-copy channel and 32 MiB on a plain stream to host one, which
# verifies every byte (wire_peer zc-push and push: 0 wrong, 0 missing) and
# prints the throughput. Loss-free figures to compare are in doc/testing.md.
# A push that stops moving ends after wire_peer's push_stall (120 s), saying
# how far it got and whether corio or the transport held the bytes.
# CORIO_HOSTS_LOSSY_BYTES sets the amount: doc/testing.md's figures are for
# 64 MiB; CI sends 32 MiB, about 8,000 packets and 80 losses each way, to
# save half a minute of its time.
. "$(dirname "$0")/pair.bash"
wire_peer_setup
netem=${CORIO_HOSTS_NETEM:-loss 1% delay 1ms reorder 1%}
bytes=${CORIO_HOSTS_LOSSY_BYTES:-$((32 << 20))}
peer=$( [ "$CORIO_HOST" = one ] && echo two || echo one )
# shellcheck disable=SC2086  # netem's arguments, one word each
"$CORIO_HOSTS_FAULT" netem $netem || fail "netem $netem on host $CORIO_HOST failed"
mark "netem.$CORIO_HOST"
await "netem.$peer"
for mode in zc-push push; do
    port=$((port_base = 7000, port_base + ${#mode}))
    if [ "$CORIO_HOST" = one ]; then
        start_server "$mode" "$CORIO_RDMA_ADDR" "$port" "$wire_peer" "$mode" listen "$CORIO_RDMA_ADDR" "$port" "$bytes" &&
            finish_server "$mode"
        grep -q "^$mode: received $bytes of $bytes bytes, 0 wrong" "$workdir/$mode.server.out" ||
            fail "$mode: the data did not arrive whole"
    else
        run_client "$mode" "$wire_peer" "$mode" connect "$CORIO_PEER_ADDR" "$port" "$bytes"
    fi
done
note "netem on host $CORIO_HOST: $(tc -s qdisc show dev rxenet0 | tr -s ' \n' ' ')"
hosts_finish
