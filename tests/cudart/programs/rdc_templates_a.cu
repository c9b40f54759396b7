// An -rdc program of two translation units (with rdc_templates_b.cu) that both instantiate the
// same templates: a kernel template, a __device__ function template and an inline function, which
// nvcc emits as .weak in each unit. Each launch must find one kernel, whichever unit launches it.
#include "check.h"

#include <cstring>

// The same templates as in rdc_templates_b.cu (as a header both include would give them).
template <typename T> __device__ __noinline__ T combine(T a, T b) { return a * 2 + b; }
__device__ __noinline__ inline int bump(int x) { return x + 5; }
template <typename T> __global__ void fill(T *p, T v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = combine(v, T(i));
}

// Launches of the other unit, on its instantiations.
void b_fill_int(int *p, int v, int n, cudaStream_t s);
void b_fill_double(double *p, double v, int n, cudaStream_t s);
cudaError_t b_kernel_attributes(cudaFuncAttributes *a);

__global__ void a_bump(int *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = bump(p[i]) + combine(1, 1);
}

int main() {
  const int n = 200;
  int *di;
  double *dd;
  CHECK(cudaMalloc(&di, n * sizeof(int)));
  CHECK(cudaMalloc(&dd, n * sizeof(double)));
  int hi[n];
  double hd[n];

  fill<int><<<2, 128>>>(di, 10, n);
  CHECK(cudaGetLastError());
  a_bump<<<2, 128>>>(di, n);
  CHECK(cudaMemcpy(hi, di, sizeof hi, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(hi[i] == 20 + i + 5 + 3);

  // The other unit launches the same instantiation, and one of its own (double).
  b_fill_int(di, 3, n, 0);
  b_fill_double(dd, 0.25, n, 0);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(hi, di, sizeof hi, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hd, dd, sizeof hd, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(hi[i] == 6 + i);
  for (int i = 0; i < n; i++) EXPECT(hd[i] == 0.5 + i);

  // Both units' host stubs of fill<int> are one kernel: same attributes, same graph node kernel.
  cudaFuncAttributes a{}, b{};
  CHECK(cudaFuncGetAttributes(&a, fill<int>));
  CHECK(b_kernel_attributes(&b));
  EXPECT(a.numRegs == b.numRegs && a.maxThreadsPerBlock == b.maxThreadsPerBlock);

  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  cudaGraph_t g;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  b_fill_double(dd, 1.0, n, s);
  fill<double><<<2, 128, 0, s>>>(dd, 2.0, n);
  CHECK(cudaStreamEndCapture(s, &g));
  cudaGraphNode_t nodes[2];
  size_t count = 2;
  CHECK(cudaGraphGetNodes(g, nodes, &count));
  EXPECT(count == 2);
  cudaKernelNodeParams p0{}, p1{};
  CHECK(cudaGraphKernelNodeGetParams(nodes[0], &p0));
  CHECK(cudaGraphKernelNodeGetParams(nodes[1], &p1));
  EXPECT(p0.func == p1.func || p0.func == (void *)fill<double> || p1.func == (void *)fill<double>);
  cudaGraphExec_t e;
  CHECK(cudaGraphInstantiate(&e, g, 0));
  CHECK(cudaGraphLaunch(e, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaMemcpy(hd, dd, sizeof hd, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(hd[i] == 4.0 + i);

  CHECK(cudaGraphExecDestroy(e));
  CHECK(cudaGraphDestroy(g));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(di));
  CHECK(cudaFree(dd));
  return passed();
}
