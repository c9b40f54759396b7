// Shared memory: a static array, a static 2-D array, and dynamic shared memory (extern
// __shared__) carved into two arrays of different types. Every block works on its own slice.

extern "C" __global__ void reverse_static(const int *in, int *out, int n) {
  __shared__ int s[128];
  int t = threadIdx.x, base = blockIdx.x * blockDim.x;
  s[t] = base + t < n ? in[base + t] : -1;
  __syncthreads();
  int j = blockDim.x - 1 - t;
  if (base + t < n) out[base + t] = s[j];
}

// Each block sums the rows and the columns of its 8x8 tile.
extern "C" __global__ void tile_2d(const int *in, int *rows, int *cols) {
  __shared__ int tile[8][8];
  int x = threadIdx.x, y = threadIdx.y, b = blockIdx.x;
  tile[y][x] = in[b * 64 + y * 8 + x];
  __syncthreads();
  if (y == 0) {
    int c = 0;
    for (int k = 0; k < 8; k++) c += tile[k][x];
    cols[b * 8 + x] = c;
  }
  if (x == 0) {
    int r = 0;
    for (int k = 0; k < 8; k++) r += tile[y][k];
    rows[b * 8 + y] = r;
  }
}

// Dynamic shared memory: blockDim.x floats, then blockDim.x ints. Each thread writes the sum of
// its neighbours in the block (wrapping around) and how many of them were negative.
extern "C" __global__ void dynamic_split(const float *in, float *sums, int *negatives) {
  extern __shared__ float dyn[];
  float *vals = dyn;
  int *neg = (int *)(dyn + blockDim.x);
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t, m = blockDim.x;
  vals[t] = in[i];
  neg[t] = in[i] < 0.0f;
  __syncthreads();
  int l = (t + m - 1) % m, r = (t + 1) % m;
  sums[i] = vals[l] + vals[r];
  negatives[i] = neg[l] + neg[r];
}
