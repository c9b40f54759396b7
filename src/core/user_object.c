/*
 * User objects: a pointer and a destructor, alive while the caller, graphs or executables hold a
 * reference (cudaUserObjectCreate). Counts change under the context lock; an object whose last
 * reference goes waits on ctx->dying, and the outermost unlock runs its destructor outside the lock.
 */
#include <string.h>

#include "exec.h"

struct gcap_user_object {
  struct gcap__link link; /* ctx->user_objects */
  struct gcap_context *ctx;
  void *ptr;
  gcap_host_fn destroy;
  unsigned user_refs; /* the caller's */
  unsigned held;      /* graphs' and executables' */
  struct gcap_user_object *next_dying;
};

static gcap_status check_object(const gcap_user_object *obj, const char *what) {
  if (!obj) return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "%s is NULL", what);
  if (!gcap__registry_has(obj, GCAP__H_USER_OBJECT))
    return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "%s (user object %p) is not a live user object", what,
                      (const void *)obj);
  return GCAP_SUCCESS;
}

static gcap_status check_count(unsigned count) {
  return count ? GCAP_SUCCESS : gcap__fail(GCAP_ERROR_INVALID_VALUE, "count is 0");
}

/* No reference left: the handle goes now, the destructor at the outermost unlock. */
static void maybe_dying(struct gcap_user_object *obj) {
  if (obj->user_refs || obj->held) return;
  gcap__registry_remove(obj);
  gcap__list_unlink(&obj->link);
  obj->next_dying = obj->ctx->dying;
  obj->ctx->dying = obj;
}

void gcap__user_objects_destroy_dying(struct gcap_context *ctx) {
  struct gcap_user_object *dying = ctx->dying;
  ctx->dying = NULL;
  ctx->lock_depth--;
  pthread_mutex_unlock(&ctx->lock);
  while (dying) {
    struct gcap_user_object *next = dying->next_dying;
    gcap__run_host_fn(dying->destroy, dying->ptr); /* as cudaUserObject destructors: no blocking gcap call */
    gcap__free(dying);
    dying = next;
  }
}

gcap_status gcap_user_object_create(gcap_context *ctx, void *ptr, gcap_host_fn destroy, unsigned initial_refcount,
                                    unsigned flags, gcap_user_object **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st != GCAP_SUCCESS) return st;
  if (!destroy) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "destroy is NULL");
  if (initial_refcount == 0) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "initial_refcount is 0");
  if (flags != GCAP_USER_OBJECT_NO_DESTRUCTOR_SYNC)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "flags 0x%x is not GCAP_USER_OBJECT_NO_DESTRUCTOR_SYNC", flags);
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  struct gcap_user_object *obj = gcap__calloc(1, sizeof *obj);
  if (!obj || gcap__registry_add(obj, GCAP__H_USER_OBJECT) != 0) {
    gcap__free(obj);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the user object");
  }
  *obj = (struct gcap_user_object){.ctx = ctx, .ptr = ptr, .destroy = destroy, .user_refs = initial_refcount};
  gcap__lock(ctx);
  gcap__list_push(&ctx->user_objects, &obj->link);
  gcap__unlock(ctx);
  *out = obj;
  return GCAP_SUCCESS;
}

/* The caller's reference calls: a live object and a count above 0. */
static gcap_status check_object_count(const gcap_user_object *obj, unsigned count) {
  gcap_status st = check_object(obj, "obj");
  return st == GCAP_SUCCESS ? check_count(count) : st;
}

gcap_status gcap_user_object_retain(gcap_user_object *obj, unsigned count) {
  GCAP_ENTER();
  gcap_status st = check_object_count(obj, count);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(obj->ctx);
  if (obj->user_refs > UINT32_MAX - count) st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "count %u overflows", count);
  else obj->user_refs += count;
  gcap__unlock(obj->ctx);
  return st;
}

gcap_status gcap_user_object_release(gcap_user_object *obj, unsigned count) {
  GCAP_ENTER_RELEASE();
  gcap_status st = check_object_count(obj, count);
  if (st != GCAP_SUCCESS) return st;
  struct gcap_context *ctx = obj->ctx;
  gcap__lock(ctx);
  if (count > obj->user_refs)
    st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "count %u is more than the %u references the caller holds", count,
                    obj->user_refs);
  else obj->user_refs -= count, maybe_dying(obj);
  gcap__unlock(ctx);
  return st;
}

