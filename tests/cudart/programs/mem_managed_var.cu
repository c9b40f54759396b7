// __managed__ variables used the way programs use them: a counter the kernels bump and the host
// reads and resets between launches, and a lookup table the host fills and the kernels read and
// rescale. The host touches them directly (also under GCAP_SIM_STRICT_MEMORY=1), always after
// synchronizing, as CUDA requires on devices without concurrent managed access.
#include "check.h"

__managed__ int counter = 3;
__managed__ float table[64];

__global__ void count_above(const float *x, int n, float threshold) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && x[i] > threshold) atomicAdd(&counter, 1);
}

__global__ void look_up(float *out, const int *idx, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = table[idx[i] & 63];
}

__global__ void scale_table(float s) { table[threadIdx.x] *= s; }

int main() {
  const int n = 1000;
  float *hx = new float[n], *hout = new float[n];
  int *hidx = new int[n];
  int above = 0;
  for (int i = 0; i < n; i++) {
    hx[i] = float((i * 37) % 101);
    hidx[i] = (i * 7) % 200;
    if (hx[i] > 50.0f) above++;
  }

  // The initial values, read by the host before any kernel ran.
  EXPECT(counter == 3);
  for (int i = 0; i < 64; i++) EXPECT(table[i] == 0.0f);

  float *x, *out;
  int *idx;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  CHECK(cudaMalloc(&idx, n * sizeof(int)));
  CHECK(cudaMemcpy(x, hx, n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(idx, hidx, n * sizeof(int), cudaMemcpyHostToDevice));

  // The host writes them; the kernels use what it wrote.
  counter = 0;
  for (int i = 0; i < 64; i++) table[i] = 0.5f * float(i);
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  count_above<<<(n + 255) / 256, 256, 0, s>>>(x, n, 50.0f);
  look_up<<<(n + 127) / 128, 128, 0, s>>>(out, idx, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(s));
  EXPECT(counter == above);
  CHECK(cudaMemcpy(hout, out, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(hout[i] == 0.5f * float(hidx[i] & 63));

  // A kernel rewrites the table; the host reads it after cudaDeviceSynchronize.
  scale_table<<<1, 64>>>(2.0f);
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < 64; i++) EXPECT(table[i] == float(i));

  // The host resets the counter between launches; the next launch counts on from there.
  counter = 1000;
  count_above<<<(n + 255) / 256, 256>>>(x, n, 90.0f);
  CHECK(cudaDeviceSynchronize());
  int above90 = 0;
  for (int i = 0; i < n; i++) above90 += hx[i] > 90.0f;
  EXPECT(above90 > 0 && counter == 1000 + above90);

  // Copies reach the same memory as the host's own stores.
  float ramp[64];
  for (int i = 0; i < 64; i++) ramp[i] = 64.0f - float(i);
  CHECK(cudaMemcpy(table, ramp, sizeof ramp, cudaMemcpyDefault));
  for (int i = 0; i < 64; i++) EXPECT(table[i] == 64.0f - float(i));
  counter = 17;
  int c = 0;
  CHECK(cudaMemcpy(&c, &counter, sizeof c, cudaMemcpyDefault));
  EXPECT(c == 17);

  // The runtime knows them as managed memory, and as symbols by their own names.
  cudaPointerAttributes attr;
  CHECK(cudaPointerGetAttributes(&attr, table + 3));
  EXPECT(attr.type == cudaMemoryTypeManaged);
  const int seven = 7;
  CHECK(cudaMemcpyToSymbol(counter, &seven, sizeof seven));
  EXPECT(counter == 7);
  size_t bytes = 0;
  CHECK(cudaGetSymbolSize(&bytes, table));
  EXPECT(bytes == sizeof(float) * 64);
  void *address = nullptr;
  CHECK(cudaGetSymbolAddress(&address, table));
  EXPECT(address == static_cast<void *>(table));

  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(x));
  CHECK(cudaFree(out));
  CHECK(cudaFree(idx));
  delete[] hx;
  delete[] hout;
  delete[] hidx;
  return passed();
}
