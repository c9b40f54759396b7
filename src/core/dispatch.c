#include <assert.h>
#include <stdatomic.h>

#include "dispatch.h"
#include "internal.h"

static atomic_ulong calls, fail_at;
static atomic_bool armed; /* a test called gcap__backend_fail_after: until then nothing is counted */

unsigned long gcap__backend_fail_after(unsigned long n) {
  atomic_store(&armed, true);
  unsigned long made = atomic_exchange(&calls, 0);
  atomic_store(&fail_at, n);
  return made;
}

/* True when this call is the one a test asked to fail. */
static bool injected(const char *backend, const char *op) {
  if (!atomic_load_explicit(&armed, memory_order_relaxed)) return false; /* programs pay one plain load */
  unsigned long at = atomic_load(&fail_at);
  unsigned long n = atomic_fetch_add(&calls, 1) + 1;
  if (at == 0 || n != at) return false;
  gcap__fail(GCAP_ERROR_BACKEND, "the %s backend's %s failed (injected by a test)", backend, op);
  return true;
}

gcap_status gcap__backend_context_create(const struct gcap_backend_ops *ops, const gcap_context_options *o,
                                         struct gcap__backend_ctx **out) {
  assert(ops && o && out);
  if (injected(ops->name, "context_create")) return GCAP_ERROR_BACKEND;
  return ops->context_create(o, out);
}

void gcap__backend_context_destroy(struct gcap_context *ctx) {
  assert(ctx && ctx->backend);
  ctx->ops->context_destroy(ctx->backend);
}

/* Waits run with the context lock held when the backend runs the work on this thread (backend.h). */
static void wait_begins(struct gcap_context *ctx) {
  if (ctx->ops->waits_run_work) gcap__lock(ctx);
}

static gcap_status wait_ends(struct gcap_context *ctx, gcap_status st) {
  if (ctx->ops->waits_run_work) gcap__unlock(ctx);
  return st;
}

/*
 * Waits, queries and eager launches (of a kernel or an executable) hold no state of their own
 * across the work they run, so other threads may use the context while its kernels run
 * (gcap__work_release). A launched executable stays as it is meanwhile: whoever would change or
 * destroy it waits for the launch (gcap__exec_wait_other_launch).
 */
#define RELEASING(st, call)                                                                                            \
  do {                                                                                                                 \
    bool was_ = gcap__release_kernels(true);                                                                           \
    (st) = (call);                                                                                                     \
    gcap__release_kernels(was_);                                                                                       \
  } while (0)

gcap_status gcap__backend_context_synchronize(struct gcap_context *ctx) {
  assert(ctx && ctx->backend);
  if (injected(ctx->ops->name, "context_synchronize")) return GCAP_ERROR_BACKEND;
  wait_begins(ctx);
  gcap_status st;
  RELEASING(st, ctx->ops->context_synchronize(ctx->backend));
  return wait_ends(ctx, gcap__note_fault(ctx, st));
}

gcap_status gcap__backend_mem_alloc(struct gcap_context *ctx, size_t bytes, void **out) {
  assert(ctx && ctx->backend);
  assert(out);
  if (injected(ctx->ops->name, "mem_alloc")) return GCAP_ERROR_BACKEND;
  return ctx->ops->mem_alloc(ctx->backend, bytes, out);
}

gcap_status gcap__backend_mem_alloc_managed(struct gcap_context *ctx, size_t bytes, void **out) {
  assert(ctx && ctx->backend);
  assert(out);
  if (!ctx->ops->mem_alloc_managed)
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "the %s backend has no managed memory", ctx->ops->name);
  if (injected(ctx->ops->name, "mem_alloc_managed")) return GCAP_ERROR_BACKEND;
  return ctx->ops->mem_alloc_managed(ctx->backend, bytes, out);
}

gcap_status gcap__backend_mem_free(struct gcap_context *ctx, void *p) {
  assert(ctx && ctx->backend);
  if (injected(ctx->ops->name, "mem_free")) return GCAP_ERROR_BACKEND;
  return gcap__note_fault(ctx, ctx->ops->mem_free(ctx->backend, p));
}

