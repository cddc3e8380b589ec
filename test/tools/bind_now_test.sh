#!/usr/bin/env bash
# Checks that the coriostream binary given as $1 and the libcorio it loads
# are linked to bind their symbols at load time (-z now), as Debian links
# riostream and librdmacm: with lazy binding the data path's first library
# calls resolve inside the timed loop, which made the Soft-RoCE guest's
# 64-byte latency row at 500 iterations 18 % slower (meson.build,
# doc/performance.md).
set -uo pipefail

coriostream=${1:?usage: bind_now_test.sh path/to/coriostream}
if ! command -v readelf >/dev/null; then
  echo "SKIP: readelf (binutils) is not installed"
  exit 77
fi
libcorio=$(ldd "$coriostream" | awk '$1 ~ /^libcorio\.so/ { print $3 }')
if [[ -z $libcorio || ! -f $libcorio ]]; then
  echo "FAIL: ldd finds no libcorio for $coriostream"
  exit 1
fi

failures=0
for object in "$coriostream" "$libcorio"; do
  # The dynamic section says it twice: DT_FLAGS BIND_NOW and DT_FLAGS_1 NOW.
  if readelf -d "$object" | grep -Eq '\(FLAGS\).*BIND_NOW'; then
    echo "ok: $object binds at load time"
  else
    echo "FAIL: $object binds lazily (no DT_FLAGS BIND_NOW):"
    readelf -d "$object" | grep -E 'FLAGS' || echo "  (no FLAGS entries)"
    failures=$((failures + 1))
  fi
done
exit $((failures > 0))
