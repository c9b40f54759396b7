// Conditional nodes, the CUDA 12.4+ pattern: a while loop whose body kernel decides on the
// device (cudaGraphSetConditional) whether to go round again, and an if/else whose branch a
// kernel before it picks. Built with cudaGraphAddNode, whose phGraph_out gives the bodies.
#include "check.h"

__global__ void step(int *counter, int limit, cudaGraphConditionalHandle loop) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    int v = ++*counter;
    cudaGraphSetConditional(loop, v < limit ? 1 : 0);
  }
}

__global__ void decide(const int *counter, cudaGraphConditionalHandle branch) {
  if (threadIdx.x == 0) cudaGraphSetConditional(branch, *counter % 2 == 0);
}

__global__ void store(int *out, int v) { *out = v; }

static cudaGraphNode_t add_kernel(cudaGraph_t g, const cudaGraphNode_t *deps, size_t n, void *func, void **args) {
  cudaKernelNodeParams kp = {};
  kp.func = func;
  kp.gridDim = dim3(1);
  kp.blockDim = dim3(32);
  kp.kernelParams = args;
  cudaGraphNode_t node;
  CHECK(cudaGraphAddKernelNode(&node, g, deps, n, &kp));
  return node;
}

int main() {
  int *d_counter, *d_out;
  CHECK(cudaMalloc(&d_counter, sizeof(int)));
  CHECK(cudaMalloc(&d_out, sizeof(int)));
  CHECK(cudaMemset(d_counter, 0, sizeof(int)));
  CHECK(cudaMemset(d_out, 0, sizeof(int)));

  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));

  // while (counter < limit) counter++;  the condition starts at 1 on every launch.
  cudaGraphConditionalHandle loop, branch;
  CHECK(cudaGraphConditionalHandleCreate(&loop, graph, 1, cudaGraphCondAssignDefault));
  CHECK(cudaGraphConditionalHandleCreate(&branch, graph, 0, 0));
  cudaGraphNodeParams wp = {};
  wp.type = cudaGraphNodeTypeConditional;
  wp.conditional.handle = loop;
  wp.conditional.type = cudaGraphCondTypeWhile;
  wp.conditional.size = 1;
  cudaGraphNode_t while_node;
  CHECK(cudaGraphAddNode(&while_node, graph, nullptr, nullptr, 0, &wp));
  EXPECT(wp.conditional.phGraph_out != nullptr);
  cudaGraph_t body = wp.conditional.phGraph_out[0];
  int limit = 10;
  void *step_args[] = {&d_counter, &limit, &loop};
  add_kernel(body, nullptr, 0, (void *)step, step_args);
  size_t n = 0;
  CHECK(cudaGraphGetNodes(body, nullptr, &n));
  EXPECT(n == 1);

  // if (counter is even) out = 100; else out = 200;
  void *decide_args[] = {&d_counter, &branch};
  cudaGraphNode_t dec = add_kernel(graph, &while_node, 1, (void *)decide, decide_args);
  cudaGraphNodeParams ip = {};
  ip.type = cudaGraphNodeTypeConditional;
  ip.conditional.handle = branch;
  ip.conditional.type = cudaGraphCondTypeIf;
  ip.conditional.size = 2;
  cudaGraphNode_t if_node;
  CHECK(cudaGraphAddNode(&if_node, graph, &dec, nullptr, 1, &ip));
  cudaGraph_t then_body = ip.conditional.phGraph_out[0], else_body = ip.conditional.phGraph_out[1];
  EXPECT(then_body != nullptr && else_body != nullptr && then_body != else_body);
  int hundred = 100, two_hundred = 200;
  void *then_args[] = {&d_out, &hundred}, *else_args[] = {&d_out, &two_hundred};
  add_kernel(then_body, nullptr, 0, (void *)store, then_args);
  add_kernel(else_body, nullptr, 0, (void *)store, else_args);

  cudaGraphNodeType t;
  CHECK(cudaGraphNodeGetType(while_node, &t));
  EXPECT(t == cudaGraphNodeTypeConditional);
  CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  EXPECT(n == 3);

  // A graph with conditional nodes cannot be cloned or embedded.
  cudaGraph_t copy = nullptr;
  CHECK_ERROR(cudaGraphClone(&copy, graph), cudaErrorNotSupported);
  EXPECT(copy == nullptr);
  cudaGraph_t outer;
  CHECK(cudaGraphCreate(&outer, 0));
  cudaGraphNode_t child = nullptr;
  CHECK_ERROR(cudaGraphAddChildGraphNode(&child, outer, nullptr, 0, graph), cudaErrorNotSupported);
  // Bad conditional parameters: a while loop has one body; the handle must be of this graph.
  cudaGraphNodeParams bad = wp;
  bad.conditional.size = 2;
  CHECK_ERROR(cudaGraphAddNode(&child, graph, nullptr, nullptr, 0, &bad), cudaErrorInvalidValue);
  bad = wp;
  CHECK_ERROR(cudaGraphAddNode(&child, outer, nullptr, nullptr, 0, &bad), cudaErrorInvalidValue);
  CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  EXPECT(n == 3);
  CHECK(cudaGraphDestroy(outer));

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  int counter = -1, out = -1;
  // First launch: the body runs 10 times; 10 is even.
  CHECK(cudaGraphLaunch(exec, 0));
  CHECK(cudaMemcpy(&counter, d_counter, sizeof counter, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&out, d_out, sizeof out, cudaMemcpyDeviceToHost));
  EXPECT(counter == 10 && out == 100);
  // Second: the loop's condition is 1 again, so the body runs once more (11), which is odd.
  CHECK(cudaGraphLaunch(exec, 0));
  CHECK(cudaMemcpy(&counter, d_counter, sizeof counter, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&out, d_out, sizeof out, cudaMemcpyDeviceToHost));
  EXPECT(counter == 11 && out == 200);

  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));

  // Nested: a switch in the body of an if, with a handle of the outer graph. A destroyed
  // conditional node's bodies go with it; a new one has bodies of its own.
  CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphConditionalHandle on, which;
  CHECK(cudaGraphConditionalHandleCreate(&on, graph, 1, cudaGraphCondAssignDefault));
  CHECK(cudaGraphConditionalHandleCreate(&which, graph, 2, cudaGraphCondAssignDefault));
  ip.conditional.handle = on;
  ip.conditional.size = 1;
  CHECK(cudaGraphAddNode(&if_node, graph, nullptr, nullptr, 0, &ip));
  cudaGraph_t if_body = ip.conditional.phGraph_out[0];
  cudaGraphNodeParams sw = {};
  sw.type = cudaGraphNodeTypeConditional;
  sw.conditional.handle = which;
  sw.conditional.type = cudaGraphCondTypeSwitch;
  sw.conditional.size = 3;
  cudaGraphNode_t sw_node;
  CHECK(cudaGraphAddNode(&sw_node, if_body, nullptr, nullptr, 0, &sw));
  CHECK(cudaGraphDestroyNode(sw_node));
  sw.conditional.phGraph_out = nullptr;
  CHECK(cudaGraphAddNode(&sw_node, if_body, nullptr, nullptr, 0, &sw));
  int values[3] = {10, 20, 30};
  void *case_args[3][2];
  for (int i = 0; i < 3; i++) {
    case_args[i][0] = &d_out;
    case_args[i][1] = &values[i];
    add_kernel(sw.conditional.phGraph_out[i], nullptr, 0, (void *)store, case_args[i]);
  }
  CHECK(cudaGraphGetNodes(if_body, nullptr, &n));
  EXPECT(n == 1);
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, 0));
  CHECK(cudaMemcpy(&out, d_out, sizeof out, cudaMemcpyDeviceToHost));
  EXPECT(out == 30);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaFree(d_counter));
  CHECK(cudaFree(d_out));
  return passed();
}