gcap_status gcap__backend_mem_free_async(struct gcap_context *ctx, void *stream, void *p, size_t bytes) {
  assert(ctx && ctx->backend);
  if (!ctx->ops->mem_free_async) return gcap__backend_mem_free(ctx, p);
  if (injected(ctx->ops->name, "mem_free_async")) return GCAP_ERROR_BACKEND;
  return gcap__note_fault(ctx, ctx->ops->mem_free_async(ctx->backend, stream, p, bytes));
}

bool gcap__backend_can_discard(const struct gcap_context *ctx) { return ctx->ops->mem_discard != NULL; }

void gcap__backend_mem_discard(struct gcap_context *ctx, void *p, size_t bytes) {
  assert(ctx && ctx->backend && ctx->ops->mem_discard);
  ctx->ops->mem_discard(ctx->backend, p, bytes);
}

gcap_status gcap__backend_host_alloc(struct gcap_context *ctx, size_t bytes, void **out) {
  assert(ctx && ctx->backend);
  assert(out);
  if (injected(ctx->ops->name, "host_alloc")) return GCAP_ERROR_BACKEND;
  return ctx->ops->host_alloc(ctx->backend, bytes, out);
}

gcap_status gcap__backend_host_free(struct gcap_context *ctx, void *p) {
  assert(ctx && ctx->backend);
  if (injected(ctx->ops->name, "host_free")) return GCAP_ERROR_BACKEND;
  return ctx->ops->host_free(ctx->backend, p);
}

gcap_status gcap__backend_stream_create(struct gcap_context *ctx, int priority, void **out) {
  assert(ctx && ctx->backend);
  assert(out);
  if (injected(ctx->ops->name, "stream_create")) return GCAP_ERROR_BACKEND;
  return ctx->ops->stream_create(ctx->backend, priority, out);
}

void gcap__backend_stream_destroy(struct gcap_context *ctx, void *stream) {
  assert(ctx && ctx->backend);
  ctx->ops->stream_destroy(ctx->backend, stream);
}

gcap_status gcap__backend_stream_synchronize(struct gcap_context *ctx, void *stream) {
  assert(ctx && ctx->backend);
  if (injected(ctx->ops->name, "stream_synchronize")) return GCAP_ERROR_BACKEND;
  wait_begins(ctx);
  gcap_status st;
  RELEASING(st, ctx->ops->stream_synchronize(ctx->backend, stream));
  return wait_ends(ctx, gcap__note_fault(ctx, st));
}

gcap_status gcap__backend_stream_query(struct gcap_context *ctx, void *stream) {
  assert(ctx && ctx->backend);
  if (injected(ctx->ops->name, "stream_query")) return GCAP_ERROR_BACKEND;
  gcap_status st;
  RELEASING(st, ctx->ops->stream_query(ctx->backend, stream));
  return gcap__note_fault(ctx, st);
}

gcap_status gcap__backend_memcpy(struct gcap_context *ctx, void *stream, const struct gcap__copy *c) {
  assert(ctx && ctx->backend);
  assert(c);
  if (injected(ctx->ops->name, "memcpy")) return GCAP_ERROR_BACKEND;
  return gcap__note_fault(ctx, ctx->ops->memcpy(ctx->backend, stream, c));
}

gcap_status gcap__backend_memset(struct gcap_context *ctx, void *stream, const struct gcap__fill *f) {
  assert(ctx && ctx->backend);
  assert(f);
  if (injected(ctx->ops->name, "memset")) return GCAP_ERROR_BACKEND;
  return gcap__note_fault(ctx, ctx->ops->memset(ctx->backend, stream, f));
}

gcap_status gcap__backend_launch_kernel(struct gcap_context *ctx, void *stream, const struct gcap__launch *l) {
  assert(ctx && ctx->backend);
  assert(l);
  if (injected(ctx->ops->name, "launch_kernel")) return GCAP_ERROR_BACKEND;
  gcap_status st;
  RELEASING(st, ctx->ops->launch_kernel(ctx->backend, stream, l));
  return gcap__note_fault(ctx, st);
}

