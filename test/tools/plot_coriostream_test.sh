#!/usr/bin/env bash
# plot_coriostream_test.sh PLOT_CORIOSTREAM CORIOSTREAM: two real coriostream
# runs over kernel TCP loopback (riostream's default series, and one custom
# test), each kept with --format csv, become one PNG through plot-coriostream.
# Checks the PNG signature, the pixel size plot-coriostream asks gnuplot for
# (1200x480, read from IHDR), and, by decoding the image, that each run's
# line is drawn in its own colour in both panels: the latency panel (left)
# and the bandwidth panel (right).
set -euo pipefail
plot=$1 coriostream=$2

command -v gnuplot >/dev/null 2>&1 ||
  { echo "SKIP: gnuplot is not installed (Debian: gnuplot-nox; tools/install-deps installs it)"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run=(--loopback --transport tcp --data-path stream --format csv --timeout 20)
"$coriostream" "${run[@]}" --output "$work/default.csv"
"$coriostream" "${run[@]}" -S 65536 -C 100 -I 10 --output "$work/custom.csv"
grep -q '^64_lat,' "$work/default.csv" && grep -q '^1m_bw,' "$work/default.csv" ||
  { echo "the default series' csv lacks its rows:"; cat "$work/default.csv"; exit 1; }

"$plot" -o "$work/run.png" -t "plot test" series="$work/default.csv" "$work/custom.csv"

# gnuplot 5's first two line types: #9400d3 and #009e73.
python3 - "$work/run.png" <<'PY'
import struct, sys, zlib

data = open(sys.argv[1], "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit("not a PNG: the signature is %r" % data[:8])
chunks, at = {}, 8
while at < len(data):
    length, kind = struct.unpack(">I4s", data[at:at + 8])
    chunks.setdefault(kind, []).append(data[at + 8:at + 8 + length])
    at += 12 + length
width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"][0])
if (width, height) != (1200, 480):
    sys.exit("the PNG is %dx%d, not 1200x480" % (width, height))
channels = {2: 3, 6: 4}.get(colour)
if depth != 8 or channels is None or interlace:
    sys.exit("unexpected PNG layout: depth %d, colour type %d, interlace %d" % (depth, colour, interlace))
raw = zlib.decompress(b"".join(chunks[b"IDAT"]))
stride = width * channels
rows, previous, at = [], bytearray(stride), 0
for _ in range(height):
    kind, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
    at += 1 + stride
    for i in range(stride):
        a = line[i - channels] if i >= channels else 0
        b, c = previous[i], previous[i - channels] if i >= channels else 0
        if kind == 1: line[i] = (line[i] + a) & 255
        elif kind == 2: line[i] = (line[i] + b) & 255
        elif kind == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif kind == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line)
    previous = line
colours = {"series (default.csv)": (0x94, 0x00, 0xd3), "custom.csv": (0x00, 0x9e, 0x73)}
counts = {}
for name, rgb in colours.items():
    for panel, xs in (("latency", range(0, width // 2)), ("bandwidth", range(width // 2, width))):
        counts[name, panel] = sum(
            1 for row in rows for x in xs if tuple(row[x * channels:x * channels + 3]) == rgb)
print("pixels of each run's colour:", counts)
missing = [key for key, n in counts.items() if n < 10]
if missing:
    sys.exit("no line for %s" % missing)
PY
