#!/bin/sh
# Checks that the stand-in exports exactly the names of src/cudart/exports.txt, each in the
# version node libcudart.so.13, with the soname libcudart.so.13.
#   check-exports.sh LIBRARY EXPORTS_TXT
set -eu
lib=$1 list=$2
status=0
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$soname" != libcudart.so.13 ]; then
  echo "check-exports.sh: $lib: soname is '$soname', not libcudart.so.13" >&2
  status=1
fi
# No `trap ... EXIT` for the clean-up: dash leaks the trap's text, which valgrind's CI step reports.
tmp=$(mktemp -d)
grep -v '^#' "$list" | LC_ALL=C sort >"$tmp/expected"
nm -D --defined-only "$lib" | awk '$2 != "A" { n = $3; sub(/@.*/, "", n); print n }' | LC_ALL=C sort >"$tmp/ours"
if ! diff -u "$tmp/expected" "$tmp/ours" >"$tmp/diff"; then
  echo "check-exports.sh: $lib exports other names than $list (- missing, + extra):" >&2
  grep '^[-+][^-+]' "$tmp/diff" >&2 || true
  status=1
fi
unversioned=$(nm -D --defined-only "$lib" | awk '$2 != "A" && $3 !~ /@@libcudart\.so\.13$/ { print $3 }')
if [ -n "$unversioned" ]; then
  echo "check-exports.sh: $lib: $(echo "$unversioned" | wc -l) names not in the version node libcudart.so.13, as" \
    $(echo "$unversioned" | head -3) >&2
  status=1
fi
nodes=$(readelf -V "$lib" | sed -n '/Version definition/,/Version needs/p' | grep -o 'Name: [^ ]*' | sed 's/Name: //' | sort -u | tr '\n' ' ')
if [ "$nodes" != "libcudart.so.13 " ]; then
  echo "check-exports.sh: $lib defines the version nodes '$nodes', expected only libcudart.so.13" >&2
  status=1
fi
[ $status = 0 ] && echo "check-exports.sh: $lib exports the $(wc -l <"$tmp/ours") names of $list, all @@libcudart.so.13"
rm -rf "$tmp"
exit $status
