#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "sim_internal.h"

struct sim_context *sim_context_from(struct gcap__backend_ctx *b) {
  assert(b->ops == &gcap__sim_ops);
  return (struct sim_context *)b;
}

void gcap_sim_options_init(gcap_sim_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->order = GCAP_SIM_ORDER_CAPTURE;
}

static gcap_status sim_available(void) { return GCAP_SUCCESS; }

static gcap_status sim_context_create(const gcap_context_options *o, struct gcap__backend_ctx **out) {
  gcap_sim_options defaults;
  gcap_sim_options_init(&defaults);
  const gcap_sim_options *so = o->sim ? o->sim : &defaults;
  if (so->order != GCAP_SIM_ORDER_CAPTURE && so->order != GCAP_SIM_ORDER_SHUFFLE)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "options->sim->order %d is not CAPTURE or SHUFFLE", (int)so->order);
  struct sim_context *sc = gcap__calloc(1, sizeof *sc);
  unsigned char *shared = gcap__malloc(SIM_SHARED_MEM_BYTES);
  if (!sc || !shared) {
    gcap__free(sc);
    gcap__free(shared);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the simulator");
  }
  sc->base.ops = &gcap__sim_ops;
  sc->options = *so;
  sc->rng = so->seed;
  sc->shared_mem = shared;
  *out = &sc->base;
  return GCAP_SUCCESS;
}

static void sim_context_destroy(struct gcap__backend_ctx *b) {
  struct sim_context *sc = sim_context_from(b);
  gcap__free(sc->shared_mem);
  gcap__free(sc);
}

/* Every stream's work already ran when it was issued. */
static gcap_status sim_context_synchronize(struct gcap__backend_ctx *b) { return GCAP_SUCCESS; }

static gcap_status aligned(size_t alignment, size_t bytes, void **out) {
  void *p = NULL;
  if (posix_memalign(&p, alignment, bytes) != 0 || !p)
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "the simulator could not allocate %zu bytes", bytes);
  *out = p;
  return GCAP_SUCCESS;
}

/* 256-byte alignment, as cuMemAlloc guarantees. */
static gcap_status sim_mem_alloc(struct gcap__backend_ctx *b, size_t bytes, void **out) {
  return aligned(256, bytes, out);
}

static gcap_status sim_mem_free(struct gcap__backend_ctx *b, void *p) {
  free(p);
  return GCAP_SUCCESS;
}

static gcap_status sim_host_alloc(struct gcap__backend_ctx *b, size_t bytes, void **out) {
  return aligned(4096, bytes, out);
}

static gcap_status sim_stream_create(struct gcap__backend_ctx *b, void **out) {
  struct sim_stream *s = gcap__calloc(1, sizeof *s);
  if (!s) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the stream");
  *out = s;
  return GCAP_SUCCESS;
}

static void sim_stream_destroy(struct gcap__backend_ctx *b, void *stream) { gcap__free(stream); }

static gcap_status sim_stream_done(struct gcap__backend_ctx *b, void *stream) { return GCAP_SUCCESS; }

static gcap_status sim_memcpy(struct gcap__backend_ctx *b, void *stream, const struct gcap__copy *c) {
  sim_run_copy(sim_context_from(b), c);
  if (stream) ((struct sim_stream *)stream)->issued++;
  return GCAP_SUCCESS;
}

static gcap_status sim_memset(struct gcap__backend_ctx *b, void *stream, const struct gcap__fill *f) {
  sim_run_fill(sim_context_from(b), f);
  ((struct sim_stream *)stream)->issued++;
  return GCAP_SUCCESS;
}

static gcap_status sim_launch_kernel(struct gcap__backend_ctx *b, void *stream, const struct gcap__launch *l) {
  sim_run_kernel(sim_context_from(b), l);
  ((struct sim_stream *)stream)->issued++;
  return GCAP_SUCCESS;
}

static gcap_status sim_launch_host_func(struct gcap__backend_ctx *b, void *stream, gcap_host_fn fn, void *user_data) {
  sim_run_host(sim_context_from(b), fn, user_data);
  ((struct sim_stream *)stream)->issued++;
  return GCAP_SUCCESS;
}

static gcap_status sim_event_create(struct gcap__backend_ctx *b, void **out) {
  struct sim_event *e = gcap__calloc(1, sizeof *e);
  if (!e) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the event");
  *out = e;
  return GCAP_SUCCESS;
}

static void sim_event_destroy(struct gcap__backend_ctx *b, void *event) { gcap__free(event); }

static gcap_status sim_event_record(struct gcap__backend_ctx *b, void *event, void *stream) {
  ((struct sim_event *)event)->records++;
  return GCAP_SUCCESS;
}

/* The recorded work is complete, so waiting orders nothing further. */
static gcap_status sim_stream_wait_event(struct gcap__backend_ctx *b, void *stream, void *event) {
  return GCAP_SUCCESS;
}

static gcap_status sim_event_done(struct gcap__backend_ctx *b, void *event) { return GCAP_SUCCESS; }

static gcap_status sim_module_load(struct gcap__backend_ctx *b, const gcap_module_desc *d, void **out) {
  if (d->num_kernels == 0)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "the simulator needs desc->kernels (num_kernels is 0): it cannot run PTX or cubin images");
  *out = NULL;
  return GCAP_SUCCESS;
}

static void sim_module_unload(struct gcap__backend_ctx *b, void *module) {}

static gcap_status sim_get_stats(const struct gcap__backend_ctx *b, gcap_sim_stats *out) {
  *out = ((const struct sim_context *)b)->stats;
  return GCAP_SUCCESS;
}

const struct gcap_backend_ops gcap__sim_ops = {
    .name = "sim",
    .knows_all_device_memory = true,
    .available = sim_available,
    .context_create = sim_context_create,
    .context_destroy = sim_context_destroy,
    .context_synchronize = sim_context_synchronize,
    .mem_alloc = sim_mem_alloc,
    .mem_free = sim_mem_free,
    .host_alloc = sim_host_alloc,
    .host_free = sim_mem_free,
    .stream_create = sim_stream_create,
    .stream_destroy = sim_stream_destroy,
    .stream_synchronize = sim_stream_done,
    .stream_query = sim_stream_done,
    .memcpy = sim_memcpy,
    .memset = sim_memset,
    .launch_kernel = sim_launch_kernel,
    .launch_host_func = sim_launch_host_func,
    .event_create = sim_event_create,
    .event_destroy = sim_event_destroy,
    .event_record = sim_event_record,
    .stream_wait_event = sim_stream_wait_event,
    .event_synchronize = sim_event_done,
    .event_query = sim_event_done,
    .module_load = sim_module_load,
    .module_unload = sim_module_unload,
    .exec_create = sim_exec_create,
    .exec_destroy = sim_exec_destroy,
    .exec_upload = sim_exec_upload,
    .exec_launch = sim_exec_launch,
    .sim_get_stats = sim_get_stats,
};
