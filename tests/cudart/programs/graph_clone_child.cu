// Child graphs and clones: a stage graph (fill, then add) embedded twice in a pipeline, the
// pipeline cloned, the clone edited (edges removed, a node destroyed) and both run; the
// embedded graphs are copies, and cudaGraphNodeFindInClone maps each node to its copy.
#include "check.h"

#include <vector>

__global__ void add(int *v, int k, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] += k;
}

__global__ void twice(int *v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] *= 2;
}

static size_t node_count(cudaGraph_t g) {
  size_t n = 0;
  CHECK(cudaGraphGetNodes(g, nullptr, &n));
  return n;
}

static size_t edge_count(cudaGraph_t g) {
  size_t n = 0;
  CHECK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &n));
  return n;
}

static cudaGraphNodeType type_of(cudaGraphNode_t n) {
  cudaGraphNodeType t;
  CHECK(cudaGraphNodeGetType(n, &t));
  return t;
}

static std::vector<int> read(const int *d, int n) {
  std::vector<int> h(n);
  CHECK(cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
  return h;
}

int main() {
  const int n = 128;
  int *d_v;
  CHECK(cudaMalloc(&d_v, n * sizeof(int)));

  // The stage: v[i] = 5, then v[i] += 1.
  cudaGraph_t stage;
  CHECK(cudaGraphCreate(&stage, 0));
  cudaMemsetParams fill = {};
  fill.dst = d_v;
  fill.value = 5;
  fill.elementSize = sizeof(int);
  fill.width = n;
  fill.height = 1;
  cudaGraphNode_t s_fill, s_add;
  CHECK(cudaGraphAddMemsetNode(&s_fill, stage, nullptr, 0, &fill));
  int one = 1, count = n;
  void *add_args[] = {&d_v, &one, &count};
  cudaKernelNodeParams kp = {};
  kp.func = (void *)add;
  kp.gridDim = dim3(n / 32);
  kp.blockDim = dim3(32);
  kp.kernelParams = add_args;
  CHECK(cudaGraphAddKernelNode(&s_add, stage, &s_fill, 1, &kp));

  // The pipeline: start (empty) -> child(stage) -> twice.
  cudaGraph_t pipe;
  CHECK(cudaGraphCreate(&pipe, 0));
  cudaGraphNode_t start, child, dbl;
  CHECK(cudaGraphAddEmptyNode(&start, pipe, nullptr, 0));
  CHECK(cudaGraphAddChildGraphNode(&child, pipe, &start, 1, stage));
  void *twice_args[] = {&d_v, &count};
  kp.func = (void *)twice;
  kp.kernelParams = twice_args;
  CHECK(cudaGraphAddKernelNode(&dbl, pipe, &child, 1, &kp));
  EXPECT(node_count(pipe) == 3 && edge_count(pipe) == 2);
  EXPECT(type_of(start) == cudaGraphNodeTypeEmpty && type_of(child) == cudaGraphNodeTypeGraph);

  // The node embeds a copy: later edits of `stage` are not seen.
  cudaGraph_t embedded;
  CHECK(cudaGraphChildGraphNodeGetGraph(child, &embedded));
  EXPECT(embedded != stage && node_count(embedded) == 2 && edge_count(embedded) == 1);
  cudaGraphNode_t extra;
  CHECK(cudaGraphAddEmptyNode(&extra, stage, &s_add, 1));
  EXPECT(node_count(stage) == 3 && node_count(embedded) == 2);
  cudaGraphNode_t roots[2] = {};
  size_t nroots = 2;
  CHECK(cudaGraphGetRootNodes(embedded, roots, &nroots));
  EXPECT(nroots == 1 && type_of(roots[0]) == cudaGraphNodeTypeMemset);
  cudaMemsetParams got = {};
  CHECK(cudaGraphMemsetNodeGetParams(roots[0], &got));
  EXPECT(got.dst == d_v && got.value == 5 && got.width == n);

  // Clone the pipeline; every node has its copy, of the same type, with the same edges.
  cudaGraph_t copy;
  CHECK(cudaGraphClone(&copy, pipe));
  EXPECT(node_count(copy) == 3 && edge_count(copy) == 2);
  cudaGraphNode_t c_start, c_child, c_dbl;
  CHECK(cudaGraphNodeFindInClone(&c_start, start, copy));
  CHECK(cudaGraphNodeFindInClone(&c_child, child, copy));
  CHECK(cudaGraphNodeFindInClone(&c_dbl, dbl, copy));
  EXPECT(c_start != start && c_child != child && c_dbl != dbl);
  EXPECT(type_of(c_start) == cudaGraphNodeTypeEmpty && type_of(c_child) == cudaGraphNodeTypeGraph &&
         type_of(c_dbl) == cudaGraphNodeTypeKernel);
  cudaGraphNode_t dep = nullptr;
  size_t ndep = 1;
  CHECK(cudaGraphNodeGetDependencies(c_dbl, &dep, nullptr, &ndep));
  EXPECT(ndep == 1 && dep == c_child);
  cudaGraph_t c_embedded;
  CHECK(cudaGraphChildGraphNodeGetGraph(c_child, &c_embedded));
  EXPECT(c_embedded != embedded && node_count(c_embedded) == 2);
  // A node of another graph, or the clone asked about itself: no copy.
  cudaGraphNode_t none = nullptr;
  CHECK_ERROR(cudaGraphNodeFindInClone(&none, s_add, copy), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphNodeFindInClone(&none, c_start, copy), cudaErrorInvalidValue);
  EXPECT(none == nullptr);

  // Edit the clone: the doubling goes, and so does the edge start -> child.
  cudaGraphNode_t from[] = {c_start}, to[] = {c_child};
  CHECK(cudaGraphRemoveDependencies(copy, from, to, nullptr, 1));
  CHECK_ERROR(cudaGraphRemoveDependencies(copy, from, to, nullptr, 1), cudaErrorInvalidValue);
  CHECK(cudaGraphDestroyNode(c_dbl));
  EXPECT(node_count(copy) == 2 && edge_count(copy) == 0);
  size_t nr = 0;
  CHECK(cudaGraphGetRootNodes(copy, nullptr, &nr));
  EXPECT(nr == 2);
  // The original is untouched.
  EXPECT(node_count(pipe) == 3 && edge_count(pipe) == 2);

  // A node added to the original after the cloning has no copy.
  cudaGraphNode_t late;
  CHECK(cudaGraphAddEmptyNode(&late, pipe, &dbl, 1));
  CHECK_ERROR(cudaGraphNodeFindInClone(&none, late, copy), cudaErrorInvalidValue);

  // Run both: (5 + 1) * 2 and 5 + 1.
  cudaGraphExec_t x_pipe, x_copy;
  CHECK(cudaGraphInstantiate(&x_pipe, pipe, 0));
  CHECK(cudaGraphInstantiate(&x_copy, copy, 0));
  CHECK(cudaGraphLaunch(x_pipe, 0));
  std::vector<int> h = read(d_v, n);
  for (int x : h) EXPECT(x == 12);
  CHECK(cudaGraphLaunch(x_copy, 0));
  h = read(d_v, n);
  for (int x : h) EXPECT(x == 6);

  // The stage embedded again, after the edit: its extra empty node comes along.
  cudaGraphNode_t child2;
  CHECK(cudaGraphAddChildGraphNode(&child2, copy, nullptr, 0, stage));
  cudaGraph_t embedded2;
  CHECK(cudaGraphChildGraphNodeGetGraph(child2, &embedded2));
  EXPECT(node_count(embedded2) == 3 && edge_count(embedded2) == 2);

  CHECK(cudaGraphExecDestroy(x_pipe));
  CHECK(cudaGraphExecDestroy(x_copy));
  CHECK(cudaGraphDestroy(copy));
  CHECK(cudaGraphDestroy(pipe));
  CHECK(cudaGraphDestroy(stage));
  CHECK(cudaFree(d_v));
  return passed();
}
