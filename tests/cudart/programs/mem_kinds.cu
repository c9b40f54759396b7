// Memory of every kind a program allocates (device, pinned, mapped, managed, pitched, registered),
// what cudaPointerGetAttributes says of each, copies of every kind including cudaMemcpyDefault,
// the device's memory figures, and the errors CUDA gives for bad arguments.
#include "check.h"

#include <cstring>
#include <vector>

__global__ void add_one(int *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1;
}

static void expect_type(const void *p, cudaMemoryType type, const void *dev, const void *host) {
  cudaPointerAttributes a;
  CHECK(cudaPointerGetAttributes(&a, p));
  EXPECT(a.type == type);
  EXPECT(a.devicePointer == dev);
  EXPECT(a.hostPointer == host);
  EXPECT(a.device == (type == cudaMemoryTypeUnregistered ? cudaInvalidDeviceId : 0));
}

int main() {
  const int n = 1000;
  const size_t bytes = n * sizeof(int);
  std::vector<int> host(n), back(n);
  for (int i = 0; i < n; i++) host[i] = 3 * i;

  size_t free0, total;
  CHECK(cudaMemGetInfo(&free0, &total));
  EXPECT(total == size_t(80) << 30);
  EXPECT(free0 <= total);

  int *dev, *pinned, *mapped, *managed;
  CHECK(cudaMalloc(&dev, bytes));
  CHECK(cudaMallocHost(&pinned, bytes));
  CHECK(cudaHostAlloc(&mapped, bytes, cudaHostAllocMapped | cudaHostAllocWriteCombined));
  CHECK(cudaMallocManaged(&managed, bytes));

  size_t free1;
  CHECK(cudaMemGetInfo(&free1, &total));
  EXPECT(free0 - free1 == 2 * bytes); // device and managed memory; not the pinned host memory

  // What each pointer is; a pointer inside an allocation is that allocation's kind.
  expect_type(dev, cudaMemoryTypeDevice, dev, nullptr);
  expect_type(dev + 10, cudaMemoryTypeDevice, dev + 10, nullptr);
  expect_type(pinned, cudaMemoryTypeHost, pinned, pinned);
  expect_type(managed + 1, cudaMemoryTypeManaged, managed + 1, managed + 1);
  expect_type(host.data(), cudaMemoryTypeUnregistered, nullptr, nullptr);

  unsigned flags = 99;
  CHECK(cudaHostGetFlags(&flags, mapped));
  EXPECT(flags == (cudaHostAllocMapped | cudaHostAllocWriteCombined));

  // Every kind of copy: H2D, D2D, D2H, H2H, and the same again inferred from the pointers.
  CHECK(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(managed, dev, bytes, cudaMemcpyDeviceToDevice));
  CHECK(cudaMemcpy(pinned, managed, bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(pinned[i] == 3 * i);
  CHECK(cudaMemcpy(back.data(), pinned, bytes, cudaMemcpyHostToHost));
  EXPECT(back == host);
  for (int i = 0; i < n; i++) pinned[i] = i;
  CHECK(cudaMemcpy(dev, pinned, bytes, cudaMemcpyDefault));
  CHECK(cudaMemcpy(dev + 1, dev, sizeof(int), cudaMemcpyDefault)); // device to device
  CHECK(cudaMemcpy(back.data(), dev, bytes, cudaMemcpyDefault));
  EXPECT(back[0] == 0 && back[1] == 0 && back[2] == 2 && back[n - 1] == n - 1);

  // Asynchronous copies with pageable host memory: CUDA stages the source before returning, and
  // returns from a copy into pageable memory once it is done, so the buffer may be reused at once.
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMemsetAsync(dev, 0, bytes, s));
  CHECK(cudaMemcpyAsync(dev, host.data(), bytes, cudaMemcpyHostToDevice, s));
  host[0] = -7; // after the call: the copy has the old value
  CHECK(cudaMemcpyAsync(back.data(), dev, bytes, cudaMemcpyDeviceToHost, s));
  EXPECT(back[0] == 0 && back[n - 1] == 3 * (n - 1)); // done when the call returns
  host[0] = 0;
  CHECK(cudaStreamDestroy(s));

  // Mapped pinned memory: the device pointer is the host address, and kernels use it.
  int *mapped_dev = nullptr;
  CHECK(cudaHostGetDevicePointer((void **)&mapped_dev, mapped, 0));
  EXPECT(mapped_dev == mapped);
  for (int i = 0; i < n; i++) mapped[i] = 10 * i;
  add_one<<<(n + 127) / 128, 128>>>(mapped_dev, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < n; i++) EXPECT(mapped[i] == 10 * i + 1);

  // Fills: device memory in stream order, pinned memory too.
  CHECK(cudaMemset(dev, 0x01, bytes));
  CHECK(cudaMemcpy(back.data(), dev, bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(back[i] == 0x01010101);
  CHECK(cudaMemset(pinned, 0, bytes));
  for (int i = 0; i < n; i++) EXPECT(pinned[i] == 0);

  // Pitched memory: the pitch is the row rounded up, and cudaMalloc3D lays slices out by it.
  void *pitched;
  size_t pitch = 0;
  CHECK(cudaMallocPitch(&pitched, &pitch, 100, 7));
  EXPECT(pitch >= 100 && pitch % 256 == 0);
  expect_type(static_cast<char *>(pitched) + 6 * pitch + 99, cudaMemoryTypeDevice,
              static_cast<char *>(pitched) + 6 * pitch + 99, nullptr);
  cudaPitchedPtr vol;
  CHECK(cudaMalloc3D(&vol, make_cudaExtent(24, 3, 2)));
  EXPECT(vol.xsize == 24 && vol.ysize == 3 && vol.pitch >= 24);

  // Registered pageable memory: recorded, copied to and from, unregistered once.
  std::vector<int> pageable(n, 5);
  CHECK(cudaHostRegister(pageable.data(), bytes, cudaHostRegisterDefault));
  expect_type(pageable.data(), cudaMemoryTypeHost, nullptr, pageable.data());
  CHECK_ERROR(cudaHostRegister(pageable.data() + 10, 16, 0), cudaErrorHostMemoryAlreadyRegistered);
  CHECK_ERROR(cudaGetLastError(), cudaErrorHostMemoryAlreadyRegistered);
  CHECK(cudaMemcpy(dev, pageable.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaHostUnregister(pageable.data()));
  CHECK_ERROR(cudaHostUnregister(pageable.data()), cudaErrorHostMemoryNotRegistered);
  CHECK_ERROR(cudaHostUnregister(host.data()), cudaErrorHostMemoryNotRegistered);

  // Bad arguments, each with CUDA's error, none of them sticky.
  CHECK_ERROR(cudaMalloc(nullptr, 16), cudaErrorInvalidValue);
  CHECK_ERROR(cudaFree(host.data()), cudaErrorInvalidValue);
  CHECK_ERROR(cudaFree(dev + 1), cudaErrorInvalidValue);
  CHECK_ERROR(cudaFreeHost(dev), cudaErrorInvalidValue);
  CHECK_ERROR(cudaMemcpy(dev, host.data(), bytes, (cudaMemcpyKind)7), cudaErrorInvalidMemcpyDirection);
  CHECK_ERROR(cudaMemcpy(dev, host.data(), bytes + 4, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  void *scratch = &scratch;
  CHECK_ERROR(cudaMallocManaged(&scratch, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaMallocManaged(&scratch, 16, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaHostAlloc(&scratch, 16, 0x80), cudaErrorInvalidValue);
  EXPECT(scratch == nullptr);
  CHECK_ERROR(cudaPointerGetAttributes(nullptr, dev), cudaErrorInvalidValue);
  void *none = nullptr;
  CHECK_ERROR(cudaHostGetDevicePointer(&none, host.data(), 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaMemcpyPeer(dev, 1, dev, 0, 4), cudaErrorInvalidDevice);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidDevice);
  CHECK(cudaGetLastError());

  // Zero-size requests succeed with nothing; cudaFree(NULL) is a no-op.
  void *nothing = &nothing;
  CHECK(cudaMalloc(&nothing, 0));
  EXPECT(nothing == nullptr);
  CHECK(cudaFree(nullptr));
  CHECK(cudaFreeHost(nullptr));
  CHECK(cudaMemcpy(dev, host.data(), 0, cudaMemcpyHostToDevice));

  // A peer copy on the one device is a device-to-device copy.
  CHECK(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpyPeer(managed, 0, dev, 0, bytes));
  CHECK(cudaDeviceSynchronize());
  EXPECT(std::memcmp(managed, host.data(), bytes) == 0);

  CHECK(cudaFree(dev));
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFreeHost(mapped));
  CHECK(cudaFree(managed));
  CHECK(cudaFree(pitched));
  CHECK(cudaFree(vol.ptr));
  expect_type(pinned, cudaMemoryTypeUnregistered, nullptr, nullptr); // gone with its allocation
  size_t free2;
  CHECK(cudaMemGetInfo(&free2, &total));
  EXPECT(free2 == free0);
  return passed();
}
