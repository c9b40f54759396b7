// A solver loop captured once and replayed until it converges: two Jacobi sweeps and the
// change between them (a max reduction in one block) captured as one graph with the copy of the
// residual to pinned host memory; the host replays it until the residual is below tolerance.
// The device rounds exactly as the host (no fused multiply-add), so the iterates, the residual
// and the number of replays match a CPU solve bit for bit.
#include "check.h"

#include <cmath>
#include <vector>

static const int n = 48;

__global__ void sweep(const double *A, const double *b, const double *x, double *x_new) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double s = 0.0;
  for (int j = 0; j < n; j++)
    if (j != i) s = __dadd_rn(s, __dmul_rn(A[i * n + j], x[j]));
  x_new[i] = __ddiv_rn(__dsub_rn(b[i], s), A[i * n + i]);
}

__global__ void max_change(const double *x, const double *y, double *res) {
  __shared__ double part[128];
  double m = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) m = fmax(m, fabs(x[i] - y[i]));
  part[threadIdx.x] = m;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) part[threadIdx.x] = fmax(part[threadIdx.x], part[threadIdx.x + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0) *res = part[0];
}

static void cpu_sweep(const std::vector<double> &A, const std::vector<double> &b, const std::vector<double> &x,
                      std::vector<double> &x_new) {
  for (int i = 0; i < n; i++) {
    double s = 0.0;
    for (int j = 0; j < n; j++)
      if (j != i) {
        volatile double p = A[i * n + j] * x[j];  // rounded alone, as __dmul_rn
        s = s + p;
      }
    x_new[i] = (b[i] - s) / A[i * n + i];
  }
}

int main() {
  std::vector<double> A(n * n), b(n);
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) A[i * n + j] = i == j ? 2.0 * n : double((i + 2 * j) % 5) - 2.0;
    b[i] = double(i % 7) - 3.0;
  }
  const double tolerance = 1e-13;
  const int max_replays = 500;

  // The CPU solve: pairs of sweeps until the change of the second is below tolerance.
  std::vector<double> x(n, 0.0), y(n, 0.0);
  int cpu_replays = 0;
  double cpu_res = 1.0;
  while (cpu_res >= tolerance && cpu_replays < max_replays) {
    cpu_sweep(A, b, x, y);
    cpu_sweep(A, b, y, x);
    cpu_res = 0.0;
    for (int i = 0; i < n; i++) cpu_res = std::fmax(cpu_res, std::fabs(x[i] - y[i]));
    cpu_replays++;
  }
  EXPECT(cpu_res < tolerance);
  EXPECT(cpu_replays > 5);

  double *dA, *db, *dx, *dy, *dres, *res;
  CHECK(cudaMalloc(&dA, n * n * sizeof(double)));
  CHECK(cudaMalloc(&db, n * sizeof(double)));
  CHECK(cudaMalloc(&dx, n * sizeof(double)));
  CHECK(cudaMalloc(&dy, n * sizeof(double)));
  CHECK(cudaMalloc(&dres, sizeof(double)));
  CHECK(cudaMallocHost(&res, sizeof(double)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMemcpyAsync(dA, A.data(), n * n * sizeof(double), cudaMemcpyHostToDevice, s));
  CHECK(cudaMemcpyAsync(db, b.data(), n * sizeof(double), cudaMemcpyHostToDevice, s));
  CHECK(cudaMemsetAsync(dx, 0, n * sizeof(double), s));
  CHECK(cudaStreamSynchronize(s));

  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  sweep<<<(n + 31) / 32, 32, 0, s>>>(dA, db, dx, dy);
  sweep<<<(n + 31) / 32, 32, 0, s>>>(dA, db, dy, dx);
  max_change<<<1, 128, 0, s>>>(dx, dy, dres);
  CHECK(cudaMemcpyAsync(res, dres, sizeof(double), cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamEndCapture(s, &graph));
  size_t nodes = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  EXPECT(nodes == 4);
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));

  int replays = 0;
  *res = 1.0;
  while (*res >= tolerance && replays < max_replays) {
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    replays++;
  }
  EXPECT(replays == cpu_replays);
  EXPECT(*res == cpu_res);
  std::vector<double> gx(n);
  CHECK(cudaMemcpy(gx.data(), dx, n * sizeof(double), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(gx[i] == x[i]);
  // And it solves the system.
  for (int i = 0; i < n; i++) {
    double r = -b[i];
    for (int j = 0; j < n; j++) r += A[i * n + j] * gx[j];
    EXPECT(std::fabs(r) < 1e-10);
  }

  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFreeHost(res));
  for (double *p : {dA, db, dx, dy, dres}) CHECK(cudaFree(p));
  return passed();
}
