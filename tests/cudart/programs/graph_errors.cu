// What graph building refuses, and that a refused call changes nothing: cycles, duplicate and
// self edges, edges and dependencies across graphs, NULL and destroyed handles, bad parameters,
// a kernel node whose func is no kernel, edge data, and the count-or-fill rules of the queries.
#include "check.h"

#include <cstring>

__global__ void touch(int *p) { *p += 1; }

static void not_a_kernel() {}

static size_t edges_of(cudaGraph_t g) {
  size_t n = 0;
  CHECK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &n));
  return n;
}

static size_t nodes_of(cudaGraph_t g) {
  size_t n = 0;
  CHECK(cudaGraphGetNodes(g, nullptr, &n));
  return n;
}

int main() {
  int *d_p;
  CHECK(cudaMalloc(&d_p, sizeof(int)));
  cudaGraph_t g, other;
  CHECK(cudaGraphCreate(&g, 0));
  CHECK(cudaGraphCreate(&other, 0));
  cudaGraph_t unused = nullptr;
  CHECK_ERROR(cudaGraphCreate(&unused, 1), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphCreate(nullptr, 0), cudaErrorInvalidValue);
  EXPECT(unused == nullptr);

  // A chain a -> b -> c.
  cudaGraphNode_t a, b, c, x;
  CHECK(cudaGraphAddEmptyNode(&a, g, nullptr, 0));
  CHECK(cudaGraphAddEmptyNode(&b, g, &a, 1));
  CHECK(cudaGraphAddEmptyNode(&c, g, &b, 1));
  CHECK(cudaGraphAddEmptyNode(&x, other, nullptr, 0));
  EXPECT(edges_of(g) == 2);

  // Cycles, self and duplicate edges: refused whole, nothing added.
  cudaGraphNode_t from2[] = {a, c}, to2[] = {c, a};  // a -> c is fine, c -> a closes a cycle
  CHECK_ERROR(cudaGraphAddDependencies(g, from2, to2, nullptr, 2), cudaErrorInvalidValue);
  EXPECT(edges_of(g) == 2);
  CHECK_ERROR(cudaGraphAddDependencies(g, &b, &b, nullptr, 1), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphAddDependencies(g, &a, &b, nullptr, 1), cudaErrorInvalidValue);
  EXPECT(edges_of(g) == 2);
  // Across graphs.
  CHECK_ERROR(cudaGraphAddDependencies(g, &a, &x, nullptr, 1), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphAddDependencies(other, &a, &x, nullptr, 1), cudaErrorInvalidValue);
  cudaGraphNode_t y = nullptr;
  CHECK_ERROR(cudaGraphAddEmptyNode(&y, g, &x, 1), cudaErrorInvalidValue);
  EXPECT(y == nullptr && nodes_of(g) == 3 && nodes_of(other) == 1);
  // Count 0 ignores the arrays.
  CHECK(cudaGraphAddDependencies(g, nullptr, nullptr, nullptr, 0));
  CHECK_ERROR(cudaGraphAddDependencies(g, &a, nullptr, nullptr, 1), cudaErrorInvalidValue);

  // Edge data: zeroed is a default edge; a to_port is refused; gcap has no programmatic edges.
  cudaGraphEdgeData ed = {};
  CHECK(cudaGraphAddDependencies(g, &a, &c, &ed, 1));
  EXPECT(edges_of(g) == 3);
  CHECK(cudaGraphRemoveDependencies(g, &a, &c, &ed, 1));
  EXPECT(edges_of(g) == 2);
  ed.to_port = 1;
  CHECK_ERROR(cudaGraphAddDependencies(g, &a, &c, &ed, 1), cudaErrorInvalidValue);
  ed = {};
  ed.type = cudaGraphDependencyTypeProgrammatic;
  ed.from_port = cudaGraphKernelNodePortProgrammatic;
  CHECK_ERROR(cudaGraphAddDependencies(g, &a, &c, &ed, 1), cudaErrorNotSupported);
  CHECK_ERROR(cudaGraphAddNode(&y, g, &a, &ed, 1, nullptr), cudaErrorNotSupported);
  EXPECT(edges_of(g) == 2);

  // NULL arguments.
  CHECK_ERROR(cudaGraphAddEmptyNode(nullptr, g, nullptr, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphAddEmptyNode(&y, nullptr, nullptr, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphAddEmptyNode(&y, g, nullptr, 1), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphGetNodes(g, nullptr, nullptr), cudaErrorInvalidValue);
  size_t dummy = 0;
  CHECK_ERROR(cudaGraphGetNodes(nullptr, nullptr, &dummy), cudaErrorInvalidValue);
  cudaGraphNodeType t;
  CHECK_ERROR(cudaGraphNodeGetType(nullptr, &t), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphNodeGetType(a, nullptr), cudaErrorInvalidValue);

  // The count-or-fill rules: NULL counts, a smaller array is filled and keeps its count, a
  // larger one is padded with NULL and gets the real count.
  cudaGraphNode_t arr[5];
  size_t num = 0;
  CHECK(cudaGraphGetNodes(g, nullptr, &num));
  EXPECT(num == 3);
  num = 1;
  arr[1] = x;
  CHECK(cudaGraphGetNodes(g, arr, &num));
  EXPECT(num == 1 && (arr[0] == a || arr[0] == b || arr[0] == c) && arr[1] == x);
  num = 5;
  CHECK(cudaGraphGetNodes(g, arr, &num));
  EXPECT(num == 3 && arr[3] == nullptr && arr[4] == nullptr);
  cudaGraphNode_t f[3], tt[3];
  num = 1;
  CHECK(cudaGraphGetEdges(g, f, tt, nullptr, &num));
  EXPECT(num == 1 && ((f[0] == a && tt[0] == b) || (f[0] == b && tt[0] == c)));
  num = 3;
  CHECK(cudaGraphGetEdges(g, f, tt, nullptr, &num));
  EXPECT(num == 2 && f[2] == nullptr && tt[2] == nullptr);
  CHECK_ERROR(cudaGraphGetEdges(g, f, nullptr, nullptr, &num), cudaErrorInvalidValue);
  num = 0;
  CHECK(cudaGraphNodeGetDependencies(c, nullptr, nullptr, &num));
  EXPECT(num == 1);
  cudaGraphEdgeData data[2];
  CHECK_ERROR(cudaGraphNodeGetDependencies(c, nullptr, data, &num), cudaErrorInvalidValue);

  // A kernel node whose func is no kernel; `extra` is not supported; nothing is added.
  void *args[] = {&d_p};
  cudaKernelNodeParams kp = {};
  kp.func = (void *)not_a_kernel;
  kp.gridDim = dim3(1);
  kp.blockDim = dim3(1);
  kp.kernelParams = args;
  CHECK_ERROR(cudaGraphAddKernelNode(&y, g, nullptr, 0, &kp), cudaErrorInvalidDeviceFunction);
  kp.func = nullptr;
  CHECK_ERROR(cudaGraphAddKernelNode(&y, g, nullptr, 0, &kp), cudaErrorInvalidDeviceFunction);
  kp.func = (void *)touch;
  void *extra[] = {nullptr};  // CU_LAUNCH_PARAM_END
  kp.extra = extra;
  CHECK_ERROR(cudaGraphAddKernelNode(&y, g, nullptr, 0, &kp), cudaErrorInvalidValue);  // both set
  kp.kernelParams = nullptr;
  CHECK_ERROR(cudaGraphAddKernelNode(&y, g, nullptr, 0, &kp), cudaErrorNotSupported);
  EXPECT(nodes_of(g) == 3);
  kp.extra = nullptr;
  kp.kernelParams = args;
  cudaGraphNode_t k;
  CHECK(cudaGraphAddKernelNode(&k, g, &c, 1, &kp));
  // Setting an unregistered func later is refused and keeps the kernel.
  kp.func = (void *)not_a_kernel;
  CHECK_ERROR(cudaGraphKernelNodeSetParams(k, &kp), cudaErrorInvalidDeviceFunction);
  cudaKernelNodeParams got = {};
  CHECK(cudaGraphKernelNodeGetParams(k, &got));
  EXPECT(got.func == (void *)touch);
  // Attributes other than the priority.
  cudaKernelNodeAttrValue v = {};
  CHECK_ERROR(cudaGraphKernelNodeSetAttribute(k, cudaLaunchAttributeCooperative, &v), cudaErrorNotSupported);
  CHECK_ERROR(cudaGraphKernelNodeGetAttribute(a, cudaLaunchAttributePriority, &v), cudaErrorInvalidValue);

  // Bad memset, copy and host parameters.
  cudaMemsetParams mp = {};
  mp.dst = d_p;
  mp.elementSize = 3;
  mp.width = 1;
  mp.height = 1;
  CHECK_ERROR(cudaGraphAddMemsetNode(&y, g, nullptr, 0, &mp), cudaErrorInvalidValue);
  int h = 0;
  CHECK_ERROR(cudaGraphAddMemcpyNode1D(&y, g, nullptr, 0, &h, d_p, sizeof h, (cudaMemcpyKind)7),
              cudaErrorInvalidMemcpyDirection);
  cudaHostNodeParams hp = {nullptr, nullptr};
  CHECK_ERROR(cudaGraphAddHostNode(&y, g, nullptr, 0, &hp), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphAddMemsetNode(&y, g, nullptr, 0, nullptr), cudaErrorInvalidValue);
  EXPECT(nodes_of(g) == 4);

  // The generic call: a type that is none, reserved fields, another type's setter.
  cudaGraphNodeParams gp = {};
  gp.type = (cudaGraphNodeType)42;
  CHECK_ERROR(cudaGraphAddNode(&y, g, nullptr, nullptr, 0, &gp), cudaErrorInvalidValue);
  gp.type = cudaGraphNodeTypeEmpty;
  gp.reserved0[1] = 1;
  CHECK_ERROR(cudaGraphAddNode(&y, g, nullptr, nullptr, 0, &gp), cudaErrorInvalidValue);
  gp.reserved0[1] = 0;
  gp.type = cudaGraphNodeTypeHost;
  gp.host.fn = [](void *) {};
  CHECK_ERROR(cudaGraphNodeSetParams(k, &gp), cudaErrorInvalidValue);
  // What gcap does not have: moved child graphs, external semaphores; copy flags must be 0.
  cudaGraph_t sub;
  CHECK(cudaGraphCreate(&sub, 0));
  gp = {};
  gp.type = cudaGraphNodeTypeGraph;
  gp.graph.graph = sub;
  gp.graph.ownership = cudaGraphChildGraphOwnershipMove;
  CHECK_ERROR(cudaGraphAddNode(&y, g, nullptr, nullptr, 0, &gp), cudaErrorNotSupported);
  gp = {};
  gp.type = cudaGraphNodeTypeExtSemaphoreSignal;
  CHECK_ERROR(cudaGraphAddNode(&y, g, nullptr, nullptr, 0, &gp), cudaErrorNotSupported);
  gp = {};
  gp.type = cudaGraphNodeTypeMemcpy;
  gp.memcpy.flags = 1;
  gp.memcpy.copyParams.srcPtr = make_cudaPitchedPtr(d_p, 4, 4, 1);
  gp.memcpy.copyParams.dstPtr = make_cudaPitchedPtr(&h, 4, 4, 1);
  gp.memcpy.copyParams.extent = make_cudaExtent(4, 1, 1);
  gp.memcpy.copyParams.kind = cudaMemcpyDeviceToHost;
  CHECK_ERROR(cudaGraphAddNode(&y, g, nullptr, nullptr, 0, &gp), cudaErrorInvalidValue);
  EXPECT(nodes_of(g) == 4);
  // Cloned in (the default), the child is a copy.
  gp = {};
  gp.type = cudaGraphNodeTypeGraph;
  gp.graph.graph = sub;
  cudaGraphNode_t sub_node;
  CHECK(cudaGraphAddNode(&sub_node, g, nullptr, nullptr, 0, &gp));
  cudaGraph_t embedded = nullptr;
  CHECK(cudaGraphChildGraphNodeGetGraph(sub_node, &embedded));
  EXPECT(embedded != nullptr && embedded != sub);
  CHECK(cudaGraphDestroyNode(sub_node));
  CHECK(cudaGraphDestroy(sub));
  EXPECT(nodes_of(g) == 4);

  // Event nodes: the getter of the other kind refuses.
  cudaEvent_t ev;
  CHECK(cudaEventCreate(&ev));
  cudaGraphNode_t rec;
  CHECK(cudaGraphAddEventRecordNode(&rec, g, &k, 1, ev));
  cudaEvent_t got_ev = nullptr;
  CHECK(cudaGraphEventRecordNodeGetEvent(rec, &got_ev));
  EXPECT(got_ev == ev);
  CHECK_ERROR(cudaGraphEventWaitNodeGetEvent(rec, &got_ev), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphAddEventRecordNode(&y, g, nullptr, 0, nullptr), cudaErrorInvalidValue);

  // The dot file: unknown flag bits, a path that cannot be written.
  CHECK_ERROR(cudaGraphDebugDotPrint(g, "/tmp/graph_errors.dot", 1u << 30), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphDebugDotPrint(g, "/nonexistent-directory/graph.dot", 0), cudaErrorOperatingSystem);
  CHECK_ERROR(cudaGraphDebugDotPrint(g, nullptr, 0), cudaErrorInvalidValue);

  // A destroyed node is no node.
  CHECK(cudaGraphDestroyNode(b));
  CHECK_ERROR(cudaGraphNodeGetType(b, &t), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphDestroyNode(b), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphAddEmptyNode(&y, g, &b, 1), cudaErrorInvalidValue);
  EXPECT(nodes_of(g) == 4 && edges_of(g) == 2);  // a, c, k, rec; c -> k -> rec

  // None of these failures was sticky: the last one is read once.
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);
  CHECK(cudaGetLastError());
  CHECK(cudaGraphDestroy(other));
  CHECK(cudaGraphDestroy(g));
  CHECK_ERROR(cudaGraphDestroy(nullptr), cudaErrorInvalidValue);
  CHECK(cudaEventDestroy(ev));
  CHECK(cudaFree(d_p));
  return passed();
}
