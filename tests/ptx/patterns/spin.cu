// nvcc-archs: 75 80 90
// Threads that wait on each other without a barrier, as code written for independent thread
// scheduling (Volta and later) does: a producer and a consumer warp handing data over through
// flags, a per-bucket spin lock that lanes of one warp contend for, a lock-free list push, and a
// ticket lock and a mutex taken by the blocks of a grid.
#include <cuda/atomic>

// Blocks of two warps. For `rounds` rounds, warp 0 writes 32 values to scratch and raises the
// block's ready flag; warp 1 waits for it, consumes the values, and acknowledges; warp 0 waits
// for the acknowledgement before the next round. out[i] = 3 * in[i] + round + lane.
extern "C" __global__ void ping_pong(const int *in, int *out, int *scratch, int *flags, int rounds) {
  volatile int *ready = flags + 2 * blockIdx.x, *ack = ready + 1;
  volatile int *buf = scratch + 32 * blockIdx.x;
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  for (int r = 0; r < rounds; r++) {
    int i = (blockIdx.x * rounds + r) * 32 + lane;
    if (w == 0) {
      while (*ack != r) {
      }
      buf[lane] = 3 * in[i] + r;
      __threadfence();
      __syncwarp();
      if (lane == 0) *ready = r + 1;
    } else {
      while (*ready != r + 1) {
      }
      __threadfence();
      out[i] = buf[lane] + lane;
      __syncwarp();
      if (lane == 0) *ack = r + 1;
    }
  }
}

// One hand-over per block with release/acquire atomics (cuda::atomic_ref at block scope): warp
// 0 fills scratch and releases the flag; warp 1 spins on an acquire load, then reads.
extern "C" __global__ void handoff_acquire(const int *in, int *out, int *scratch, int *flags) {
  cuda::atomic_ref<int, cuda::thread_scope_block> flag(flags[blockIdx.x]);
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  int *buf = scratch + 32 * blockIdx.x;
  int i = blockIdx.x * 32 + lane;
  if (w == 0) {
    buf[lane] = in[i] * in[i];
    __syncwarp();
    if (lane == 0) flag.store(1, cuda::memory_order_release);
  } else if (w == 1) {
    while (flag.load(cuda::memory_order_acquire) == 0) {
    }
    out[i] = buf[lane] - lane;
  }
}

// A hash table of buckets with one spin lock each: every thread takes its key's bucket lock
// with atomicCAS (lanes of one warp contend for the same lock), appends the key, and releases.
// fill[b] counts bucket b's keys, stored at slots[b * cap].
extern "C" __global__ void locked_insert(const int *keys, int *slots, int *fill, int *locks, int nbuckets, int cap,
                                         int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int k = keys[i], b = k % nbuckets;
  while (atomicCAS(&locks[b], 0, 1) != 0) {
  }
  __threadfence();
  volatile int *f = fill;
  int at = f[b];
  slots[b * cap + at] = k;
  f[b] = at + 1;
  __threadfence();
  atomicExch(&locks[b], 0);
}

// Pushes node i (for every i < n) onto a lock-free singly linked list: next[i] links, *head the
// first node (-1: empty). A lane whose compare-and-swap loses retries with the head it saw.
extern "C" __global__ void lockfree_push(int *next, int *head, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int old = *(volatile int *)head;
  for (;;) {
    next[i] = old;
    __threadfence();
    int seen = atomicCAS(head, old, i);
    if (seen == old) break;
    old = seen;
  }
}

// Each block sums its values (shared atomics), then its thread 0 takes a ticket lock shared by
// the grid (tickets[0]: next ticket, tickets[1]: now serving) and adds the sum to acc[0] with
// plain loads and stores; acc[1] counts blocks, acc[2 + ticket] records who came when.
extern "C" __global__ void ticket_lock_sum(const int *in, int *acc, int *tickets, int n) {
  __shared__ int block_sum;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0) block_sum = 0;
  __syncthreads();
  if (i < n) atomicAdd(&block_sum, in[i]);
  __syncthreads();
  if (threadIdx.x == 0) {
    int my = atomicAdd(&tickets[0], 1);
    volatile int *serving = tickets + 1;
    while (*serving != my) {
    }
    __threadfence();
    volatile int *a = acc;
    a[0] = a[0] + block_sum;
    a[1] = a[1] + 1;
    a[2 + my] = blockIdx.x;
    __threadfence();
    atomicAdd(&tickets[1], 1);
  }
}

// A global mutex taken with atomicCAS by thread 0 of each block, released with atomicExch: each
// block appends its maximum to log[1 + *log] and bumps the count in log[0] inside the lock.
extern "C" __global__ void mutex_blocks(const int *in, int *log, int *lock, int n) {
  __shared__ int block_max;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0) block_max = -2147483647 - 1;
  __syncthreads();
  if (i < n) atomicMax(&block_max, in[i]);
  __syncthreads();
  if (threadIdx.x == 0) {
    while (atomicCAS(lock, 0, 1) != 0) {
    }
    __threadfence();
    volatile int *l = log;
    int at = l[0];
    l[1 + at] = block_max;
    l[0] = at + 1;
    __threadfence();
    atomicExch(lock, 0);
  }
}
