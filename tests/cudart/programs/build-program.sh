#!/bin/sh
# Builds one test program with nvcc -cudart shared, through a cache shared by every build folder
# (the programs do not depend on how gcap was built, so CI compiles each once):
# ${GCAP_CUDART_PROGRAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gcap/cudart-programs}/<hash>.
#   build-program.sh NVCC OUTPUT SOURCE... -- NVCC-FLAGS...
set -eu
nvcc=$1 out=$2
shift 2
sources=
while [ $# -gt 0 ] && [ "$1" != -- ]; do sources="$sources $1"; shift; done
[ $# -gt 0 ] && shift
cache=${GCAP_CUDART_PROGRAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gcap/cudart-programs}
# The key: the sources, the flags and the compiler.
key=$( { cat $sources; echo "$*"; "$nvcc" --version; } | sha256sum | cut -c1-32)
if [ -f "$cache/$key" ]; then
  cp "$cache/$key" "$out"
  exit 0
fi
"$nvcc" -cudart shared "$@" -o "$out" $sources
mkdir -p "$cache" 2>/dev/null && cp "$out" "$cache/$key.$$" 2>/dev/null && mv "$cache/$key.$$" "$cache/$key" || true
