/*
 * Kernel pointer arguments (eager.md#kernels): a parameter declared READ, WRITE or READ_WRITE
 * must point into memory of the context. Only where the backend knows all device memory (the
 * simulator): elsewhere memory gcap did not allocate is the driver's business, as for copies.
 */
#include <string.h>

#include "internal.h"

static const char *access_name(gcap_param_access how) {
  switch (how) {
  case GCAP_ACCESS_READ: return "READ";
  case GCAP_ACCESS_WRITE: return "WRITE";
  case GCAP_ACCESS_READ_WRITE: return "READ_WRITE";
  default: return NULL; /* UNKNOWN and NONE: not checked */
  }
}

static gcap_status check_param(const struct gcap_context *ctx, const struct gcap_kernel *k, size_t i, const void *arg) {
  const char *how = access_name(k->param_access[i]);
  if (!how || k->param_sizes[i] != sizeof(void *)) return GCAP_SUCCESS;
  void *value;
  memcpy(&value, arg, sizeof value);
  if (!value)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "kernel \"%s\" parameter %zu (%s) is NULL, which is in no device allocation or page-locked host "
                      "memory of this context",
                      k->name, i, how);
  if (gcap__find_allocation(ctx, value)) return GCAP_SUCCESS;
  return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                    "kernel \"%s\" parameter %zu (%s) is %p, which is in no device allocation or page-locked host "
                    "memory of this context (a host pointer passed as a device pointer?)",
                    k->name, i, how, value);
}

gcap_status gcap__check_kernel_pointers(const struct gcap_context *ctx, const struct gcap_kernel *k,
                                        void *const *args) {
  if (!ctx->ops->knows_all_device_memory || k->access_inferred) return GCAP_SUCCESS; /* only what the user declared */
  gcap_status st = GCAP_SUCCESS;
  for (size_t i = 0; st == GCAP_SUCCESS && i < k->info.num_params; i++) st = check_param(ctx, k, i, args[i]);
  return st;
}
