// Host work in stream order: cudaLaunchHostFunc and cudaStreamAddCallback, ordered within a
// stream and across streams by an event; the arguments a callback receives; a host function
// captured into a graph (as a host node, not run) and a callback refused by capture, as CUDA
// documents.
#include "check.h"

#include <cstring>
#include <mutex>
#include <vector>

static std::mutex log_lock;
static std::vector<int> log_order; // the tags of the host work, in the order it ran

static void log_tag(int tag) {
  std::lock_guard<std::mutex> g(log_lock);
  log_order.push_back(tag);
}

static int position(int tag) {
  std::lock_guard<std::mutex> g(log_lock);
  for (size_t i = 0; i < log_order.size(); i++)
    if (log_order[i] == tag) return int(i);
  return -1;
}

static int count(int tag) {
  std::lock_guard<std::mutex> g(log_lock);
  int c = 0;
  for (int t : log_order) c += t == tag;
  return c;
}

struct Expect {
  cudaStream_t stream;
  int tag;
};

static void CUDART_CB host_fn(void *data) { log_tag(*static_cast<int *>(data)); }

static void CUDART_CB callback(cudaStream_t stream, cudaError_t status, void *data) {
  const Expect *e = static_cast<const Expect *>(data);
  // The stream as it was passed, and no error: a wrong stream or status logs a negative tag.
  log_tag(stream == e->stream && status == cudaSuccess ? e->tag : -e->tag);
}

__global__ void bump(int *x) { atomicAdd(x, 1); }

int main() {
  int *counter;
  CHECK(cudaMalloc(&counter, sizeof(int)));
  const int zero = 0;
  CHECK(cudaMemcpy(counter, &zero, sizeof(int), cudaMemcpyHostToDevice));
  cudaStream_t a, b;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  cudaEvent_t after_a1;
  CHECK(cudaEventCreateWithFlags(&after_a1, cudaEventDisableTiming));

  static int tags[] = {1, 2, 3, 4, 5, 6, 7, 8};
  Expect a1{a, 10}, a3{a, 30}, legacy{0, 40};
  // Stream a: kernel, callback a1, host fn 2, event; stream b waits for the event, then host fn 3
  // and callback... a host fn 5 on b, and a callback a3 on a after everything.
  bump<<<1, 32, 0, a>>>(counter);
  CHECK(cudaStreamAddCallback(a, callback, &a1, 0));
  CHECK(cudaLaunchHostFunc(a, host_fn, &tags[1]));
  CHECK(cudaEventRecord(after_a1, a));
  CHECK(cudaStreamWaitEvent(b, after_a1, 0));
  CHECK(cudaLaunchHostFunc(b, host_fn, &tags[2]));
  bump<<<1, 32, 0, b>>>(counter);
  CHECK(cudaLaunchHostFunc(b, host_fn, &tags[4]));
  CHECK(cudaStreamAddCallback(a, callback, &a3, 0));
  CHECK(cudaStreamAddCallback(0, callback, &legacy, 0)); // the callback sees stream 0 as given
  CHECK(cudaDeviceSynchronize());

  // Each ran once, with its arguments.
  EXPECT(count(10) == 1 && count(2) == 1 && count(3) == 1 && count(5) == 1 && count(30) == 1 && count(40) == 1);
  EXPECT(count(-10) == 0 && count(-30) == 0 && count(-40) == 0);
  // Within a stream, in issue order; across streams, after the event.
  EXPECT(position(10) < position(2));
  EXPECT(position(2) < position(30));
  EXPECT(position(10) < position(3));
  EXPECT(position(3) < position(5));
  int h = 0;
  CHECK(cudaMemcpy(&h, counter, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT(h == 64);

  // Bad arguments.
  CHECK_ERROR(cudaStreamAddCallback(a, callback, &a1, 1u), cudaErrorInvalidValue);
  CHECK_ERROR(cudaStreamAddCallback(a, nullptr, &a1, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaLaunchHostFunc(a, nullptr, nullptr), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);

  // Captured: the host function becomes a node and does not run now.
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
  CHECK(cudaLaunchHostFunc(a, host_fn, &tags[6]));
  CHECK(cudaStreamEndCapture(a, &graph));
  EXPECT(graph != nullptr);
  EXPECT(count(7) == 0);
  // Each launch of the graph runs it once.
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, b));
  CHECK(cudaGraphLaunch(exec, b));
  CHECK(cudaStreamSynchronize(b));
  EXPECT(count(7) == 2);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));

  // A callback cannot be captured: refused, and the capture is invalidated.
  Expect never{a, 80};
  CHECK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
  CHECK_ERROR(cudaStreamAddCallback(a, callback, &never, 0), cudaErrorStreamCaptureUnsupported);
  enum cudaStreamCaptureStatus status;
  CHECK(cudaStreamIsCapturing(a, &status));
  EXPECT(status == cudaStreamCaptureStatusInvalidated);
  cudaGraph_t invalid;
  CHECK_ERROR(cudaStreamEndCapture(a, &invalid), cudaErrorStreamCaptureInvalidated);
  EXPECT(invalid == nullptr);
  CHECK_ERROR(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);
  CHECK(cudaStreamSynchronize(a));
  EXPECT(count(80) == 0 && count(-80) == 0);

  CHECK(cudaEventDestroy(after_a1));
  CHECK(cudaStreamDestroy(a));
  CHECK(cudaStreamDestroy(b));
  CHECK(cudaFree(counter));

  // A callback still pending when cudaDeviceReset tears the context down runs once, with
  // cudaSuccess, before the reset returns.
  cudaStream_t last;
  CHECK(cudaStreamCreate(&last));
  CHECK(cudaMalloc(&counter, sizeof(int)));
  CHECK(cudaMemcpy(counter, &zero, sizeof(int), cudaMemcpyHostToDevice));
  bump<<<1, 32, 0, last>>>(counter);
  Expect at_reset{last, 90};
  CHECK(cudaStreamAddCallback(last, callback, &at_reset, 0));
  CHECK(cudaDeviceReset());
  EXPECT(count(90) == 1 && count(-90) == 0);
  return passed();
}
