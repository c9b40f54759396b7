// A program built with machine code only (-gencode arch=compute_80,code=sm_80): the simulator
// runs PTX, so its kernel cannot run. The launch fails with cudaErrorNoKernelImageForDevice, as
// on a GPU the binary was not built for, and stderr says which kernel and how to rebuild.
#include "check.h"

#include <cstring>
#include <unistd.h>

__global__ void set(int *p) { *p = 1; }

int main() {
  int *p;
  CHECK(cudaMalloc(&p, sizeof(int)));
  FILE *said = std::tmpfile();
  EXPECT(said);
  std::fflush(stderr);
  int saved = dup(2);
  EXPECT(saved >= 0 && dup2(fileno(said), 2) >= 0);
  set<<<1, 1>>>(p);
  cudaError_t launch = cudaGetLastError();
  set<<<1, 1>>>(p);  // said once, refused again
  cudaError_t again = cudaGetLastError();
  std::fflush(stderr);
  EXPECT(dup2(saved, 2) >= 0);
  close(saved);
  char text[2048] = {0};
  std::rewind(said);
  size_t n = std::fread(text, 1, sizeof text - 1, said);
  std::fclose(said);
  std::printf("stderr: %.*s", int(n), text);
  EXPECT(launch == cudaErrorNoKernelImageForDevice);
  EXPECT(again == cudaErrorNoKernelImageForDevice);
  EXPECT(std::strstr(text, "gcap-cudart: cannot load the device code of kernel _Z3setPi: ") == text);
  EXPECT(std::strstr(text, "no PTX") != nullptr);
  EXPECT(std::strstr(text, "-arch=sm_XX") != nullptr);
  EXPECT(std::strstr(text + 1, "gcap-cudart: cannot load") == nullptr);  // once
  // The rest of the runtime works.
  CHECK(cudaMemset(p, 0, sizeof(int)));
  int v = -1;
  CHECK(cudaMemcpy(&v, p, sizeof v, cudaMemcpyDeviceToHost));
  EXPECT(v == 0);
  CHECK(cudaFree(p));
  return passed();
}
