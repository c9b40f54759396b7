#include <string.h>

#include "dispatch.h"
#include "graph.h"
#include "pool.h"

gcap_status gcap__check_pool(const gcap_pool *p, const char *what) {
  if (!p) return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "%s is NULL", what);
  if (!gcap__registry_has(p, GCAP__H_POOL))
    return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "%s (pool %p) is not a live pool", what, (const void *)p);
  return gcap__refuse_faulted(p->ctx);
}

/* A spare block of at least `bytes`, taken out of the spare list (best fit). */
static bool take_spare(struct gcap_pool *p, size_t bytes, struct gcap__block *out) {
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < p->spare_count; i++)
    if (p->spare[i].bytes >= bytes && (best == SIZE_MAX || p->spare[i].bytes < p->spare[best].bytes)) best = i;
  if (best == SIZE_MAX) return false;
  *out = p->spare[best];
  p->spare[best] = p->spare[--p->spare_count];
  return true;
}

static void reserve(struct gcap_context *ctx, size_t bytes) {
  ctx->graph_mem_reserved += bytes;
  if (ctx->graph_mem_reserved > ctx->graph_mem_reserved_high) ctx->graph_mem_reserved_high = ctx->graph_mem_reserved;
}

/* a's block counts as reserved (in its context and pool), or no longer does. */
static void count_reserved(struct gcap__galloc *a, bool reserved) {
  struct gcap_context *ctx = a->ctx;
  if (reserved) reserve(ctx, a->block_bytes);
  else ctx->graph_mem_reserved -= a->block_bytes;
  if (a->pool) a->pool->reserved = reserved ? a->pool->reserved + a->block_bytes : a->pool->reserved - a->block_bytes;
}

gcap_status gcap__galloc_new(struct gcap_context *ctx, struct gcap_pool *pool, size_t bytes,
                             struct gcap__galloc **out) {
  struct gcap__galloc *a = gcap__calloc(1, sizeof *a);
  if (!a) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the graph allocation");
  struct gcap__block b = {NULL, bytes};
  bool spare = pool && take_spare(pool, bytes, &b);
  gcap_status st = spare ? GCAP_SUCCESS : gcap__backend_mem_alloc(ctx, bytes, &b.ptr);
  if (st == GCAP_SUCCESS && gcap__alloc_table_insert(ctx, b.ptr, bytes, a) != 0)
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to record the graph allocation");
  if (st != GCAP_SUCCESS) {
    if (spare) pool->spare[pool->spare_count++] = b; /* there is room: it was just taken out */
    else if (b.ptr) gcap__backend_mem_free(ctx, b.ptr);
    gcap__free(a);
    return st == GCAP_ERROR_OUT_OF_MEMORY ? st : gcap__fail(st, "the pool could not reserve %zu bytes", bytes);
  }
  *a = (struct gcap__galloc){.ctx = ctx, .ptr = b.ptr, .bytes = bytes, .block_bytes = b.bytes, .pool = pool, .refs = 1};
  if (!spare) count_reserved(a, true); /* a spare block was counted when it was first reserved */
  if (pool) gcap__pool_retain(pool);
  *out = a;
  return GCAP_SUCCESS;
}

void gcap__galloc_retain(struct gcap__galloc *a) { a->refs++; }

void gcap__galloc_retain_for_exec(struct gcap__galloc *a) {
  a->refs++;
  a->exec_refs++;
  if (!a->trimmed) return;
  a->trimmed = false; /* the backend gives the pages back as they are touched */
  count_reserved(a, true);
}

void gcap__galloc_release_for_exec(struct gcap__galloc *a) {
  a->exec_refs--;
  gcap__galloc_release(a);
}

void gcap__galloc_mark_freed(struct gcap__galloc *a, const struct gcap_graph *g, bool freed) {
  if (g->serial == a->owner_serial) a->freed_in_graph = freed;
  else a->freed_elsewhere = freed;
}

