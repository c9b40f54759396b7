// The second unit of rdc_two_units: defines what rdc_two_units_a.cu declares extern, and has a
// static helper and a string constant of the same names as that unit's.
__device__ int scale = 1;
__device__ unsigned long long hits = 0;
extern __device__ int offset; // defined in rdc_two_units_a.cu
__constant__ int weights[4];

static __device__ __noinline__ int helper(int x) { return x * 3; }

static __device__ __noinline__ char tag(int i) {
  const char *name = "bravo";
  return name[i % 5];
}

__device__ int scaled(int x) { return scale * x; }

__global__ void b_tag(int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = (out[i] + offset) * 10 + helper(i) + tag(i);
  atomicAdd(&hits, 1ull);
}
