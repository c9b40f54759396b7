// CUDA's error rules as a program meets them. An error a call returns (an allocation too large)
// is the calling thread's last error until one cudaGetLastError reads it; other host threads do
// not see it. A kernel that faults (a failed device-side assert, a write past the end of its
// array) makes the error sticky: every later call of every thread returns it, cudaGetLastError
// does not clear it, and only cudaDeviceReset does, after which the program starts afresh.
// A fault is asynchronous: the launch may or may not report it, the next synchronization does.
#include "check.h"

#include <cassert>
#include <thread>

__global__ void fill(int *out, int n, int value) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value + i;
}

// Checks its input as a debug build would.
__global__ void check_positive(const int *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) assert(in[i] > 0);
}

// The classic bug: no bounds check, and a grid rounded up past n.
__global__ void fill_unchecked(int *out, int value) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = value + i;
}

// Allocates, fills on the device and reads back: the device works. Reads no error.
static void round_trip(int n, int value) {
  int *d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(int)));
  fill<<<(n + 127) / 128, 128>>>(d, n, value);
  int *h = new int[n];
  CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(h[i] == value + i);
  delete[] h;
  CHECK(cudaFree(d));
}

// After a fault: the error is sticky for every call and every thread.
static void expect_sticky(cudaError_t sticky, int *d, int n) {
  CHECK_ERROR(cudaDeviceSynchronize(), sticky);
  CHECK_ERROR(cudaGetLastError(), sticky);
  CHECK_ERROR(cudaGetLastError(), sticky);  // not cleared by reading it
  CHECK_ERROR(cudaPeekAtLastError(), sticky);
  int *other = nullptr;
  CHECK_ERROR(cudaMalloc(&other, 64), sticky);
  int h = 0;
  CHECK_ERROR(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost), sticky);
  CHECK_ERROR(cudaMemset(d, 0, n * sizeof(int)), sticky);
  fill<<<1, 32>>>(d, n, 1);
  CHECK_ERROR(cudaGetLastError(), sticky);
  cudaStream_t s;
  CHECK_ERROR(cudaStreamCreate(&s), sticky);
  CHECK_ERROR(cudaFree(d), sticky);
  cudaError_t seen[2] = {cudaSuccess, cudaSuccess};
  std::thread t([&] {
    seen[0] = cudaGetLastError();
    seen[1] = cudaDeviceSynchronize();
  });
  t.join();
  EXPECT(seen[0] == sticky && seen[1] == sticky);
  // What the device is needs no context: an error handler may still print it.
  int count = 0, sms = 0;
  CHECK(cudaGetDeviceCount(&count));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  EXPECT(count == 1 && sms > 0);
  CHECK_ERROR(cudaGetLastError(), sticky);
  // Only a reset clears it; the memory of the old context is gone with it.
  CHECK(cudaDeviceReset());
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
}

int main() {
  const int n = 1000;

  // ---- A plain error: the thread's own, cleared by one read ----
  void *huge = nullptr;
  CHECK_ERROR(cudaMalloc(&huge, (size_t)1 << 60), cudaErrorMemoryAllocation);
  CHECK_ERROR(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
  CHECK_ERROR(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
  cudaError_t other_thread[2] = {cudaErrorUnknown, cudaErrorUnknown};
  std::thread([&] {
    other_thread[0] = cudaPeekAtLastError();
    other_thread[1] = cudaGetLastError();
  }).join();
  EXPECT(other_thread[0] == cudaSuccess && other_thread[1] == cudaSuccess);
  // Successful calls leave it alone; the next read returns it once.
  round_trip(n, 3);
  CHECK_ERROR(cudaGetLastError(), cudaErrorMemoryAllocation);
  CHECK(cudaGetLastError());
  CHECK(cudaPeekAtLastError());
  // An error in another thread stays there.
  std::thread([] {
    void *p = nullptr;
    CHECK_ERROR(cudaMalloc(&p, (size_t)1 << 60), cudaErrorMemoryAllocation);
  }).join();
  CHECK(cudaGetLastError());
  round_trip(n, 4);
  CHECK(cudaGetLastError());

  // ---- A failed device-side assert ----
  int *d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(int)));
  fill<<<(n + 127) / 128, 128>>>(d, n, -500);  // d[i] = i - 500: some are not positive
  CHECK(cudaGetLastError());
  check_positive<<<(n + 127) / 128, 128>>>(d, n);
  cudaError_t at_launch = cudaGetLastError();
  EXPECT(at_launch == cudaSuccess || at_launch == cudaErrorAssert);
  expect_sticky(cudaErrorAssert, d, n);
  round_trip(n, 5);
  CHECK(cudaGetLastError());

  // ---- A write past the end of an array ----
  CHECK(cudaMalloc(&d, n * sizeof(int)));
  fill_unchecked<<<(n + 255) / 256, 256>>>(d, 9);  // threads 1000..1023 write past the end
  at_launch = cudaGetLastError();
  EXPECT(at_launch == cudaSuccess || at_launch == cudaErrorIllegalAddress);
  expect_sticky(cudaErrorIllegalAddress, d, n);
  round_trip(n, 6);
  CHECK(cudaGetLastError());

  // A correct program after all this: fresh allocations, a kernel, exact results.
  CHECK(cudaMalloc(&d, n * sizeof(int)));
  fill<<<(n + 127) / 128, 128>>>(d, n, 10);
  check_positive<<<(n + 127) / 128, 128>>>(d, n);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(d));
  return passed();
}
