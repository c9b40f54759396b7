// The implicit synchronization of the legacy default stream that most CUDA code relies on without
// knowing it: a kernel launched on a stream made by cudaStreamCreate (a blocking stream), then a
// plain cudaMemcpy with no synchronization in between, must see the kernel's results; a cudaMemset
// (stream 0) must land before a kernel later launched on a blocking stream reads the memory; and
// work on stream 0 waits for every blocking stream, the way a multi-stream pipeline's final copy
// counts on it.
#include "check.h"

#include <vector>

// Long enough, per element, that a copy which did not wait would read unfinished data.
__global__ void fill_squares(int *out, int n, int base) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = 0;
  for (int k = 0; k < 64; k++) v += (i + base) * (i + base) % 7;
  out[i] = (i + base) * (i + base) + v - v;
}

__global__ void add_from(int *dst, const int *src, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] += src[i];
}

int main() {
  const int n = 2048;
  const size_t bytes = n * sizeof(int);
  int *a, *b;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreate(&s1)); // blocking with respect to stream 0
  CHECK(cudaStreamCreate(&s2));
  std::vector<int> host(n);

  // 1. Kernel on a blocking stream, then cudaMemcpy on stream 0: the copy waits for the kernel.
  fill_squares<<<n / 256, 256, 0, s1>>>(a, n, 0);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(host.data(), a, bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(host[i] == i * i);

  // 2. cudaMemset on stream 0 (asynchronous for device memory), then a kernel on a blocking
  //    stream: the kernel runs after the fill.
  CHECK(cudaMemset(b, 0, bytes));
  add_from<<<n / 256, 256, 0, s2>>>(b, a, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(s2));
  CHECK(cudaMemcpy(host.data(), b, bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(host[i] == i * i);

  // 3. Two streams fill two buffers; device-to-device cudaMemcpy calls on stream 0 (which return
  //    before they are done) wait for both, and a kernel on s1 afterwards waits for the copies.
  int *lo, *hi;
  CHECK(cudaMalloc(&lo, bytes / 2));
  CHECK(cudaMalloc(&hi, bytes / 2));
  fill_squares<<<n / 512, 256, 0, s1>>>(lo, n / 2, 1);
  fill_squares<<<n / 512, 256, 0, s2>>>(hi, n / 2, n / 2 + 1);
  CHECK(cudaMemcpy(b, lo, bytes / 2, cudaMemcpyDeviceToDevice));
  CHECK(cudaMemcpy(b + n / 2, hi, bytes / 2, cudaMemcpyDefault));
  add_from<<<n / 256, 256, 0, s1>>>(b, b, n); // b doubles
  CHECK(cudaMemcpyAsync(host.data(), b, bytes, cudaMemcpyDeviceToHost, cudaStreamLegacy));
  CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  for (int i = 0; i < n; i++) EXPECT(host[i] == 2 * (i + 1) * (i + 1));

  // 4. A synchronous host-to-device copy on stream 0 comes after a kernel still queued on s1
  //    that reads the buffer it overwrites (write after read).
  std::vector<int> ones(n, 1);
  add_from<<<n / 256, 256, 0, s1>>>(b, a, n); // b += a, reading a (i * i)
  CHECK(cudaMemcpy(a, ones.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(host.data(), b, bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(host[i] == 2 * (i + 1) * (i + 1) + i * i);
  CHECK(cudaMemcpy(host.data(), a, bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(host[i] == 1);

  CHECK(cudaFree(lo));
  CHECK(cudaFree(hi));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  return passed();
}
