#!/bin/sh
# gcap-inspect on saved graphs: --help, the summary, the race report, DOT and SVG output with
# the races marked, and the exit statuses.
#   test_inspect.sh FIXTURE INSPECT WORKDIR
set -u
fixture=$1 inspect=$2 dir=$3
case $inspect in /*) ;; *) inspect=$PWD/$inspect ;; esac # run below with a PATH of our own
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

# Conditional bodies count among the nodes at all levels: a fill, an IF, and three fills in its bodies.
out=$("$inspect" "$dir/conditional.json") || fail "conditional graph: exit $? (want 0): $out"
echo "$out"
echo "$out" | grep -q "5 nodes (all levels), 1 edges in the top-level graph, depth 2" || fail "conditional summary"
echo "$out" | grep -Eq "^  memset +4$" || fail "fills in the bodies not counted"
echo "$out" | grep -Eq "^  conditional +1$" || fail "conditional count"

out=$("$inspect" --dot "$dir/racy.dot" "$dir/racy.json")
rc=$?
echo "$out"
[ $rc -eq 1 ] || fail "racy graph: exit $rc (want 1)"
echo "$out" | grep -q "^races: 3$" || fail "race count of the racy graph"
echo "$out" | grep -q 'node 1 (memset) and node 5 (memset): \[0x[0-9a-f]*, +8 bytes)' || fail "fill race line"
echo "$out" | grep -q 'node 4 (memcpy) and node 5 (memset)' || fail "copy race line"
echo "$out" | grep -q 'node 2 (kernel "blend") and node 5 (memset): \[0x[0-9a-f]*, +8 bytes)' || fail "kernel race line"
echo "$out" | grep -q 'node 3.0 (memset) and node 5 (memset)' && fail "the child's fill does not overlap b+100"

mark='color="#e31a1c", penwidth=3'
for n in 1 2 4 5; do grep -qF "  n$n [$mark];" "$dir/racy.dot" || fail "node $n not marked as racing"; done
grep -qF '  n0 [color=' "$dir/racy.dot" && fail "node 0 races with nothing but is marked"
grep -qF "  n3 [$mark];" "$dir/racy.dot" && fail "the child graph races with nothing but is marked"
pair='[color="#e31a1c", style=dashed, dir=none, constraint=false, label="race", fontname="Helvetica", fontcolor="#e31a1c"];'
for p in "1 -> n5" "2 -> n5" "4 -> n5"; do grep -qF "  n$p $pair" "$dir/racy.dot" || fail "race pair n$p not drawn"; done
[ "$(grep -c 'label="race"' "$dir/racy.dot")" -eq 3 ] || fail "want exactly 3 race lines"
[ "$(tail -n 1 "$dir/racy.dot")" = "}" ] || fail "the DOT text does not end with its closing brace"
grep -q 'label="race"' "$dir/clean.dot" && fail "the clean graph has race marks"
if command -v dot > /dev/null 2>&1; then
  "$inspect" --quiet --svg "$dir/racy.svg" "$dir/racy.json" > /dev/null
  [ $? -eq 1 ] || fail "--svg of the racy graph: want exit 1"
  grep -q '<svg' "$dir/racy.svg" || fail "no SVG written"
  [ "$(grep -c 'stroke="#e31a1c"' "$dir/racy.svg")" -ge 7 ] || fail "SVG: want 4 red nodes and 3 red lines"
  [ -e "$dir/racy.svg.dot" ] && fail "the temporary DOT file was left behind"
else
  echo "Graphviz's dot is not installed: SVG output not checked"
fi

# --svg without Graphviz's dot on PATH: exit 3 and what to install, found before anything is
# printed or written (not the DOT of --dot either). A "dot" that is not executable is no dot.
mkdir -p "$dir/nodot" && : > "$dir/nodot/dot" && chmod 644 "$dir/nodot/dot"
for path in /nonexistent "$dir/nodot"; do
  rm -f "$dir/nodot.svg" "$dir/nodot.svg.dot" "$dir/nodot.dot"
  PATH=$path "$inspect" --dot "$dir/nodot.dot" --svg "$dir/nodot.svg" "$dir/racy.json" > "$dir/nodot.out" 2> "$dir/nodot.err"
  rc=$?
  [ $rc -eq 3 ] || fail "--svg with PATH=$path (no dot): exit $rc (want 3): $(cat "$dir/nodot.err")"
  grep -qxF "gcap-inspect: --svg needs Graphviz's dot, which is not installed (Debian: apt-get install graphviz); --dot writes the DOT text without it" "$dir/nodot.err" ||
    fail "--svg without dot: no word of what to install: $(cat "$dir/nodot.err")"
  [ -s "$dir/nodot.out" ] && fail "--svg without dot: printed before failing: $(cat "$dir/nodot.out")"
  for f in nodot.svg nodot.svg.dot nodot.dot; do [ -e "$dir/$f" ] && fail "--svg without dot: wrote $f"; done
done
# A dot found on PATH (a fake one, so this runs without Graphviz) is run as dot -Tsvg -o OUT IN.
mkdir -p "$dir/fakedot"
printf '#!/bin/sh\n[ "$1" = -Tsvg ] && [ "$2" = -o ] && [ $# -eq 4 ] || exit 1\n{ echo "<svg>"; cat "$4"; } > "$3"\n' > "$dir/fakedot/dot"
chmod +x "$dir/fakedot/dot"
rm -f "$dir/fake.svg"
PATH="$dir/fakedot:$PATH" "$inspect" --quiet --svg "$dir/fake.svg" "$dir/racy.json" > /dev/null
rc=$?
[ $rc -eq 1 ] || fail "--svg with a dot on PATH: exit $rc (want 1)"
grep -q '^<svg>$' "$dir/fake.svg" && grep -q 'label="race"' "$dir/fake.svg" || fail "--svg: dot was not given the DOT text"
[ -e "$dir/fake.svg.dot" ] && fail "--svg: the temporary DOT file was left behind"

out=$("$inspect" --help) || fail "--help: exit $? (want 0)"
echo "$out" | head -n 1 | grep -q '^usage: .*gcap-inspect \[--dot FILE\] \[--svg FILE\] \[--verbose\] \[--quiet\] GRAPH.json$' ||
  fail "--help: no usage line first: $out"
echo "$out" | grep -q '^Exit status: 0 no races, 1 races found, 2 usage or load error, 3 --svg without Graphviz.s dot.$' || fail "--help: exit statuses"
[ -z "$("$inspect" --help 2>&1 > /dev/null)" ] || fail "--help wrote to stderr"
err=$("$inspect" --no-such-option 2>&1 > /dev/null)
[ $? -eq 2 ] || fail "an unknown option: want exit 2"
echo "$err" | grep -q "^usage: " || fail "an unknown option: no usage on stderr"

printf '{"format": "gcap-graph", "version": 99}' > "$dir/future.json"
"$inspect" "$dir/future.json" 2> "$dir/future.err"
rc=$?
[ $rc -eq 2 ] || fail "a newer version: exit $rc (want 2)"
grep -q "NOT_SUPPORTED" "$dir/future.err" || fail "a newer version: $(cat "$dir/future.err")"
"$inspect" > /dev/null 2>&1
[ $? -eq 2 ] || fail "no arguments: want exit 2"
echo "ok"
