/*
 * 2-D and 3-D copies of linear memory: pitched allocation, gcap_memcpy_2d_async, and copy nodes
 * with 3-D parameters (cudaMemcpy3DParms without arrays). Internally a copy is its first row's
 * pointers and bytes plus a shape (struct gcap__copy_shape); a one-row copy needs no shape.
 */
#include <string.h>

#include "capture.h"
#include "graph.h"

/* a * b + c without wrapping, else false. */
static bool mul_add(size_t a, size_t b, size_t c, size_t *out) {
  if (b && a > (SIZE_MAX - c) / b) return false;
  *out = a * b + c;
  return true;
}

/* A side's first byte: pos.z slices, pos.y rows and pos.x bytes into ptr. */
static gcap_status side_start(const gcap_pitched_ptr *pp, const gcap_pos *pos, const char *side, uintptr_t *out) {
  size_t slice = 0, offset = 0;
  if (!mul_add(pp->ysize, pp->pitch, 0, &slice) || !mul_add(pos->z, slice, 0, &offset) ||
      !mul_add(pos->y, pp->pitch, offset, &offset) || offset > SIZE_MAX - pos->x ||
      (uintptr_t)pp->ptr + offset + pos->x < (uintptr_t)pp->ptr)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "params->%s_pos lies beyond the address space", side);
  *out = (uintptr_t)pp->ptr + offset + pos->x;
  return GCAP_SUCCESS;
}

/* A side's pitch holds its rows, and its ysize its slices (more than one of them only). */
static gcap_status check_side_shape(const gcap_pitched_ptr *pp, const gcap_pos *pos, const gcap_extent *e,
                                    const char *side) {
  if (!pp->ptr) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "params->%s.ptr is NULL", side);
  bool rows = e->height > 1 || e->depth > 1;
  if (rows && (pos->x > SIZE_MAX - e->width || pp->pitch < pos->x + e->width))
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "params->%s.pitch %zu is below %s_pos.x + extent.width", side,
                      pp->pitch, side);
  if (e->depth > 1 && (pos->y > SIZE_MAX - e->height || pp->ysize < pos->y + e->height))
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "params->%s.ysize %zu is below %s_pos.y + extent.height", side,
                      pp->ysize, side);
  return GCAP_SUCCESS;
}

gcap_status gcap__copy_from_3d(const gcap_memcpy_3d_params *p, struct gcap__copy *c, struct gcap__copy_shape *shape) {
  const gcap_extent *e = &p->extent;
  if (e->width == 0 || e->height == 0 || e->depth == 0)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "params->extent (%zu, %zu, %zu) is empty", e->width, e->height,
                      e->depth);
  gcap_status st = check_side_shape(&p->dst, &p->dst_pos, e, "dst");
  if (st == GCAP_SUCCESS) st = check_side_shape(&p->src, &p->src_pos, e, "src");
  uintptr_t dst = 0, src = 0;
  if (st == GCAP_SUCCESS) st = side_start(&p->dst, &p->dst_pos, "dst", &dst);
  if (st == GCAP_SUCCESS) st = side_start(&p->src, &p->src_pos, "src", &src);
  if (st != GCAP_SUCCESS) return st;
  bool one_row = e->height == 1 && e->depth == 1;
  *shape = (struct gcap__copy_shape){e->height, e->depth, p->dst.pitch, p->src.pitch, p->dst.ysize, p->src.ysize};
  *c = (struct gcap__copy){(void *)dst, (const void *)src, e->width, p->kind, p->kind, one_row ? NULL : shape};
  /* The span of each side must be expressible: gcap__check_copy tests it against the address space. */
  size_t rows = e->height * e->depth;
  if (!one_row && (e->depth > SIZE_MAX / e->height || !mul_add(rows - 1, p->dst.pitch, e->width, &(size_t){0}) ||
                   !mul_add(rows - 1, p->src.pitch, e->width, &(size_t){0})))
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "params->extent (%zu, %zu, %zu) spans more than the address space",
                      e->width, e->height, e->depth);
  return GCAP_SUCCESS;
}

