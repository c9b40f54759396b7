// nvcc-G
// Control flow that diverges within a warp: if/else per lane, nested branches, loops whose trip
// count depends on the lane, break and continue, early return, a dense switch (a jump table),
// and predicated stores.

extern "C" __global__ void branches(const int *a, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], r;
  if (x & 1) {
    if (x % 3 == 0)
      r = x * 5;
    else
      r = x - 7;
  } else if (x < 0) {
    r = -x;
  } else {
    r = x / 2 + 100;
  }
  if (threadIdx.x % 4 == 1) r ^= 0x5a5a; // a second split, across the first
  out[i] = r;
}

// Collatz steps: a loop whose trip count differs in every lane, with a cap (break) and skipped
// odd steps (continue).
extern "C" __global__ void lane_loops(const int *a, int *steps, int *peak, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned v = (unsigned)a[i];
  int s = 0;
  unsigned top = v;
  while (v > 1) {
    if (s == 500) break;
    s++;
    if (v & 1) {
      v = 3 * v + 1;
      top = max(top, v);
      continue;
    }
    v >>= 1;
  }
  steps[i] = s;
  peak[i] = top;
}

// Lanes leave at different points; the survivors still use the whole warp's worth of work.
extern "C" __global__ void early_exit(const int *a, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i];
  out[i] = -1;
  if (x < 0) return;
  int acc = 0;
  for (int k = 0; k < x % 37; k++) {
    acc += k * x;
    if (acc > 100000) return;
  }
  out[i] = acc;
}

extern "C" __global__ void jump_table(const int *a, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], r;
  switch (x & 15) {
  case 0: r = x + 1; break;
  case 1: r = x * 3; break;
  case 2: r = x ^ 0xff; break;
  case 3: r = x << 2; break;
  case 4: r = -x; break;
  case 5: r = x - 1000; break;
  case 6: r = x | 0x1000; break;
  case 7: r = x & 0x0f0f; break;
  case 8: r = x >> 1; break;
  case 9: r = x * x; break;
  case 10: r = ~x; break;
  case 11: r = x + 77; break;
  default: r = 0; break;
  }
  out[i] = r;
}

// Conditional stores and selections that nvcc turns into predicated instructions.
extern "C" __global__ void predicated(const int *a, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i];
  int r = x > 10 ? x - 10 : 10 - x;
  if (x & 2) r += 3;
  out[2 * i] = r;
  if (x & 4) out[2 * i + 1] = x;
  else out[2 * i + 1] = 0;
}