gcap_status gcap__backend_launch_host_func(struct gcap_context *ctx, void *stream, gcap_host_fn fn, void *user_data) {
  assert(ctx && ctx->backend);
  if (injected(ctx->ops->name, "launch_host_func")) return GCAP_ERROR_BACKEND;
  return gcap__note_fault(ctx, ctx->ops->launch_host_func(ctx->backend, stream, fn, user_data));
}

gcap_status gcap__backend_event_create(struct gcap_context *ctx, unsigned flags, void **out) {
  assert(ctx && ctx->backend);
  assert(out);
  if (injected(ctx->ops->name, "event_create")) return GCAP_ERROR_BACKEND;
  return ctx->ops->event_create(ctx->backend, flags, out);
}

gcap_status gcap__backend_event_elapsed_time(struct gcap_context *ctx, void *start, void *end, float *ms) {
  assert(ctx && ctx->backend);
  if (injected(ctx->ops->name, "event_elapsed_time")) return GCAP_ERROR_BACKEND;
  gcap_status st;
  RELEASING(st, ctx->ops->event_elapsed_time(ctx->backend, start, end, ms));
  return st;
}

void gcap__backend_event_destroy(struct gcap_context *ctx, void *event) {
  assert(ctx && ctx->backend);
  ctx->ops->event_destroy(ctx->backend, event);
}

gcap_status gcap__backend_event_record(struct gcap_context *ctx, void *event, void *stream) {
  assert(ctx && ctx->backend);
  if (injected(ctx->ops->name, "event_record")) return GCAP_ERROR_BACKEND;
  return gcap__note_fault(ctx, ctx->ops->event_record(ctx->backend, event, stream));
}

gcap_status gcap__backend_stream_wait_event(struct gcap_context *ctx, void *stream, void *event) {
  assert(ctx && ctx->backend);
  if (injected(ctx->ops->name, "stream_wait_event")) return GCAP_ERROR_BACKEND;
  return gcap__note_fault(ctx, ctx->ops->stream_wait_event(ctx->backend, stream, event));
}

gcap_status gcap__backend_event_synchronize(struct gcap_context *ctx, void *event) {
  assert(ctx && ctx->backend);
  if (injected(ctx->ops->name, "event_synchronize")) return GCAP_ERROR_BACKEND;
  wait_begins(ctx);
  gcap_status st;
  RELEASING(st, ctx->ops->event_synchronize(ctx->backend, event));
  return wait_ends(ctx, gcap__note_fault(ctx, st));
}

gcap_status gcap__backend_event_query(struct gcap_context *ctx, void *event) {
  assert(ctx && ctx->backend);
  if (injected(ctx->ops->name, "event_query")) return GCAP_ERROR_BACKEND;
  gcap_status st;
  RELEASING(st, ctx->ops->event_query(ctx->backend, event));
  return gcap__note_fault(ctx, st);
}

gcap_status gcap__backend_module_load(struct gcap_context *ctx, const gcap_module_desc *d, void **out) {
  assert(ctx && ctx->backend);
  assert(d);
  assert(out);
  if (injected(ctx->ops->name, "module_load")) return GCAP_ERROR_BACKEND;
  return ctx->ops->module_load(ctx->backend, d, out);
}

gcap_status gcap__backend_before_release(struct gcap_context *ctx) {
  assert(ctx && ctx->backend);
  return ctx->ops->before_release ? ctx->ops->before_release(ctx->backend) : GCAP_SUCCESS;
}

void gcap__backend_module_unload(struct gcap_context *ctx, void *module) {
  assert(ctx && ctx->backend);
  ctx->ops->module_unload(ctx->backend, module);
}

