// The legacy default stream's implicit synchronization, as programs written before streams had
// flags rely on it: work on stream 0 waits for the earlier work of blocking streams
// (cudaStreamCreate), blocking streams wait for stream 0, and cudaStreamNonBlocking streams take
// no part (shown by capture: the legacy stream may be used while a non-blocking stream captures,
// but not while a blocking one does).
#include "check.h"

#include <vector>

__global__ void fill(int *a, int value, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) a[i] = value + i;
}

__global__ void twice(const int *a, int *b, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) b[i] = 2 * a[i];
}

int main() {
  const int n = 4096;
  int *a, *b, *c;
  CHECK(cudaMalloc(&a, n * sizeof(int)));
  CHECK(cudaMalloc(&b, n * sizeof(int)));
  CHECK(cudaMalloc(&c, n * sizeof(int)));
  std::vector<int> h(n);

  cudaStream_t blocking, also_blocking, non_blocking;
  CHECK(cudaStreamCreate(&blocking));
  CHECK(cudaStreamCreateWithFlags(&also_blocking, cudaStreamDefault));
  CHECK(cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking));
  unsigned flags = 99;
  CHECK(cudaStreamGetFlags(blocking, &flags));
  EXPECT(flags == cudaStreamDefault);
  CHECK(cudaStreamGetFlags(non_blocking, &flags));
  EXPECT(flags == cudaStreamNonBlocking);
  CHECK(cudaStreamGetFlags(0, &flags));
  EXPECT(flags == cudaStreamDefault);
  cudaStream_t bad;
  CHECK_ERROR(cudaStreamCreateWithFlags(&bad, 2u), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);
  CHECK(cudaGetLastError());

  // A fresh stream has nothing pending.
  CHECK(cudaStreamQuery(blocking));
  CHECK(cudaStreamQuery(0));

  // Blocking stream, then stream 0 reads its result, then a synchronous copy on stream 0:
  // no synchronization call anywhere, the legacy stream orders it all.
  fill<<<8, 128, 0, blocking>>>(a, 100, n);
  CHECK(cudaGetLastError());
  twice<<<8, 128>>>(a, b, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(h.data(), b, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(h[i] == 2 * (100 + i));

  // Stream 0, then a blocking stream reads its result; the blocking stream is waited for.
  fill<<<8, 128>>>(a, 7, n);
  twice<<<8, 128, 0, also_blocking>>>(a, c, n);
  cudaError_t q = cudaStreamQuery(also_blocking);
  EXPECT(q == cudaSuccess || q == cudaErrorNotReady);
  CHECK(cudaGetLastError()); // cudaErrorNotReady is not recorded as an error
  CHECK(cudaStreamSynchronize(also_blocking));
  CHECK(cudaStreamQuery(also_blocking));
  CHECK(cudaMemcpy(h.data(), c, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(h[i] == 2 * (7 + i));

  // A non-blocking stream needs its own synchronization before stream 0 may read its result.
  fill<<<8, 128, 0, non_blocking>>>(a, -50, n);
  CHECK(cudaStreamSynchronize(non_blocking));
  CHECK(cudaStreamQuery(non_blocking));
  CHECK(cudaMemcpy(h.data(), a, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(h[i] == -50 + i);

  // While a non-blocking stream captures, stream 0 is independent of it and runs its work.
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(non_blocking, cudaStreamCaptureModeRelaxed));
  fill<<<8, 128, 0, non_blocking>>>(b, 1000, n);
  fill<<<8, 128>>>(c, 3, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamEndCapture(non_blocking, &graph));
  EXPECT(graph != nullptr);
  CHECK(cudaMemcpy(h.data(), c, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(h[i] == 3 + i);
  CHECK(cudaGraphDestroy(graph));

  // While a blocking stream captures, stream 0 would depend on the capture: refused, and the
  // capture is invalidated.
  enum cudaStreamCaptureStatus status;
  CHECK(cudaStreamBeginCapture(blocking, cudaStreamCaptureModeRelaxed));
  CHECK_ERROR(cudaStreamIsCapturing(0, &status), cudaErrorStreamCaptureImplicit);
  CHECK(cudaStreamIsCapturing(blocking, &status)); // the query invalidated nothing
  EXPECT(status == cudaStreamCaptureStatusActive);
  fill<<<8, 128>>>(c, 3, n);
  CHECK_ERROR(cudaGetLastError(), cudaErrorStreamCaptureImplicit);
  CHECK(cudaStreamIsCapturing(blocking, &status));
  EXPECT(status == cudaStreamCaptureStatusInvalidated);
  cudaGraph_t none = reinterpret_cast<cudaGraph_t>(&none);
  CHECK_ERROR(cudaStreamEndCapture(blocking, &none), cudaErrorStreamCaptureInvalidated);
  EXPECT(none == nullptr);
  CHECK_ERROR(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);

  CHECK(cudaStreamDestroy(blocking));
  CHECK(cudaStreamDestroy(also_blocking));
  CHECK(cudaStreamDestroy(non_blocking));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  return passed();
}
