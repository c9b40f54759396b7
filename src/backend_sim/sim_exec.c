#include <string.h>

#include "error.h"
#include "sim_internal.h"

void sim_run_copy(struct sim_context *sc, const struct gcap__copy *c) {
  memmove(c->dst, c->src, c->bytes);
  sc->stats.bytes_copied += c->bytes;
}

static void fill_row(unsigned char *row, uint32_t value, unsigned element_size, size_t width) {
  if (element_size == 1) {
    memset(row, (int)(value & 0xffu), width);
  } else if (element_size == 2) {
    uint16_t v = (uint16_t)value;
    for (size_t i = 0; i < width; i++) memcpy(row + 2 * i, &v, 2);
  } else {
    for (size_t i = 0; i < width; i++) memcpy(row + 4 * i, &value, 4);
  }
}

void sim_run_fill(struct sim_context *sc, const struct gcap__fill *f) {
  unsigned char *row = f->dst;
  for (size_t r = 0; r < f->height; r++, row += f->pitch) fill_row(row, f->value, f->element_size, f->width);
  sc->stats.bytes_set += (uint64_t)f->width * f->element_size * f->height;
}

/* Runs every thread of every block, one block after another, each block with its shared memory. */
void sim_run_kernel(struct sim_context *sc, const struct gcap__launch *l) {
  gcap_sim_kernel_fn fn = l->kernel->sim_fn;
  if (!fn) {
    sc->stats.kernels_stubbed++;
    return;
  }
  sc->stats.kernels_executed++;
  gcap_sim_thread t = {.grid_dim = l->grid, .block_dim = l->block};
  t.shared_mem = l->shared_mem_bytes ? sc->shared_mem : NULL;
  for (t.block_idx.z = 0; t.block_idx.z < l->grid.z; t.block_idx.z++)
    for (t.block_idx.y = 0; t.block_idx.y < l->grid.y; t.block_idx.y++)
      for (t.block_idx.x = 0; t.block_idx.x < l->grid.x; t.block_idx.x++)
        for (t.thread_idx.z = 0; t.thread_idx.z < l->block.z; t.thread_idx.z++)
          for (t.thread_idx.y = 0; t.thread_idx.y < l->block.y; t.thread_idx.y++)
            for (t.thread_idx.x = 0; t.thread_idx.x < l->block.x; t.thread_idx.x++) fn(&t, l->args);
}

void sim_run_host(struct sim_context *sc, gcap_host_fn fn, void *user_data) {
  sc->stats.host_calls++;
  gcap__run_host_fn(fn, user_data);
}

/* The simulator replays the core's plan directly; it keeps nothing of its own per executable. */
gcap_status sim_exec_create(struct gcap__backend_ctx *b, const struct gcap__plan *plan, void **out) {
  *out = NULL;
  return GCAP_SUCCESS;
}

void sim_exec_destroy(struct gcap__backend_ctx *b, void *exec) {}

gcap_status sim_exec_upload(struct gcap__backend_ctx *b, void *exec, void *stream) { return GCAP_SUCCESS; }

static void run_entry(struct sim_context *sc, const struct gcap__plan_node *pn) {
  switch (pn->type) {
  case GCAP_NODE_KERNEL: sim_run_kernel(sc, &pn->u.kernel); break;
  case GCAP_NODE_MEMCPY: sim_run_copy(sc, &pn->u.copy); break;
  case GCAP_NODE_MEMSET: sim_run_fill(sc, &pn->u.fill); break;
  case GCAP_NODE_HOST: sim_run_host(sc, pn->u.host.fn, pn->u.host.user_data); break;
  case GCAP_NODE_EVENT_RECORD: ((struct sim_event *)pn->u.event.impl)->records++; break;
  default: break; /* empty, child-graph entry and exit, event wait: ordering only */
  }
}

gcap_status sim_exec_launch(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *plan, void *stream) {
  struct sim_context *sc = sim_context_from(b);
  struct sim_stream *s = stream;
  for (size_t i = 0; i < plan->count; i++) run_entry(sc, &plan->nodes[i]);
  sc->stats.graph_launches++;
  sc->stats.nodes_executed += plan->counted;
  s->issued++;
  return GCAP_SUCCESS;
}