gcap_status gcap__backend_kernel_find(struct gcap_context *ctx, void *module, const char *name,
                                      struct gcap__kernel_found *out) {
  assert(ctx && ctx->backend);
  assert(name);
  assert(out);
  if (!ctx->ops->kernel_find) return GCAP_ERROR_NOT_FOUND;
  if (injected(ctx->ops->name, "kernel_find")) return GCAP_ERROR_BACKEND;
  return ctx->ops->kernel_find(ctx->backend, module, name, out);
}

/* NOT_FOUND when the backend leaves the core's answer as it is. */
gcap_status gcap__backend_kernel_attribute(struct gcap_context *ctx, const struct gcap__kernel_info *k,
                                           gcap_kernel_attr attr, int *value) {
  assert(ctx && ctx->backend);
  assert(k && value);
  if (!ctx->ops->kernel_attribute) return GCAP_ERROR_NOT_FOUND;
  if (injected(ctx->ops->name, "kernel_attribute")) return GCAP_ERROR_BACKEND;
  return ctx->ops->kernel_attribute(ctx->backend, k, attr, value);
}

/* NOT_SUPPORTED (no message) when the backend sets no attribute. */
gcap_status gcap__backend_kernel_set_attribute(struct gcap_context *ctx, const struct gcap__kernel_info *k,
                                               gcap_kernel_attr attr, int value) {
  assert(ctx && ctx->backend);
  assert(k);
  if (!ctx->ops->kernel_set_attribute) return GCAP_ERROR_NOT_SUPPORTED;
  if (injected(ctx->ops->name, "kernel_set_attribute")) return GCAP_ERROR_BACKEND;
  return ctx->ops->kernel_set_attribute(ctx->backend, k, attr, value);
}

gcap_status gcap__backend_exec_create(struct gcap_context *ctx, const struct gcap__plan *plan, void **out) {
  assert(ctx && ctx->backend);
  assert(plan);
  assert(out);
  if (injected(ctx->ops->name, "exec_create")) return GCAP_ERROR_BACKEND;
  return ctx->ops->exec_create(ctx->backend, plan, out);
}

/* Not fallible from the core's side: a destroy goes ahead whatever the wait reports. */
void gcap__backend_exec_wait(struct gcap_context *ctx, void *exec) {
  assert(ctx && ctx->backend);
  if (!ctx->ops->exec_wait) return;
  wait_begins(ctx);
  wait_ends(ctx, ctx->ops->exec_wait(ctx->backend, exec));
}

void gcap__backend_exec_destroy(struct gcap_context *ctx, void *exec) {
  assert(ctx && ctx->backend);
  ctx->ops->exec_destroy(ctx->backend, exec);
}

gcap_status gcap__backend_exec_upload(struct gcap_context *ctx, void *exec, void *stream) {
  assert(ctx && ctx->backend);
  if (injected(ctx->ops->name, "exec_upload")) return GCAP_ERROR_BACKEND;
  return gcap__note_fault(ctx, ctx->ops->exec_upload(ctx->backend, exec, stream));
}

gcap_status gcap__backend_exec_launch(struct gcap_context *ctx, void *exec, const struct gcap__plan *plan,
                                      void *stream) {
  assert(ctx && ctx->backend);
  assert(plan);
  if (injected(ctx->ops->name, "exec_launch")) return GCAP_ERROR_BACKEND;
  gcap_status st;
  RELEASING(st, ctx->ops->exec_launch(ctx->backend, exec, plan, stream));
  return gcap__note_fault(ctx, st);
}

gcap_status gcap__backend_exec_before_change(struct gcap_context *ctx, void *exec) {
  assert(ctx && ctx->backend);
  if (!ctx->ops->exec_before_change) return GCAP_SUCCESS;
  if (injected(ctx->ops->name, "exec_before_change")) return GCAP_ERROR_BACKEND;
  return ctx->ops->exec_before_change(ctx->backend, exec);
}

gcap_status gcap__backend_exec_set_entry(struct gcap_context *ctx, void *exec, const struct gcap__plan *plan,
                                         size_t index, const struct gcap__plan_node *entry) {
  assert(ctx && ctx->backend);
  assert(plan);
  assert(entry);
  if (!ctx->ops->exec_set_entry) return GCAP_SUCCESS;
  if (injected(ctx->ops->name, "exec_set_entry")) return GCAP_ERROR_BACKEND;
  return ctx->ops->exec_set_entry(ctx->backend, exec, plan, index, entry);
}

