// Stream priorities as programs set them up: ask the device for its range, make a high- and a
// low-priority stream (values outside the range are clamped), read them back through
// cudaStreamGetPriority and the priority stream attribute, run work on both, and capture kernels
// whose nodes take their stream's priority.
#include "check.h"

#include <vector>

__global__ void scale(float *x, float f, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] = f * float(i);
}

int main() {
  int least = 99, greatest = 99;
  CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  EXPECT(least == 0 && greatest == -5);
  CHECK(cudaDeviceGetStreamPriorityRange(nullptr, &greatest)); // either may be NULL
  EXPECT(greatest == -5);

  cudaStream_t high, low, clamped_high, clamped_low, plain;
  CHECK(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest));
  CHECK(cudaStreamCreateWithPriority(&low, cudaStreamDefault, least));
  CHECK(cudaStreamCreateWithPriority(&clamped_high, cudaStreamNonBlocking, -100));
  CHECK(cudaStreamCreateWithPriority(&clamped_low, cudaStreamNonBlocking, 7));
  CHECK(cudaStreamCreate(&plain));
  int p = 99;
  CHECK(cudaStreamGetPriority(high, &p));
  EXPECT(p == -5);
  CHECK(cudaStreamGetPriority(low, &p));
  EXPECT(p == 0);
  CHECK(cudaStreamGetPriority(clamped_high, &p));
  EXPECT(p == -5);
  CHECK(cudaStreamGetPriority(clamped_low, &p));
  EXPECT(p == 0);
  CHECK(cudaStreamGetPriority(plain, &p));
  EXPECT(p == 0);
  CHECK(cudaStreamGetPriority(0, &p));
  EXPECT(p == 0);
  unsigned flags = 99;
  CHECK(cudaStreamGetFlags(low, &flags));
  EXPECT(flags == cudaStreamDefault);
  CHECK(cudaStreamGetFlags(high, &flags));
  EXPECT(flags == cudaStreamNonBlocking);

  // The priority as a stream attribute.
  cudaStreamAttrValue v{};
  CHECK(cudaStreamGetAttribute(high, cudaStreamAttributePriority, &v));
  EXPECT(v.priority == -5);
  v.priority = -5;
  CHECK(cudaStreamSetAttribute(high, cudaStreamAttributePriority, &v)); // the priority it has
  CHECK(cudaStreamCopyAttributes(plain, low));
  CHECK_ERROR(cudaStreamGetPriority(high, nullptr), cudaErrorInvalidValue);
  CHECK_ERROR(cudaStreamCreateWithPriority(nullptr, 0, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);

  // Work on both priorities, joined by the legacy stream's copy (low is blocking; high is
  // synchronized explicitly).
  const int n = 1024;
  float *a, *b;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  scale<<<4, 128, 0, low>>>(a, 2.0f, n);
  scale<<<4, 128, 0, high>>>(b, 3.0f, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(high));
  std::vector<float> ha(n), hb(n);
  CHECK(cudaMemcpy(ha.data(), a, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hb.data(), b, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(ha[i] == 2.0f * float(i) && hb[i] == 3.0f * float(i));

  // A kernel captured on a stream takes the stream's priority as its node's priority.
  cudaGraph_t graph;
  const cudaGraphNode_t *deps = nullptr;
  size_t num = 0;
  enum cudaStreamCaptureStatus status;
  cudaKernelNodeAttrValue attr{};
  CHECK(cudaStreamBeginCapture(high, cudaStreamCaptureModeGlobal));
  scale<<<4, 128, 0, high>>>(a, 5.0f, n);
  CHECK(cudaStreamGetCaptureInfo(high, &status, nullptr, nullptr, &deps, nullptr, &num));
  EXPECT(num == 1);
  CHECK(cudaGraphKernelNodeGetAttribute(deps[0], cudaLaunchAttributePriority, &attr));
  EXPECT(attr.priority == -5);
  CHECK(cudaStreamEndCapture(high, &graph));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamBeginCapture(plain, cudaStreamCaptureModeGlobal));
  scale<<<4, 128, 0, plain>>>(a, 5.0f, n);
  CHECK(cudaStreamGetCaptureInfo(plain, &status, nullptr, nullptr, &deps, nullptr, &num));
  CHECK(cudaGraphKernelNodeGetAttribute(deps[0], cudaLaunchAttributePriority, &attr));
  EXPECT(attr.priority == 0);
  CHECK(cudaStreamEndCapture(plain, &graph));
  CHECK(cudaGraphDestroy(graph));

  CHECK(cudaStreamDestroy(high));
  CHECK(cudaStreamDestroy(low));
  CHECK(cudaStreamDestroy(clamped_high));
  CHECK(cudaStreamDestroy(clamped_low));
  CHECK(cudaStreamDestroy(plain));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  return passed();
}
