// nvcc: -arch=compute_80
// Static shared variables beside dynamic shared memory (extern __shared__): the dynamic array
// starts after the kernel's static variables, so writing all of it leaves them alone. And the
// special registers that describe a block's shared memory, read as cooperative groups reads them.

static __device__ unsigned dynamic_bytes() {
  unsigned v;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(v));
  return v;
}

// A last-block reduction: every block sums its slice in dynamic shared memory, the last block
// to finish sums the partial sums. `is_last` and `marker` are static shared variables; every
// block first fills its whole dynamic array, then reports the marker it finds.
extern "C" __global__ void last_block_sum(const float *in, float *partial, unsigned *count, float *total,
                                          unsigned *markers) {
  __shared__ bool is_last;
  __shared__ unsigned marker;
  extern __shared__ float scratch[];
  unsigned n = dynamic_bytes() / sizeof(float);
  if (threadIdx.x == 0) marker = 0xc0ffee00u + blockIdx.x;
  __syncthreads();
  for (unsigned i = threadIdx.x; i < n; i += blockDim.x) scratch[i] = -1.0f;
  __syncthreads();
  scratch[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    markers[blockIdx.x] = marker;
    partial[blockIdx.x] = scratch[0];
    __threadfence();
    unsigned done = atomicAdd(count, 1u);
    is_last = done == gridDim.x - 1;
  }
  __syncthreads();
  if (is_last && threadIdx.x == 0) {
    float sum = 0.0f;
    for (unsigned b = 0; b < gridDim.x; b++) sum += ((volatile float *)partial)[b];
    *total = sum;
  }
}

// The shared-memory registers and where the variables are: out[0..9] = %dynamic_smem_size,
// %total_smem_size, %reserved_smem_offset_begin, _end, _cap, _0, _1, the offset of the static
// array, of the dynamic array, and what the static array holds after the dynamic one is written.
extern "C" __global__ void smem_registers(unsigned *out) {
  __shared__ unsigned char bytes[100];
  extern __shared__ double dyn[];
  unsigned v[7];
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(v[0]));
  asm("mov.u32 %0, %%total_smem_size;" : "=r"(v[1]));
  asm("mov.u32 %0, %%reserved_smem_offset_begin;" : "=r"(v[2]));
  asm("mov.u32 %0, %%reserved_smem_offset_end;" : "=r"(v[3]));
  asm("mov.u32 %0, %%reserved_smem_offset_cap;" : "=r"(v[4]));
  asm("mov.u32 %0, %%reserved_smem_offset_0;" : "=r"(v[5]));
  asm("mov.u32 %0, %%reserved_smem_offset_1;" : "=r"(v[6]));
  for (unsigned i = threadIdx.x; i < sizeof bytes; i += blockDim.x) bytes[i] = (unsigned char)(i + 1);
  __syncthreads();
  for (unsigned i = threadIdx.x; i < v[0] / sizeof(double); i += blockDim.x) dyn[i] = -2.0;
  // What cooperative groups keeps in the reserved region: a word written there is kept.
  unsigned *reserved = (unsigned *)__cvta_shared_to_generic(v[6]);
  if (threadIdx.x == 0) *reserved = 0x5eedu;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int i = 0; i < 7; i++) out[i] = v[i];
    out[7] = (unsigned)__cvta_generic_to_shared(bytes);
    out[8] = (unsigned)__cvta_generic_to_shared(dyn);
    unsigned sum = 0;
    for (unsigned i = 0; i < sizeof bytes; i++) sum += bytes[i];
    out[9] = sum;
    out[10] = *reserved;
  }
}
