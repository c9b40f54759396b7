#!/bin/sh
# Regenerates the PTX corpus of the simulator's tests: every tests/ptx/**/NAME.cu gives
# NAME.ptx next to it, and a file whose first lines hold a "// nvcc-G" line also gives
# NAME.G.ptx, built with -G (debug PTX is shaped very differently from optimised PTX). A file
# whose first lines hold a "// nvcc-archs: 75 80 90" line gives NAME.sm_75.ptx, NAME.sm_80.ptx and
# NAME.sm_90.ptx instead of NAME.ptx, each built with -arch=compute_XX.
#
#   tools/gen-test-ptx.sh           rewrite the .ptx files
#   tools/gen-test-ptx.sh --check   rewrite nothing; exit 1 when a committed .ptx differs from
#                                   what this nvcc makes (for CI machines with the toolkit)
#
# Flags: -arch=compute_75 -O3 -lineinfo, plus those of a "// nvcc: FLAGS" line among the first
# three lines of the .cu (an -arch there replaces the default one). The output is nvcc's own,
# made the same from one checkout to another: nvcc runs on copies of the sources in the fixed
# directory /tmp/gcap-test-ptx (-G output records the working directory in its DWARF), and
# .file directives then name the sources relative to tests/ptx and toolkit headers relative to
# the toolkit. Each file must assemble with ptxas for sm_90. Without nvcc the script says so
# and exits 77.
set -eu

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
corpus="$root/tests/ptx"
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null 2>&1 || NVCC=/usr/local/cuda/bin/nvcc
if ! command -v "$NVCC" >/dev/null 2>&1; then
  echo "gen-test-ptx: nvcc not found (set NVCC)" >&2
  exit 77
fi
PTXAS=${PTXAS:-$(dirname "$(command -v "$NVCC")")/ptxas}

# A fixed place, so that what nvcc records of its working directory never changes; mkdir
# fails when another run holds it.
work=/tmp/gcap-test-ptx
if ! mkdir "$work" 2>/dev/null; then
  echo "gen-test-ptx: $work exists: another run is going on, or remove it" >&2
  exit 1
fi
trap 'rm -rf "$work"' EXIT INT TERM
(cd "$corpus" && find . -name '*.cu' | while read -r f; do
  mkdir -p "$work/$(dirname "$f")" && cp "$f" "$work/$f"
done)

# The flags a .cu asks for in a "// nvcc: ..." line among its first three lines.
file_flags() {
  head -n 3 "$1" | sed -n 's|^// nvcc: *||p' | head -n 1
}

# The architectures a .cu asks for in a "// nvcc-archs: ..." line among its first three lines
# (empty: one NAME.ptx at the default architecture).
file_archs() {
  head -n 3 "$1" | sed -n 's|^// nvcc-archs: *||p' | head -n 1
}

# Whether a .cu asks for a -G variant too, with a "// nvcc-G" line among its first three lines.
wants_debug_variant() {
  head -n 3 "$1" | grep -q '^// nvcc-G'
}

# Makes the text of $1 independent of where the tree and the toolkit live, in place.
stabilise() {
  sed -i \
    -e "s|^\\([[:space:]]*\\.file[[:space:]]\\{1,\\}[0-9]\\{1,\\}[[:space:]]\\{1,\\}\"\\)$work/|\\1|" \
    -e 's|^\([[:space:]]*\.file[[:space:]]\{1,\}[0-9]\{1,\}[[:space:]]\{1,\}"\)/[^"]*/include/|\1cuda/include/|' \
    "$1"
}

# Compiles $1 (a path relative to tests/ptx) into $2 with the extra flags $3 ("-G" or ""), for
# the architecture $4 (75, 80, ...; empty: the default, or the file's own -arch).
compile() {
  src=$1 out=$2 mode=$3 sm=${4:-}
  flags=$(file_flags "$corpus/$src")
  arch=-arch=compute_75
  case " $flags " in *" -arch="*) arch= ;; esac
  [ -n "$sm" ] && arch=-arch=compute_$sm
  if [ "$mode" = "-G" ]; then opt=-G; else opt="-O3 -lineinfo"; fi
  # shellcheck disable=SC2086 # word splitting of the flag lists is wanted
  (cd "$work" && "$NVCC" -ptx $arch $opt $flags -o "$out" "$src")
  stabilise "$out"
  "$PTXAS" -arch=sm_90 -o /dev/null "$out"
}

status=0
# Compares (--check) or installs the fresh $1 as tests/ptx/$2.
deliver() {
  fresh=$1 rel=$2
  if [ "$check" -eq 1 ]; then
    if ! cmp -s "$fresh" "$corpus/$rel"; then
      echo "gen-test-ptx: tests/ptx/$rel is stale (run tools/gen-test-ptx.sh)" >&2
      diff -u "$corpus/$rel" "$fresh" | head -n 20 >&2 || true
      status=1
    fi
  else
    cp "$fresh" "$corpus/$rel"
    echo "wrote tests/ptx/$rel"
  fi
}

for src in $(cd "$corpus" && find . -name '*.cu' | sed 's|^\./||' | LC_ALL=C sort); do
  base=${src%.cu}
  archs=$(file_archs "$corpus/$src")
  if [ -n "$archs" ]; then
    for sm in $archs; do
      compile "$src" "$work/$base.sm_$sm.ptx" "" "$sm"
      deliver "$work/$base.sm_$sm.ptx" "$base.sm_$sm.ptx"
    done
    continue
  fi
  compile "$src" "$work/$base.ptx" ""
  deliver "$work/$base.ptx" "$base.ptx"
  if wants_debug_variant "$corpus/$src"; then
    compile "$src" "$work/$base.G.ptx" -G
    deliver "$work/$base.G.ptx" "$base.G.ptx"
  fi
done

if [ "$check" -eq 1 ]; then
  # A .ptx whose .cu is gone is stale too.
  for ptx in $(cd "$corpus" && find . -name '*.ptx' | sed 's|^\./||' | LC_ALL=C sort); do
    base=${ptx%.ptx}
    base=${base%.G}
    case "$base" in *.sm_[0-9]*) base=${base%.sm_*} ;; esac
    if [ ! -f "$corpus/$base.cu" ]; then
      echo "gen-test-ptx: tests/ptx/$ptx has no $base.cu" >&2
      status=1
    fi
  done
fi
exit "$status"
