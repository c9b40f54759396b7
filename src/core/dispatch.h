/*
 * The core's only way into a backend: one wrapper per op of struct gcap_backend_ops. Each
 * asserts what the core promises the backend, supplies the default of an optional op, and is
 * the one place where tests make backend calls fail (gcap__backend_fail_after), as SQLite's
 * os.c wraps every VFS method.
 */
#ifndef GCAP_CORE_DISPATCH_H
#define GCAP_CORE_DISPATCH_H

#include "backend.h"

struct gcap_context;

/*
 * Tests: the n-th fallible backend call from now fails with GCAP_ERROR_BACKEND (n = 1: the
 * next); 0 turns it off. Counts calls on every thread, from the first call on. Returns how many
 * calls were made since the last reset.
 */
unsigned long gcap__backend_fail_after(unsigned long n);

gcap_status gcap__backend_context_create(const struct gcap_backend_ops *ops, const gcap_context_options *o,
                                         struct gcap__backend_ctx **out);

void gcap__backend_context_destroy(struct gcap_context *ctx);
gcap_status gcap__backend_context_synchronize(struct gcap_context *ctx);
gcap_status gcap__backend_mem_alloc(struct gcap_context *ctx, size_t bytes, void **out);
gcap_status gcap__backend_mem_free(struct gcap_context *ctx, void *p);
gcap_status gcap__backend_mem_alloc_managed(struct gcap_context *ctx, size_t bytes, void **out);
gcap_status gcap__backend_mem_free_async(struct gcap_context *ctx, void *stream, void *p, size_t bytes);
bool gcap__backend_can_discard(const struct gcap_context *ctx);
void gcap__backend_mem_discard(struct gcap_context *ctx, void *p, size_t bytes);
gcap_status gcap__backend_host_alloc(struct gcap_context *ctx, size_t bytes, void **out);
gcap_status gcap__backend_host_free(struct gcap_context *ctx, void *p);
gcap_status gcap__backend_stream_create(struct gcap_context *ctx, int priority, void **out);
void gcap__backend_stream_destroy(struct gcap_context *ctx, void *stream);
gcap_status gcap__backend_stream_synchronize(struct gcap_context *ctx, void *stream);
gcap_status gcap__backend_stream_query(struct gcap_context *ctx, void *stream);
gcap_status gcap__backend_memcpy(struct gcap_context *ctx, void *stream, const struct gcap__copy *c);
gcap_status gcap__backend_memset(struct gcap_context *ctx, void *stream, const struct gcap__fill *f);
gcap_status gcap__backend_launch_kernel(struct gcap_context *ctx, void *stream, const struct gcap__launch *l);
gcap_status gcap__backend_launch_host_func(struct gcap_context *ctx, void *stream, gcap_host_fn fn, void *user_data);
gcap_status gcap__backend_event_create(struct gcap_context *ctx, unsigned flags, void **out);
gcap_status gcap__backend_event_elapsed_time(struct gcap_context *ctx, void *start, void *end, float *ms);
void gcap__backend_event_destroy(struct gcap_context *ctx, void *event);
gcap_status gcap__backend_event_record(struct gcap_context *ctx, void *event, void *stream);
gcap_status gcap__backend_stream_wait_event(struct gcap_context *ctx, void *stream, void *event);
gcap_status gcap__backend_event_synchronize(struct gcap_context *ctx, void *event);
gcap_status gcap__backend_event_query(struct gcap_context *ctx, void *event);
gcap_status gcap__backend_module_load(struct gcap_context *ctx, const gcap_module_desc *d, void **out);
gcap_status gcap__backend_before_release(struct gcap_context *ctx);
void gcap__backend_module_unload(struct gcap_context *ctx, void *module);
gcap_status gcap__backend_kernel_find(struct gcap_context *ctx, void *module, const char *name,
                                      struct gcap__kernel_found *out);
gcap_status gcap__backend_kernel_attribute(struct gcap_context *ctx, const struct gcap__kernel_info *k,
                                           gcap_kernel_attr attr, int *value);
gcap_status gcap__backend_kernel_set_attribute(struct gcap_context *ctx, const struct gcap__kernel_info *k,
                                               gcap_kernel_attr attr, int value);
gcap_status gcap__backend_exec_create(struct gcap_context *ctx, const struct gcap__plan *plan, void **out);
void gcap__backend_exec_wait(struct gcap_context *ctx, void *exec);
void gcap__backend_exec_destroy(struct gcap_context *ctx, void *exec);
gcap_status gcap__backend_exec_upload(struct gcap_context *ctx, void *exec, void *stream);
gcap_status gcap__backend_exec_launch(struct gcap_context *ctx, void *exec, const struct gcap__plan *plan,
                                      void *stream);
gcap_status gcap__backend_exec_before_change(struct gcap_context *ctx, void *exec);
gcap_status gcap__backend_exec_set_entry(struct gcap_context *ctx, void *exec, const struct gcap__plan *plan,
                                         size_t index, const struct gcap__plan_node *entry);
gcap_status gcap__backend_exec_update(struct gcap_context *ctx, void *exec, const struct gcap__plan *current,
                                      const struct gcap__plan *fresh, struct gcap__update_refusal *refusal);
gcap_status gcap__backend_stream_capture_begin(struct gcap_context *ctx, void *stream);
void gcap__backend_stream_capture_end(struct gcap_context *ctx, void *stream, size_t *foreign_work);
gcap_status gcap__backend_native_graph_clone(struct gcap_context *ctx, void *native, void **out);
void gcap__backend_native_graph_destroy(struct gcap_context *ctx, void *native);
/* Conditional handles: the backend's value for a new one (kept as is without the op), and its object for them. */
gcap_status gcap__backend_cond_create(struct gcap_context *ctx, void **native, unsigned default_value, unsigned flags,
                                      uint64_t *handle);
void gcap__backend_cond_native_retain(struct gcap_context *ctx, void *native);
void gcap__backend_cond_native_release(struct gcap_context *ctx, void *native);
gcap_status gcap__backend_sim_get_stats(struct gcap_context *ctx, gcap_sim_stats *out);
bool gcap__backend_wants_race_check(const struct gcap_context *ctx);
/* "" unless the backend has something to say about the next launch's order (see backend.h). */
void gcap__backend_describe_next_launch(const struct gcap_context *ctx, char *buf, size_t size);

#endif
