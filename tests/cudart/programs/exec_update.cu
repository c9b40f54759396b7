// Changing an instantiated graph without instantiating it again: whole-graph update with
// cudaGraphExecUpdate (a success, and each kind of refusal with its result info), the per-node
// setter cudaGraphExecKernelNodeSetParams, and switching a kernel node off and on.
#include "check.h"

#include <vector>

__global__ void add(int *x, int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += v;
}

__global__ void mul(int *x, int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= v;
}

static const int n = 256;

static cudaKernelNodeParams kernel(void (*f)(int *, int, int), void **args) {
  cudaKernelNodeParams p = {};
  p.func = (void *)f;
  p.gridDim = dim3(n / 64);
  p.blockDim = dim3(64);
  p.kernelParams = args;
  return p;
}

// add(v1) -> mul(v2), built node by node.
static cudaGraph_t chain(int **x, int *v1, int *v2, cudaGraphNode_t *first, cudaGraphNode_t *second) {
  static int count = n;
  cudaGraph_t g;
  CHECK(cudaGraphCreate(&g, 0));
  void *args1[] = {x, v1, &count};
  void *args2[] = {x, v2, &count};
  cudaKernelNodeParams p1 = kernel(add, args1), p2 = kernel(mul, args2);
  CHECK(cudaGraphAddKernelNode(first, g, nullptr, 0, &p1));
  CHECK(cudaGraphAddKernelNode(second, g, first, 1, &p2));
  return g;
}

