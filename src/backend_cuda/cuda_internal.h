/* The CUDA driver backend's private types, shared by its files. */
#ifndef GCAP_CUDA_INTERNAL_H
#define GCAP_CUDA_INTERNAL_H

#include <pthread.h>

#include "core/backend.h"
#include "driver.h"

/* A host function as the driver calls it: through a trampoline that marks the thread as in a callback. */
struct cuda_host_call {
  gcap_host_fn fn;
  void *user_data;
  struct cuda_host_call *next; /* the list that owns it */
  struct cuda_host_call *prev; /* eager records only: unlinked when they have run */
};

/* A gcap stream's CUstream, as the context lists it for gcap_context_synchronize. */
struct cuda_stream_entry {
  CUstream stream;
  bool capturing; /* holds a native capture: waiting on it would invalidate that capture */
};

struct cuda_exec;

struct cuda_context {
  struct gcap__backend_ctx base; /* first: the core holds a pointer to it */
  const struct gcap__cuda_driver *d;
  CUdevice device;
  CUcontext ctx;        /* the device's primary context, retained */
  CUstream sync_stream; /* private: synchronous copies and fills run here and are waited for */
  /*
   * The backend's own lock, for the lists below only. It is never held while the GPU works, so
   * a host function (which takes it to unlink its record) can never wait on a waiter.
   */
  pthread_mutex_t lock;
  struct cuda_stream_entry *streams;
  size_t num_streams, cap_streams;
  struct cuda_host_call pending;  /* eager host functions not yet run: a ring with a sentinel */
  struct cuda_host_call *orphans; /* records of executables destroyed while a launch might still call them */
  struct cuda_exec *deferred;     /* executables destroyed from a host function: the driver may not be called there */
  struct cuda_late_free *late_frees; /* gcap_mem_free_async: freed once their stream reached the event */
};

/* A stream-ordered free waiting for its stream: cuMemFree would stall the device (and a capture). */
struct cuda_late_free {
  void *p;
  CUevent reached;
  struct cuda_late_free *next;
};

struct cuda_context *cuda_context_from(struct gcap__backend_ctx *b);

/*
 * What an op saves on entry: the context that was current on the calling thread, put back on
 * the way out, so that a thread's own CUDA context survives a gcap call.
 */
struct cuda_scope {
  struct cuda_context *c;
  CUcontext previous;
  bool switched;
};
/* Refuses inside host functions (no driver call may be made there), else makes c current. */
gcap_status cuda_enter(struct cuda_context *c, struct cuda_scope *scope);
/* Puts the caller's context back; returns st (or the restore's failure when st is SUCCESS). */
gcap_status cuda_leave(struct cuda_scope *scope, gcap_status st);

void CUDA_CB cuda_host_trampoline(void *record);
void cuda_free_host_calls(struct cuda_host_call *call);
/* Keeps records a launch may still call until the context goes. */
void cuda_adopt_orphans(struct cuda_context *c, struct cuda_host_call *calls);

gcap_status cuda_exec_create(struct gcap__backend_ctx *b, const struct gcap__plan *plan, void **out);
/* PTX text declaring .extern functions, which only linking with libcudadevrt resolves (cuda_link.c). */
bool cuda_ptx_needs_devrt(const char *ptx);
gcap_status cuda_link_ptx(struct cuda_context *c, const char *ptx, CUmodule *out);
/* Conditional handles: made on one CUgraph per top-level gcap graph, which its executables are built in. */
gcap_status cuda_cond_create(struct gcap__backend_ctx *b, void **native, unsigned default_value, unsigned flags,
                             uint64_t *handle);
void cuda_cond_native_retain(struct gcap__backend_ctx *b, void *native);
void cuda_cond_native_release(struct gcap__backend_ctx *b, void *native);
/* The holder's CUgraph, emptied of the nodes a previous executable was built from. */
gcap_status cuda_cond_holder_graph(struct cuda_context *c, void *native, CUgraph *out);
void cuda_exec_destroy(struct gcap__backend_ctx *b, void *exec);
gcap_status cuda_exec_wait(struct gcap__backend_ctx *b, void *exec);
gcap_status cuda_exec_upload(struct gcap__backend_ctx *b, void *exec, void *stream);
gcap_status cuda_exec_launch(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *plan, void *stream);
gcap_status cuda_exec_set_entry(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *plan, size_t index,
                                const struct gcap__plan_node *entry);
CUgraphExec cuda_exec_native(void *exec);
gcap_status cuda_exec_update(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *current,
                             const struct gcap__plan *fresh, struct gcap__update_refusal *refusal);
/* Destroys executables whose destruction was asked for from a host function (context lock held or destroying). */
void cuda_exec_destroy_deferred(struct cuda_context *c);

/* INVALID_VALUE unless dst and pitch suit the driver's fills of f's element size. */
gcap_status cuda_check_fill_alignment(const struct gcap__fill *f);

static inline CUdeviceptr cuda_dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }
/* A CUDA_MEMCPY3D's widths, heights, depths and pitches from a gcap copy (1-D: one row). */
void cuda_set_copy_shape(CUDA_MEMCPY3D *p, const struct gcap__copy *c);

#endif
