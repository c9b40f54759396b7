// An ordinary CUDA program, written against the runtime API only: it captures a three-kernel
// step into a CUDA graph once, replays the graph, and checks the result on the host. Built with
// `nvcc -cudart shared`, it runs unmodified on gcap's simulator through gcap-run:
//
//   nvcc -cudart shared -arch=sm_80 -o graph_saxpy examples/cudart/graph_saxpy.cu
//   build/tools/gcap-run --report ./graph_saxpy
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));              \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

__global__ void fill(float *x, float value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = value;
}

__global__ void saxpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// One block sums y: a shared-memory tree reduction.
__global__ void sum(const float *y, float *out, int n) {
  __shared__ float partial[256];
  float s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += y[i];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = partial[0];
}

int main() {
  const int n = 4096, replays = 10;
  float *x, *y, *total;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  CHECK(cudaMalloc(&total, sizeof(float)));
  CHECK(cudaMemset(y, 0, n * sizeof(float)));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));

  // Record one step: x = 1; y = 2x + y; total = sum(y).
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  fill<<<n / 256, 256, 0, stream>>>(x, 1.0f, n);
  saxpy<<<n / 256, 256, 0, stream>>>(2.0f, x, y, n);
  sum<<<1, 256, 0, stream>>>(y, total, n);
  CHECK(cudaStreamEndCapture(stream, &graph));
  size_t nodes = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));

  for (int r = 0; r < replays; r++) CHECK(cudaGraphLaunch(exec, stream));
  float result = 0;
  CHECK(cudaMemcpyAsync(&result, total, sizeof result, cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));

  const float expected = 2.0f * replays * n;
  std::printf("graph of %zu nodes replayed %d times: sum %.0f (expected %.0f)\n", nodes, replays, result, expected);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaFree(total));
  if (result != expected) return 1;
  std::printf("PASSED\n");
  return 0;
}
