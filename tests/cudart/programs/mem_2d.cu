// A pitched 2-D image, the way image-processing code lays one out: cudaMallocPitch, rows copied
// in with cudaMemcpy2D, a border cleared with cudaMemset2D, a kernel that walks rows by the pitch,
// the result copied back (also asynchronously, and into a narrower window); a 3-D volume with
// cudaMalloc3D, cudaMemcpy3D and cudaMemset3D; and the pitch errors CUDA gives.
#include "check.h"

#include <vector>

// out(x, y) = in(x, y) * 2 + y, rows `pitch` bytes apart.
__global__ void transform(const float *in, size_t in_pitch, float *out, size_t out_pitch, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const float *row_in = reinterpret_cast<const float *>(reinterpret_cast<const char *>(in) + y * in_pitch);
  float *row_out = reinterpret_cast<float *>(reinterpret_cast<char *>(out) + y * out_pitch);
  row_out[x] = row_in[x] * 2.0f + float(y);
}

// Adds z to every element of a w x h x d volume of ints.
__global__ void add_slice(cudaPitchedPtr p, int w, int h, int d) {
  int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
  if (x >= w || y >= h || z >= d) return;
  char *slice = static_cast<char *>(p.ptr) + size_t(z) * p.pitch * p.ysize;
  reinterpret_cast<int *>(slice + y * p.pitch)[x] += z;
}

