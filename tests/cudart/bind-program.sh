#!/bin/sh
# Builds a small CUDA program with nvcc -cudart shared and runs it against the stand-in with every
# symbol bound at load (LD_BIND_NOW): it must bind, register its fatbin, run its kernel, and a
# stub must answer cudaErrorNotSupported and say so once. Exits 77 (skipped) when nvcc is not installed, or with the reason in $BIND_SKIP.
# $BIND_PRELOAD: libraries the program preloads (the sanitizer runtimes of a sanitized stand-in).
#   bind-program.sh NVCC|"" STAND_IN_DIR WORK_DIR
set -eu
nvcc=$1 dir=$2 work=$3
if [ -n "${BIND_SKIP:-}" ]; then
  echo "bind-program.sh: skipped: $BIND_SKIP"
  exit 77
fi
if [ -z "$nvcc" ] || ! command -v "$nvcc" >/dev/null 2>&1; then
  echo "bind-program.sh: nvcc is not installed: no CUDA program to bind (skipped)"
  exit 77
fi
mkdir -p "$work"
cat >"$work/bind.cu" <<'CU'
#include <cstdio>
#include <cuda_runtime.h>
__global__ void set_one(int *p) { p[0] = 1; }
int main() {
  int *p = nullptr, one = 0;
  cudaError_t e = cudaMalloc(&p, sizeof(int));
  std::printf("cudaMalloc %d\n", (int)e);
  set_one<<<1, 1>>>(p);
  e = cudaMemcpy(&one, p, sizeof one, cudaMemcpyDeviceToHost);
  std::printf("cudaMemcpy %d, %d\n", (int)e, one);
  for (int i = 0; i < 2; i++) std::printf("cudaGraphicsUnmapResources %d\n", (int)cudaGraphicsUnmapResources(0, nullptr, 0));
  std::printf("done\n");
  return 0;
}
CU
"$nvcc" -cudart shared -arch=sm_80 -o "$work/bind" "$work/bind.cu"
if ! readelf -d "$work/bind" | grep -q 'NEEDED.*libcudart\.so\.13'; then
  echo "bind-program.sh: $work/bind does not need libcudart.so.13" >&2
  exit 1
fi
if ! LD_PRELOAD="${BIND_PRELOAD:-}" LD_BIND_NOW=1 LD_LIBRARY_PATH="$dir" "$work/bind" >"$work/out" 2>"$work/err"; then
  echo "bind-program.sh: $work/bind failed against $dir; its stderr:" >&2
  cat "$work/err" >&2
  exit 1
fi
status=0
printf '%s\n' "cudaMalloc 0" "cudaMemcpy 0, 1" "cudaGraphicsUnmapResources 801" "cudaGraphicsUnmapResources 801" done >"$work/expected_out"
cmp -s "$work/expected_out" "$work/out" || { echo "bind-program.sh: stdout differs (- expected, + got):" >&2; diff -u "$work/expected_out" "$work/out" >&2; status=1; }
# Registration reads the program's fatbin without a word; a call gcap does not support says so once.
printf '%s\n' "gcap-cudart: cudaGraphicsUnmapResources is not supported by gcap" >"$work/expected"
if ! cmp -s "$work/expected" "$work/err"; then
  echo "bind-program.sh: stderr differs from what was expected (- expected, + got):" >&2
  diff -u "$work/expected" "$work/err" >&2 || true
  status=1
fi
[ $status = 0 ] && echo "bind-program.sh: an nvcc -cudart shared program binds to $dir/libcudart.so.13, registers, runs its kernel and meets a stub"
exit $status
