// Unified memory as programs use it: cudaMallocManaged written by the host, updated by kernels,
// read after cudaDeviceSynchronize; the hints (prefetch, advise, attach) that such programs call;
// and __managed__ variables, read and written by host and kernels alike (also under strict
// memory, where host code touching device memory faults).
#include "check.h"

#include <cstring>

struct Particle {
  float x, v;
};

__managed__ int steps_done;
__managed__ float total_energy;

__global__ void step(Particle *p, int n, float dt) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i].x += p[i].v * dt;
  if (i == 0) steps_done += 1;
}

__global__ void energy(const Particle *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&total_energy, 0.5f * p[i].v * p[i].v);
}

int main() {
  const int n = 300;
  Particle *p;
  CHECK(cudaMallocManaged(&p, n * sizeof(Particle)));
  for (int i = 0; i < n; i++) p[i] = {float(i), float(i % 4)}; // the host writes it directly

  cudaPointerAttributes a;
  CHECK(cudaPointerGetAttributes(&a, p));
  EXPECT(a.type == cudaMemoryTypeManaged && a.devicePointer == p && a.hostPointer == p);

  // Hints a unified-memory program gives; the simulator accepts them and has nothing to move.
  cudaMemLocation gpu = {cudaMemLocationTypeDevice, 0}, cpu = {cudaMemLocationTypeHost, 0};
  CHECK(cudaMemAdvise(p, n * sizeof(Particle), cudaMemAdviseSetPreferredLocation, gpu));
  CHECK(cudaMemAdvise(p, n * sizeof(Particle), cudaMemAdviseSetAccessedBy, cpu));
  CHECK(cudaMemPrefetchAsync(p, n * sizeof(Particle), gpu, 0, 0));

  steps_done = 0; // a __managed__ variable, touched by the host before any kernel
  for (int s = 0; s < 5; s++) step<<<(n + 127) / 128, 128>>>(p, n, 0.5f);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < n; i++) EXPECT(p[i].x == float(i) + 5 * 0.5f * float(i % 4));
  EXPECT(steps_done == 5);

  // The host updates it between kernels; a second managed allocation, attached to the host.
  for (int i = 0; i < n; i++) p[i].v = 2.0f;
  total_energy = 1.0f;
  energy<<<(n + 127) / 128, 128>>>(p, n);
  CHECK(cudaDeviceSynchronize());
  EXPECT(total_energy == 1.0f + 2.0f * n);

  int *flags;
  CHECK(cudaMallocManaged(&flags, 64 * sizeof(int), cudaMemAttachHost));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaStreamAttachMemAsync(s, flags, 0, cudaMemAttachSingle));
  CHECK(cudaMemsetAsync(flags, 0xff, 64 * sizeof(int), s));
  CHECK(cudaMemPrefetchAsync(flags, 64 * sizeof(int), cpu, 0, s));
  CHECK(cudaStreamSynchronize(s));
  for (int i = 0; i < 64; i++) EXPECT(flags[i] == -1);
  CHECK(cudaMemset(flags, 0, 64 * sizeof(int))); // synchronous for memory the host reads
  for (int i = 0; i < 64; i++) EXPECT(flags[i] == 0);

  // The hints refuse what CUDA refuses.
  int plain = 0;
  cudaMemLocation gpu1 = {cudaMemLocationTypeDevice, 1};
  CHECK_ERROR(cudaMemPrefetchAsync(p, n * sizeof(Particle), gpu1, 0, 0), cudaErrorInvalidDevice);
  CHECK_ERROR(cudaMemPrefetchAsync(p, n * sizeof(Particle) + 1, gpu, 0, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaMemPrefetchAsync(&plain, sizeof plain, gpu, 0, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaMemAdvise(p, 16, (cudaMemoryAdvise)42, gpu), cudaErrorInvalidValue);
  CHECK_ERROR(cudaStreamAttachMemAsync(s, flags + 1, 0, cudaMemAttachSingle), cudaErrorInvalidValue);
  CHECK_ERROR(cudaStreamAttachMemAsync(s, flags, 0, 3), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);

  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(flags));
  CHECK(cudaFree(p));
  return passed();
}
