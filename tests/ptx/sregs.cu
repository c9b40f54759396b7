// Special registers: thread and block indices and sizes in three dimensions, %laneid, %warpid
// and %nwarpid, the lane masks, %smid and %nsmid, the dynamic shared memory size, and the clocks.

__device__ unsigned sreg_laneid() { unsigned r; asm("mov.u32 %0, %%laneid;" : "=r"(r)); return r; }
__device__ unsigned sreg_warpid() { unsigned r; asm volatile("mov.u32 %0, %%warpid;" : "=r"(r)); return r; }
__device__ unsigned sreg_nwarpid() { unsigned r; asm("mov.u32 %0, %%nwarpid;" : "=r"(r)); return r; }
__device__ unsigned sreg_lanemask_lt() { unsigned r; asm("mov.u32 %0, %%lanemask_lt;" : "=r"(r)); return r; }
__device__ unsigned sreg_lanemask_le() { unsigned r; asm("mov.u32 %0, %%lanemask_le;" : "=r"(r)); return r; }
__device__ unsigned sreg_lanemask_eq() { unsigned r; asm("mov.u32 %0, %%lanemask_eq;" : "=r"(r)); return r; }
__device__ unsigned sreg_lanemask_ge() { unsigned r; asm("mov.u32 %0, %%lanemask_ge;" : "=r"(r)); return r; }
__device__ unsigned sreg_lanemask_gt() { unsigned r; asm("mov.u32 %0, %%lanemask_gt;" : "=r"(r)); return r; }
__device__ unsigned sreg_smid() { unsigned r; asm volatile("mov.u32 %0, %%smid;" : "=r"(r)); return r; }
__device__ unsigned sreg_nsmid() { unsigned r; asm("mov.u32 %0, %%nsmid;" : "=r"(r)); return r; }
__device__ unsigned sreg_clock() { unsigned r; asm volatile("mov.u32 %0, %%clock;" : "=r"(r)); return r; }
__device__ unsigned sreg_dynamic_smem() { unsigned r; asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r)); return r; }

#define WORDS 24

// One record of WORDS words per thread, at the thread's linear index in the grid.
extern "C" __global__ void sregs_3d(unsigned *out) {
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  unsigned *o = out + WORDS * (block * threads + tid);
  o[0] = threadIdx.x; o[1] = threadIdx.y; o[2] = threadIdx.z;
  o[3] = blockIdx.x; o[4] = blockIdx.y; o[5] = blockIdx.z;
  o[6] = blockDim.x; o[7] = blockDim.y; o[8] = blockDim.z;
  o[9] = gridDim.x; o[10] = gridDim.y; o[11] = gridDim.z;
  o[12] = sreg_laneid();
  o[13] = sreg_warpid();
  o[14] = sreg_nwarpid();
  o[15] = sreg_lanemask_lt();
  o[16] = sreg_lanemask_le();
  o[17] = sreg_lanemask_eq();
  o[18] = sreg_lanemask_ge();
  o[19] = sreg_lanemask_gt();
  o[20] = sreg_smid();
  o[21] = sreg_nsmid();
  o[22] = sreg_dynamic_smem();
  o[23] = warpSize;
}

// clock64 read three times around some work: never decreasing. The 32-bit clock too, as a
// difference (it may wrap).
extern "C" __global__ void clocks(const int *a, long long *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long t0 = clock64();
  unsigned c0 = sreg_clock();
  int acc = 0;
  for (int k = 0; k < (a[i] & 63); k++) acc = acc * 31 + k;
  long long t1 = clock64();
  unsigned c1 = sreg_clock();
  long long t2 = clock64();
  out[4 * i + 0] = t1 - t0;
  out[4 * i + 1] = t2 - t1;
  out[4 * i + 2] = (long long)(c1 - c0);
  out[4 * i + 3] = acc;
}
