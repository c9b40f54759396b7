// Graph-owned memory and symbols, built by hand: an allocation node, a kernel using the memory,
// a copy to a __device__ table and back with an offset, a free node; event record and wait
// nodes; every getter of those nodes, and what they refuse.
#include "check.h"

#include <cstring>

__device__ int table[8];

__global__ void iota(int *p, int n) {
  int i = threadIdx.x;
  if (i < n) p[i] = 10 * i;
}

__global__ void add_table(int *p, int n) {
  int i = threadIdx.x;
  if (i < n) p[i] += table[i];
}

int main() {
  const int n = 8;
  cudaGraph_t g;
  CHECK(cudaGraphCreate(&g, 0));

  // alloc -> iota -> (table <- host) -> add_table -> copy out -> free
  cudaMemAllocNodeParams ap = {};
  ap.poolProps.allocType = cudaMemAllocationTypePinned;
  ap.poolProps.location.type = cudaMemLocationTypeDevice;
  ap.poolProps.location.id = 0;
  ap.bytesize = n * sizeof(int);
  cudaGraphNode_t alloc;
  CHECK(cudaGraphAddMemAllocNode(&alloc, g, nullptr, 0, &ap));
  EXPECT(ap.dptr != nullptr);
  int *d = static_cast<int *>(ap.dptr);

  int count = n;
  void *args[] = {&d, &count};
  cudaKernelNodeParams kp = {};
  kp.func = (void *)iota;
  kp.gridDim = dim3(1);
  kp.blockDim = dim3(n);
  kp.kernelParams = args;
  cudaGraphNode_t k1, to_sym, k2, out, from_sym, fr;
  CHECK(cudaGraphAddKernelNode(&k1, g, &alloc, 1, &kp));
  int h_table[n];
  for (int i = 0; i < n; i++) h_table[i] = i;
  CHECK(cudaGraphAddMemcpyNodeToSymbol(&to_sym, g, &k1, 1, table, h_table, sizeof h_table, 0,
                                       cudaMemcpyHostToDevice));
  kp.func = (void *)add_table;
  CHECK(cudaGraphAddKernelNode(&k2, g, &to_sym, 1, &kp));
  int h_out[n] = {};
  CHECK(cudaGraphAddMemcpyNode1D(&out, g, &k2, 1, h_out, d, sizeof h_out, cudaMemcpyDeviceToHost));
  int h_tail[2] = {};
  CHECK(cudaGraphAddMemcpyNodeFromSymbol(&from_sym, g, &k2, 1, h_tail, table, sizeof h_tail, 6 * sizeof(int),
                                         cudaMemcpyDefault));
  cudaGraphNode_t before_free[] = {out, from_sym};
  CHECK(cudaGraphAddMemFreeNode(&fr, g, before_free, 2, d));

  // The getters.
  cudaMemAllocNodeParams got = {};
  CHECK(cudaGraphMemAllocNodeGetParams(alloc, &got));
  EXPECT(got.bytesize == n * sizeof(int) && got.dptr == d && got.poolProps.allocType == cudaMemAllocationTypePinned &&
         got.poolProps.location.type == cudaMemLocationTypeDevice && got.poolProps.location.id == 0);
  void *freed = nullptr;
  CHECK(cudaGraphMemFreeNodeGetParams(fr, &freed));
  EXPECT(freed == d);
  cudaGraphNodeType t;
  CHECK(cudaGraphNodeGetType(alloc, &t));
  EXPECT(t == cudaGraphNodeTypeMemAlloc);
  CHECK(cudaGraphNodeGetType(fr, &t));
  EXPECT(t == cudaGraphNodeTypeMemFree);
  cudaMemcpy3DParms cp = {};
  CHECK(cudaGraphMemcpyNodeGetParams(from_sym, &cp));
  EXPECT(cp.dstPtr.ptr == h_tail && cp.extent.width == sizeof h_tail);
  CHECK_ERROR(cudaGraphMemFreeNodeGetParams(alloc, &freed), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphMemAllocNodeGetParams(fr, &got), cudaErrorInvalidValue);

  // A graph with allocation nodes cannot be cloned.
  cudaGraph_t copy = nullptr;
  CHECK_ERROR(cudaGraphClone(&copy, g), cudaErrorNotSupported);

  // Refused parameters: nothing is added.
  size_t nodes = 0;
  CHECK(cudaGraphGetNodes(g, nullptr, &nodes));
  EXPECT(nodes == 7);
  cudaMemAllocNodeParams bad = ap;
  cudaGraphNode_t y;
  bad.bytesize = 0;
  CHECK_ERROR(cudaGraphAddMemAllocNode(&y, g, nullptr, 0, &bad), cudaErrorInvalidValue);
  bad = ap;
  bad.poolProps.location.id = 3;
  CHECK_ERROR(cudaGraphAddMemAllocNode(&y, g, nullptr, 0, &bad), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphAddMemcpyNodeToSymbol(&y, g, nullptr, 0, table, h_table, sizeof h_table, 4,
                                             cudaMemcpyHostToDevice),
              cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphAddMemcpyNodeToSymbol(&y, g, nullptr, 0, h_table, h_table, 4, 0, cudaMemcpyHostToDevice),
              cudaErrorInvalidSymbol);
  CHECK_ERROR(cudaGraphAddMemcpyNodeFromSymbol(&y, g, nullptr, 0, h_tail, table, 4, 0, cudaMemcpyHostToDevice),
              cudaErrorInvalidMemcpyDirection);
  CHECK(cudaGraphGetNodes(g, nullptr, &nodes));
  EXPECT(nodes == 7);

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, g, 0));
  CHECK(cudaGraphLaunch(exec, 0));
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < n; i++) EXPECT(h_out[i] == 11 * i);
  EXPECT(h_tail[0] == 6 && h_tail[1] == 7);

  // The copy to the symbol retargeted: from the second half of another table.
  int h_table2[2 * n];
  for (int i = 0; i < 2 * n; i++) h_table2[i] = 100 * i;
  CHECK(cudaGraphMemcpyNodeSetParamsToSymbol(to_sym, table, h_table2 + n, n * sizeof(int), 0, cudaMemcpyDefault));
  cudaGraphExec_t exec2;
  CHECK(cudaGraphExecDestroy(exec));  // one executable at a time for graphs with allocations
  CHECK(cudaGraphInstantiate(&exec2, g, 0));
  CHECK(cudaGraphLaunch(exec2, 0));
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < n; i++) EXPECT(h_out[i] == 10 * i + 100 * (n + i));

  // Event nodes: the event read back and replaced.
  cudaEvent_t e1, e2;
  CHECK(cudaEventCreate(&e1));
  CHECK(cudaEventCreate(&e2));
  cudaGraph_t eg;
  CHECK(cudaGraphCreate(&eg, 0));
  cudaGraphNode_t rec, wait;
  CHECK(cudaGraphAddEventRecordNode(&rec, eg, nullptr, 0, e1));
  CHECK(cudaGraphAddEventWaitNode(&wait, eg, &rec, 1, e1));
  CHECK(cudaGraphNodeGetType(wait, &t));
  EXPECT(t == cudaGraphNodeTypeWaitEvent);
  CHECK(cudaGraphEventWaitNodeSetEvent(wait, e2));
  CHECK(cudaGraphEventRecordNodeSetEvent(rec, e2));
  cudaEvent_t ge = nullptr;
  CHECK(cudaGraphEventWaitNodeGetEvent(wait, &ge));
  EXPECT(ge == e2);
  CHECK(cudaGraphEventRecordNodeGetEvent(rec, &ge));
  EXPECT(ge == e2);
  CHECK_ERROR(cudaGraphEventRecordNodeSetEvent(wait, e1), cudaErrorInvalidValue);
  cudaGraphExec_t ex;
  CHECK(cudaGraphInstantiate(&ex, eg, 0));
  CHECK(cudaGraphLaunch(ex, 0));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaEventQuery(e2));

  CHECK(cudaGraphExecDestroy(ex));
  CHECK(cudaGraphExecDestroy(exec2));
  CHECK(cudaGraphDestroy(eg));
  CHECK(cudaGraphDestroy(g));
  CHECK(cudaEventDestroy(e1));
  CHECK(cudaEventDestroy(e2));
  return passed();
}
