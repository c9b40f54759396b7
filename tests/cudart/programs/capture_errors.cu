// A program that gets stream capture wrong in every way CUDA documents, checking each error and
// what it does to the capture: a synchronous copy on the legacy stream while a blocking stream
// captures, synchronizing or querying a capturing stream, a fork never joined, ending where no
// capture is, capturing the legacy stream, an event recorded in a capture, and the
// global/thread-local/relaxed rules for potentially unsafe calls with
// cudaThreadExchangeStreamCaptureMode.
#include "check.h"

#include <thread>

__global__ void inc(int *x) { x[threadIdx.x] += 1; }

static cudaStreamCaptureStatus status_of(cudaStream_t s) {
  cudaStreamCaptureStatus st;
  CHECK(cudaStreamIsCapturing(s, &st));
  return st;
}

// Ends an invalidated capture: the error, no graph, and the stream is usable again.
static void end_invalidated(cudaStream_t s) {
  cudaGraph_t g = reinterpret_cast<cudaGraph_t>(&g);
  CHECK_ERROR(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  EXPECT(g == nullptr);
  EXPECT(status_of(s) == cudaStreamCaptureStatusNone);
  CHECK_ERROR(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);
}

int main() {
  int *d;
  CHECK(cudaMalloc(&d, 32 * sizeof(int)));
  int h[32] = {};
  CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
  cudaStream_t blocking, side, other;
  CHECK(cudaStreamCreate(&blocking));
  CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  cudaGraph_t g;

  // 1. cudaMemcpy is issued on the legacy stream, which would wait for the capturing blocking
  // stream: cudaErrorStreamCaptureImplicit, and the capture is invalidated.
  CHECK(cudaStreamBeginCapture(blocking, cudaStreamCaptureModeRelaxed));
  inc<<<1, 32, 0, blocking>>>(d);
  CHECK_ERROR(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), cudaErrorStreamCaptureImplicit);
  EXPECT(status_of(blocking) == cudaStreamCaptureStatusInvalidated);
  // Later work on the capture: cudaErrorStreamCaptureInvalidated.
  inc<<<1, 32, 0, blocking>>>(d);
  CHECK_ERROR(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);
  end_invalidated(blocking);
  CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost)); // nothing captured ran
  for (int i = 0; i < 32; i++) EXPECT(h[i] == 0);

  // 2. Synchronizing or querying a capturing stream: cudaErrorStreamCaptureUnsupported, invalidated.
  CHECK(cudaStreamBeginCapture(side, cudaStreamCaptureModeGlobal));
  CHECK_ERROR(cudaStreamSynchronize(side), cudaErrorStreamCaptureUnsupported);
  EXPECT(status_of(side) == cudaStreamCaptureStatusInvalidated);
  end_invalidated(side);
  CHECK(cudaStreamBeginCapture(side, cudaStreamCaptureModeGlobal));
  CHECK_ERROR(cudaStreamQuery(side), cudaErrorStreamCaptureUnsupported);
  end_invalidated(side);

  // 3. A fork never joined back: cudaErrorStreamCaptureUnjoined, and both streams leave the capture.
  cudaEvent_t fork;
  CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK(cudaStreamBeginCapture(side, cudaStreamCaptureModeGlobal));
  inc<<<1, 32, 0, side>>>(d);
  CHECK(cudaEventRecord(fork, side));
  CHECK(cudaStreamWaitEvent(other, fork, 0));
  inc<<<1, 32, 0, other>>>(d);
  EXPECT(status_of(other) == cudaStreamCaptureStatusActive);
  // Ending on the forked stream, which did not begin the capture, is unmatched (and invalidates).
  CHECK_ERROR(cudaStreamEndCapture(other, &g), cudaErrorStreamCaptureUnmatched);
  EXPECT(status_of(side) == cudaStreamCaptureStatusInvalidated);
  end_invalidated(side);
  EXPECT(status_of(other) == cudaStreamCaptureStatusNone);
  CHECK(cudaStreamBeginCapture(side, cudaStreamCaptureModeGlobal));
  inc<<<1, 32, 0, side>>>(d);
  CHECK(cudaEventRecord(fork, side));
  CHECK(cudaStreamWaitEvent(other, fork, 0));
  inc<<<1, 32, 0, other>>>(d);
  g = reinterpret_cast<cudaGraph_t>(&g);
  CHECK_ERROR(cudaStreamEndCapture(side, &g), cudaErrorStreamCaptureUnjoined);
  EXPECT(g == nullptr);
  EXPECT(status_of(side) == cudaStreamCaptureStatusNone);
  EXPECT(status_of(other) == cudaStreamCaptureStatusNone);

  // 4. Ending where no capture is, and beginning twice: cudaErrorIllegalState.
  CHECK_ERROR(cudaStreamEndCapture(side, &g), cudaErrorIllegalState);
  CHECK(cudaStreamBeginCapture(side, cudaStreamCaptureModeGlobal));
  CHECK_ERROR(cudaStreamBeginCapture(side, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
  CHECK_ERROR(cudaStreamEndCapture(side, nullptr), cudaErrorInvalidValue);
  CHECK(cudaStreamEndCapture(side, &g)); // an empty capture is a graph with no nodes
  EXPECT(g != nullptr);
  size_t nodes = 99;
  CHECK(cudaGraphGetNodes(g, nullptr, &nodes));
  EXPECT(nodes == 0);
  CHECK(cudaGraphDestroy(g));

  // 5. The legacy stream cannot be captured; a bad mode is refused.
  CHECK_ERROR(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal), cudaErrorInvalidValue);
  CHECK_ERROR(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeRelaxed), cudaErrorInvalidValue);
  CHECK_ERROR(cudaStreamBeginCapture(side, static_cast<cudaStreamCaptureMode>(9)), cudaErrorInvalidValue);
  EXPECT(status_of(side) == cudaStreamCaptureStatusNone);
  cudaStreamCaptureStatus st;
  CHECK_ERROR(cudaStreamIsCapturing(side, nullptr), cudaErrorInvalidValue);
  CHECK_ERROR(cudaStreamGetCaptureInfo(side, nullptr), cudaErrorInvalidValue);
  CHECK(cudaStreamGetCaptureInfo(side, &st));
  EXPECT(st == cudaStreamCaptureStatusNone);

  // 6. An event recorded in a capture cannot be waited for by the host.
  cudaEvent_t inside;
  CHECK(cudaEventCreate(&inside));
  CHECK(cudaStreamBeginCapture(side, cudaStreamCaptureModeRelaxed));
  CHECK(cudaEventRecord(inside, side));
  CHECK_ERROR(cudaEventQuery(inside), cudaErrorCapturedEvent);
  end_invalidated(side);
  CHECK_ERROR(cudaEventSynchronize(inside), cudaErrorCapturedEvent);
  CHECK(cudaEventRecord(inside, side)); // recorded outside capture: usable again
  CHECK(cudaEventSynchronize(inside));

  // 7. Potentially unsafe calls (cudaMalloc) during a global capture are refused and invalidate
  // it, unless this thread relaxes its mode; a relaxed capture allows them.
  void *p = nullptr;
  CHECK(cudaStreamBeginCapture(side, cudaStreamCaptureModeGlobal));
  CHECK_ERROR(cudaMalloc(&p, 64), cudaErrorStreamCaptureUnsupported);
  end_invalidated(side);
  CHECK(cudaStreamBeginCapture(side, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
  EXPECT(mode == cudaStreamCaptureModeGlobal); // the thread's previous mode
  CHECK(cudaMalloc(&p, 64));
  EXPECT(status_of(side) == cudaStreamCaptureStatusActive);
  CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
  EXPECT(mode == cudaStreamCaptureModeRelaxed);
  CHECK_ERROR(cudaFree(p), cudaErrorStreamCaptureUnsupported); // global again: refused, nothing freed
  EXPECT(status_of(side) == cudaStreamCaptureStatusInvalidated);
  end_invalidated(side);
  CHECK(cudaFree(p));
  CHECK(cudaStreamBeginCapture(side, cudaStreamCaptureModeRelaxed));
  CHECK(cudaMalloc(&p, 64));
  CHECK(cudaStreamEndCapture(side, &g));
  CHECK(cudaGraphDestroy(g));
  CHECK(cudaFree(p));
  mode = static_cast<cudaStreamCaptureMode>(5);
  CHECK_ERROR(cudaThreadExchangeStreamCaptureMode(&mode), cudaErrorInvalidValue);
  CHECK_ERROR(cudaThreadExchangeStreamCaptureMode(nullptr), cudaErrorInvalidValue);

  // A thread-local capture restricts its own thread only; a global one every thread in global mode.
  CHECK(cudaStreamBeginCapture(side, cudaStreamCaptureModeThreadLocal));
  std::thread t([] {
    void *q = nullptr;
    if (cudaMalloc(&q, 64) != cudaSuccess || cudaFree(q) != cudaSuccess) std::exit(2);
  });
  t.join();
  EXPECT(status_of(side) == cudaStreamCaptureStatusActive);
  CHECK_ERROR(cudaMalloc(&p, 64), cudaErrorStreamCaptureUnsupported);
  end_invalidated(side);
  CHECK(cudaStreamBeginCapture(side, cudaStreamCaptureModeGlobal));
  std::thread u([&] {
    void *q = nullptr;
    cudaError_t e = cudaMalloc(&q, 64); // another thread, global mode: refused too
    if (e != cudaErrorStreamCaptureUnsupported) std::exit(2);
  });
  u.join();
  end_invalidated(side);

  CHECK(cudaEventDestroy(fork));
  CHECK(cudaEventDestroy(inside));
  CHECK(cudaStreamDestroy(blocking));
  CHECK(cudaStreamDestroy(side));
  CHECK(cudaStreamDestroy(other));
  CHECK(cudaFree(d));
  return passed();
}
