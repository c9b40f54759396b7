// __constant__ coefficients and __device__ state written from the host with cudaMemcpyToSymbol,
// used by a kernel, read back with cudaMemcpyFromSymbol (at an offset, and asynchronously); the
// symbol's address and size; and the errors for ranges past the variable and wrong directions.
#include "check.h"

__constant__ float coeffs[8];
__constant__ int scale;
__device__ int counters[16];
__device__ float result[64];

// A small polynomial per element, with a per-block counter.
__global__ void evaluate(int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = float(i), acc = 0.0f;
  for (int k = 7; k >= 0; k--) acc = acc * x + coeffs[k];
  result[i] = acc * float(scale);
  atomicAdd(&counters[blockIdx.x], 1);
}

int main() {
  const float c[8] = {1, 2, 0, 0, 0, 0, 0, 0}; // 1 + 2x
  CHECK(cudaMemcpyToSymbol(coeffs, c, sizeof c));
  const int three = 3;
  CHECK(cudaMemcpyToSymbol(scale, &three, sizeof three, 0, cudaMemcpyHostToDevice));
  int zeros[16] = {};
  CHECK(cudaMemcpyToSymbol(counters, zeros, sizeof zeros));
  // Only the tail of the coefficients changes: 1 + 2x + 0.5x^2 (offset in bytes).
  const float c2 = 0.5f;
  CHECK(cudaMemcpyToSymbol(coeffs, &c2, sizeof c2, 2 * sizeof(float)));

  evaluate<<<4, 16>>>(64);
  CHECK(cudaGetLastError());
  float r[64];
  CHECK(cudaMemcpyFromSymbol(r, result, sizeof r));
  for (int i = 0; i < 64; i++) EXPECT(r[i] == 3.0f * (1.0f + 2.0f * float(i) + 0.5f * float(i) * float(i)));
  int got[4];
  CHECK(cudaMemcpyFromSymbol(got, counters, sizeof got, 0, cudaMemcpyDeviceToHost));
  for (int b = 0; b < 4; b++) EXPECT(got[b] == 16);

  // The symbol's address is device memory: copy from it like any pointer, fill through it.
  int *dcounters = nullptr;
  size_t size = 0;
  CHECK(cudaGetSymbolAddress(reinterpret_cast<void **>(&dcounters), counters));
  CHECK(cudaGetSymbolSize(&size, counters));
  EXPECT(size == 16 * sizeof(int));
  CHECK(cudaGetSymbolSize(&size, coeffs));
  EXPECT(size == sizeof c);
  CHECK(cudaMemset(dcounters + 2, 0, 2 * sizeof(int)));
  CHECK(cudaMemcpy(got, dcounters, sizeof got, cudaMemcpyDeviceToHost));
  EXPECT(got[0] == 16 && got[1] == 16 && got[2] == 0 && got[3] == 0);

  // Symbol to symbol through device memory, and the asynchronous forms on a stream.
  float *tmp;
  CHECK(cudaMalloc(&tmp, sizeof c));
  CHECK(cudaMemcpyFromSymbol(tmp, coeffs, sizeof c, 0, cudaMemcpyDeviceToDevice));
  CHECK(cudaMemcpyToSymbol(result, tmp, sizeof c, 8 * sizeof(float), cudaMemcpyDeviceToDevice));
  // A blocking stream: its work comes after the device-to-device copy still queued on stream 0.
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  float back[8] = {};
  CHECK(cudaMemcpyFromSymbolAsync(back, result, sizeof back, 8 * sizeof(float), cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  EXPECT(back[0] == 1.0f && back[1] == 2.0f && back[2] == 0.5f && back[7] == 0.0f);
  const int seven = 7;
  CHECK(cudaMemcpyToSymbolAsync(scale, &seven, sizeof seven, 0, cudaMemcpyHostToDevice, s));
  CHECK(cudaStreamSynchronize(s));
  int check = 0;
  CHECK(cudaMemcpyFromSymbol(&check, scale, sizeof check));
  EXPECT(check == 7);

  // Out of range: past the end, an offset beyond it, and an offset + count that wraps.
  CHECK_ERROR(cudaMemcpyToSymbol(coeffs, c, sizeof c + 4), cudaErrorInvalidValue);
  CHECK_ERROR(cudaMemcpyToSymbol(coeffs, c, 4, sizeof c), cudaErrorInvalidValue);
  CHECK_ERROR(cudaMemcpyFromSymbol(got, counters, 8, 15 * sizeof(int)), cudaErrorInvalidValue);
  CHECK_ERROR(cudaMemcpyFromSymbol(got, counters, 8, ~size_t(0)), cudaErrorInvalidValue);
  // Wrong directions, a host address that is no symbol.
  CHECK_ERROR(cudaMemcpyToSymbol(coeffs, c, 4, 0, cudaMemcpyDeviceToHost), cudaErrorInvalidMemcpyDirection);
  CHECK_ERROR(cudaMemcpyFromSymbol(got, counters, 4, 0, cudaMemcpyHostToDevice), cudaErrorInvalidMemcpyDirection);
  CHECK_ERROR(cudaMemcpyToSymbol(&check, c, 4), cudaErrorInvalidSymbol);
  CHECK_ERROR(cudaGetSymbolSize(&size, &check), cudaErrorInvalidSymbol);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidSymbol);
  // Nothing of the above changed the variable.
  float now[8];
  CHECK(cudaMemcpyFromSymbol(now, coeffs, sizeof now));
  EXPECT(now[0] == 1.0f && now[1] == 2.0f && now[2] == 0.5f && now[3] == 0.0f);

  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(tmp));
  return passed();
}
