/* The kernels the fuzz harness's context has and the seed graphs launch (no CPU bodies: nothing runs). */
#ifndef GCAP_FUZZ_KERNELS_H
#define GCAP_FUZZ_KERNELS_H

#include <gcap/gcap.h>

static const size_t fuzz_blend_sizes[] = {8, 8, 4}, fuzz_scale_sizes[] = {8, 4, 4};
static const gcap_param_access fuzz_blend_access[] = {GCAP_ACCESS_READ, GCAP_ACCESS_WRITE, GCAP_ACCESS_NONE};

static inline gcap_status fuzz_load_module(gcap_context *ctx) {
  const gcap_kernel_def defs[] = {
      {.name = "blend", .num_params = 3, .param_sizes = fuzz_blend_sizes, .param_access = fuzz_blend_access},
      {.name = "scale", .num_params = 3, .param_sizes = fuzz_scale_sizes},
      {.name = "noargs", .num_params = 0},
  };
  gcap_module_desc d = {.kernels = defs, .num_kernels = 3};
  gcap_module *m = NULL;
  return gcap_module_load(ctx, &d, &m);
}

#endif
