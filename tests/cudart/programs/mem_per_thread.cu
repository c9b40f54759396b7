// Memory calls of a program built with --default-stream per-thread (they reach the runtime as the
// _ptds and _ptsz twins): each host thread copies, fills, allocates on its own default stream,
// uses a __device__ table through the symbol calls, and checks its own results.
#include "check.h"

#include <thread>
#include <vector>

__device__ int table[4][256];

__global__ void scale_into(int *out, int row, int factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = table[row][i] * factor;
}

// Worker threads record a failure instead of exiting.
#define TRY(call)                                                                                                      \
  do {                                                                                                                 \
    if ((call) != cudaSuccess) *failed = __LINE__;                                                                     \
  } while (0)

static void worker(int id, int *failed) {
  const int n = 256;
  std::vector<int> in(n), out(n, -1);
  for (int i = 0; i < n; i++) in[i] = id * 1000 + i;
  // Row `id` of the table is this thread's (a copy to a symbol at an offset).
  TRY(cudaMemcpyToSymbol(table, in.data(), n * sizeof(int), id * n * sizeof(int)));
  int *d = nullptr, *pitched = nullptr;
  size_t pitch = 0;
  TRY(cudaMallocAsync(reinterpret_cast<void **>(&d), n * sizeof(int), 0));
  TRY(cudaMallocPitch(reinterpret_cast<void **>(&pitched), &pitch, 16 * sizeof(int), 16));
  if (*failed) return;
  TRY(cudaMemsetAsync(d, 0xff, n * sizeof(int), 0));
  scale_into<<<1, n>>>(d, id, 3, n);
  TRY(cudaMemcpyAsync(out.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost, 0));
  TRY(cudaStreamSynchronize(0));
  for (int i = 0; i < n; i++)
    if (out[i] != 3 * (id * 1000 + i)) *failed = __LINE__;
  // A 2-D copy and fill through the per-thread stream, read back with the table's row.
  TRY(cudaMemset2D(pitched, pitch, 0, 16 * sizeof(int), 16));
  TRY(cudaMemcpy2D(pitched, pitch, d, 16 * sizeof(int), 16 * sizeof(int), 16, cudaMemcpyDeviceToDevice));
  std::vector<int> back(n);
  TRY(cudaMemcpy2D(back.data(), 16 * sizeof(int), pitched, pitch, 16 * sizeof(int), 16, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++)
    if (back[i] != out[i]) *failed = __LINE__;
  int row_end = 0;
  TRY(cudaMemcpyFromSymbol(&row_end, table, sizeof row_end, (id * n + n - 1) * sizeof(int)));
  if (row_end != id * 1000 + n - 1) *failed = __LINE__;
  TRY(cudaFreeAsync(d, 0));
  TRY(cudaFree(pitched));
  TRY(cudaStreamSynchronize(0));
  TRY(cudaGetLastError());
}

int main() {
  int failed[4] = {};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) threads.emplace_back(worker, t, &failed[t]);
  for (auto &t : threads) t.join();
  for (int t = 0; t < 4; t++) {
    if (failed[t]) std::fprintf(stderr, "thread %d failed at line %d\n", t, failed[t]);
    EXPECT(failed[t] == 0);
  }
  // The per-thread stream of the main thread, and a bad argument through a _ptds twin.
  int *d;
  CHECK(cudaMalloc(&d, 16));
  CHECK_ERROR(cudaMemcpy(d, d, 32, cudaMemcpyDeviceToDevice), cudaErrorInvalidValue);
  CHECK_ERROR(cudaMemset(d, 0, 17), cudaErrorInvalidValue);
  CHECK(cudaFree(d));
  return passed();
}
