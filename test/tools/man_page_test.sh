#!/usr/bin/env bash
# man_page_test.sh MAN_PAGE CORIOSTREAM: renders coriostream(1) with man -l,
# failing on any groff warning, and checks that the rendered OPTIONS section
# describes every option `coriostream --help` lists (each flag as a tag of
# its own, every word of its value list, every -T letter and word), and that
# the page has riostream(1)'s sections and corio's additions.
set -euo pipefail
page=$1 coriostream=$2

command -v man >/dev/null 2>&1 ||
  { echo "SKIP: man is not installed (Debian: man-db; tools/install-deps installs it)"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# C locale: groff then renders \- as '-', not U+2212.
LC_ALL=C MANWIDTH=80 man --warnings -l "$page" >"$work/page.txt" 2>"$work/warnings.txt"
if [[ -s $work/warnings.txt ]]; then
  echo "man -l $page warned:"; cat "$work/warnings.txt"; exit 1
fi
"$coriostream" --help >"$work/help.txt"

failures=0
fail() { echo "$*"; failures=$((failures + 1)); }

for section in NAME SYNOPSIS DESCRIPTION OPTIONS "DEFAULT SERIES" OUTPUT FORMATS \
               "EXIT STATUS" EXAMPLES "DIFFERENCES FROM RIOSTREAM" "SEE ALSO"; do
  grep -qx "$section" "$work/page.txt" || fail "no section $section"
done
options=$(sed -n '/^OPTIONS$/,/^DEFAULT SERIES$/p' "$work/page.txt")

# Short flags: "[-s server_address]" lines of riostream's usage block.
short=$(grep -oE '^\s\[-[A-Za-z]' "$work/help.txt" | sed 's/^.\[//') || true
[[ -n $short ]] || fail "--help listed no short option"
for flag in $short; do
  grep -qE "^ {7}$flag( |$)" <<<"$options" || fail "$flag is not a tag of OPTIONS"
done

# -T's letters and words: "    s|sockets - ...".
while read -r letter word; do
  grep -qE "^ {14}$letter, $word$" <<<"$options" || fail "-T $letter|$word is not in OPTIONS"
done < <(grep -oE '^\s+[a-z]\|[a-z]+ -' "$work/help.txt" | tr '|' ' ' | tr -d '-')

# Long options, with their values: "  --transport auto|rsocket|tcp ...".
long=0
while read -r flag values; do
  long=$((long + 1))
  grep -qE "^ {7}$flag( |$)" <<<"$options" || { fail "$flag is not a tag of OPTIONS"; continue; }
  tag=$(grep -E "^ {7}$flag( |$)" <<<"$options" | head -1)
  [[ $values == *"|"* ]] || continue
  for value in ${values//|/ }; do
    [[ $tag == *"$value"* ]] || fail "$flag's value $value is not in its tag: $tag"
  done
done < <(grep -oE '^  --[a-z-]+( [A-Za-z|]+)?' "$work/help.txt" | sed 's/^  //')
((long >= 10)) || fail "--help listed only $long long options"

((failures == 0)) || exit 1
echo "man page: $(wc -w <<<"$short") short and $long long options of --help all described"
