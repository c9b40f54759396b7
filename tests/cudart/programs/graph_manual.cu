// A graph built by hand, as the CUDA samples' simpleCudaGraphs does: a copy in, two branches (a
// kernel and a memset), a reduction kernel joining them, a copy out and a host node. The graph is
// inspected (nodes, roots, edges, types, dependencies, every parameter getter), run, changed
// through the setters and the generic cudaGraphAddNode, and run again.
#include "check.h"

#include <algorithm>
#include <cstring>
#include <unistd.h>
#include <vector>

__global__ void square(const float *in, float *out, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * in[i] * factor;
}

__global__ void sum(const float *in, float *acc, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) atomicAdd(acc, in[i]);
}

struct Report {
  int calls;
  float seen;
  const float *from;
};

static void CUDART_CB report(void *data) {
  Report *r = static_cast<Report *>(data);
  r->calls++;
  r->seen = *r->from;
}

static bool contains(const std::vector<cudaGraphNode_t> &v, cudaGraphNode_t n) {
  return std::find(v.begin(), v.end(), n) != v.end();
}

int main() {
  const int n = 256;
  std::vector<float> h_in(n);
  for (int i = 0; i < n; i++) h_in[i] = float(i % 8);  // squares sum to 32 * 140 = 4480
  float *d_in, *d_sq, *d_acc;
  CHECK(cudaMalloc(&d_in, n * sizeof(float)));
  CHECK(cudaMalloc(&d_sq, n * sizeof(float)));
  CHECK(cudaMalloc(&d_acc, sizeof(float)));
  float h_out = -1.0f;
  Report rep = {0, 0.0f, &h_out};

  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));

  // A: copy in, with the 3-D parameters the samples use for linear memory.
  cudaMemcpy3DParms copy_in = {};
  copy_in.srcPtr = make_cudaPitchedPtr(h_in.data(), n * sizeof(float), n, 1);
  copy_in.dstPtr = make_cudaPitchedPtr(d_in, n * sizeof(float), n, 1);
  copy_in.extent = make_cudaExtent(n * sizeof(float), 1, 1);
  copy_in.kind = cudaMemcpyHostToDevice;
  cudaGraphNode_t a, b, c, d, e, f;
  CHECK(cudaGraphAddMemcpyNode(&a, graph, nullptr, 0, &copy_in));

  // B: the squares, after A.
  float factor = 1.0f;
  int count = n;
  void *square_args[] = {&d_in, &d_sq, &factor, &count};
  cudaKernelNodeParams kp = {};
  kp.func = (void *)square;
  kp.gridDim = dim3(n / 64);
  kp.blockDim = dim3(64);
  kp.kernelParams = square_args;
  CHECK(cudaGraphAddKernelNode(&b, graph, &a, 1, &kp));

  // C: the accumulator cleared, also after A.
  cudaMemsetParams mp = {};
  mp.dst = d_acc;
  mp.value = 0;
  mp.elementSize = 4;
  mp.width = 1;
  mp.height = 1;
  CHECK(cudaGraphAddMemsetNode(&c, graph, &a, 1, &mp));

  // D: the sum, after B and C.
  void *sum_args[] = {&d_sq, &d_acc, &count};
  cudaKernelNodeParams sp = {};
  sp.func = (void *)sum;
  sp.gridDim = dim3(2);
  sp.blockDim = dim3(32);
  sp.kernelParams = sum_args;
  cudaGraphNode_t bc[] = {b, c};
  CHECK(cudaGraphAddKernelNode(&d, graph, bc, 2, &sp));

  // E: copy out; F: a host node reading it.
  CHECK(cudaGraphAddMemcpyNode1D(&e, graph, &d, 1, &h_out, d_acc, sizeof(float), cudaMemcpyDeviceToHost));
  cudaHostNodeParams hp = {report, &rep};
  CHECK(cudaGraphAddHostNode(&f, graph, &e, 1, &hp));

  // Nodes: NULL counts; a larger array is padded with NULL and the count set; a smaller one is
  // filled and keeps its count.
  size_t num = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &num));
  EXPECT(num == 6);
  std::vector<cudaGraphNode_t> nodes(8, (cudaGraphNode_t)&num);
  num = 8;
  CHECK(cudaGraphGetNodes(graph, nodes.data(), &num));
  EXPECT(num == 6 && nodes[6] == nullptr && nodes[7] == nullptr);
  nodes.resize(6);
  for (cudaGraphNode_t x : {a, b, c, d, e, f}) EXPECT(contains(nodes, x));
  cudaGraphNode_t two[2] = {};
  num = 2;
  CHECK(cudaGraphGetNodes(graph, two, &num));
  EXPECT(num == 2 && contains(nodes, two[0]) && contains(nodes, two[1]) && two[0] != two[1]);

  cudaGraphNode_t roots[3] = {};
  num = 3;
  CHECK(cudaGraphGetRootNodes(graph, roots, &num));
  EXPECT(num == 1 && roots[0] == a && roots[1] == nullptr);

  // Edges, with their (default) edge data.
  size_t num_edges = 0;
  CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &num_edges));
  EXPECT(num_edges == 6);
  cudaGraphNode_t from[6], to[6];
  cudaGraphEdgeData data[6];
  std::memset(data, 0xff, sizeof data);
  CHECK(cudaGraphGetEdges(graph, from, to, data, &num_edges));
  EXPECT(num_edges == 6);
  const cudaGraphNode_t want[6][2] = {{a, b}, {a, c}, {b, d}, {c, d}, {d, e}, {e, f}};
  for (auto &w : want) {
    int found = 0;
    for (int i = 0; i < 6; i++) found += from[i] == w[0] && to[i] == w[1];
    EXPECT(found == 1);
  }
  for (auto &x : data) EXPECT(x.type == cudaGraphDependencyTypeDefault && x.from_port == 0 && x.to_port == 0);
  CHECK_ERROR(cudaGraphGetEdges(graph, nullptr, nullptr, data, &num_edges), cudaErrorInvalidValue);

  // Types and neighbours.
  const cudaGraphNodeType types[] = {cudaGraphNodeTypeMemcpy, cudaGraphNodeTypeKernel, cudaGraphNodeTypeMemset,
                                     cudaGraphNodeTypeKernel, cudaGraphNodeTypeMemcpy, cudaGraphNodeTypeHost};
  cudaGraphNode_t all[] = {a, b, c, d, e, f};
  for (int i = 0; i < 6; i++) {
    cudaGraphNodeType t;
    CHECK(cudaGraphNodeGetType(all[i], &t));
    EXPECT(t == types[i]);
  }
  cudaGraphNode_t deps[4] = {};
  num = 0;
  CHECK(cudaGraphNodeGetDependencies(d, nullptr, nullptr, &num));
  EXPECT(num == 2);
  num = 4;
  CHECK(cudaGraphNodeGetDependencies(d, deps, data, &num));
  EXPECT(num == 2 && ((deps[0] == b && deps[1] == c) || (deps[0] == c && deps[1] == b)) && deps[2] == nullptr);
  EXPECT(data[0].type == 0 && data[1].type == 0);
  num = 4;
  CHECK(cudaGraphNodeGetDependentNodes(a, deps, nullptr, &num));
  EXPECT(num == 2 && ((deps[0] == b && deps[1] == c) || (deps[0] == c && deps[1] == b)));
  num = 4;
  CHECK(cudaGraphNodeGetDependentNodes(f, deps, nullptr, &num));
  EXPECT(num == 0 && deps[0] == nullptr);

  // The getters give back what was set; func is the kernel's own address.
  cudaKernelNodeParams got = {};
  CHECK(cudaGraphKernelNodeGetParams(b, &got));
  EXPECT(got.func == (void *)square && got.gridDim.x == n / 64 && got.gridDim.y == 1 && got.blockDim.x == 64 &&
         got.sharedMemBytes == 0 && got.extra == nullptr);
  EXPECT(*(float **)got.kernelParams[0] == d_in && *(float **)got.kernelParams[1] == d_sq &&
         *(float *)got.kernelParams[2] == 1.0f && *(int *)got.kernelParams[3] == n);
  cudaMemsetParams got_m = {};
  CHECK(cudaGraphMemsetNodeGetParams(c, &got_m));
  EXPECT(got_m.dst == d_acc && got_m.value == 0 && got_m.elementSize == 4 && got_m.width == 1 && got_m.height == 1);
  cudaMemcpy3DParms got_c = {};
  CHECK(cudaGraphMemcpyNodeGetParams(a, &got_c));
  EXPECT(got_c.srcPtr.ptr == h_in.data() && got_c.dstPtr.ptr == d_in && got_c.extent.width == n * sizeof(float) &&
         got_c.extent.height == 1 && got_c.extent.depth == 1 && got_c.kind == cudaMemcpyHostToDevice &&
         got_c.srcArray == nullptr);
  CHECK(cudaGraphMemcpyNodeGetParams(e, &got_c));
  EXPECT(got_c.srcPtr.ptr == d_acc && got_c.dstPtr.ptr == &h_out && got_c.extent.width == sizeof(float) &&
         got_c.kind == cudaMemcpyDeviceToHost);
  cudaHostNodeParams got_h = {};
  CHECK(cudaGraphHostNodeGetParams(f, &got_h));
  EXPECT(got_h.fn == report && got_h.userData == &rep);
  // A getter of another node type refuses.
  CHECK_ERROR(cudaGraphKernelNodeGetParams(c, &got), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphMemsetNodeGetParams(b, &got_m), cudaErrorInvalidValue);

  // Priority, the one kernel node attribute.
  cudaKernelNodeAttrValue prio = {};
  prio.priority = -1;
  CHECK(cudaGraphKernelNodeSetAttribute(b, cudaLaunchAttributePriority, &prio));
  prio.priority = 0;
  CHECK(cudaGraphKernelNodeGetAttribute(b, cudaLaunchAttributePriority, &prio));
  EXPECT(prio.priority == -1);
  CHECK(cudaGraphKernelNodeCopyAttributes(d, b));
  CHECK(cudaGraphKernelNodeGetAttribute(d, cudaLaunchAttributePriority, &prio));
  EXPECT(prio.priority == -1);

  // Run it.
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(h_out == 4480.0f && rep.calls == 1 && rep.seen == 4480.0f);

  // Setters change the graph, not the executable made before.
  factor = 2.0f;  // the node copied the old value
  void *square_args2[] = {&d_in, &d_sq, &factor, &count};
  kp.kernelParams = square_args2;
  CHECK(cudaGraphKernelNodeSetParams(b, &kp));
  CHECK(cudaGraphKernelNodeGetParams(b, &got));
  EXPECT(got.func == (void *)square && *(float *)got.kernelParams[2] == 2.0f);
  CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(h_out == 4480.0f && rep.calls == 2);

  // A generic node: a memset of the accumulator to 1.0f after the sum, before the copy out.
  cudaGraphNodeParams gp = {};
  gp.type = cudaGraphNodeTypeMemset;
  gp.memset.dst = d_acc;
  gp.memset.elementSize = 4;
  gp.memset.width = 1;
  gp.memset.height = 1;
  float one = 1.0f;
  std::memcpy(&gp.memset.value, &one, sizeof one);
  cudaGraphNode_t g;
  CHECK(cudaGraphAddNode(&g, graph, &d, nullptr, 1, &gp));
  cudaGraphNode_t gfrom[] = {g}, gto[] = {e}, dfrom[] = {d};
  CHECK(cudaGraphRemoveDependencies(graph, dfrom, gto, nullptr, 1));
  CHECK(cudaGraphAddDependencies(graph, gfrom, gto, nullptr, 1));
  num_edges = 0;
  CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &num_edges));
  EXPECT(num_edges == 7);
  // Then the memset node changed generically to 3.0f.
  float three = 3.0f;
  std::memcpy(&gp.memset.value, &three, sizeof three);
  CHECK(cudaGraphNodeSetParams(g, &gp));
  CHECK(cudaGraphMemsetNodeGetParams(g, &got_m));
  EXPECT(std::memcmp(&got_m.value, &three, sizeof three) == 0);

  cudaGraphExec_t exec2;
  CHECK(cudaGraphInstantiate(&exec2, graph, 0));
  CHECK(cudaGraphLaunch(exec2, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(h_out == 3.0f && rep.calls == 3);
  // Without the memset: the doubled squares.
  CHECK(cudaGraphDestroyNode(g));
  CHECK(cudaGraphAddDependencies(graph, dfrom, gto, nullptr, 1));
  cudaGraphExec_t exec3;
  CHECK(cudaGraphInstantiate(&exec3, graph, 0));
  CHECK(cudaGraphLaunch(exec3, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(h_out == 8960.0f && rep.calls == 4);

  // The dot file.
  char path[64];
  std::snprintf(path, sizeof path, "/tmp/graph_manual_%d.dot", (int)getpid());
  CHECK(cudaGraphDebugDotPrint(graph, path, cudaGraphDebugDotFlagsVerbose));
  FILE *dot = std::fopen(path, "r");
  EXPECT(dot != nullptr);
  char head[16] = {};
  EXPECT(std::fread(head, 1, 7, dot) == 7);
  std::fclose(dot);
  std::remove(path);
  EXPECT(std::strncmp(head, "digraph", 7) == 0);

  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphExecDestroy(exec2));
  CHECK(cudaGraphExecDestroy(exec3));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_sq));
  CHECK(cudaFree(d_acc));
  return passed();
}