static void expect_all(const int *dx, int value) {
  std::vector<int> h(n);
  CHECK(cudaMemcpy(h.data(), dx, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(h[i] == value);
}

int main() {
  int *dx, *dy;
  CHECK(cudaMalloc(&dx, n * sizeof(int)));
  CHECK(cudaMalloc(&dy, n * sizeof(int)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMemsetAsync(dx, 0, n * sizeof(int), s));

  int v1 = 1, v2 = 3;
  cudaGraphNode_t a, m;
  cudaGraph_t g = chain(&dx, &v1, &v2, &a, &m);
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, g, 0));
  CHECK(cudaGraphLaunch(exec, s));  // (0 + 1) * 3
  CHECK(cudaStreamSynchronize(s));
  expect_all(dx, 3);

  // Same topology, new values and a new target: the update succeeds.
  int w1 = 5, w2 = 2;
  cudaGraphNode_t a2, m2;
  cudaGraph_t g2 = chain(&dy, &w1, &w2, &a2, &m2);
  CHECK(cudaMemsetAsync(dy, 0, n * sizeof(int), s));
  cudaGraphExecUpdateResultInfo info;
  info.result = cudaGraphExecUpdateError;
  info.errorNode = info.errorFromNode = a;
  CHECK(cudaGraphExecUpdate(exec, g2, &info));
  EXPECT(info.result == cudaGraphExecUpdateSuccess);
  EXPECT(info.errorNode == nullptr && info.errorFromNode == nullptr);
  CHECK(cudaGraphLaunch(exec, s));  // y = (0 + 5) * 2; x untouched
  CHECK(cudaStreamSynchronize(s));
  expect_all(dy, 10);
  expect_all(dx, 3);

  // A third kernel: the node counts differ, no node is named.
  cudaGraph_t g3 = chain(&dx, &v1, &v2, &a2, &m2);
  {
    static int count = n;
    int v3 = 7;
    void *args[] = {&dx, &v3, &count};
    cudaKernelNodeParams p = kernel(add, args);
    cudaGraphNode_t extra;
    CHECK(cudaGraphAddKernelNode(&extra, g3, &m2, 1, &p));
  }
  CHECK_ERROR(cudaGraphExecUpdate(exec, g3, &info), cudaErrorGraphExecUpdateFailure);
  EXPECT(info.result == cudaGraphExecUpdateErrorTopologyChanged);
  EXPECT(info.errorNode == nullptr);

  // The same nodes without the edge: mul's dependency count differs, mul is named.
  cudaGraph_t g4;
  cudaGraphNode_t a4, m4;
  {
    static int count = n;
    void *args1[] = {&dx, &v1, &count};
    void *args2[] = {&dx, &v2, &count};
    cudaKernelNodeParams p1 = kernel(add, args1), p2 = kernel(mul, args2);
    CHECK(cudaGraphCreate(&g4, 0));
    CHECK(cudaGraphAddKernelNode(&a4, g4, nullptr, 0, &p1));
    CHECK(cudaGraphAddKernelNode(&m4, g4, nullptr, 0, &p2));
  }
  CHECK_ERROR(cudaGraphExecUpdate(exec, g4, &info), cudaErrorGraphExecUpdateFailure);
  EXPECT(info.result == cudaGraphExecUpdateErrorTopologyChanged);
  EXPECT(info.errorNode == m4);

  // The second node a memset instead of a kernel.
  cudaGraph_t g5;
  cudaGraphNode_t a5, f5;
  {
    static int count = n;
    void *args1[] = {&dx, &v1, &count};
    cudaKernelNodeParams p1 = kernel(add, args1);
    cudaMemsetParams f = {};
    f.dst = dx;
    f.value = 0;
    f.elementSize = 4;
    f.width = n;
    f.height = 1;
    CHECK(cudaGraphCreate(&g5, 0));
    CHECK(cudaGraphAddKernelNode(&a5, g5, nullptr, 0, &p1));
    CHECK(cudaGraphAddMemsetNode(&f5, g5, &a5, 1, &f));
  }
  CHECK_ERROR(cudaGraphExecUpdate(exec, g5, &info), cudaErrorGraphExecUpdateFailure);
  EXPECT(info.result == cudaGraphExecUpdateErrorNodeTypeChanged);
  EXPECT(info.errorNode == f5);

  // A copy that changes direction cannot be updated: the parameters changed.
  int host[4] = {0, 0, 0, 0};
  cudaGraph_t c1, c2;
  cudaGraphNode_t cp1, cp2;
  cudaGraphExec_t cexec;
  CHECK(cudaGraphCreate(&c1, 0));
  CHECK(cudaGraphAddMemcpyNode1D(&cp1, c1, nullptr, 0, dy, dx, 4 * sizeof(int), cudaMemcpyDeviceToDevice));
  CHECK(cudaGraphInstantiate(&cexec, c1, 0));
  CHECK(cudaGraphCreate(&c2, 0));
  CHECK(cudaGraphAddMemcpyNode1D(&cp2, c2, nullptr, 0, host, dx, 4 * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK_ERROR(cudaGraphExecUpdate(cexec, c2, &info), cudaErrorGraphExecUpdateFailure);
  EXPECT(info.result == cudaGraphExecUpdateErrorParametersChanged);
  EXPECT(info.errorNode == cp2);

  // The refusals left exec as g2 made it.
  CHECK(cudaGraphLaunch(exec, s));  // y = (10 + 5) * 2
  CHECK(cudaStreamSynchronize(s));
  expect_all(dy, 30);
  expect_all(dx, 3);

  // Per-node setter: exec's mul node (named by g's handle) now multiplies x by 4, and its add
  // node adds 2 to x; the graph g itself is unchanged.
  static int count = n;
  int u1 = 2, u2 = 4;
  void *args1[] = {&dx, &u1, &count};
  void *args2[] = {&dx, &u2, &count};
  cudaKernelNodeParams p1 = kernel(add, args1), p2 = kernel(mul, args2);
  CHECK(cudaGraphExecKernelNodeSetParams(exec, a, &p1));
  CHECK(cudaGraphExecKernelNodeSetParams(exec, m, &p2));
  CHECK_ERROR(cudaGraphExecKernelNodeSetParams(exec, a2, &p1), cudaErrorInvalidValue);  // not exec's node
  CHECK(cudaGraphLaunch(exec, s));  // x = (3 + 2) * 4
  CHECK(cudaStreamSynchronize(s));
  expect_all(dx, 20);
  cudaKernelNodeParams back = {};
  CHECK(cudaGraphKernelNodeGetParams(m, &back));
  EXPECT(back.func == (void *)mul && *(int *)back.kernelParams[1] == 3);

  // Switching mul off: the launch only adds; on again: both run.
  unsigned enabled = 7;
  CHECK(cudaGraphNodeGetEnabled(exec, m, &enabled));
  EXPECT(enabled == 1);
  CHECK(cudaGraphNodeSetEnabled(exec, m, 0));
  CHECK(cudaGraphNodeGetEnabled(exec, m, &enabled));
  EXPECT(enabled == 0);
  CHECK(cudaGraphLaunch(exec, s));  // x = 20 + 2
  CHECK(cudaStreamSynchronize(s));
  expect_all(dx, 22);
  CHECK(cudaGraphNodeSetEnabled(exec, m, 1));
  CHECK(cudaGraphLaunch(exec, s));  // x = (22 + 2) * 4
  CHECK(cudaStreamSynchronize(s));
  expect_all(dx, 96);
  CHECK_ERROR(cudaGraphNodeSetEnabled(exec, nullptr, 0), cudaErrorInvalidValue);

  cudaGraph_t graphs[] = {g, g2, g3, g4, g5, c1, c2};
  for (cudaGraph_t x : graphs) CHECK(cudaGraphDestroy(x));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphExecDestroy(cexec));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  EXPECT(host[0] == 0);
  return passed();
}
