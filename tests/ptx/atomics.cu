// Atomics on global and on shared memory, with and without their results. The test checks the
// final values (the operations commute) and, where the returned old values are used, that they
// form what a serial order would return: atomicAdd(1) hands out every value below n once.
// nvcc emits atom even where the result is unused, so red comes from inline PTX (on generic
// addresses, which the simulator resolves to the global or the shared window).

// 64-bit fields first and an even number of 32-bit ones: no padding, so copying the struct
// reads no uninitialised bytes.
struct counters {
  unsigned long long add_u64;
  double add_d;
  long long min_64;
  unsigned long long max_64;
  unsigned long long xor_64;
  unsigned long long cas_sum_64;
  int add_i;
  float add_f;
  int sub_i;
  int min_i;
  int max_i;
  unsigned min_u;
  unsigned max_u;
  unsigned inc;
  unsigned dec;
  unsigned and_u;
  unsigned or_u;
  unsigned xor_u;
  int cas_sum;
  int exch;
  int red_add;
  unsigned red_or;
};

// The operand of thread i for the min/max and bitwise operations.
__device__ int operand(int i) { return (i * 2654435761u) >> 7; }

__device__ void apply_all(counters *c, int i, int *ticket, int *exch_old) {
  int v = operand(i);
  *ticket = atomicAdd(&c->add_i, 1);
  atomicAdd(&c->add_u64, (unsigned long long)v << 20);
  atomicAdd(&c->add_f, (float)(i & 63) * 0.25f); // small multiples of 2^-2: exact in any order
  atomicAdd(&c->add_d, (double)i * 0.5);
  atomicSub(&c->sub_i, i);
  atomicMin(&c->min_i, v - (1 << 23));
  atomicMax(&c->max_i, v - (1 << 23));
  atomicMin(&c->min_u, (unsigned)v);
  atomicMax(&c->max_u, (unsigned)v);
  atomicMin(&c->min_64, (long long)v * -977);
  atomicMax(&c->max_64, (unsigned long long)v * 977);
  atomicInc(&c->inc, 9u);
  atomicDec(&c->dec, 6u);
  atomicAnd(&c->and_u, ~(1u << (i & 31)) | 0x80000001u);
  atomicOr(&c->or_u, 1u << (i % 29));
  atomicXor(&c->xor_u, (unsigned)v);
  atomicXor(&c->xor_64, (unsigned long long)v << 17);
  // Compare-and-swap loops, starting from a guess rather than a plain read of the word.
  int old = 0, seen;
  while ((seen = atomicCAS(&c->cas_sum, old, old + i)) != old) old = seen;
  unsigned long long old64 = 0, seen64;
  while ((seen64 = atomicCAS(&c->cas_sum_64, old64, old64 + (unsigned long long)v)) != old64) old64 = seen64;
  *exch_old = atomicExch(&c->exch, i);
  asm volatile("red.add.u32 [%0], %1;" ::"l"(&c->red_add), "r"(3) : "memory");
  asm volatile("red.or.b32 [%0], %1;" ::"l"(&c->red_or), "r"(1u << (i & 15)) : "memory");
}

extern "C" __global__ void global_atomics(counters *c, int *tickets, int *exch_old, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  apply_all(c, i, &tickets[i], &exch_old[i]);
}

// The same operations on one block's shared copy, initialised from c[0] and written to
// c[1 + blockIdx.x]; i is the thread's index in its block.
extern "C" __global__ void shared_atomics(counters *c, int *tickets, int *exch_old) {
  __shared__ counters s;
  if (threadIdx.x == 0) s = c[0];
  __syncthreads();
  int i = threadIdx.x, g = blockIdx.x * blockDim.x + i;
  apply_all(&s, i, &tickets[g], &exch_old[g]);
  __syncthreads();
  if (threadIdx.x == 0) c[1 + blockIdx.x] = s;
}
