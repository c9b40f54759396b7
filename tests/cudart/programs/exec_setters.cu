// The executable's per-node setters: one graph with a fill, a kernel, a copy, a host function,
// a child graph, an event record, an event wait and a copy to a __device__ variable, instantiated
// once; each node of the executable is then given new parameters by its own setter (and a kernel
// through the generic cudaGraphExecNodeSetParams), and the next launch shows every change while
// the graph itself keeps the old ones. Changes the setters must refuse are refused.
#include "check.h"

#include <vector>

__device__ int table[4];

__global__ void add(int *x, int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += v;
}

struct Record {
  int calls;
  int tag;
};

static void CUDART_CB note(void *p) {
  Record *r = static_cast<Record *>(p);
  r->calls++;
  r->tag = r->calls * 100;
}

static void CUDART_CB note_negative(void *p) {
  Record *r = static_cast<Record *>(p);
  r->calls++;
  r->tag = -r->calls;
}

static const int n = 128;

static void expect_all(const int *d, int value) {
  std::vector<int> h(n);
  CHECK(cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(h[i] == value);
}

static cudaMemsetParams fill(int *dst, unsigned value) {
  cudaMemsetParams p = {};
  p.dst = dst;
  p.value = value;
  p.elementSize = 4;
  p.width = n;
  p.height = 1;
  return p;
}

static cudaGraph_t child_filling(int *dst, unsigned value) {
  cudaGraph_t g;
  cudaGraphNode_t node;
  CHECK(cudaGraphCreate(&g, 0));
  cudaMemsetParams p = fill(dst, value);
  CHECK(cudaGraphAddMemsetNode(&node, g, nullptr, 0, &p));
  return g;
}

int main() {
  int *a, *b, *c, *d;
  for (int **p : {&a, &b, &c, &d}) {
    CHECK(cudaMalloc(p, n * sizeof(int)));
    CHECK(cudaMemset(*p, 0, n * sizeof(int)));
  }
  CHECK(cudaDeviceSynchronize());
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t recorded1, recorded2, waited1, waited2;
  for (cudaEvent_t *e : {&recorded1, &recorded2, &waited1, &waited2})
    CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  Record record = {0, 0};
  int from_host[4] = {1, 2, 3, 4}, from_host2[4] = {-1, -2, -3, -4};

  // fill a -> add to a -> copy a to b -> host function, event record
  // child graph (fills c), event wait, copy to `table`: independent
  cudaGraph_t g;
  CHECK(cudaGraphCreate(&g, 0));
  cudaGraphNode_t set_node, kernel_node, copy_node, host_node, child_node, record_node, wait_node, symbol_node;
  cudaMemsetParams f1 = fill(a, 1);
  CHECK(cudaGraphAddMemsetNode(&set_node, g, nullptr, 0, &f1));
  int count = n, v = 10;
  void *args[] = {&a, &v, &count};
  cudaKernelNodeParams k = {};
  k.func = (void *)add;
  k.gridDim = dim3(n / 32);
  k.blockDim = dim3(32);
  k.kernelParams = args;
  CHECK(cudaGraphAddKernelNode(&kernel_node, g, &set_node, 1, &k));
  CHECK(cudaGraphAddMemcpyNode1D(&copy_node, g, &kernel_node, 1, b, a, n * sizeof(int), cudaMemcpyDeviceToDevice));
  cudaHostNodeParams h = {note, &record};
  CHECK(cudaGraphAddHostNode(&host_node, g, &copy_node, 1, &h));
  CHECK(cudaGraphAddEventRecordNode(&record_node, g, &copy_node, 1, recorded1));
  cudaGraph_t child = child_filling(c, 7);
  CHECK(cudaGraphAddChildGraphNode(&child_node, g, nullptr, 0, child));
  CHECK(cudaGraphAddEventWaitNode(&wait_node, g, nullptr, 0, waited1));
  CHECK(cudaGraphAddMemcpyNodeToSymbol(&symbol_node, g, nullptr, 0, table, from_host, sizeof from_host, 0,
                                       cudaMemcpyHostToDevice));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, g, 0));

  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  expect_all(a, 11);
  expect_all(b, 11);
  expect_all(c, 7);
  EXPECT(record.calls == 1 && record.tag == 100);
  int t[4];
  CHECK(cudaMemcpyFromSymbol(t, table, sizeof t));
  for (int i = 0; i < 4; i++) EXPECT(t[i] == i + 1);

  // Every node of the executable gets new parameters.
  cudaMemsetParams f2 = fill(a, 2);
  CHECK(cudaGraphExecMemsetNodeSetParams(exec, set_node, &f2));
  int v2 = 20;
  void *args2[] = {&a, &v2, &count};
  cudaGraphNodeParams generic = {};
  generic.type = cudaGraphNodeTypeKernel;
  generic.kernel.func = (void *)add;
  generic.kernel.gridDim = dim3(n / 32);
  generic.kernel.blockDim = dim3(32);
  generic.kernel.kernelParams = args2;
  CHECK(cudaGraphExecNodeSetParams(exec, kernel_node, &generic));
  CHECK(cudaGraphExecMemcpyNodeSetParams1D(exec, copy_node, d, a, n * sizeof(int), cudaMemcpyDeviceToDevice));
  cudaHostNodeParams h2 = {note_negative, &record};
  CHECK(cudaGraphExecHostNodeSetParams(exec, host_node, &h2));
  cudaGraph_t child2 = child_filling(c, 9);
  CHECK(cudaGraphExecChildGraphNodeSetParams(exec, child_node, child2));
  CHECK(cudaGraphExecEventRecordNodeSetEvent(exec, record_node, recorded2));
  CHECK(cudaGraphExecEventWaitNodeSetEvent(exec, wait_node, waited2));
  CHECK(cudaGraphExecMemcpyNodeSetParamsToSymbol(exec, symbol_node, table, from_host2, sizeof from_host2, 0,
                                                 cudaMemcpyHostToDevice));

  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  expect_all(a, 22);
  expect_all(d, 22);
  expect_all(b, 11);  // the copy goes to d now
  expect_all(c, 9);
  EXPECT(record.calls == 2 && record.tag == -2);
  CHECK(cudaMemcpyFromSymbol(t, table, sizeof t));
  for (int i = 0; i < 4; i++) EXPECT(t[i] == -(i + 1));
  CHECK(cudaEventQuery(recorded2));

  // The graph is as it was: its nodes still read the first parameters.
  cudaMemsetParams back = {};
  CHECK(cudaGraphMemsetNodeGetParams(set_node, &back));
  EXPECT(back.value == 1);
  cudaEvent_t e = nullptr;
  CHECK(cudaGraphEventRecordNodeGetEvent(record_node, &e));
  EXPECT(e == recorded1);

  // A 3-D copy setter puts the copy back to b.
  cudaMemcpy3DParms p3 = {};
  p3.srcPtr = make_cudaPitchedPtr(a, n * sizeof(int), n * sizeof(int), 1);
  p3.dstPtr = make_cudaPitchedPtr(b, n * sizeof(int), n * sizeof(int), 1);
  p3.extent = make_cudaExtent(n * sizeof(int), 1, 1);
  p3.kind = cudaMemcpyDeviceToDevice;
  CHECK(cudaGraphExecMemcpyNodeSetParams(exec, copy_node, &p3));
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  expect_all(b, 22);

  // Refused: a setter of another node type, a copy changing direction, a child graph of another
  // shape, a node that is not the executable's. Each leaves the executable as it was.
  CHECK_ERROR(cudaGraphExecEventRecordNodeSetEvent(exec, set_node, recorded1), cudaErrorInvalidValue);
  std::vector<int> host(n);
  CHECK_ERROR(cudaGraphExecMemcpyNodeSetParams1D(exec, copy_node, host.data(), a, n * sizeof(int),
                                                 cudaMemcpyDeviceToHost),
              cudaErrorInvalidValue);
  cudaGraph_t wider = child_filling(c, 3);
  cudaGraphNode_t extra;
  CHECK(cudaGraphAddEmptyNode(&extra, wider, nullptr, 0));
  CHECK_ERROR(cudaGraphExecChildGraphNodeSetParams(exec, child_node, wider), cudaErrorInvalidValue);
  cudaGraphNode_t outsider;
  cudaMemsetParams f3 = fill(a, 3);
  CHECK(cudaGraphAddMemsetNode(&outsider, g, nullptr, 0, &f3));  // added after instantiation
  CHECK_ERROR(cudaGraphExecMemsetNodeSetParams(exec, outsider, &f3), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  expect_all(a, 22);
  expect_all(b, 22);
  expect_all(c, 9);
  EXPECT(record.calls == 4 && record.tag == -4);

  for (cudaGraph_t x : {g, child, child2, wider}) CHECK(cudaGraphDestroy(x));
  CHECK(cudaGraphExecDestroy(exec));
  for (cudaEvent_t x : {recorded1, recorded2, waited1, waited2}) CHECK(cudaEventDestroy(x));
  CHECK(cudaStreamDestroy(s));
  for (int *p : {a, b, c, d}) CHECK(cudaFree(p));
  return passed();
}
