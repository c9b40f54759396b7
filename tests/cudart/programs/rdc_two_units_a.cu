// An -rdc program of two translation units (with rdc_two_units_b.cu): this unit's kernels call
// __device__ functions and read a __device__ variable and a __constant__ table that the other
// unit defines; both units have a static helper of the same name and string constants of their
// own; the host sets the other unit's variables by symbol and captures kernels of both units into
// one graph.
#include "check.h"

extern __device__ int scale;               // defined in rdc_two_units_b.cu
extern __device__ int scaled(int x);       // defined in rdc_two_units_b.cu
extern __device__ unsigned long long hits; // defined in rdc_two_units_b.cu
__global__ void b_tag(int *out, int n);    // a kernel of rdc_two_units_b.cu
extern __constant__ int weights[4];        // defined in rdc_two_units_b.cu

__device__ int offset = 100; // read by rdc_two_units_b.cu

// A static helper that rdc_two_units_b.cu also has, with another body.
static __device__ __noinline__ int helper(int x) { return x + 1; }

// A string constant of this unit's own (the other unit has one too).
static __device__ __noinline__ char tag(int i) {
  const char *name = "alpha";
  return name[i % 5];
}

__global__ void a_apply(int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = scaled(helper(i)) + tag(i);
  atomicAdd(&hits, 1ull);
}

// Reads the other unit's __constant__ table.
__global__ void a_weights(int *out) { out[threadIdx.x] = weights[threadIdx.x % 4] * 2; }

int main() {
  const int n = 300;
  int *d;
  CHECK(cudaMalloc(&d, n * sizeof(int)));
  int seven = 7;
  CHECK(cudaMemcpyToSymbol(scale, &seven, sizeof seven));
  a_apply<<<(n + 127) / 128, 128>>>(d, n);
  CHECK(cudaGetLastError());
  int h[n];
  CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  const char alpha[] = "alpha";
  for (int i = 0; i < n; i++) EXPECT(h[i] == 7 * (i + 1) + alpha[i % 5]);

  // Both units' kernels in one captured graph: two kernel nodes, one after the other.
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  a_apply<<<(n + 127) / 128, 128, 0, s>>>(d, n);
  b_tag<<<(n + 63) / 64, 64, 0, s>>>(d, n);
  CHECK(cudaStreamEndCapture(s, &g));
  size_t nodes = 0;
  CHECK(cudaGraphGetNodes(g, nullptr, &nodes));
  EXPECT(nodes == 2);
  cudaGraphExec_t e;
  CHECK(cudaGraphInstantiate(&e, g, 0));
  CHECK(cudaGraphLaunch(e, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  const char bravo[] = "bravo";
  // b_tag: out[i] = (out[i] + offset) * 10 + helper of b (x * 3) + its own string's letter.
  for (int i = 0; i < n; i++) EXPECT(h[i] == (7 * (i + 1) + alpha[i % 5] + 100) * 10 + 3 * i + bravo[i % 5]);

  unsigned long long count = 0;
  CHECK(cudaMemcpyFromSymbol(&count, hits, sizeof count));
  EXPECT(count == 3ull * n); // a_apply twice, b_tag once
  int readback = 0;
  CHECK(cudaMemcpyFromSymbol(&readback, scale, sizeof readback));
  EXPECT(readback == 7);

  // The other unit's __constant__ table, set from this unit's host code.
  const int w[4] = {4, -3, 9, 1};
  CHECK(cudaMemcpyToSymbol(weights, w, sizeof w));
  a_weights<<<1, 32>>>(d);
  CHECK(cudaMemcpy(h, d, 32 * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 32; i++) EXPECT(h[i] == 2 * w[i % 4]);

  CHECK(cudaGraphExecDestroy(e));
  CHECK(cudaGraphDestroy(g));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(d));
  return passed();
}