gcap_status gcap__check_copy_3d(const struct gcap_context *ctx, const gcap_memcpy_3d_params *p, struct gcap__copy *c,
                                struct gcap__copy_shape *shape) {
  gcap_status st = gcap__copy_from_3d(p, c, shape);
  return st == GCAP_SUCCESS ? gcap__check_copy(ctx, c, false) : st;
}

/* ------------------------------------------------------------ eager calls */

gcap_status gcap_mem_alloc_pitch(gcap_context *ctx, size_t width, size_t height, void **dptr, size_t *pitch) {
  GCAP_ENTER();
  if (dptr) *dptr = NULL;
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st != GCAP_SUCCESS) return st;
  if (!dptr || !pitch) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s is NULL", dptr ? "pitch" : "dptr");
  if (width == 0 || height == 0) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s is 0", width ? "height" : "width");
  size_t rounded = 0, bytes = 0;
  if (!mul_add((width - 1) / 512 + 1, 512, 0, &rounded) || !mul_add(rounded, height, 0, &bytes))
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "%zu rows of %zu bytes are more than the address space", height, width);
  st = gcap__mem_alloc_device(ctx, bytes, dptr);
  if (st == GCAP_SUCCESS) *pitch = rounded;
  return st;
}

gcap_status gcap_memcpy_2d_async(gcap_stream *s, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                 size_t height, gcap_memcpy_kind kind) {
  GCAP_ENTER();
  gcap_status st = gcap__check_stream(s, "stream");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  if (dpitch < width || spitch < width) /* CUDA refuses it for one row too */
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s %zu is below width %zu", dpitch < width ? "dpitch" : "spitch",
                      dpitch < width ? dpitch : spitch, width);
  if (width == 0 || height == 0) return gcap__memcpy_async(s, dst, src, 0, kind); /* nothing, but checked as one */
  gcap_memcpy_3d_params p = {{(void *)src, spitch, width, height},
                             {0, 0, 0},
                             {dst, dpitch, width, height},
                             {0, 0, 0},
                             {width, height, 1},
                             kind};
  struct gcap__copy c;
  struct gcap__copy_shape shape;
  struct gcap_context *ctx = s->ctx;
  bool record = false;
  gcap__lock(ctx);
  st = gcap__check_copy_3d(ctx, &p, &c, &shape);
  if (st == GCAP_SUCCESS && s->seq) st = gcap__check_body_copy(s->seq->graph, &c);
  st = gcap__capture_route(s, st, &record);
  if (st == GCAP_SUCCESS) st = record ? gcap__capture_record_copy_3d(s, &p) : gcap__copy_eager(s, &c);
  gcap__unlock(ctx);
  return st;
}

/* ------------------------------------------------------------ nodes */

gcap_status gcap__node_keep_copy_3d(struct gcap_node *n, const gcap_memcpy_3d_params *p) {
  struct gcap__arena *arena = &gcap__chunk_of(n)->graph->arena;
  gcap_memcpy_3d_params *kept = gcap__arena_alloc(arena, sizeof *kept);
  if (!kept) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the copy's parameters");
  *kept = *p;
  gcap__node_drop_copy_3d(n);
  n->p.memcpy.p3 = kept;
  return GCAP_SUCCESS;
}

/* The node's 3-D parameters p, and c, their first row, as its 1-D view. */
static gcap_status keep_params(struct gcap_node *n, const gcap_memcpy_3d_params *p, const struct gcap__copy *c) {
  gcap_status st = gcap__node_keep_copy_3d(n, p);
  if (st == GCAP_SUCCESS) n->p.memcpy.flat = (gcap_memcpy_node_params){c->dst, c->src, c->bytes, p->kind};
  return st;
}

