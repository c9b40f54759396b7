#!/bin/sh
# Runs a block of docs/use.md as written, as a user would, and checks what the program prints
# against the output docs/use.md and the README show.
#   build-tree: the block "build-tree" in a folder where build/ is BUILD and examples/ the
#     checkout's: examples/taste.c compiled through build/meson-uninstalled/gcap-uninstalled.pc.
#   installed: the block "installed" against an install staged with `meson install --destdir
#     STAGED` (as .ci/run stages one): pkg-config reads the staged gcap.pc with the staged folder
#     as its sysroot, the program runs with the staged library folder on LD_LIBRARY_PATH, and
#     `sudo`, `meson install` and `ldconfig` (done by the staging) run nothing.
# CC is the build's compiler command; USE_GCAP_CFLAGS (the build's -fsanitize=..., if any) is
# added to it.
# Usage: use-gcap.sh build-tree SRCDIR BUILD SCRATCH CC...
#        use-gcap.sh installed SRCDIR STAGED SCRATCH CC...
set -u
[ $# -ge 5 ] || { echo "usage: use-gcap.sh build-tree|installed SRCDIR BUILD|STAGED SCRATCH CC..." >&2; exit 2; }
mode=$1 src=$2 tree=$3 scratch=$4
shift 4
doc=$src/docs/use.md
fail() { echo "FAIL ($mode): $*"; exit 1; }
rm -rf "$scratch" && mkdir -p "$scratch/bin" "$scratch/work" || exit 1
scratch=$(cd "$scratch" && pwd) && src=$(cd "$src" && pwd) || exit 1
tree=$(cd "$tree" && pwd) || fail "no folder $3"
ln -s "$src/examples" "$scratch/work/examples"

# The block after "<!-- test: NAME -->", and the output docs/use.md shows (its first text block).
awk -v want="<!-- test: $mode -->" '
  $0 == want { found = 1; next }
  found == 1 && /^```sh$/ { found = 2; next }
  found == 2 && /^```$/ { exit }
  found == 2 { print }' "$doc" > "$scratch/block.sh"
[ -s "$scratch/block.sh" ] || fail "$doc has no sh block after <!-- test: $mode -->"
awk '/^```text$/ { on = 1; next } on && /^```$/ { exit } on { print }' "$doc" > "$scratch/want"
[ -s "$scratch/want" ] || fail "$doc shows no output (a text block)"
grep -qxF "$(cat "$scratch/want")" "$src/README.md" || fail "the README's taste output is not $(cat "$scratch/want")"

# cc is the build's compiler (its last word made absolute, so that this cc does not find itself).
last=$(for word; do :; done; echo "$word")
real=$(command -v "$last") || fail "compiler $last not found"
words=""
for word; do
  [ "$word" = "$last" ] && word=$real
  words="$words '$word'"
done
printf '#!/bin/sh\nexec %s %s "$@"\n' "$words" "${USE_GCAP_CFLAGS:-}" > "$scratch/bin/cc"
chmod +x "$scratch/bin/cc"
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR LD_LIBRARY_PATH

case $mode in
build-tree)
  ln -s "$tree" "$scratch/work/build"
  # The block's meson compile must find nothing to do (meson test --no-rebuild on a stale tree
  # would have it compile the library).
  case $(ninja -C "$tree" -n build.ninja 2>&1) in
  *"no work to do"*) ;;
  *) echo "skipped: $tree is not up to date (run meson test without --no-rebuild)"; exit 77 ;;
  esac
  # The suite has built the library; a meson on PATH checks that the block's target is right.
  if ! command -v meson >/dev/null 2>&1; then
    printf '#!/bin/sh\necho "(no meson on PATH: $*)"\n' > "$scratch/bin/meson"
    chmod +x "$scratch/bin/meson"
  fi
  flags=$(PKG_CONFIG_PATH=$tree/meson-uninstalled pkg-config --cflags gcap) || fail "pkg-config found no gcap"
  case " $flags " in
  *" -I$src/include "*) ;;
  *) fail "gcap-uninstalled.pc does not name $src/include: $flags" ;;
  esac
  ;;
installed)
  pc=$(find "$tree" -name gcap.pc -path '*/pkgconfig/*' | head -n 1)
  lib=$(find "$tree" -name libgcap.so.0 | head -n 1)
  [ -n "$pc" ] && [ -n "$lib" ] || fail "no gcap.pc or libgcap.so.0 under $tree"
  export PKG_CONFIG_SYSROOT_DIR=$tree PKG_CONFIG_PATH=${pc%/*} LD_LIBRARY_PATH=${lib%/*}
  flags=$(pkg-config --cflags --libs gcap) || fail "pkg-config found no gcap in $PKG_CONFIG_PATH"
  case " $flags " in
  *" -L$tree/"*) ;;
  *) fail "the staged gcap.pc does not lead into $tree: $flags" ;;
  esac
  printf '#!/bin/sh\nexec "$@"\n' > "$scratch/bin/sudo"
  printf '#!/bin/sh\n[ "$*" = "install -C build" ] || { echo "meson $*: not the install" >&2; exit 1; }\n' > "$scratch/bin/meson"
  printf '#!/bin/sh\n' > "$scratch/bin/ldconfig"
  chmod +x "$scratch/bin/sudo" "$scratch/bin/meson" "$scratch/bin/ldconfig"
  ;;
*) fail "unknown mode (build-tree or installed)" ;;
esac

echo "running docs/use.md's block \"$mode\":"
sed 's/^/  /' "$scratch/block.sh"
(cd "$scratch/work" && PATH=$scratch/bin:$PATH sh -e "$scratch/block.sh") > "$scratch/out" 2>&1 ||
  fail "the block failed: $(cat "$scratch/out")"
cat "$scratch/out"
[ "$(tail -n 1 "$scratch/out")" = "$(cat "$scratch/want")" ] ||
  fail "the program printed $(tail -n 1 "$scratch/out"), docs/use.md shows $(cat "$scratch/want")"
echo "ok"
