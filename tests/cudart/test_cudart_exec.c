/* What the stand-in's executable graphs refuse where a GPU would not, and say why: device launch,
 * the upload flag outside cudaGraphInstantiateWithParams; and how the runtime's names map onto
 * gcap's (the flags an executable reports, NULL handles). */
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

static const char *said = "";

/* Runs fn; what it wrote on stderr lands in `said`. */
static cudaError_t said_by(cudaError_t (*fn)(void)) {
  stderr_listen();
  cudaError_t e = fn();
  said = stderr_heard();
  return e;
}

static cudaGraph_t graph;
static cudaGraphExec_t exec;

static cudaError_t instantiate_device_launch(void) {
  return cudaGraphInstantiate(&exec, graph,
                              cudaGraphInstantiateFlagDeviceLaunch | cudaGraphInstantiateFlagAutoFreeOnLaunch);
}

static cudaError_t instantiate_upload(void) {
  return cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagUpload);
}

static cudaError_t with_params_device_launch(void) {
  cudaGraphInstantiateParams p = {.flags = cudaGraphInstantiateFlagDeviceLaunch,
                                  .result_out = cudaGraphInstantiateSuccess};
  cudaError_t e = cudaGraphInstantiateWithParams(&exec, graph, &p);
  assert_int_equal(p.result_out, cudaGraphInstantiateError);
  assert_null(p.errNode_out);
  return e;
}

static int setup(void **state) {
  (void)state;
  cudaGraphNode_t n;
  if (cudaGraphCreate(&graph, 0) != cudaSuccess) return -1;
  return cudaGraphAddEmptyNode(&n, graph, NULL, 0) == cudaSuccess ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  return cudaGraphDestroy(graph) == cudaSuccess ? 0 : -1;
}

static void test_device_launch_refused(void **state) {
  (void)state;
  exec = (cudaGraphExec_t)&exec;
  assert_int_equal(said_by(instantiate_device_launch), cudaErrorNotSupported);
  assert_null(exec);
  assert_non_null(strstr(said, "cudaGraphInstantiate: cudaErrorNotSupported: flags 0x5: "
                               "cudaGraphInstantiateFlagDeviceLaunch is not supported by gcap"));
  assert_int_equal(cudaGetLastError(), cudaErrorNotSupported);
  assert_int_equal(said_by(with_params_device_launch), cudaErrorNotSupported);
  assert_non_null(strstr(said, "cudaGraphInstantiateWithParams: cudaErrorNotSupported"));
  assert_int_equal(cudaGetLastError(), cudaErrorNotSupported);
}

static void test_upload_flag_is_for_with_params(void **state) {
  (void)state;
  assert_int_equal(said_by(instantiate_upload), cudaErrorInvalidValue);
  assert_non_null(strstr(said, "(cudaGraphInstantiateFlagUpload is for cudaGraphInstantiateWithParams)"));
  (void)cudaGetLastError();
}

static void test_flags_reported(void **state) {
  (void)state;
  unsigned long long flags = 0;
  assert_int_equal(
      cudaGraphInstantiateWithFlags(&exec, graph,
                                    cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUseNodePriority),
      cudaSuccess);
  assert_int_equal(cudaGraphExecGetFlags(exec, &flags), cudaSuccess);
  assert_int_equal(flags, cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUseNodePriority);
  assert_int_equal(cudaGraphExecDestroy(exec), cudaSuccess);
  /* A destroyed executable is no executable: cudaErrorInvalidValue, as CUDA documents. */
  assert_int_equal(cudaGraphExecGetFlags(exec, &flags), cudaErrorInvalidValue);
  assert_int_equal(cudaGraphExecDestroy(exec), cudaErrorInvalidValue);
  assert_int_equal(cudaGraphLaunch(exec, 0), cudaErrorInvalidValue);
  assert_int_equal(cudaGraphExecDestroy(NULL), cudaErrorInvalidValue);
  (void)cudaGetLastError();
}

int main(void) {
  setenv("GCAP_CUDART_VERBOSE", "1", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_device_launch_refused),
      cmocka_unit_test(test_upload_flag_is_for_with_params),
      cmocka_unit_test(test_flags_reported),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
