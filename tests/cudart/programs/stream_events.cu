// Events as programs use them: timing a kernel between two records, a producer stream and a
// consumer stream joined by cudaStreamWaitEvent, queries and synchronization, and the errors
// CUDA documents for timing (cudaEventDisableTiming, events never recorded) and bad flags.
#include "check.h"

#include <vector>

__global__ void produce(float *x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] = 0.5f * float(i);
}

__global__ void consume(const float *x, float *y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = x[i] + 1.0f;
}

int main() {
  const int n = 3000;
  float *x, *y;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  cudaStream_t producer, consumer;
  CHECK(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));

  cudaEvent_t start, stop, ready, never;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&never, cudaEventBlockingSync));

  // An event never recorded is complete.
  CHECK(cudaEventQuery(never));
  CHECK(cudaEventSynchronize(never));

  // Producer -> event -> consumer, timed on the producer stream.
  CHECK(cudaEventRecord(start, producer));
  produce<<<6, 128, 0, producer>>>(x, n);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(ready, producer));
  CHECK(cudaStreamWaitEvent(consumer, ready, 0));
  consume<<<6, 128, 0, consumer>>>(x, y, n);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(stop, producer));
  cudaError_t q = cudaEventQuery(stop);
  EXPECT(q == cudaSuccess || q == cudaErrorNotReady);
  CHECK(cudaGetLastError()); // cudaErrorNotReady is an answer, not the thread's error
  CHECK(cudaEventSynchronize(stop));
  CHECK(cudaEventQuery(stop));
  CHECK(cudaEventQuery(start));
  float ms = -1.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  EXPECT(ms >= 0.0f);
  CHECK(cudaStreamSynchronize(consumer));
  std::vector<float> h(n);
  CHECK(cudaMemcpy(h.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(h[i] == 0.5f * float(i) + 1.0f);

  // A second round reuses the events: the latest record counts.
  CHECK(cudaEventRecord(start, consumer));
  consume<<<6, 128, 0, consumer>>>(y, y, n);
  CHECK(cudaEventRecordWithFlags(stop, consumer, cudaEventRecordDefault));
  CHECK(cudaEventSynchronize(stop));
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  EXPECT(ms >= 0.0f);
  CHECK(cudaMemcpy(h.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(h[i] == 0.5f * float(i) + 2.0f);

  // The legacy stream may record and wait too.
  CHECK(cudaEventRecord(ready));
  CHECK(cudaStreamWaitEvent(producer, ready));
  CHECK(cudaStreamSynchronize(producer));

  // Timing refused: an event made with cudaEventDisableTiming, and one never recorded.
  ms = 42.0f;
  CHECK_ERROR(cudaEventElapsedTime(&ms, start, ready), cudaErrorInvalidResourceHandle);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  CHECK_ERROR(cudaEventElapsedTime(&ms, ready, stop), cudaErrorInvalidResourceHandle);
  CHECK_ERROR(cudaEventElapsedTime(&ms, never, stop), cudaErrorInvalidResourceHandle);
  CHECK_ERROR(cudaEventElapsedTime(nullptr, start, stop), cudaErrorInvalidValue);
  EXPECT(ms == 42.0f);

  // Bad flags.
  cudaEvent_t bad;
  CHECK_ERROR(cudaEventCreateWithFlags(&bad, 0x80u), cudaErrorInvalidValue);
  CHECK_ERROR(cudaEventCreateWithFlags(&bad, cudaEventInterprocess), cudaErrorInvalidValue);
  CHECK_ERROR(cudaEventRecordWithFlags(stop, producer, 0x10u), cudaErrorInvalidValue);
  CHECK_ERROR(cudaStreamWaitEvent(producer, stop, 0x10u), cudaErrorInvalidValue);
  CHECK_ERROR(cudaEventCreate(nullptr), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);
  CHECK(cudaGetLastError());

  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaEventDestroy(ready));
  CHECK(cudaEventDestroy(never));
  CHECK(cudaStreamDestroy(producer));
  CHECK(cudaStreamDestroy(consumer));
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  return passed();
}
