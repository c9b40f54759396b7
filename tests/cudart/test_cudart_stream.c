/* What the stand-in's streams, events and captures refuse where a GPU would not, and say why
 * (GCAP_CUDART_VERBOSE=1): stream attributes other than the priority, a priority changed after
 * the stream is made, external event nodes and edge data in a capture; and the messages of
 * refusals CUDA shares (bad flags, a callback in a capture). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "stderr_capture.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ASSERT_SAID(call, expected, text)                                                                              \
  do {                                                                                                                 \
    stderr_listen();                                                                                                   \
    cudaError_t e_ = (call);                                                                                           \
    const char *s_ = stderr_heard();                                                                                   \
    assert_int_equal(e_, (expected));                                                                                  \
    if (!strstr(s_, (text))) fail_msg("expected \"%s\" in \"%s\"", (text), s_);                                        \
  } while (0)

static cudaStream_t stream;

static int setup(void **state) {
  (void)state;
  setenv("GCAP_CUDART_VERBOSE", "1", 1);
  return cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, -2) == cudaSuccess ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  return cudaStreamDestroy(stream) == cudaSuccess ? 0 : -1;
}

static void bad_flags(void **state) {
  (void)state;
  cudaStream_t s = NULL;
  cudaEvent_t e = NULL;
  ASSERT_SAID(cudaStreamCreateWithFlags(&s, 6u), cudaErrorInvalidValue,
              "cudaStreamCreateWithFlags: cudaErrorInvalidValue: flags 0x6 is not cudaStreamDefault or "
              "cudaStreamNonBlocking");
  assert_null(s);
  ASSERT_SAID(cudaEventCreateWithFlags(&e, cudaEventInterprocess), cudaErrorInvalidValue,
              "cudaEventCreateWithFlags: cudaErrorInvalidValue: cudaEventInterprocess needs cudaEventDisableTiming");
  assert_null(e);
  ASSERT_SAID(cudaStreamAddCallback(stream, NULL, NULL, 0), cudaErrorInvalidValue,
              "cudaStreamAddCallback: cudaErrorInvalidValue: callback is NULL");
  ASSERT_SAID(cudaThreadExchangeStreamCaptureMode(NULL), cudaErrorInvalidValue,
              "cudaThreadExchangeStreamCaptureMode: cudaErrorInvalidValue: mode is NULL");
  assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
}

static void attributes(void **state) {
  (void)state;
  cudaStreamAttrValue v;
  memset(&v, 0, sizeof v);
  assert_int_equal(cudaStreamGetAttribute(stream, cudaStreamAttributePriority, &v), cudaSuccess);
  assert_int_equal(v.priority, -2);
  ASSERT_SAID(cudaStreamGetAttribute(stream, cudaStreamAttributeSynchronizationPolicy, &v), cudaErrorNotSupported,
              "cudaStreamGetAttribute: cudaErrorNotSupported: stream attribute 3 is not supported by gcap (only "
              "cudaStreamAttributePriority)");
  v.priority = -4;
  ASSERT_SAID(cudaStreamSetAttribute(stream, cudaStreamAttributePriority, &v), cudaErrorNotSupported,
              "cudaStreamAttributePriority -4: gcap cannot change the priority of a stream (-2)");
  v.priority = -2;
  assert_int_equal(cudaStreamSetAttribute(stream, cudaStreamAttributePriority, &v), cudaSuccess);
  int p = 0;
  assert_int_equal(cudaStreamGetPriority(stream, &p), cudaSuccess);
  assert_int_equal(p, -2);
  assert_int_equal(cudaGetLastError(), cudaErrorNotSupported);
}

static void CUDART_CB never_called(cudaStream_t s, cudaError_t status, void *data) {
  (void)s, (void)status, (void)data;
  fail_msg("a callback refused in a capture ran");
}

static void in_capture(void **state) {
  (void)state;
  cudaEvent_t e;
  cudaGraph_t g = NULL;
  assert_int_equal(cudaEventCreate(&e), cudaSuccess);
  /* Outside capture the external flags are plain records and waits. */
  assert_int_equal(cudaEventRecordWithFlags(e, stream, cudaEventRecordExternal), cudaSuccess);
  assert_int_equal(cudaStreamWaitEvent(stream, e, cudaEventWaitExternal), cudaSuccess);
  assert_int_equal(cudaStreamSynchronize(stream), cudaSuccess);

  assert_int_equal(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), cudaSuccess);
  ASSERT_SAID(cudaEventRecordWithFlags(e, stream, cudaEventRecordExternal), cudaErrorNotSupported,
              "cudaEventRecordExternal in a capture (an event record node) is not supported by gcap");
  ASSERT_SAID(cudaStreamWaitEvent(stream, e, cudaEventWaitExternal), cudaErrorNotSupported,
              "cudaEventWaitExternal in a capture (an event wait node) is not supported by gcap");
  const cudaGraphNode_t *deps = NULL;
  size_t n = 1;
  enum cudaStreamCaptureStatus st;
  const cudaGraphEdgeData *data = (const cudaGraphEdgeData *)&n;
  assert_int_equal(cudaStreamGetCaptureInfo(stream, &st, NULL, NULL, &deps, &data, &n), cudaSuccess);
  assert_int_equal(st, cudaStreamCaptureStatusActive);
  assert_int_equal(n, 0);
  assert_null(deps);
  assert_null(data); /* no dependencies: no edge data */
  /* Still active: the refusals above invalidate nothing. */
  assert_int_equal(cudaStreamIsCapturing(stream, &st), cudaSuccess);
  assert_int_equal(st, cudaStreamCaptureStatusActive);
  ASSERT_SAID(cudaStreamAddCallback(stream, never_called, NULL, 0), cudaErrorStreamCaptureUnsupported,
              "a callback cannot be captured (use cudaLaunchHostFunc); the capture is now invalidated");
  assert_int_equal(cudaStreamIsCapturing(stream, &st), cudaSuccess);
  assert_int_equal(st, cudaStreamCaptureStatusInvalidated);
  ASSERT_SAID(cudaStreamAddCallback(stream, never_called, NULL, 0), cudaErrorStreamCaptureInvalidated,
              "cudaStreamAddCallback: cudaErrorStreamCaptureInvalidated");
  assert_int_equal(cudaStreamEndCapture(stream, &g), cudaErrorStreamCaptureInvalidated);
  assert_null(g);
  assert_int_equal(cudaEventDestroy(e), cudaSuccess);
  assert_int_equal(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);
}

