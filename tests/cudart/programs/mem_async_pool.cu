// Stream-ordered allocation as frameworks use it: a caching-allocator style loop that allocates
// and frees temporaries on a stream every iteration (PyTorch's cudaMallocAsync backend), the
// device's pools and their attributes, a pool of one's own, and the same pattern captured into a
// graph (allocation and free become graph memory nodes) and replayed.
#include "check.h"

#include <cstdint>
#include <vector>

__global__ void iota(float *x, int n, float base) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = base + float(i);
}

__global__ void axpy(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

static uint64_t attr(cudaMemPool_t pool, cudaMemPoolAttr a) {
  uint64_t v = ~uint64_t(0);
  CHECK(cudaMemPoolGetAttribute(pool, a, &v));
  return v;
}

int main() {
  const int n = 1024;
  const size_t bytes = n * sizeof(float);
  std::vector<float> host(n);

  cudaMemPool_t pool, current;
  CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
  CHECK(cudaDeviceGetMemPool(&current, 0));
  EXPECT(pool == current);
  // What PyTorch does first: keep freed memory in the pool instead of giving it back.
  uint64_t threshold = UINT64_MAX;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  EXPECT(attr(pool, cudaMemPoolAttrReleaseThreshold) == UINT64_MAX);
  int reuse = 0;
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &reuse));
  EXPECT(reuse == 1);
  EXPECT(attr(pool, cudaMemPoolAttrUsedMemCurrent) == 0);

  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // 1. Temporaries allocated and freed on the stream, every iteration.
  for (int it = 0; it < 3; it++) {
    float *x, *y;
    CHECK(cudaMallocAsync(reinterpret_cast<void **>(&x), bytes, s));
    CHECK(cudaMallocAsync(reinterpret_cast<void **>(&y), bytes, s));
    EXPECT(attr(pool, cudaMemPoolAttrUsedMemCurrent) == 2 * bytes);
    EXPECT(attr(pool, cudaMemPoolAttrReservedMemCurrent) >= 2 * bytes);
    iota<<<n / 256, 256, 0, s>>>(x, n, float(it));
    CHECK(cudaMemsetAsync(y, 0, bytes, s));
    axpy<<<n / 256, 256, 0, s>>>(y, x, 2.0f, n);
    CHECK(cudaMemcpyAsync(host.data(), y, bytes, cudaMemcpyDeviceToHost, s));
    CHECK(cudaFreeAsync(x, s));
    CHECK(cudaFreeAsync(y, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; i++) EXPECT(host[i] == 2.0f * (float(it) + float(i)));
  }
  EXPECT(attr(pool, cudaMemPoolAttrUsedMemCurrent) == 0);
  EXPECT(attr(pool, cudaMemPoolAttrUsedMemHigh) == 2 * bytes);
  uint64_t zero = 0;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero)); // reset to the current use
  EXPECT(attr(pool, cudaMemPoolAttrUsedMemHigh) == 0);
  CHECK(cudaMemPoolTrimTo(pool, 0));

  // cudaFree also frees what cudaMallocAsync gave (it waits for the device first).
  float *z;
  CHECK(cudaMallocAsync(reinterpret_cast<void **>(&z), bytes, 0));
  iota<<<n / 256, 256>>>(z, n, 1.0f);
  CHECK(cudaFree(z));
  EXPECT(attr(pool, cudaMemPoolAttrUsedMemCurrent) == 0);

  // 2. A pool of one's own, explicitly and then as the device's current pool.
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t mine;
  CHECK(cudaMemPoolCreate(&mine, &props));
  float *m1, *m2;
  CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void **>(&m1), bytes, mine, s));
  EXPECT(attr(mine, cudaMemPoolAttrUsedMemCurrent) == bytes);
  EXPECT(attr(pool, cudaMemPoolAttrUsedMemCurrent) == 0);
  CHECK(cudaDeviceSetMemPool(0, mine));
  CHECK(cudaDeviceGetMemPool(&current, 0));
  EXPECT(current == mine);
  CHECK(cudaMallocAsync(reinterpret_cast<void **>(&m2), 3 * bytes, s));
  EXPECT(attr(mine, cudaMemPoolAttrUsedMemCurrent) == 4 * bytes);
  CHECK(cudaFreeAsync(m1, s));
  CHECK(cudaFreeAsync(m2, s));
  CHECK(cudaStreamSynchronize(s));
  EXPECT(attr(mine, cudaMemPoolAttrUsedMemCurrent) == 0);
  EXPECT(attr(mine, cudaMemPoolAttrUsedMemHigh) == 4 * bytes);
  CHECK(cudaMemPoolDestroy(mine)); // the device's current pool goes back to the default one
  CHECK(cudaDeviceGetMemPool(&current, 0));
  EXPECT(current == pool);
  // CUDA 13's names for the same pools, by location.
  cudaMemLocation dev0 = {cudaMemLocationTypeDevice, 0}, host_loc = {cudaMemLocationTypeHost, 0};
  CHECK(cudaMemGetDefaultMemPool(&current, &dev0, cudaMemAllocationTypePinned));
  EXPECT(current == pool);
  CHECK(cudaMemGetMemPool(&current, &dev0, cudaMemAllocationTypePinned));
  EXPECT(current == pool);
  CHECK_ERROR(cudaMemGetMemPool(&current, &host_loc, cudaMemAllocationTypeInvalid), cudaErrorInvalidValue);

  // 3. The iteration captured once: allocation and free become graph memory nodes; the graph is
  //    replayed with the results landing in host memory each time.
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  float *t;
  CHECK(cudaMallocAsync(reinterpret_cast<void **>(&t), bytes, s));
  iota<<<n / 256, 256, 0, s>>>(t, n, 5.0f);
  CHECK(cudaMemcpyAsync(host.data(), t, bytes, cudaMemcpyDeviceToHost, s));
  CHECK(cudaFreeAsync(t, s));
  CHECK(cudaStreamEndCapture(s, &graph));
  size_t count = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  EXPECT(count == 4);
  std::vector<cudaGraphNode_t> nodes(count);
  CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  int allocs = 0, frees = 0, kernels = 0, copies = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    CHECK(cudaGraphNodeGetType(node, &type));
    allocs += type == cudaGraphNodeTypeMemAlloc;
    frees += type == cudaGraphNodeTypeMemFree;
    kernels += type == cudaGraphNodeTypeKernel;
    copies += type == cudaGraphNodeTypeMemcpy;
  }
  EXPECT(allocs == 1 && frees == 1 && kernels == 1 && copies == 1);
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; replay++) {
    for (int i = 0; i < n; i++) host[i] = -1.0f;
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; i++) EXPECT(host[i] == 5.0f + float(i));
  }

  // Errors: CUDA's codes for a bad pool, attribute or request.
  CHECK_ERROR(cudaMemPoolDestroy(pool), cudaErrorInvalidValue); // the default pool stays
  CHECK_ERROR(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &zero), cudaErrorInvalidValue);
  uint64_t one = 1;
  CHECK_ERROR(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &one), cudaErrorInvalidValue);
  CHECK_ERROR(cudaMemPoolGetAttribute(pool, (cudaMemPoolAttr)99, &one), cudaErrorInvalidValue);
  CHECK_ERROR(cudaDeviceGetDefaultMemPool(&current, 1), cudaErrorInvalidDevice);
  props.location.id = 3;
  CHECK_ERROR(cudaMemPoolCreate(&mine, &props), cudaErrorInvalidDevice);
  CHECK_ERROR(cudaFreeAsync(host.data(), s), cudaErrorInvalidValue);
  CHECK_ERROR(cudaMallocFromPoolAsync(reinterpret_cast<void **>(&z), bytes, nullptr, s), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);

  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(s));
  return passed();
}
