extern "C" __global__ void add(int *p, int v) { p[threadIdx.x] += v; }