static void edge_data(void **state) {
  (void)state;
  cudaGraph_t g;
  cudaGraphNode_t first;
  assert_int_equal(cudaGraphCreate(&g, 0), cudaSuccess);
  assert_int_equal(cudaGraphAddEmptyNode(&first, g, NULL, 0), cudaSuccess);
  cudaGraphEdgeData port;
  memset(&port, 0, sizeof port);
  port.from_port = cudaGraphKernelNodePortLaunchCompletion;
  ASSERT_SAID(cudaStreamBeginCaptureToGraph(stream, g, &first, &port, 1, cudaStreamCaptureModeGlobal),
              cudaErrorNotSupported,
              "cudaStreamBeginCaptureToGraph: cudaErrorNotSupported: dependencyData[0] is not default edge data "
              "(type 0, ports 2 -> 0): gcap's graphs have no edge data");
  enum cudaStreamCaptureStatus st;
  assert_int_equal(cudaStreamIsCapturing(stream, &st), cudaSuccess);
  assert_int_equal(st, cudaStreamCaptureStatusNone);
  memset(&port, 0, sizeof port);
  assert_int_equal(cudaStreamBeginCaptureToGraph(stream, g, &first, &port, 1, cudaStreamCaptureModeGlobal),
                   cudaSuccess);
  const cudaGraphNode_t *deps = NULL;
  const cudaGraphEdgeData *data = NULL;
  size_t n = 0;
  assert_int_equal(cudaStreamGetCaptureInfo(stream, &st, NULL, NULL, &deps, &data, &n), cudaSuccess);
  assert_int_equal(n, 1);
  assert_ptr_equal(deps[0], first);
  assert_non_null(data);
  assert_int_equal(data[0].type, cudaGraphDependencyTypeDefault);
  assert_int_equal(data[0].from_port, 0);
  port.type = cudaGraphDependencyTypeProgrammatic;
  ASSERT_SAID(cudaStreamUpdateCaptureDependencies(stream, &first, &port, 1, cudaStreamAddCaptureDependencies),
              cudaErrorNotSupported,
              "cudaStreamUpdateCaptureDependencies: cudaErrorNotSupported: dependencyData[0] is not default edge "
              "data (type 1, ports 0 -> 0)");
  cudaGraph_t back = NULL;
  assert_int_equal(cudaStreamEndCapture(stream, &back), cudaSuccess);
  assert_ptr_equal(back, g);
  assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
  assert_int_equal(cudaGetLastError(), cudaErrorNotSupported);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bad_flags),
      cmocka_unit_test(attributes),
      cmocka_unit_test(in_capture),
      cmocka_unit_test(edge_data),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
