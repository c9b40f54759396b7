#!/bin/sh
# Regenerates examples/kernels/<name>_ptx.h from examples/kernels/<name>.cu with nvcc, so the
# examples carry the PTX the CUDA backend loads and build on machines without the toolkit; and
# bench/kernels/<name>_ptx.h likewise, for the simulator's PTX benchmarks.
# PTX for compute_75 is JIT-compiled by the driver for any newer GPU. -fmad=false keeps every
# product and sum rounded separately, as the examples' CPU reference computations round them.
# The kernels use only instructions of PTX ISA 7.5, so the file declares that version: drivers
# from CUDA 11.5 on load it, where the toolkit's own (newer) ISA number would need a newer driver.
# A .cu whose first line is "// nvcc-arch: compute_XX" (tensor cores, asynchronous copies) is
# built for that architecture instead and keeps the toolkit's ISA version.
set -eu
root="$(cd "$(dirname "$0")/.." && pwd)"
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null 2>&1 || NVCC=/usr/local/cuda/bin/nvcc
for dir in examples/kernels bench/kernels; do
cd "$root/$dir"
for cu in *.cu; do
  name=${cu%.cu}
  arch=$(head -n 1 "$cu" | sed -n 's|^// nvcc-arch: *||p')
  version='s/^\.version .*/.version 7.5/'
  [ -n "$arch" ] && version='s/^\(\.version .*\)/\1/'
  "$NVCC" -ptx -arch="${arch:-compute_75}" -fmad=false -o "$name.ptx" "$cu"
  sed -i -e '/^[[:space:]]*\/\//d' -e '/^[[:space:]]*$/d' -e 's/[[:space:]]\+/ /g' -e "$version" "$name.ptx"
  if command -v "${PTXAS:-ptxas}" >/dev/null 2>&1; then "${PTXAS:-ptxas}" -arch=sm_90 -o /dev/null "$name.ptx"; fi
  {
    echo "/* PTX of $cu, made by tools/gen-example-ptx.sh: edit $cu and rerun the script. */"
    echo "static const char ${name}_ptx[] ="
    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/  "/' -e 's/$/\\n"/' "$name.ptx"
    echo "  ;"
  } > "${name}_ptx.h"
  rm -f "$name.ptx"
  echo "wrote $dir/${name}_ptx.h"
done
done
