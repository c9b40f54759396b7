// nvcc-archs: 80 90
// The forms nvcc emits for asynchronous copies and barriers (test_ptx_async): the pipeline
// primitives double-buffered with zero-fill, cuda::barrier phases across warps, cuda::memcpy_async
// completing on a barrier (cp.async.mbarrier.arrive; at sm_90 an aligned copy is cp.async.bulk
// with expect_tx), cuda::pipeline, cooperative_groups::memcpy_async, and a CUTLASS-style
// producer/consumer hand-off through mbarrier parity waits (sm_90: try_wait.parity, with
// fence.proxy.async and fence.mbarrier_init; sm_80: test_wait.parity) and nanosleep.
#pragma nv_diag_suppress static_var_with_dynamic_init
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda_pipeline.h>

namespace cg = cooperative_groups;

// Blocks of 128 threads: each block sums `stages` tiles of 128 float4 of in (n floats in all:
// bytes past the end are zero-filled), double-buffered; a thread reads its neighbour's element.
extern "C" __global__ void pipe_sum(const float4 *in, float *out, int n, int stages) {
  __shared__ float4 buf[2][128];
  int t = threadIdx.x;
  int base = blockIdx.x * stages * 128;
  auto issue = [&](int st) {
    int idx = base + st * 128 + t;
    int rem = n - idx * 4;
    int bytes = rem >= 4 ? 16 : rem > 0 ? rem * 4 : 0;
    __pipeline_memcpy_async(&buf[st & 1][t], bytes ? &in[idx] : in, 16, 16 - bytes);
    __pipeline_commit();
  };
  issue(0);
  float acc = 0;
  for (int st = 0; st < stages; st++) {
    if (st + 1 < stages) issue(st + 1);
    else __pipeline_commit();
    __pipeline_wait_prior(1);
    __syncthreads();
    float4 v = buf[st & 1][(t + 1) & 127];
    acc += (v.x + 2 * v.y + 3 * v.z + 4 * v.w) * (st + 1);
    __syncthreads();
  }
  out[blockIdx.x * 128 + t] = acc;
}

// rounds of: every thread writes, the barrier completes a phase, every thread reads another's.
extern "C" __global__ void barrier_rounds(int *out, int rounds) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  __shared__ int data[256];
  int t = threadIdx.x, n = blockDim.x;
  if (t == 0) init(&bar, n);
  __syncthreads();
  for (int r = 0; r < rounds; r++) {
    data[t] = t * (r + 1) + 1;
    if (r & 1) {
      bar.arrive_and_wait();
    } else {
      auto token = bar.arrive();
      bar.wait(std::move(token));
    }
    out[r * n + t] = data[(t + 37) % n];
    bar.arrive_and_wait();
  }
  bar.arrive_and_drop();
}

// The block copies 256 floats with one cuda::memcpy_async on a barrier, then reads them shifted.
extern "C" __global__ void memcpy_barrier(const float *in, float *out) {
  __shared__ float s[256];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  cuda::memcpy_async(block, s, in + 256 * blockIdx.x, sizeof(float) * 256, bar);
  bar.arrive_and_wait();
  out[256 * blockIdx.x + threadIdx.x] = 2 * s[(threadIdx.x + 5) % 256];
}

// Each thread copies 16 aligned bytes on the barrier (sm_90: cp.async.bulk and expect_tx).
extern "C" __global__ void memcpy_aligned(const float4 *in, float4 *out) {
  __shared__ float4 s[128];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  cuda::memcpy_async(&s[threadIdx.x], &in[threadIdx.x], cuda::aligned_size_t<16>(16), bar);
  bar.arrive_and_wait();
  float4 v = s[(threadIdx.x + 1) % blockDim.x];
  out[threadIdx.x] = make_float4(v.w, v.z, v.y, v.x);
}

// A thread's own two-stage cuda::pipeline.
extern "C" __global__ void pipeline_stages(const float *in, float *out) {
  __shared__ float s[2][128];
  auto pipe = cuda::make_pipeline();
  for (int st = 0; st < 2; st++) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[st][threadIdx.x], &in[st * 128 + threadIdx.x], sizeof(float), pipe);
    pipe.producer_commit();
  }
  float acc = 0;
  for (int st = 0; st < 2; st++) {
    pipe.consumer_wait();
    acc += s[st][threadIdx.x] * (st + 1);
    pipe.consumer_release();
  }
  out[threadIdx.x] = acc;
}

// cooperative_groups::memcpy_async and wait, then sleeps of an immediate and a register length.
extern "C" __global__ void cg_copy(const float *in, float *out) {
  __shared__ float s[256];
  auto block = cg::this_thread_block();
  cg::memcpy_async(block, s, in, sizeof(float) * 256);
  cg::wait(block);
  __nanosleep(100);
  __nanosleep(threadIdx.x);
  out[threadIdx.x] = s[255 - threadIdx.x];
}

__device__ __forceinline__ void mbar_wait_parity(unsigned long long *bar, unsigned phase) {
  unsigned addr = (unsigned)__cvta_generic_to_shared(bar);
#if __CUDA_ARCH__ >= 900
#define WAIT_PARITY "mbarrier.try_wait.parity.shared::cta.b64"
#else
#define WAIT_PARITY "mbarrier.test_wait.parity.shared.b64"
#endif
  asm volatile(
      "{\n\t.reg .pred P1;\n"
      "WAIT_%=:\n\t" WAIT_PARITY " P1, [%0], %1;\n\t"
      "@P1 bra DONE_%=;\n\t"
      "nanosleep.u32 20;\n\t"
      "bra WAIT_%=;\n"
      "DONE_%=:\n\t}" ::"r"(addr),
      "r"(phase));
}

__device__ __forceinline__ void mbar_arrive(unsigned long long *bar) {
  unsigned addr = (unsigned)__cvta_generic_to_shared(bar);
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(addr) : "memory");
#else
  asm volatile("{\n\t.reg .b64 st;\n\tmbarrier.arrive.shared.b64 st, [%0];\n\t}" ::"r"(addr) : "memory");
#endif
}

__device__ __forceinline__ void mbar_init(unsigned long long *bar, unsigned count) {
  unsigned addr = (unsigned)__cvta_generic_to_shared(bar);
  asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(addr), "r"(count));
}

// Warp 0 produces `rounds` tiles of 32 ints, warps 1-3 consume each: full and empty mbarriers
// with phase parities, as CUTLASS's pipelines hand tiles over.
extern "C" __global__ void producer_consumer(const int *in, int *out, int rounds) {
  __shared__ unsigned long long full, empty;
  __shared__ int tile[32];
  int t = threadIdx.x, warp = t / 32, lane = t % 32;
  if (t == 0) {
    mbar_init(&full, 32);
    mbar_init(&empty, 96);
#if __CUDA_ARCH__ >= 900
    asm volatile("fence.mbarrier_init.release.cluster;");
#endif
  }
  __syncthreads();
  for (int r = 0; r < rounds; r++) {
    unsigned parity = r & 1;
    if (warp == 0) {
      if (r > 0) mbar_wait_parity(&empty, parity ^ 1);
      tile[lane] = in[r * 32 + lane];
#if __CUDA_ARCH__ >= 900
      asm volatile("fence.proxy.async.shared::cta;");
#endif
      mbar_arrive(&full);
    } else {
      mbar_wait_parity(&full, parity);
      int v = tile[(lane + warp) % 32];
      out[(r * 3 + warp - 1) * 32 + lane] = v * warp;
      mbar_arrive(&empty);
    }
  }
}