void gcap__galloc_set_live(struct gcap__galloc *a, bool live) {
  if (a->live == live) return;
  a->live = live;
  struct gcap_context *ctx = a->ctx;
  ctx->graph_mem_used = live ? ctx->graph_mem_used + a->bytes : ctx->graph_mem_used - a->bytes;
  if (ctx->graph_mem_used > ctx->graph_mem_used_high) ctx->graph_mem_used_high = ctx->graph_mem_used;
  if (!a->pool) return;
  if (live) {
    a->pool->used += a->bytes;
    if (a->pool->used > a->pool->peak) a->pool->peak = a->pool->used;
  } else {
    a->pool->used -= a->bytes;
  }
}

/* Gives the block back (to its pool's spares, or to the backend) and frees the record. */
static void galloc_destroy(struct gcap__galloc *a) {
  struct gcap_context *ctx = a->ctx;
  gcap__galloc_set_live(a, false);
  gcap__alloc_table_erase(ctx, a->ptr);
  struct gcap_pool *p = a->pool;
  /* The block stays reserved in its pool for the next capture; without a pool it goes back. */
  if (a->trimmed) {
    gcap__backend_mem_free(ctx, a->ptr); /* counted out when it was trimmed */
  } else if (p && gcap__grow((void **)&p->spare, &p->spare_cap, p->spare_count + 1, sizeof *p->spare) == 0) {
    p->spare[p->spare_count++] = (struct gcap__block){a->ptr, a->block_bytes};
  } else {
    count_reserved(a, false);
    gcap__backend_mem_free(ctx, a->ptr);
  }
  gcap__free(a);
  if (p) gcap__pool_unref(p);
}

/*
 * Graph memory outlives the graphs and executables that made it while it is allocated: with
 * the last of them gone it stays, usable by stream work, until a free outside them.
 */
void gcap__galloc_release(struct gcap__galloc *a) {
  if (--a->refs > 0) return;
  if (!a->live) {
    galloc_destroy(a);
    return;
  }
  a->freed_in_graph = false; /* that graph is gone: any later free is outside it */
  a->freed_elsewhere = false;
}

void gcap__galloc_free_outside(struct gcap__galloc *a) {
  gcap__galloc_set_live(a, false);
  if (a->refs == 0) galloc_destroy(a);
}

void gcap__galloc_destroy_orphans(struct gcap_context *ctx) {
  for (size_t i = ctx->allocs.count; i-- > 0;)
    if (ctx->allocs.items[i].graph) galloc_destroy(ctx->allocs.items[i].graph); /* erases entry i only */
}

void gcap__pool_retain(struct gcap_pool *p) { p->refs++; }

/* Gives the pool's spare blocks back to the backend. */
static void free_spares(struct gcap_pool *p) {
  for (size_t i = 0; i < p->spare_count; i++) {
    gcap__backend_mem_free(p->ctx, p->spare[i].ptr);
    p->reserved -= p->spare[i].bytes;
    p->ctx->graph_mem_reserved -= p->spare[i].bytes;
  }
  p->spare_count = 0;
}

static void pool_free(struct gcap_pool *p) {
  free_spares(p);
  gcap__list_unlink(&p->link);
  gcap__free(p->spare);
  gcap__free(p);
}

void gcap__pool_unref(struct gcap_pool *p) {
  if (--p->refs == 0) pool_free(p);
}

/* Context destroy: graphs and executables are gone by now, so only the users' references remain. */
void gcap__pool_destroy_all(struct gcap_context *ctx) {
  while (ctx->pools.next != &ctx->pools) {
    struct gcap_pool *p = GCAP__CONTAINER(ctx->pools.next, struct gcap_pool, link);
    if (!p->released) gcap__registry_remove(p);
    pool_free(p);
  }
}

gcap_status gcap_pool_create(gcap_context *ctx, gcap_pool **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  struct gcap_pool *p = gcap__calloc(1, sizeof *p);
  if (!p || gcap__registry_add(p, GCAP__H_POOL) != 0) {
    gcap__free(p);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the pool");
  }
  p->ctx = ctx;
  p->refs = p->user_refs = 1;
  gcap__lock(ctx);
  gcap__list_push(&ctx->pools, &p->link);
  gcap__unlock(ctx);
  *out = p;
  return GCAP_SUCCESS;
}