static struct gcap__uo_ref *find_ref(struct gcap__uo_refs *refs, const struct gcap_user_object *obj) {
  for (size_t i = 0; i < refs->count; i++)
    if (refs->items[i].obj == obj) return &refs->items[i];
  return NULL;
}

/* The list gains `count` references of obj (counted in obj->held); -1 when out of memory. */
static int add_ref(struct gcap__uo_refs *refs, struct gcap_user_object *obj, unsigned count) {
  struct gcap__uo_ref *r = find_ref(refs, obj);
  if (!r) {
    if (gcap__grow((void **)&refs->items, &refs->cap, refs->count + 1, sizeof *refs->items) != 0) return -1;
    r = &refs->items[refs->count++];
    *r = (struct gcap__uo_ref){obj, 0};
  }
  r->count += count;
  obj->held += count;
  return 0;
}

int gcap__uo_refs_copy(struct gcap__uo_refs *to, const struct gcap__uo_refs *from) {
  if (gcap__grow((void **)&to->items, &to->cap, to->count + from->count, sizeof *to->items) != 0) return -1;
  for (size_t i = 0; i < from->count; i++) (void)add_ref(to, from->items[i].obj, from->items[i].count); /* room made */
  return 0;
}

void gcap__uo_refs_release(struct gcap__uo_refs *refs) {
  for (size_t i = 0; i < refs->count; i++) {
    refs->items[i].obj->held -= refs->items[i].count;
    maybe_dying(refs->items[i].obj);
  }
  gcap__free(refs->items);
  memset(refs, 0, sizeof *refs);
}

static gcap_status check_graph_object(const gcap_graph *g, const gcap_user_object *obj, unsigned count) {
  gcap_status st = gcap__check_graph(g, "graph");
  if (st == GCAP_SUCCESS) st = check_object_count(obj, count);
  return st == GCAP_SUCCESS ? gcap__check_same_context(g->ctx, obj->ctx, "obj") : st;
}

gcap_status gcap_graph_retain_user_object(gcap_graph *g, gcap_user_object *obj, unsigned count, unsigned flags) {
  GCAP_ENTER();
  gcap_status st = check_graph_object(g, obj, count);
  if (st != GCAP_SUCCESS) return st;
  if (flags & ~GCAP_GRAPH_USER_OBJECT_MOVE)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "flags 0x%x has unknown bits 0x%x", flags,
                      flags & ~GCAP_GRAPH_USER_OBJECT_MOVE);
  bool move = flags & GCAP_GRAPH_USER_OBJECT_MOVE;
  gcap__lock(g->ctx);
  if (move && count > obj->user_refs)
    st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "count %u is more than the %u references the caller holds to move", count,
                    obj->user_refs);
  else if (add_ref(&g->user_objects, obj, count) != 0)
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the graph's reference");
  else if (move) obj->user_refs -= count;
  gcap__unlock(g->ctx);
  return st;
}

gcap_status gcap_graph_release_user_object(gcap_graph *g, gcap_user_object *obj, unsigned count) {
  GCAP_ENTER();
  gcap_status st = check_graph_object(g, obj, count);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(g->ctx);
  struct gcap__uo_ref *r = find_ref(&g->user_objects, obj);
  unsigned held = r ? r->count : 0;
  if (count > held) {
    st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "count %u is more than the %u references graph %p holds", count, held,
                    (void *)g);
  } else {
    r->count -= count;
    obj->held -= count;
    if (r->count == 0) *r = g->user_objects.items[--g->user_objects.count];
    maybe_dying(obj);
  }
  gcap__unlock(g->ctx);
  return st;
}

/* Context destroy: the caller's references go too, and with them every object. */
void gcap__user_objects_context_destroy(struct gcap_context *ctx) {
  while (ctx->user_objects.next != &ctx->user_objects) {
    struct gcap_user_object *obj = GCAP__CONTAINER(ctx->user_objects.next, struct gcap_user_object, link);
    obj->user_refs = 0;
    obj->held = 0; /* graphs and executables are gone already */
    maybe_dying(obj);
  }
}
