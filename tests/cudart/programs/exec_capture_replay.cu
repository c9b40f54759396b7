// A training-loop style step captured once and replayed: a fork/join capture over two streams
// (events), instantiated and launched 100 times, with an upload and a switch of launch stream
// half way, then instantiated again with cudaGraphInstantiateWithParams and the upload flag.
#include "check.h"

#include <vector>

// The branches read copies of their own: the race check takes a PTX kernel's pointer arguments
// as read and written.
__global__ void bump(int *b, int *b2, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b2[i] = b[i] += 1;
}

__global__ void accumulate(long long *a, const int *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] += b[i];
}

__global__ void twice(long long *c, const int *b, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] += 2 * b[i];
}

int main() {
  const int n = 1000, launches = 100;
  std::vector<int> b(n);
  std::vector<long long> a(n), c(n);
  for (int i = 0; i < n; i++) b[i] = i % 37 - 18, a[i] = 3 * i, c[i] = -i;
  int *db, *db2;
  long long *da, *dc;
  CHECK(cudaMalloc(&db, n * sizeof(int)));
  CHECK(cudaMalloc(&db2, n * sizeof(int)));
  CHECK(cudaMalloc(&da, n * sizeof(long long)));
  CHECK(cudaMalloc(&dc, n * sizeof(long long)));
  CHECK(cudaMemcpy(db, b.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(da, a.data(), n * sizeof(long long), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dc, c.data(), n * sizeof(long long), cudaMemcpyHostToDevice));

  cudaStream_t s0, s1, s2;
  cudaEvent_t fork, join;
  CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreate(&s2));
  CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));

  // bump -> {accumulate on s0, twice on s1} -> join
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  bump<<<(n + 127) / 128, 128, 0, s0>>>(db, db2, n);
  CHECK(cudaEventRecord(fork, s0));
  CHECK(cudaStreamWaitEvent(s1, fork, 0));
  accumulate<<<(n + 255) / 256, 256, 0, s0>>>(da, db, n);
  twice<<<3, 64, 0, s1>>>(dc, db2, n);
  CHECK(cudaEventRecord(join, s1));
  CHECK(cudaStreamWaitEvent(s0, join, 0));
  CHECK(cudaStreamEndCapture(s0, &graph));

  size_t nodes = 0, edges = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges));
  EXPECT(nodes == 3);
  EXPECT(edges == 2);

  cudaGraphExec_t exec;
  CHECK_ERROR(cudaGraphInstantiate(nullptr, graph, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphInstantiate(&exec, graph, 0x100), cudaErrorInvalidValue);
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  unsigned long long flags = 1;
  CHECK(cudaGraphExecGetFlags(exec, &flags));
  EXPECT(flags == 0);
  CHECK_ERROR(cudaGraphLaunch(nullptr, s0), cudaErrorInvalidValue);

  for (int k = 0; k < launches / 2; k++) CHECK(cudaGraphLaunch(exec, s0));
  CHECK(cudaStreamSynchronize(s0));
  // The same executable, uploaded to and launched on another (blocking) stream.
  CHECK(cudaGraphUpload(exec, s2));
  for (int k = launches / 2; k < launches; k++) CHECK(cudaGraphLaunch(exec, s2));
  CHECK(cudaStreamSynchronize(s2));

  std::vector<int> b1(n);
  std::vector<long long> a1(n), c1(n);
  CHECK(cudaMemcpy(b1.data(), db, n * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(a1.data(), da, n * sizeof(long long), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(c1.data(), dc, n * sizeof(long long), cudaMemcpyDeviceToHost));
  const long long tri = (long long)launches * (launches + 1) / 2;  // 1 + 2 + ... + 100
  for (int i = 0; i < n; i++) {
    EXPECT(b1[i] == b[i] + launches);
    EXPECT(a1[i] == a[i] + (long long)launches * b[i] + tri);
    EXPECT(c1[i] == c[i] + 2 * ((long long)launches * b[i] + tri));
  }

  // Instantiated again with the upload flag: uploaded to s1 at once, then launched on the
  // legacy stream; result_out and errNode_out are written.
  cudaGraphInstantiateParams params = {};
  params.flags = cudaGraphInstantiateFlagUpload;
  params.uploadStream = s1;
  params.errNode_out = (cudaGraphNode_t)&params;
  params.result_out = cudaGraphInstantiateError;
  cudaGraphExec_t exec2;
  CHECK(cudaGraphInstantiateWithParams(&exec2, graph, &params));
  EXPECT(params.result_out == cudaGraphInstantiateSuccess);
  EXPECT(params.errNode_out == nullptr);
  CHECK(cudaGraphExecGetFlags(exec2, &flags));
  EXPECT(flags == 0);  // the upload flag is not reported
  CHECK(cudaStreamSynchronize(s1));
  CHECK(cudaGraphLaunch(exec2, 0));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(b1.data(), db, n * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(a1.data(), da, n * sizeof(long long), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) {
    EXPECT(b1[i] == b[i] + launches + 1);
    EXPECT(a1[i] == a[i] + (long long)(launches + 1) * b[i] + tri + launches + 1);
  }

  CHECK(cudaGraphExecDestroy(exec2));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaEventDestroy(fork));
  CHECK(cudaEventDestroy(join));
  CHECK(cudaStreamDestroy(s0));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFree(db));
  CHECK(cudaFree(db2));
  CHECK(cudaFree(da));
  CHECK(cudaFree(dc));
  return passed();
}
