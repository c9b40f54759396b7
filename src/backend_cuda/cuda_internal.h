/* The CUDA driver backend's private types, shared by its files. */
#ifndef GCAP_CUDA_INTERNAL_H
#define GCAP_CUDA_INTERNAL_H

#include "backend.h"
#include "driver.h"

struct cuda_context {
  struct gcap__backend_ctx base; /* first: the core holds a pointer to it */
  const struct gcap__cuda_driver *d;
  CUdevice device;
  CUcontext ctx; /* the device's primary context, retained */
};

/* A host function as the driver calls it: through a trampoline that marks the thread as in a callback. */
struct cuda_host_call {
  gcap_host_fn fn;
  void *user_data;
  struct cuda_host_call *next; /* an executable's records, freed with it */
};

struct cuda_context *cuda_context_from(struct gcap__backend_ctx *b);
/* Makes the context current on the calling thread (every op calls it first). */
gcap_status cuda_enter(struct cuda_context *c);
void CUDA_CB cuda_host_trampoline(void *record);

gcap_status cuda_exec_create(struct gcap__backend_ctx *b, const struct gcap__plan *plan, void **out);
void cuda_exec_destroy(struct gcap__backend_ctx *b, void *exec);
gcap_status cuda_exec_upload(struct gcap__backend_ctx *b, void *exec, void *stream);
gcap_status cuda_exec_launch(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *plan, void *stream);
gcap_status cuda_exec_set_entry(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *plan, size_t index,
                                const struct gcap__plan_node *entry);
CUgraphExec cuda_exec_native(void *exec);
gcap_status cuda_exec_update(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *current,
                             const struct gcap__plan *fresh);

static inline CUdeviceptr cuda_dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

#endif
