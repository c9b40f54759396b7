// The first program of every CUDA course: allocate, copy in, launch, copy out. Also a kernel
// with internal linkage, a launch configuration CUDA refuses, and the error rules around it.
#include "check.h"

#include <vector>

__global__ void vector_add(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

namespace {
__global__ void scale(float *c, float factor, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] *= factor;
}
}  // namespace

int main() {
  const int n = 5000;
  std::vector<float> a(n), b(n), c(n);
  for (int i = 0; i < n; i++) a[i] = float(i), b[i] = float(2 * i);
  float *da, *db, *dc;
  CHECK(cudaMalloc(&da, n * sizeof(float)));
  CHECK(cudaMalloc(&db, n * sizeof(float)));
  CHECK(cudaMalloc(&dc, n * sizeof(float)));
  CHECK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  vector_add<<<(n + 255) / 256, 256>>>(da, db, dc, n);
  CHECK(cudaGetLastError());
  scale<<<4, 128>>>(dc, 0.5f, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(c[i] == 1.5f * float(i));

  // 2048 threads a block: refused at launch, kept as the thread's last error until read once.
  vector_add<<<1, 2048>>>(da, db, dc, n);
  CHECK_ERROR(cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidConfiguration);
  CHECK(cudaGetLastError());
  vector_add<<<0, 32>>>(da, db, dc, n);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidConfiguration);

  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dc));
  CHECK(cudaDeviceSynchronize());
  return passed();
}
