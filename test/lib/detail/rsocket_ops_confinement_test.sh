#!/usr/bin/env bash
# rsocket_ops_confinement_test.sh SOURCE_ROOT: lib/corio/detail/rsocket_ops.cpp
# must be the only place that calls an rsocket function, so that every v44
# quirk is handled once (doc/architecture.md). Any call syntax of those names
# anywhere else in the code, comments and strings included, fails this test.
set -euo pipefail

root=${1:?usage: rsocket_ops_confinement_test.sh SOURCE_ROOT}
cd "$root"

names='rsocket|rbind|rlisten|raccept|rconnect|rshutdown|rclose|rrecv|rsend|rreadv|rwritev'
names+='|rpoll|rsetsockopt|rgetsockopt|rfcntl|rgetpeername|rgetsockname|riomap|riounmap|riowrite'
pattern="\\b($names)\\s*\\("
seam=lib/corio/detail/rsocket_ops
# Interpose rsocket calls instead of calling them for corio: rclose and
# rshutdown slowed down for tests (LD_PRELOAD), riowrite, and rrecv, rsend
# and rpoll, timestamped for benchmarks (LD_PRELOAD), and rlisten counted by
# a test that defines it. The files besides the seam that may name them so.
shim=test/support/slow_rsocket_calls.cpp
stamps=test/bench/riowrite_stamps.cpp
wait_stamps=test/bench/wait_stamps.cpp
counted=test/lib/detail/rsocket_ops_listen_priming_rdma_test.cpp

# The pattern must find every name in the seam itself; otherwise a broken
# pattern would let this test pass on anything.
missing=()
for name in ${names//|/ }; do
  grep -qE "\\b$name\\s*\\(" "$seam.cpp" || missing+=("$name")
done
if ((${#missing[@]})); then
  echo "FAIL: the pattern finds no call of ${missing[*]} in $seam.cpp"
  exit 1
fi

if hits=$(grep -rnE "$pattern" lib tools test doc/examples |
          grep -vE "^$seam\\.(hpp|cpp):" | grep -vF -e "$shim:" -e "$stamps:" -e "$wait_stamps:" -e "$counted:"); then
  echo "FAIL: rsocket call syntax outside $seam.{hpp,cpp}:"
  echo "$hits"
  exit 1
fi
echo "only $seam.{hpp,cpp} calls rsocket functions"
