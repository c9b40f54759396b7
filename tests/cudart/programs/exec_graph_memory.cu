// Graph memory: cudaMallocAsync / cudaFreeAsync inside a capture become allocation and free
// nodes; a graph that frees its own scratch buffer is replayed; a graph whose allocation
// outlives it is relaunched with cudaGraphInstantiateFlagAutoFreeOnLaunch (and refused without
// it); the device's graph memory attributes and cudaDeviceGraphMemTrim.
#include "check.h"

#include <vector>

__global__ void fill(int *p, int base, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = base + i;
}

__global__ void accumulate(long long *acc, const int *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) acc[i] += p[i];
}

static unsigned long long attribute(cudaGraphMemAttributeType a) {
  unsigned long long v = ~0ull;
  CHECK(cudaDeviceGetGraphMemAttribute(0, a, &v));
  return v;
}

int main() {
  const int n = 4096;
  const size_t bytes = n * sizeof(int);
  long long *acc;
  CHECK(cudaMalloc(&acc, n * sizeof(long long)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMemsetAsync(acc, 0, n * sizeof(long long), s));

  // A step with a scratch buffer of its own: alloc -> fill -> accumulate -> free.
  cudaGraph_t scratch;
  int *tmp = nullptr;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CHECK(cudaMallocAsync(&tmp, bytes, s));
  fill<<<n / 256, 256, 0, s>>>(tmp, 10, n);
  accumulate<<<n / 256, 256, 0, s>>>(acc, tmp, n);
  CHECK(cudaFreeAsync(tmp, s));
  CHECK(cudaStreamEndCapture(s, &scratch));
  EXPECT(tmp != nullptr);

  size_t count = 0;
  CHECK(cudaGraphGetNodes(scratch, nullptr, &count));
  EXPECT(count == 4);
  std::vector<cudaGraphNode_t> nodes(count);
  CHECK(cudaGraphGetNodes(scratch, nodes.data(), &count));
  int allocs = 0, frees = 0, kernels = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType t;
    CHECK(cudaGraphNodeGetType(node, &t));
    if (t == cudaGraphNodeTypeMemAlloc) {
      allocs++;
      cudaMemAllocNodeParams p = {};
      CHECK(cudaGraphMemAllocNodeGetParams(node, &p));
      EXPECT(p.dptr == tmp && p.bytesize == bytes);
    } else if (t == cudaGraphNodeTypeMemFree) {
      frees++;
      void *freed = nullptr;
      CHECK(cudaGraphMemFreeNodeGetParams(node, &freed));
      EXPECT(freed == tmp);
    } else if (t == cudaGraphNodeTypeKernel) {
      kernels++;
    }
  }
  EXPECT(allocs == 1 && frees == 1 && kernels == 2);

  cudaGraphExec_t scratch_exec;
  CHECK(cudaGraphInstantiate(&scratch_exec, scratch, 0));
  for (int k = 0; k < 3; k++) CHECK(cudaGraphLaunch(scratch_exec, s));
  CHECK(cudaStreamSynchronize(s));
  std::vector<long long> h(n);
  CHECK(cudaMemcpy(h.data(), acc, n * sizeof(long long), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(h[i] == 3LL * (10 + i));
  EXPECT(attribute(cudaGraphMemAttrReservedMemCurrent) >= bytes);
  EXPECT(attribute(cudaGraphMemAttrUsedMemHigh) >= bytes);
  EXPECT(attribute(cudaGraphMemAttrReservedMemHigh) >= attribute(cudaGraphMemAttrReservedMemCurrent));

  // An allocation the graph hands out: it stays allocated after the launch.
  cudaGraph_t producer;
  int *out = nullptr;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CHECK(cudaMallocAsync(&out, 2 * bytes, s));
  fill<<<2 * n / 256, 256, 0, s>>>(out, 7, 2 * n);
  CHECK(cudaStreamEndCapture(s, &producer));
  cudaGraphExec_t plain;
  CHECK(cudaGraphInstantiate(&plain, producer, 0));
  CHECK(cudaGraphLaunch(plain, s));
  CHECK(cudaStreamSynchronize(s));
  unsigned long long used = attribute(cudaGraphMemAttrUsedMemCurrent);
  EXPECT(used >= 2 * bytes);
  EXPECT(attribute(cudaGraphMemAttrReservedMemCurrent) >= used);
  std::vector<int> o(2 * n);
  CHECK(cudaMemcpy(o.data(), out, 2 * bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 2 * n; i++) EXPECT(o[i] == 7 + i);
  // Its allocation is still allocated: a second launch is refused, and leaves it as it was.
  CHECK_ERROR(cudaGraphLaunch(plain, s), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);
  // One executable at a time for a graph with memory nodes.
  cudaGraphExec_t second = nullptr;
  EXPECT(cudaGraphInstantiate(&second, producer, 0) != cudaSuccess);
  EXPECT(second == nullptr);
  (void)cudaGetLastError();
  CHECK(cudaFreeAsync(out, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaGraphExecDestroy(plain));

  // With AutoFreeOnLaunch each launch frees the previous launch's allocation.
  cudaGraphExec_t autofree;
  CHECK(cudaGraphInstantiateWithFlags(&autofree, producer, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  unsigned long long flags = 0;
  CHECK(cudaGraphExecGetFlags(autofree, &flags));
  EXPECT(flags == cudaGraphInstantiateFlagAutoFreeOnLaunch);
  for (int k = 0; k < 3; k++) CHECK(cudaGraphLaunch(autofree, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaMemcpy(o.data(), out, 2 * bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 2 * n; i++) EXPECT(o[i] == 7 + i);
  CHECK(cudaFreeAsync(out, s));
  CHECK(cudaStreamSynchronize(s));

  // The high marks reset to the current figures; only they can be set, and only to 0.
  unsigned long long zero = 0, one = 1;
  CHECK(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero));
  EXPECT(attribute(cudaGraphMemAttrUsedMemHigh) == attribute(cudaGraphMemAttrUsedMemCurrent));
  CHECK(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &zero));
  EXPECT(attribute(cudaGraphMemAttrReservedMemHigh) == attribute(cudaGraphMemAttrReservedMemCurrent));
  CHECK_ERROR(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &one), cudaErrorInvalidValue);
  CHECK_ERROR(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &zero), cudaErrorInvalidValue);
  int devices = 0;
  CHECK(cudaGetDeviceCount(&devices));
  unsigned long long v;
  CHECK_ERROR(cudaDeviceGetGraphMemAttribute(devices, cudaGraphMemAttrUsedMemCurrent, &v), cudaErrorInvalidDevice);

  // Nothing is allocated once every executable is gone; trimming gives the reservation back.
  CHECK(cudaGraphExecDestroy(autofree));
  CHECK(cudaGraphExecDestroy(scratch_exec));
  CHECK(cudaGraphDestroy(producer));
  CHECK(cudaGraphDestroy(scratch));
  CHECK(cudaDeviceSynchronize());
  EXPECT(attribute(cudaGraphMemAttrUsedMemCurrent) == 0);
  CHECK(cudaDeviceGraphMemTrim(0));
  EXPECT(attribute(cudaGraphMemAttrReservedMemCurrent) == 0);
  EXPECT(attribute(cudaGraphMemAttrReservedMemHigh) >= 2 * bytes);
  CHECK_ERROR(cudaDeviceGraphMemTrim(devices), cudaErrorInvalidDevice);

  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(acc));
  return passed();
}