gcap_status gcap__backend_exec_update(struct gcap_context *ctx, void *exec, const struct gcap__plan *current,
                                      const struct gcap__plan *fresh, struct gcap__update_refusal *refusal) {
  assert(ctx && ctx->backend);
  assert(current);
  assert(fresh);
  if (!ctx->ops->exec_update) return GCAP_SUCCESS;
  if (injected(ctx->ops->name, "exec_update")) return GCAP_ERROR_BACKEND;
  return ctx->ops->exec_update(ctx->backend, exec, current, fresh, refusal);
}

gcap_status gcap__backend_stream_capture_begin(struct gcap_context *ctx, void *stream) {
  assert(ctx && ctx->backend);
  if (!ctx->ops->stream_capture_begin) return GCAP_SUCCESS;
  if (injected(ctx->ops->name, "stream_capture_begin")) return GCAP_ERROR_BACKEND;
  return ctx->ops->stream_capture_begin(ctx->backend, stream);
}

void gcap__backend_stream_capture_end(struct gcap_context *ctx, void *stream, size_t *foreign_work) {
  assert(ctx && ctx->backend);
  assert(foreign_work);
  if (!ctx->ops->stream_capture_end) {
    *foreign_work = 0;
    return;
  }
  ctx->ops->stream_capture_end(ctx->backend, stream, foreign_work);
}

gcap_status gcap__backend_native_graph_clone(struct gcap_context *ctx, void *native, void **out) {
  assert(ctx && ctx->backend);
  assert(out);
  if (!ctx->ops->native_graph_clone)
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "the %s backend has no native graphs", ctx->ops->name);
  if (injected(ctx->ops->name, "native_graph_clone")) return GCAP_ERROR_BACKEND;
  return ctx->ops->native_graph_clone(ctx->backend, native, out);
}

void gcap__backend_native_graph_destroy(struct gcap_context *ctx, void *native) {
  assert(ctx && ctx->backend);
  ctx->ops->native_graph_destroy(ctx->backend, native);
}

gcap_status gcap__backend_cond_create(struct gcap_context *ctx, void **native, unsigned default_value, unsigned flags,
                                      uint64_t *handle) {
  assert(ctx && ctx->backend);
  if (!ctx->ops->cond_create) return GCAP_SUCCESS;
  if (injected(ctx->ops->name, "cond_create")) return GCAP_ERROR_BACKEND;
  return ctx->ops->cond_create(ctx->backend, native, default_value, flags, handle);
}

void gcap__backend_cond_native_retain(struct gcap_context *ctx, void *native) {
  if (ctx->ops->cond_native_retain) ctx->ops->cond_native_retain(ctx->backend, native);
}

void gcap__backend_cond_native_release(struct gcap_context *ctx, void *native) {
  if (ctx->ops->cond_native_release) ctx->ops->cond_native_release(ctx->backend, native);
}

gcap_status gcap__backend_sim_get_stats(struct gcap_context *ctx, gcap_sim_stats *out) {
  assert(ctx && ctx->backend);
  assert(out);
  if (!ctx->ops->sim_get_stats)
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "simulator statistics do not exist on the %s backend", ctx->ops->name);
  if (injected(ctx->ops->name, "sim_get_stats")) return GCAP_ERROR_BACKEND;
  return ctx->ops->sim_get_stats(ctx->backend, out);
}

bool gcap__backend_wants_race_check(const struct gcap_context *ctx) {
  return ctx->ops->wants_race_check && ctx->ops->wants_race_check(ctx->backend);
}

void gcap__backend_describe_next_launch(const struct gcap_context *ctx, char *buf, size_t size) {
  if (size) buf[0] = '\0';
  if (ctx->ops->describe_next_launch) ctx->ops->describe_next_launch(ctx->backend, buf, size);
}
