#!/bin/sh
# gcap-inspect on saved graphs: the summary, the race report, DOT output and the exit statuses.
#   test_inspect.sh FIXTURE INSPECT WORKDIR
set -u
fixture=$1 inspect=$2 dir=$3
mkdir -p "$dir"
"$fixture" "$dir"
rc=$?
[ $rc -eq 77 ] && { echo "built without JSON support"; exit 77; }
[ $rc -eq 0 ] || { echo "FAIL: the fixture exited $rc"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }

out=$("$inspect" --dot "$dir/clean.dot" "$dir/clean.json") || fail "clean graph: exit $? (want 0): $out"
echo "$out"
echo "$out" | grep -q "6 nodes (all levels), 5 edges in the top-level graph, depth 5, widest level 0 (1 nodes)" || fail "summary"
echo "$out" | grep -Eq "^  memset +3$" || fail "memset count"
echo "$out" | grep -Eq "^  kernel +1$" || fail "kernel count"
echo "$out" | grep -q "^races: 0$" || fail "race count of the clean graph"
grep -q "digraph" "$dir/clean.dot" || fail "no DOT written"

out=$("$inspect" "$dir/racy.json")
rc=$?
echo "$out"
[ $rc -eq 1 ] || fail "racy graph: exit $rc (want 1)"
echo "$out" | grep -q "^races: 3$" || fail "race count of the racy graph"
echo "$out" | grep -q 'node 1 (memset) and node 5 (memset): \[0x[0-9a-f]*, +8 bytes)' || fail "fill race line"
echo "$out" | grep -q 'node 4 (memcpy) and node 5 (memset)' || fail "copy race line"
echo "$out" | grep -q 'node 2 (kernel "blend") and node 5 (memset): \[0x[0-9a-f]*, +8 bytes)' || fail "kernel race line"
echo "$out" | grep -q 'node 3.0 (memset) and node 5 (memset)' && fail "the child's fill does not overlap b+100"

printf '{"format": "gcap-graph", "version": 99}' > "$dir/future.json"
"$inspect" "$dir/future.json" 2> "$dir/future.err"
rc=$?
[ $rc -eq 2 ] || fail "a newer version: exit $rc (want 2)"
grep -q "NOT_SUPPORTED" "$dir/future.err" || fail "a newer version: $(cat "$dir/future.err")"
"$inspect" > /dev/null 2>&1
[ $? -eq 2 ] || fail "no arguments: want exit 2"
echo "ok"