void gcap__node_drop_copy_3d(struct gcap_node *n) {
  if (n->p.memcpy.p3) gcap__arena_give_back(&gcap__chunk_of(n)->graph->arena, n->p.memcpy.p3, sizeof *n->p.memcpy.p3);
  n->p.memcpy.p3 = NULL;
}

gcap_status gcap__node_make_copy_3d(struct gcap_graph *g, const gcap_memcpy_3d_params *p, struct gcap_node **out) {
  struct gcap__copy c = {0};
  struct gcap__copy_shape shape;
  struct gcap_node *n = gcap__node_alloc(g, GCAP_NODE_MEMCPY);
  gcap_status st =
      n ? gcap__copy_from_3d(p, &c, &shape) : gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the node");
  if (st == GCAP_SUCCESS) st = keep_params(n, p, &c);
  if (st != GCAP_SUCCESS && n) gcap__node_unalloc(n);
  if (st == GCAP_SUCCESS) *out = n;
  return st;
}

gcap_status gcap_graph_add_memcpy_3d_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                          const gcap_memcpy_3d_params *p, gcap_node **out) {
  GCAP_ENTER();
  gcap_status st = gcap__node_begin_add(g, deps, num_deps, out);
  if (st == GCAP_SUCCESS) st = gcap__node_finish_checks(g, deps, num_deps, p, out);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(g->ctx);
  struct gcap__copy c;
  struct gcap__copy_shape shape;
  struct gcap_node *n = NULL;
  st = gcap__check_copy_3d(g->ctx, p, &c, &shape);
  if (st == GCAP_SUCCESS) st = gcap__check_body_copy(g, &c);
  if (st == GCAP_SUCCESS) st = gcap__node_make_copy_3d(g, p, &n);
  if (st == GCAP_SUCCESS) st = gcap__node_commit(g, n, deps, num_deps, out);
  gcap__unlock(g->ctx);
  return st;
}

gcap_status gcap_node_get_memcpy_3d_params(const gcap_node *n, gcap_memcpy_3d_params *p) {
  GCAP_ENTER();
  gcap_status st = gcap__node_check_typed(n, GCAP_NODE_MEMCPY, p);
  if (st != GCAP_SUCCESS) return st;
  const gcap_memcpy_node_params *f = &n->p.memcpy.flat;
  if (n->p.memcpy.p3) *p = *n->p.memcpy.p3;
  else
    *p = (gcap_memcpy_3d_params){
        {(void *)f->src, 0, f->bytes, 1}, {0, 0, 0}, {f->dst, 0, f->bytes, 1}, {0, 0, 0}, {f->bytes, 1, 1}, f->kind};
  return GCAP_SUCCESS;
}

gcap_status gcap_node_set_memcpy_3d_params(gcap_node *n, const gcap_memcpy_3d_params *p) {
  GCAP_ENTER();
  gcap_status st = gcap__node_check_typed(n, GCAP_NODE_MEMCPY, p);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(n->graph->ctx);
  struct gcap__copy c;
  struct gcap__copy_shape shape;
  st = gcap__check_copy_3d(n->graph->ctx, p, &c, &shape);
  if (st == GCAP_SUCCESS) st = gcap__check_body_copy(n->graph, &c);
  if (st == GCAP_SUCCESS) st = keep_params(n, p, &c);
  if (st == GCAP_SUCCESS) gcap__graph_note_ranges(n->graph, n, true);
  gcap__unlock(n->graph->ctx);
  return st;
}

struct gcap__copy gcap__copy_of_node(const struct gcap_node *n, struct gcap__copy_shape *shape) {
  struct gcap__copy c = gcap__copy_of(&n->p.memcpy.flat);
  if (!n->p.memcpy.p3) return c;
  (void)gcap__copy_from_3d(n->p.memcpy.p3, &c, shape); /* checked when it was set */
  return c;
}
