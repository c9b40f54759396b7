// Bit manipulation. popc, clz, brev, prmt (__byte_perm), shf (funnel shifts) and bfind come from
// the intrinsics; bfe, bfi, lop3 and the prmt modes come from inline PTX, since nvcc emits them
// only for patterns it happens to recognise.

#define OPS32 25
#define OPS64 6

template <int LUT> __device__ unsigned lop3(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("lop3.b32 %0, %1, %2, %3, %4;" : "=r"(d) : "r"(a), "r"(b), "r"(c), "n"(LUT));
  return d;
}

extern "C" __global__ void bits32(const unsigned *a, const unsigned *b, const unsigned *c, unsigned *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned x = a[i], y = b[i], z = c[i];
  unsigned *o = out + i * OPS32;
  o[0] = __popc(x);
  o[1] = __clz(x);
  o[2] = __brev(x);
  o[3] = __byte_perm(x, y, z);
  o[4] = __funnelshift_l(x, y, z);
  o[5] = __funnelshift_r(x, y, z);
  o[6] = __funnelshift_lc(x, y, z);
  o[7] = __funnelshift_rc(x, y, z);
  o[8] = __ffs(x);
  unsigned r;
  asm("bfe.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y & 0xff), "r"(z & 0xff));
  o[9] = r;
  asm("bfe.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y & 0xff), "r"(z & 0xff));
  o[10] = r;
  asm("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(r) : "r"(x), "r"(y), "r"(z & 0xff), "r"((z >> 8) & 0xff));
  o[11] = r;
  o[12] = lop3<0x96>(x, y, z); // a ^ b ^ c
  o[13] = lop3<0xe8>(x, y, z); // majority
  o[14] = lop3<0xca>(x, y, z); // a ? b : c, bitwise
  asm("prmt.b32.f4e %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
  o[15] = r;
  asm("prmt.b32.b4e %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
  o[16] = r;
  asm("prmt.b32.rc8 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
  o[17] = r;
  asm("prmt.b32.ecl %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
  o[18] = r;
  asm("prmt.b32.ecr %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
  o[19] = r;
  asm("prmt.b32.rc16 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
  o[20] = r;
  o[21] = (x >> 7) & 0x3ffu;                   // nvcc: bfe.u32
  o[22] = (x & ~0xff0u) | ((y << 4) & 0xff0u); // nvcc: bfi.b32
  o[23] = ~(x & y) | (z ^ x);
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z)); // with sign replication
  o[24] = r;
}

extern "C" __global__ void bits64(const unsigned long long *a, const unsigned long long *b, unsigned long long *out,
                                  int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned long long x = a[i], y = b[i];
  unsigned long long *o = out + i * OPS64;
  o[0] = __popcll(x);
  o[1] = __clzll(x);
  o[2] = __brevll(x);
  o[3] = __ffsll(x);
  unsigned long long r;
  asm("bfe.u64 %0, %1, %2, %3;" : "=l"(r) : "l"(x), "r"((unsigned)y & 0xff), "r"((unsigned)(y >> 8) & 0xff));
  o[4] = r;
  asm("bfe.s64 %0, %1, %2, %3;" : "=l"(r) : "l"(x), "r"((unsigned)y & 0xff), "r"((unsigned)(y >> 8) & 0xff));
  o[5] = r;
}
