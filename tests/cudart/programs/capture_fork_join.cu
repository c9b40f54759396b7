// The canonical fork/join capture: an origin stream forks work to two more streams with an
// event, joins them back with two more, and the capture becomes a diamond graph, checked node by
// node and edge by edge, then instantiated and launched twice. Also the capture information a
// library reads while capturing (cudaStreamGetCaptureInfo with CUDA 13's edge data), rewiring
// with cudaStreamUpdateCaptureDependencies, and capturing into an existing graph.
#include "check.h"

#include <algorithm>
#include <vector>

__global__ void init(float *x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] += 1.0f;
}
// Each branch gets its own input: the race check takes a kernel's pointer arguments as written.
__global__ void split(float *x, float *x2, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x2[i] = x[i] += 1.0f;
}
__global__ void square(const float *x, float *y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = x[i] * x[i];
}
__global__ void triple(const float *x, float *y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 3.0f * x[i];
}
__global__ void sum(const float *a, const float *b, float *z, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) z[i] = a[i] + b[i];
}

static size_t index_of(const std::vector<cudaGraphNode_t> &v, cudaGraphNode_t n) {
  return size_t(std::find(v.begin(), v.end(), n) - v.begin());
}

int main() {
  const int n = 1000;
  float *x, *x2, *y1, *y2, *z;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&x2, n * sizeof(float)));
  CHECK(cudaMalloc(&y1, n * sizeof(float)));
  CHECK(cudaMalloc(&y2, n * sizeof(float)));
  CHECK(cudaMalloc(&z, n * sizeof(float)));
  std::vector<float> h(n, 0.0f);
  for (int i = 0; i < n; i++) h[i] = float(i % 10);
  CHECK(cudaMemcpy(x, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  cudaStream_t s0, s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t fork, join1, join2;
  CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&join1, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&join2, cudaEventDisableTiming));

  // ---- The diamond: split -> (square on s1, triple on s2) -> sum.
  CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  split<<<4, 128, 0, s0>>>(x, x2, n);
  CHECK(cudaEventRecord(fork, s0));
  CHECK(cudaStreamWaitEvent(s1, fork, 0));
  CHECK(cudaStreamWaitEvent(s2, fork, 0));
  square<<<4, 128, 0, s1>>>(x, y1, n);
  triple<<<4, 128, 0, s2>>>(x2, y2, n);
  // The forked streams are part of the same capture sequence.
  enum cudaStreamCaptureStatus st0, st1;
  unsigned long long id0 = 0, id1 = 1;
  CHECK(cudaStreamGetCaptureInfo(s0, &st0, &id0));
  CHECK(cudaStreamGetCaptureInfo(s1, &st1, &id1));
  EXPECT(st0 == cudaStreamCaptureStatusActive && st1 == cudaStreamCaptureStatusActive && id0 == id1 && id0 != 0);
  CHECK(cudaEventRecord(join1, s1));
  CHECK(cudaEventRecord(join2, s2));
  CHECK(cudaStreamWaitEvent(s0, join1, 0));
  CHECK(cudaStreamWaitEvent(s0, join2, 0));
  // The next node on s0 will depend on split and the two branches (a join is a plain union of
  // dependency sets, as the driver makes it), with default edge data.
  cudaGraph_t capturing = nullptr;
  const cudaGraphNode_t *deps = nullptr;
  const cudaGraphEdgeData *edge_data = nullptr;
  size_t num_deps = 0;
  CHECK(cudaStreamGetCaptureInfo(s0, &st0, nullptr, &capturing, &deps, &edge_data, &num_deps));
  EXPECT(capturing != nullptr && num_deps == 3 && deps != nullptr && edge_data != nullptr);
  for (size_t i = 0; i < num_deps; i++)
    EXPECT(edge_data[i].type == cudaGraphDependencyTypeDefault && edge_data[i].from_port == 0 &&
           edge_data[i].to_port == 0);
  cudaGraphNode_t branch[2] = {deps[1], deps[2]};
  CHECK_ERROR(cudaStreamGetCaptureInfo(s0, &st0, nullptr, nullptr, nullptr, &edge_data, &num_deps),
              cudaErrorInvalidValue); // edge data without the dependencies
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);
  sum<<<4, 128, 0, s0>>>(y1, y2, z, n);
  CHECK(cudaGetLastError());
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamEndCapture(s0, &graph));
  EXPECT(graph == capturing);
  CHECK(cudaStreamIsCapturing(s1, &st1));
  EXPECT(st1 == cudaStreamCaptureStatusNone);

  // Four kernel nodes, one root, five edges: split->square, split->triple, square->sum,
  // triple->sum and the redundant split->sum.
  size_t count = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  EXPECT(count == 4);
  std::vector<cudaGraphNode_t> nodes(count);
  CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    CHECK(cudaGraphNodeGetType(node, &type));
    EXPECT(type == cudaGraphNodeTypeKernel);
  }
  size_t roots = 0;
  CHECK(cudaGraphGetRootNodes(graph, nullptr, &roots));
  EXPECT(roots == 1);
  cudaGraphNode_t root;
  CHECK(cudaGraphGetRootNodes(graph, &root, &roots));
  size_t num_edges = 0;
  CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &num_edges));
  EXPECT(num_edges == 5);
  std::vector<cudaGraphNode_t> from(num_edges), to(num_edges);
  CHECK(cudaGraphGetEdges(graph, from.data(), to.data(), nullptr, &num_edges));
  size_t r = index_of(nodes, root), b0 = index_of(nodes, branch[0]), b1 = index_of(nodes, branch[1]);
  EXPECT(r < 4 && b0 < 4 && b1 < 4 && b0 != b1 && r != b0 && r != b1);
  size_t last = 6 - r - b0 - b1; // the fourth index
  std::vector<int> seen(16, 0);
  for (size_t i = 0; i < num_edges; i++) seen[index_of(nodes, from[i]) * 4 + index_of(nodes, to[i])]++;
  EXPECT(seen[r * 4 + b0] == 1 && seen[r * 4 + b1] == 1 && seen[b0 * 4 + last] == 1 && seen[b1 * 4 + last] == 1 &&
         seen[r * 4 + last] == 1);

  // Launched twice: x += 1 each time, z = x^2 + 3x.
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, s0));
  CHECK(cudaGraphLaunch(exec, s0));
  CHECK(cudaStreamSynchronize(s0));
  CHECK(cudaMemcpy(h.data(), z, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) {
    float v = float(i % 10) + 2.0f;
    EXPECT(h[i] == v * v + 3.0f * v);
  }
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));

  // ---- Rewiring: a, b on s0, then the next node depends on a alone (b stays a leaf).
  CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
  init<<<1, 64, 0, s0>>>(x, n);
  CHECK(cudaStreamGetCaptureInfo(s0, &st0, nullptr, nullptr, &deps, nullptr, &num_deps));
  EXPECT(num_deps == 1);
  cudaGraphNode_t a = deps[0];
  square<<<1, 64, 0, s0>>>(x, y1, n);
  cudaGraphEdgeData default_edge{};
  CHECK(cudaStreamUpdateCaptureDependencies(s0, &a, &default_edge, 1, cudaStreamSetCaptureDependencies));
  CHECK(cudaStreamGetCaptureInfo(s0, &st0, nullptr, nullptr, &deps, nullptr, &num_deps));
  EXPECT(num_deps == 1 && deps[0] == a);
  cudaGraphEdgeData port{};
  port.from_port = 1; // gcap's graphs have no edge data
  CHECK_ERROR(cudaStreamUpdateCaptureDependencies(s0, &a, &port, 1, cudaStreamAddCaptureDependencies),
              cudaErrorNotSupported);
  CHECK_ERROR(cudaStreamUpdateCaptureDependencies(s0, &a, nullptr, 1, 7u), cudaErrorInvalidValue);
  triple<<<1, 64, 0, s0>>>(x, y2, n);
  CHECK(cudaStreamEndCapture(s0, &graph));
  CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &num_edges));
  EXPECT(count == 3 && num_edges == 2);
  cudaGraphNode_t after_a[4];
  size_t num_after = 4;
  CHECK(cudaGraphNodeGetDependentNodes(a, after_a, nullptr, &num_after));
  EXPECT(num_after == 2);
  CHECK(cudaGraphDestroy(graph));

  // ---- Capturing into an existing graph, after a node it already has.
  cudaGraph_t existing;
  cudaGraphNode_t first;
  CHECK(cudaGraphCreate(&existing, 0));
  CHECK(cudaGraphAddEmptyNode(&first, existing, nullptr, 0));
  CHECK(cudaStreamBeginCaptureToGraph(s1, existing, &first, nullptr, 1, cudaStreamCaptureModeRelaxed));
  init<<<1, 64, 0, s1>>>(x, n);
  cudaGraph_t returned = nullptr;
  CHECK(cudaStreamEndCapture(s1, &returned));
  EXPECT(returned == existing);
  CHECK(cudaGraphGetNodes(existing, nullptr, &count));
  CHECK(cudaGraphGetEdges(existing, nullptr, nullptr, nullptr, &num_edges));
  EXPECT(count == 2 && num_edges == 1);
  CHECK(cudaGraphDestroy(existing));

  CHECK(cudaEventDestroy(fork));
  CHECK(cudaEventDestroy(join1));
  CHECK(cudaEventDestroy(join2));
  CHECK(cudaStreamDestroy(s0));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFree(x));
  CHECK(cudaFree(x2));
  CHECK(cudaFree(y1));
  CHECK(cudaFree(y2));
  CHECK(cudaFree(z));
  return passed();
}
