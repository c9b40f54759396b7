#!/bin/sh
# The README's command that runs an unmodified CUDA program (the sh block naming gcap-run), run as
# written in a folder where build/ is BUILD and tools/bootstrap.sh a stand-in that installs
# nothing: the program must pass and gcap-run's report name its three kernels and its graph.
# Skips (77) without meson, ninja or nvcc on PATH, when the stand-in or gcap-run is not up to date
# (the test checks the command; it must not build), or with the reason in $SKIP.
# Usage: readme-cudart.sh SRCDIR BUILD SCRATCH
set -u
src=$1 build=$2 scratch=$3
fail() { echo "FAIL: $*"; exit 1; }
if [ -n "${SKIP:-}" ]; then echo "skipped: $SKIP"; exit 77; fi
for tool in meson ninja nvcc; do
  command -v $tool >/dev/null 2>&1 || { echo "skipped: no $tool on PATH"; exit 77; }
done
rm -rf "$scratch" && mkdir -p "$scratch/tools" || exit 1
build=$(cd "$build" && pwd) && scratch=$(cd "$scratch" && pwd) || exit 1
ln -s "$build" "$scratch/build"
ln -s "$src/examples" "$scratch/examples"
printf '#!/bin/sh\necho "bootstrap.sh: (a stand-in: nothing installed)"\n' > "$scratch/tools/bootstrap.sh"

cmd=$(awk '/^```sh$/ { getline; if ($0 ~ /gcap-run/) { print; exit } }' "$src/README.md")
[ -n "$cmd" ] || fail "the README has no sh block running gcap-run"
echo "the README's command: $cmd"
case $(ninja -C "$build" -n src/cudart/libcudart.so.13 tools/gcap-run) in
*"no work to do"*) ;;
*) echo "skipped: the stand-in or gcap-run is not up to date (run meson test without --no-rebuild)"; exit 77 ;;
esac
(cd "$scratch" && sh -c "$cmd") > "$scratch/out" 2>&1 || fail "the command failed: $(cat "$scratch/out")"
for want in PASSED 'gcap-run report: 3 kernels ran' 'captures 1, graphs instantiated 1, graph launches 10'; do
  grep -qF "$want" "$scratch/out" || fail "no '$want' in: $(cat "$scratch/out")"
done
grep -Eq '10 launches +[0-9]+ lane-instructions  saxpy\(float, float const\*, float\*, int\)' "$scratch/out" ||
  fail "no saxpy line in: $(cat "$scratch/out")"
cat "$scratch/out"
echo "ok"