int main() {
  const int w = 37, h = 19; // 148-byte rows: the pitch pads them
  std::vector<float> img(w * h), out(w * h);
  for (int i = 0; i < w * h; i++) img[i] = float(i % 101);

  float *d_in, *d_out;
  size_t in_pitch, out_pitch;
  CHECK(cudaMallocPitch(reinterpret_cast<void **>(&d_in), &in_pitch, w * sizeof(float), h));
  CHECK(cudaMallocPitch(reinterpret_cast<void **>(&d_out), &out_pitch, w * sizeof(float), h));
  EXPECT(in_pitch >= w * sizeof(float) && in_pitch % 256 == 0);
  CHECK(cudaMemcpy2D(d_in, in_pitch, img.data(), w * sizeof(float), w * sizeof(float), h, cudaMemcpyHostToDevice));
  // The padding of every output row is set too, so nothing of it is ever read uninitialized.
  CHECK(cudaMemset2D(d_out, out_pitch, 0, out_pitch, h));

  dim3 block(16, 8), grid((w + 15) / 16, (h + 7) / 8);
  transform<<<grid, block>>>(d_in, in_pitch, d_out, out_pitch, w, h);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy2D(out.data(), w * sizeof(float), d_out, out_pitch, w * sizeof(float), h, cudaMemcpyDeviceToHost));
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) EXPECT(out[y * w + x] == img[y * w + x] * 2.0f + float(y));

  // A 1-pixel border of each row cleared with a 2-D fill, then a 5 x 3 window read back
  // asynchronously into a tight host buffer, with the kind inferred.
  CHECK(cudaMemset2D(d_out, out_pitch, 0, sizeof(float), h));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  float window[3][5];
  const float *corner = reinterpret_cast<const float *>(reinterpret_cast<const char *>(d_out) + 2 * out_pitch);
  CHECK(cudaMemcpy2DAsync(window, 5 * sizeof(float), corner, out_pitch, 5 * sizeof(float), 3, cudaMemcpyDefault, s));
  CHECK(cudaStreamSynchronize(s));
  for (int y = 0; y < 3; y++)
    for (int x = 0; x < 5; x++) EXPECT(window[y][x] == (x == 0 ? 0.0f : img[(y + 2) * w + x] * 2.0f + float(y + 2)));

  // Device to device between two pitches: the rows of d_out into d_in.
  CHECK(cudaMemcpy2D(d_in, in_pitch, d_out, out_pitch, w * sizeof(float), h, cudaMemcpyDeviceToDevice));
  CHECK(cudaMemcpy2D(out.data(), w * sizeof(float), d_in, in_pitch, w * sizeof(float), h, cudaMemcpyDeviceToHost));
  for (int y = 0; y < h; y++) EXPECT(out[y * w] == 0.0f && out[y * w + 1] == img[y * w + 1] * 2.0f + float(y));

  // Pitches below the width, and a bad kind.
  CHECK_ERROR(cudaMemcpy2D(d_in, 8, img.data(), w * sizeof(float), w * sizeof(float), h, cudaMemcpyHostToDevice),
              cudaErrorInvalidPitchValue);
  CHECK_ERROR(cudaMemcpy2D(d_in, in_pitch, img.data(), 4, w * sizeof(float), h, cudaMemcpyHostToDevice),
              cudaErrorInvalidPitchValue);
  CHECK_ERROR(cudaMemset2D(d_out, 4, 0, 8, 2), cudaErrorInvalidPitchValue);
  CHECK_ERROR(cudaMemcpy2D(d_in, in_pitch, img.data(), w * sizeof(float), 4, 1, (cudaMemcpyKind)9),
              cudaErrorInvalidMemcpyDirection);
  // Rows that run past the allocation.
  CHECK_ERROR(
      cudaMemcpy2D(d_in, in_pitch, img.data(), w * sizeof(float), w * sizeof(float), h + 1, cudaMemcpyHostToDevice),
      cudaErrorInvalidValue);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);

  // A 6 x 4 x 3 volume: in with cudaMemcpy3D, a kernel per slice, a 2 x 2 x 2 box back out.
  const int vw = 6, vh = 4, vd = 3;
  std::vector<int> vol(vw * vh * vd);
  for (int i = 0; i < vw * vh * vd; i++) vol[i] = i;
  cudaPitchedPtr dv;
  CHECK(cudaMalloc3D(&dv, make_cudaExtent(vw * sizeof(int), vh, vd)));
  cudaMemcpy3DParms in = {};
  in.srcPtr = make_cudaPitchedPtr(vol.data(), vw * sizeof(int), vw, vh);
  in.dstPtr = dv;
  in.extent = make_cudaExtent(vw * sizeof(int), vh, vd);
  in.kind = cudaMemcpyHostToDevice;
  CHECK(cudaMemcpy3D(&in));
  add_slice<<<dim3(vh, vd), vw>>>(dv, vw, vh, vd);
  CHECK(cudaGetLastError());
  int box[2][2][2];
  cudaMemcpy3DParms outp = {};
  outp.srcPtr = dv;
  outp.srcPos = make_cudaPos(3 * sizeof(int), 1, 1);
  outp.dstPtr = make_cudaPitchedPtr(box, 2 * sizeof(int), 2, 2);
  outp.extent = make_cudaExtent(2 * sizeof(int), 2, 2);
  outp.kind = cudaMemcpyDeviceToHost;
  CHECK(cudaMemcpy3DAsync(&outp, s));
  CHECK(cudaStreamSynchronize(s));
  for (int z = 0; z < 2; z++)
    for (int y = 0; y < 2; y++)
      for (int x = 0; x < 2; x++) EXPECT(box[z][y][x] == vol[((z + 1) * vh + y + 1) * vw + x + 3] + z + 1);

  // The last two slices cleared with cudaMemset3D, the whole volume read back with cudaMemcpy3D.
  cudaPitchedPtr middle = dv;
  middle.ptr = static_cast<char *>(dv.ptr) + dv.pitch * dv.ysize;
  CHECK(cudaMemset3D(middle, 0, make_cudaExtent(vw * sizeof(int), vh, 2)));
  std::vector<int> all(vw * vh * vd, -1);
  cudaMemcpy3DParms whole = {};
  whole.srcPtr = dv;
  whole.dstPtr = make_cudaPitchedPtr(all.data(), vw * sizeof(int), vw, vh);
  whole.extent = make_cudaExtent(vw * sizeof(int), vh, vd);
  whole.kind = cudaMemcpyDeviceToHost;
  CHECK(cudaMemcpy3D(&whole));
  for (int i = 0; i < vw * vh * vd; i++) EXPECT(all[i] == (i / (vw * vh) >= 1 ? 0 : vol[i]));
  whole.srcArray = reinterpret_cast<cudaArray_t>(&whole); // CUDA arrays: not in the simulator
  CHECK_ERROR(cudaMemcpy3D(&whole), cudaErrorNotSupported);

  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  CHECK(cudaFree(dv.ptr));
  return passed();
}
