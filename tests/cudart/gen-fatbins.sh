#!/bin/sh
# Regenerates the fatbins test_cudart_fatbin reads, from fatbin_kernel.cu, with the toolkit's nvcc
# (they are committed: the test needs no nvcc). nvcc 13.0 made the committed ones.
#   gen-fatbins.sh [NVCC]
set -eu
cd "$(dirname "$0")"
nvcc=${1:-nvcc}
# PTX for compute_75 and compute_80, machine code and PTX for sm_90; PTX zstd-compressed (the default).
"$nvcc" -fatbin -gencode arch=compute_75,code=compute_75 -gencode arch=compute_80,code=compute_80 \
  -gencode 'arch=compute_90,code=[sm_90,compute_90]' fatbin_kernel.cu -o multi.fatbin
# One PTX entry for compute_80: plain, LZ4 (-compress-mode=speed) and zstd.
"$nvcc" -fatbin -arch=compute_80 -compress-mode=none fatbin_kernel.cu -o plain.fatbin
"$nvcc" -fatbin -arch=compute_80 -compress-mode=speed fatbin_kernel.cu -o lz4.fatbin
"$nvcc" -fatbin -arch=compute_80 -compress-mode=default fatbin_kernel.cu -o zstd.fatbin
# Machine code only: no PTX.
"$nvcc" -fatbin -gencode arch=compute_90,code=sm_90 fatbin_kernel.cu -o sass.fatbin
# The relocatable fatbin of a -rdc=true object (section __nv_relfatbin), where such builds keep their PTX.
"$nvcc" -rdc=true -arch=sm_80 -c fatbin_kernel.cu -o rdc.o
objcopy -O binary --only-section=__nv_relfatbin rdc.o rdc.relfatbin
rm -f rdc.o
