/*
 * PTX whose kernels call device-runtime functions (cudaGraphSetConditional, which conditional
 * nodes need) declares them .extern: cuModuleLoadData cannot resolve them, so such PTX is linked
 * with the toolkit's libcudadevrt.a first, as nvcc -rdc does.
 */
#define _POSIX_C_SOURCE 200809L /* getenv, access */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_internal.h"
#include "base/error.h"

bool cuda_ptx_needs_devrt(const char *ptx) { return strstr(ptx, ".extern .func") != NULL; }

/* $GCAP_CUDADEVRT, else libcudadevrt.a under $CUDA_HOME or /usr/local/cuda. */
static bool find_devrt(char *path, size_t size) {
  const char *given = getenv("GCAP_CUDADEVRT");
  if (given && *given) {
    snprintf(path, size, "%s", given);
    return access(path, R_OK) == 0;
  }
  const char *homes[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
  for (size_t i = 0; i < sizeof homes / sizeof homes[0]; i++) {
    if (!homes[i] || !*homes[i]) continue;
    snprintf(path, size, "%s/lib64/libcudadevrt.a", homes[i]);
    if (access(path, R_OK) == 0) return true;
  }
  return false;
}

gcap_status cuda_link_ptx(struct cuda_context *c, const char *ptx, CUmodule *out) {
  const struct gcap__cuda_driver *d = c->d;
  char path[4096];
  if (!find_devrt(path, sizeof path))
    return gcap__fail(
        GCAP_ERROR_NOT_FOUND,
        "the PTX calls device-runtime functions (.extern .func, such as cudaGraphSetConditional), which "
        "need the CUDA toolkit's libcudadevrt.a; none found: set GCAP_CUDADEVRT to its path, or CUDA_HOME");
  if (!d->cuLinkCreate || !d->cuLinkAddData || !d->cuLinkAddFile || !d->cuLinkComplete || !d->cuLinkDestroy)
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "the CUDA driver has no linker (cuLinkCreate)");
  CUlinkState state = NULL;
  void *cubin = NULL;
  size_t bytes = 0;
  gcap_status st = gcap__cuda_check(d->cuLinkCreate(0, NULL, NULL, &state), "cuLinkCreate");
  if (st == GCAP_SUCCESS)
    st = gcap__cuda_check(
        d->cuLinkAddData(state, CU_JIT_INPUT_PTX, (void *)ptx, strlen(ptx) + 1, "gcap.ptx", 0, NULL, NULL),
        "cuLinkAddData (the module's PTX)");
  if (st == GCAP_SUCCESS)
    st =
        gcap__cuda_check(d->cuLinkAddFile(state, CU_JIT_INPUT_LIBRARY, path, 0, NULL, NULL), "cuLinkAddFile(%s)", path);
  if (st == GCAP_SUCCESS) st = gcap__cuda_check(d->cuLinkComplete(state, &cubin, &bytes), "cuLinkComplete");
  if (st == GCAP_SUCCESS)
    st = gcap__cuda_check(d->cuModuleLoadData(out, cubin), "cuModuleLoadData (%zu-byte linked image)", bytes);
  if (state) d->cuLinkDestroy(state); /* the image is the link state's: loaded, it is no longer needed */
  return st;
}