gcap_pool *gcap_pool_retain(gcap_pool *p) {
  GCAP_ENTER();
  if (!p) return NULL;
  if (gcap__check_pool(p, "pool") != GCAP_SUCCESS) return NULL;
  gcap__lock(p->ctx);
  p->refs++;
  p->user_refs++;
  gcap__unlock(p->ctx);
  return p;
}

/* The handle dies with the user's last reference; the memory with the last holder of any kind. */
void gcap_pool_release(gcap_pool *p) {
  GCAP_ENTER_RELEASE();
  if (!p || gcap__check_pool(p, "pool") != GCAP_SUCCESS || gcap__refuse_in_host_callback() != GCAP_SUCCESS) return;
  struct gcap_context *ctx = p->ctx;
  gcap__lock(ctx);
  if (--p->user_refs == 0) {
    gcap__registry_remove(p);
    p->released = true;
  }
  gcap__pool_unref(p);
  gcap__unlock(ctx);
}

gcap_status gcap_pool_get_stats(const gcap_pool *p, gcap_pool_stats *out) {
  GCAP_ENTER();
  gcap_status st = gcap__check_pool(p, "pool");
  if (st != GCAP_SUCCESS) return st;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  gcap__lock(p->ctx);
  *out = (gcap_pool_stats){p->reserved, p->used, p->peak, p->attached_execs};
  gcap__unlock(p->ctx);
  return GCAP_SUCCESS;
}

/* ------------------------------------------------ context graph memory */

gcap_status gcap_context_get_graph_mem_attribute(gcap_context *ctx, gcap_graph_mem_attribute attr, uint64_t *value) {
  GCAP_ENTER();
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st != GCAP_SUCCESS) return st;
  if ((unsigned)attr > GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "attr %d is not a gcap_graph_mem_attribute", (int)attr);
  if (!value) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "value is NULL");
  gcap__lock(ctx);
  const size_t figures[] = {ctx->graph_mem_used, ctx->graph_mem_used_high, ctx->graph_mem_reserved,
                            ctx->graph_mem_reserved_high};
  *value = figures[attr];
  gcap__unlock(ctx);
  return GCAP_SUCCESS;
}

gcap_status gcap_context_set_graph_mem_attribute(gcap_context *ctx, gcap_graph_mem_attribute attr, uint64_t value) {
  GCAP_ENTER();
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st != GCAP_SUCCESS) return st;
  if (attr != GCAP_GRAPH_MEM_ATTR_USED_MEM_HIGH && attr != GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "attr %d cannot be set: only the two high marks can", (int)attr);
  if (value != 0)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "value %llu: a high mark can only be reset, with 0",
                      (unsigned long long)value);
  gcap__lock(ctx);
  if (attr == GCAP_GRAPH_MEM_ATTR_USED_MEM_HIGH) ctx->graph_mem_used_high = ctx->graph_mem_used;
  else ctx->graph_mem_reserved_high = ctx->graph_mem_reserved;
  gcap__unlock(ctx);
  return GCAP_SUCCESS;
}

/*
 * A block that only graphs hold, and that is not allocated now, keeps its address for those
 * graphs while its pages go back, as CUDA's physical memory does when the executables go.
 */
static void trim_idle_blocks(struct gcap_context *ctx) {
  if (!gcap__backend_can_discard(ctx)) return;
  for (size_t i = 0; i < ctx->allocs.count; i++) {
    struct gcap__galloc *a = ctx->allocs.items[i].graph;
    if (!a || a->trimmed || a->live || a->exec_refs > 0 || a->refs == 0) continue;
    gcap__backend_mem_discard(ctx, a->ptr, a->block_bytes);
    a->trimmed = true;
    count_reserved(a, false);
  }
}

gcap_status gcap_context_graph_mem_trim(gcap_context *ctx) {
  GCAP_ENTER();
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(ctx);
  st = gcap__backend_before_release(ctx); /* queued work may still touch what goes back */
  if (st == GCAP_SUCCESS) {
    for (struct gcap__link *l = ctx->pools.next; l != &ctx->pools; l = l->next)
      free_spares(GCAP__CONTAINER(l, struct gcap_pool, link));
    trim_idle_blocks(ctx);
  }
  gcap__unlock(ctx);
  return st;
}
