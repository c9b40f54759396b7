// Built with --default-stream per-thread: stream 0 is each host thread's own stream (the
// runtime's _ptsz/_ptds entry points). Two threads work on their stream 0 at once; each sees its
// own stream, also as cudaStreamPerThread, and cudaStreamLegacy is still the legacy stream, with
// which the per-thread streams synchronize. Stream ids are unique. A per-thread stream can be
// captured.
#include "check.h"

#include <thread>
#include <vector>

__global__ void iota(int *a, int base, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) a[i] = base + i;
}

__global__ void add_one(int *a, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) a[i] += 1;
}

const int n = 2048;

struct Result {
  unsigned long long id_zero = 0, id_per_thread = 1;
  bool values_ok = false;
  cudaError_t error = cudaErrorUnknown;
};

static void worker(int base, int *d, Result *r) {
  cudaError_t e = cudaSuccess;
#define TRY(call)                                                                                                      \
  do {                                                                                                                 \
    if (e == cudaSuccess) e = (call);                                                                                  \
  } while (0)
  TRY(cudaStreamGetId(0, &r->id_zero));
  TRY(cudaStreamGetId(cudaStreamPerThread, &r->id_per_thread));
  iota<<<4, 128>>>(d, base, n); // this thread's stream 0
  TRY(cudaGetLastError());
  add_one<<<4, 128, 0, cudaStreamPerThread>>>(d, n);
  TRY(cudaGetLastError());
  TRY(cudaStreamSynchronize(0));
  TRY(cudaStreamQuery(0));
  std::vector<int> h(n);
  TRY(cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
  bool ok = e == cudaSuccess;
  for (int i = 0; ok && i < n; i++) ok = h[i] == base + i + 1;
  r->values_ok = ok;
  r->error = e;
#undef TRY
}

int main() {
  int *d1, *d2;
  CHECK(cudaMalloc(&d1, n * sizeof(int)));
  CHECK(cudaMalloc(&d2, n * sizeof(int)));
  Result r1, r2;
  std::thread t1(worker, 1000, d1, &r1), t2(worker, 5000, d2, &r2);
  t1.join();
  t2.join();
  CHECK(r1.error);
  CHECK(r2.error);
  EXPECT(r1.values_ok && r2.values_ok);
  // Each thread's stream 0 is its cudaStreamPerThread, and the two differ.
  EXPECT(r1.id_zero == r1.id_per_thread);
  EXPECT(r2.id_zero == r2.id_per_thread);
  EXPECT(r1.id_zero != r2.id_zero);
  unsigned long long mine, legacy;
  CHECK(cudaStreamGetId(0, &mine));
  CHECK(cudaStreamGetId(cudaStreamLegacy, &legacy));
  EXPECT(mine != legacy && mine != r1.id_zero && mine != r2.id_zero);
  // Ids are stable, and unique over the process's lifetime: a stream made after another is
  // destroyed gets a new one.
  unsigned long long again, ids[8];
  CHECK(cudaStreamGetId(cudaStreamLegacy, &again));
  EXPECT(again == legacy);
  for (int i = 0; i < 8; i++) {
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaStreamGetId(s, &ids[i]));
    CHECK(cudaStreamGetId(s, &again));
    EXPECT(again == ids[i] && ids[i] != legacy && ids[i] != mine);
    for (int j = 0; j < i; j++) EXPECT(ids[j] != ids[i]);
    CHECK(cudaStreamDestroy(s));
  }
  CHECK_ERROR(cudaStreamGetId(0, nullptr), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);
  unsigned flags = 99;
  CHECK(cudaStreamGetFlags(0, &flags));
  EXPECT(flags == cudaStreamDefault);
  int device = -1;
  CHECK(cudaStreamGetDevice(0, &device));
  EXPECT(device == 0);

  // The legacy stream, then this thread's stream reads its result: the per-thread stream is
  // blocking with respect to the legacy stream.
  iota<<<4, 128, 0, cudaStreamLegacy>>>(d1, 7, n);
  add_one<<<4, 128>>>(d1, n);
  CHECK(cudaStreamSynchronize(0));
  std::vector<int> h(n);
  CHECK(cudaMemcpy(h.data(), d1, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(h[i] == 7 + i + 1);

  // Stream 0 is a per-thread stream here, so it can be captured.
  cudaGraph_t graph;
  enum cudaStreamCaptureStatus status;
  CHECK(cudaStreamBeginCapture(0, cudaStreamCaptureModeThreadLocal));
  CHECK(cudaStreamIsCapturing(cudaStreamPerThread, &status));
  EXPECT(status == cudaStreamCaptureStatusActive);
  add_one<<<4, 128>>>(d2, n);
  CHECK(cudaGetLastError());
  size_t num = 99;
  const cudaGraphNode_t *deps = nullptr;
  unsigned long long id = 0;
  CHECK(cudaStreamGetCaptureInfo(0, &status, &id, nullptr, &deps, nullptr, &num));
  EXPECT(status == cudaStreamCaptureStatusActive && id != 0 && num == 1 && deps != nullptr);
  CHECK(cudaStreamEndCapture(cudaStreamPerThread, &graph));
  EXPECT(graph != nullptr);
  CHECK(cudaStreamIsCapturing(0, &status));
  EXPECT(status == cudaStreamCaptureStatusNone);
  // Captured, not run.
  CHECK(cudaMemcpy(h.data(), d2, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(h[i] == 5000 + i + 1);
  CHECK(cudaGraphDestroy(graph));

  CHECK(cudaFree(d1));
  CHECK(cudaFree(d2));
  return passed();
}
