// What programs print when a call fails: cudaGetErrorName and cudaGetErrorString, as the
// CHECK macros of every CUDA code base use them, for the runtime's codes and for codes it
// does not know. Neither changes the thread's last error.
#include "check.h"

#include <cstring>
#include <set>
#include <string>

static void expect_text(cudaError_t e, const char *name, const char *message) {
  const char *n = cudaGetErrorName(e), *m = cudaGetErrorString(e);
  if (!n || !m || std::strcmp(n, name) != 0 || std::strcmp(m, message) != 0) {
    std::fprintf(stderr, "error %d: \"%s\" / \"%s\", expected \"%s\" / \"%s\"\n", (int)e, n ? n : "(null)",
                 m ? m : "(null)", name, message);
    std::exit(1);
  }
}

int main() {
  expect_text(cudaSuccess, "cudaSuccess", "no error");
  expect_text(cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument");
  expect_text(cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory");
  expect_text(cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument");
  expect_text(cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal");
  expect_text(cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function");
  expect_text(cudaErrorNoKernelImageForDevice, "cudaErrorNoKernelImageForDevice",
              "no kernel image is available for execution on the device");
  expect_text(cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle");
  expect_text(cudaErrorNotReady, "cudaErrorNotReady", "device not ready");
  expect_text(cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered");
  expect_text(cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered");
  expect_text(cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure");
  expect_text(cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported");
  expect_text(cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
              "operation not permitted when stream is capturing");
  expect_text(cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
              "operation failed due to a previous error during capture");
  expect_text(cudaErrorUnknown, "cudaErrorUnknown", "unknown error");
  // Codes the runtime does not know.
  expect_text((cudaError_t)12345, "unrecognized error code", "unrecognized error code");
  expect_text((cudaError_t)-1, "unrecognized error code", "unrecognized error code");
  expect_text((cudaError_t)10, "unrecognized error code", "unrecognized error code");

  // Every known code has a name of its own and a message; names read back as their codes.
  std::set<std::string> names;
  int known = 0;
  for (int c = 0; c < 1100; c++) {
    const char *n = cudaGetErrorName((cudaError_t)c), *m = cudaGetErrorString((cudaError_t)c);
    EXPECT(n && m && *m);
    if (std::strcmp(n, "unrecognized error code") == 0) continue;
    EXPECT(std::strncmp(n, "cuda", 4) == 0);
    EXPECT(names.insert(n).second);
    known++;
  }
  std::printf("%d codes known\n", known);
  EXPECT(known > 100);

  // Looking up a name is no runtime call: the last error stays as it was.
  void *p = nullptr;
  CHECK_ERROR(cudaMalloc(&p, (size_t)1 << 60), cudaErrorMemoryAllocation);
  std::printf("cudaMalloc of 1 EiB: %s: %s\n", cudaGetErrorName(cudaPeekAtLastError()),
              cudaGetErrorString(cudaPeekAtLastError()));
  (void)cudaGetErrorString((cudaError_t)12345);
  CHECK_ERROR(cudaGetLastError(), cudaErrorMemoryAllocation);
  CHECK(cudaGetLastError());
  return passed();
}
