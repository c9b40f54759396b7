#!/bin/sh
# The README's demo command (its first sh block), run as written in a folder where build/ is
# BUILD and tools/bootstrap.sh a stand-in that installs nothing (test_bootstrap.sh checks the
# real one): its target must exist, compile none of the tests or benchmarks, and the demo must
# say that every number matched. Skips (77) without meson or ninja on PATH.
# Usage: readme-demo.sh SRCDIR BUILD SCRATCH
set -u
src=$1 build=$2 scratch=$3
fail() { echo "FAIL: $*"; exit 1; }
for tool in meson ninja; do
  command -v $tool >/dev/null 2>&1 || { echo "skipped: no $tool on PATH"; exit 77; }
done
rm -rf "$scratch" && mkdir -p "$scratch/tools" || exit 1
build=$(cd "$build" && pwd) && scratch=$(cd "$scratch" && pwd) || exit 1
ln -s "$build" "$scratch/build"
printf '#!/bin/sh\necho "bootstrap.sh: (a stand-in: nothing installed)"\n' > "$scratch/tools/bootstrap.sh"

demo=$(awk '/^## Two commands/ { on = 1 } on && /^```sh$/ { getline; print; exit }' "$src/README.md")
case $demo in
"sh tools/bootstrap.sh && "*) ;;
*) fail "the README's first sh block is not the demo: $demo" ;;
esac
echo "the README's demo: $demo"

target=$(printf '%s\n' "$demo" | sed -n 's/.*meson compile -C build \([^ ]*\).*/\1/p')
case $target in "" | "&&" | ";") target="" ;; esac
[ -n "$target" ] || fail "the demo's meson compile names no target: it would build everything"
commands=$(ninja -C "$build" -t commands "$target") || fail "no target $target in the build"
# The suite built it: this test checks the command and must not build (meson test --no-rebuild
# on a stale tree would have it compile the library).
case $(ninja -C "$build" -n "$target") in
*"no work to do"*) ;;
*) echo "skipped: $target is not up to date (run meson test without --no-rebuild)"; exit 77 ;;
esac
printf '%s\n' "$commands" | grep -E -- '-o (tests|bench)/' && fail "the demo's target $target compiles tests or benchmarks"
echo "$target: $(printf '%s\n' "$commands" | wc -l) of the build's $(ninja -C "$build" -t commands | wc -l) commands"

(cd "$scratch" && sh -c "$demo") > "$scratch/out" 2>&1 || fail "the demo failed: $(cat "$scratch/out")"
grep -q '^OK: ' "$scratch/out" || fail "the demo did not say OK: $(cat "$scratch/out")"
tail -n 3 "$scratch/out"
echo "ok"
