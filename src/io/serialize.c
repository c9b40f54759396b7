/* Saved graphs: gcap_graph_save and gcap_graph_load, in the JSON format of docs/format.md. */
#include "core/core.h"

#if GCAP_HAVE_JSON

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT_NAME "gcap-graph"
/*
 * Versions read: 1 to FORMAT_VERSION (each has a subset of the next one's fields). A file gets the
 * lowest version that holds it: 3 when a kernel argument holds a conditional handle
 * ("handle_args", which a version-2 reader would ignore and so misread), 2 otherwise.
 */
#define FORMAT_VERSION 3
#define FORMAT_VERSION_WITHOUT_HANDLE_ARGS 2
#define FORMAT_OLDEST 1
#define MAX_DEPTH 64 /* child graphs inside child graphs: deeper files are refused, not recursed into */

static const char *const copy_kinds[] = {"host_to_host", "host_to_device", "device_to_host", "device_to_device",
                                         "default"};
static const char *const access_names[] = {"unknown", "none", "read", "write", "read_write"};

static gcap_status no_memory(void) { return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the saved graph"); }

/* ================================================================ saving */

/* What the file names by number or lists once: kernels, events, allocation extents, handles. */
struct save_tables {
  const struct gcap_graph *saved; /* its handles are the file's "conditionals" */
  bool handle_args;               /* a kernel argument holds one of them: the file is version 3 */
  const struct gcap_kernel **kernels;
  size_t num_kernels, kernels_cap;
  const struct gcap_event **events;
  size_t num_events, events_cap;
  struct gcap__extent *extents;
  size_t num_extents, extents_cap;
};

static int add_kernel(struct save_tables *t, const struct gcap_kernel *k) {
  for (size_t i = 0; i < t->num_kernels; i++)
    if (t->kernels[i] == k || strcmp(t->kernels[i]->name, k->name) == 0) return 0;
  if (gcap__grow((void **)&t->kernels, &t->kernels_cap, t->num_kernels + 1, sizeof *t->kernels) != 0) return -1;
  t->kernels[t->num_kernels++] = k;
  return 0;
}

static size_t event_number(struct save_tables *t, const struct gcap_event *e, int *oom) {
  for (size_t i = 0; i < t->num_events; i++)
    if (t->events[i] == e) return i;
  if (gcap__grow((void **)&t->events, &t->events_cap, t->num_events + 1, sizeof *t->events) != 0) return *oom = 1, 0;
  t->events[t->num_events] = e;
  return t->num_events++;
}

/*
 * The index in the file's "conditionals" of the handle kernel argument i of n holds, or -1: an
 * argument of a handle's size whose bytes equal a handle of the saved graph is taken for it.
 */
static long handle_arg(const struct save_tables *t, const struct gcap__kernel_params *kp, size_t i) {
  if (kp->kernel->param_sizes[i] != sizeof(gcap_conditional_handle)) return -1;
  gcap_conditional_handle value;
  memcpy(&value, kp->args[i], sizeof value);
  for (size_t c = 0; c < t->saved->num_conds; c++)
    if (t->saved->conds[c]->handle == value) return (long)c;
  return -1;
}

/* Pointer-sized kernel arguments that point into an allocation: its extent, for race analysis. */
static int add_extents(struct save_tables *t, const struct gcap_node *n) {
  const struct gcap__kernel_params *kp = &n->p.kernel;
  for (size_t i = 0; i < kp->kernel->info.num_params; i++) {
    if (kp->kernel->param_sizes[i] != sizeof(void *) || handle_arg(t, kp, i) >= 0) continue;
    uintptr_t value;
    memcpy(&value, kp->args[i], sizeof value);
    struct gcap__extent e;
    if (!gcap__graph_extent_of(n->graph, value, &e)) continue;
    if (gcap__grow((void **)&t->extents, &t->extents_cap, t->num_extents + 1, sizeof *t->extents) != 0) return -1;
    t->extents[t->num_extents++] = e;
  }
  return 0;
}

static int by_base(const void *a, const void *b) {
  const struct gcap__extent *x = a, *y = b;
  if (x->base != y->base) return x->base < y->base ? -1 : 1;
  return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

static void unique_extents(struct save_tables *t) {
  if (t->num_extents == 0) return;
  qsort(t->extents, t->num_extents, sizeof *t->extents, by_base);
  size_t n = 1;
  for (size_t i = 1; i < t->num_extents; i++)
    if (by_base(&t->extents[i], &t->extents[n - 1]) != 0) t->extents[n++] = t->extents[i];
  t->num_extents = n;
}

static void tables_free(struct save_tables *t) {
  gcap__free(t->kernels);
  gcap__free(t->events);
  gcap__free(t->extents);
}

/* Values that may need all 64 bits go in strings: JSON integers stop being exact at 2^53. */
static json_t *address(uintptr_t p) {
  char text[24];
  snprintf(text, sizeof text, "0x%" PRIxPTR, p);
  return json_string(text);
}

static json_t *count(size_t n) {
  char text[24];
  snprintf(text, sizeof text, "%zu", n);
  return json_string(text);
}

static json_t *hex_bytes(const void *p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  char *text = gcap__malloc(2 * n + 1);
  if (!text) return NULL;
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) text[2 * i] = digits[b[i] >> 4], text[2 * i + 1] = digits[b[i] & 15];
  text[2 * n] = '\0';
  json_t *s = json_string(text);
  gcap__free(text);
  return s;
}

static json_t *dim3(gcap_dim3 d) { return json_pack("[III]", (json_int_t)d.x, (json_int_t)d.y, (json_int_t)d.z); }

/* json_object_set_new that remembers a failure instead of stopping. */
static void put(json_t *o, const char *key, json_t *value, int *oom) {
  if (!value || json_object_set_new(o, key, value) != 0) *oom = 1;
}

/*
 * Version 3: an argument holding a handle of the saved graph is written as zeros, and
 * "handle_args" pairs its parameter index with the handle's index in "conditionals", so that the
 * loader puts the loaded graph's handle there (and saving the loaded graph gives the same bytes).
 */
static json_t *kernel_node(const struct gcap_node *n, struct save_tables *t, int *oom) {
  static const unsigned char zeros[sizeof(gcap_conditional_handle)];
  const struct gcap__kernel_params *kp = &n->p.kernel;
  json_t *o = json_object(), *args = json_array(), *handles = json_array();
  if (!o || !args || !handles) return json_decref(o), json_decref(args), json_decref(handles), NULL;
  for (size_t i = 0; i < kp->kernel->info.num_params; i++) {
    long handle = handle_arg(t, kp, i);
    if (handle >= 0 && json_array_append_new(handles, json_pack("[II]", (json_int_t)i, (json_int_t)handle)) != 0)
      *oom = 1;
    const void *bytes = handle >= 0 ? zeros : kp->args[i];
    if (json_array_append_new(args, hex_bytes(bytes, kp->kernel->param_sizes[i])) != 0) *oom = 1;
  }
  put(o, "type", json_string("kernel"), oom);
  put(o, "kernel", json_string(kp->kernel->name), oom);
  put(o, "grid", dim3(kp->grid), oom);
  put(o, "block", dim3(kp->block), oom);
  put(o, "shared_mem_bytes", json_integer(kp->shared_mem_bytes), oom);
  if (kp->priority) put(o, "priority", json_integer(kp->priority), oom);
  put(o, "args", args, oom);
  if (json_array_size(handles)) {
    t->handle_args = true;
    put(o, "handle_args", handles, oom);
  } else {
    json_decref(handles);
  }
  return o;
}

static json_t *memcpy_node(const gcap_memcpy_node_params *p, int *oom) {
  json_t *o = json_object();
  if (!o) return NULL;
  put(o, "type", json_string("memcpy"), oom);
  put(o, "dst", address((uintptr_t)p->dst), oom);
  put(o, "src", address((uintptr_t)p->src), oom);
  put(o, "bytes", count(p->bytes), oom);
  put(o, "kind", json_string(copy_kinds[p->kind]), oom);
  return o;
}

static json_t *pitched(const gcap_pitched_ptr *pp, int *oom) {
  json_t *o = json_object();
  if (!o) return NULL;
  put(o, "ptr", address((uintptr_t)pp->ptr), oom);
  put(o, "pitch", count(pp->pitch), oom);
  put(o, "xsize", count(pp->xsize), oom);
  put(o, "ysize", count(pp->ysize), oom);
  return o;
}

static json_t *triple(const char *a, size_t x, const char *b, size_t y, const char *c, size_t z, int *oom) {
  json_t *o = json_object();
  if (!o) return NULL;
  put(o, a, count(x), oom);
  put(o, b, count(y), oom);
  put(o, c, count(z), oom);
  return o;
}

/* Version 2: a copy with 3-D parameters, as gcap_node_get_memcpy_3d_params gives them. */
static json_t *memcpy_3d_node(const gcap_memcpy_3d_params *p, int *oom) {
  json_t *o = json_object();
  if (!o) return NULL;
  put(o, "type", json_string("memcpy_3d"), oom);
  put(o, "src", pitched(&p->src, oom), oom);
  put(o, "src_pos", triple("x", p->src_pos.x, "y", p->src_pos.y, "z", p->src_pos.z, oom), oom);
  put(o, "dst", pitched(&p->dst, oom), oom);
  put(o, "dst_pos", triple("x", p->dst_pos.x, "y", p->dst_pos.y, "z", p->dst_pos.z, oom), oom);
  put(o, "extent", triple("width", p->extent.width, "height", p->extent.height, "depth", p->extent.depth, oom), oom);
  put(o, "kind", json_string(copy_kinds[p->kind]), oom);
  return o;
}

static json_t *memset_node(const gcap_memset_node_params *p, int *oom) {
  json_t *o = json_object();
  if (!o) return NULL;
  put(o, "type", json_string("memset"), oom);
  put(o, "dst", address((uintptr_t)p->dst), oom);
  put(o, "value", json_integer(p->value), oom);
  put(o, "element_size", json_integer(p->element_size), oom);
  put(o, "width", count(p->width), oom);
  put(o, "height", count(p->height), oom);
  put(o, "pitch", count(p->pitch), oom);
  return o;
}

static json_t *graph_object(const struct gcap_graph *g, struct save_tables *t, int *oom);

static json_t *typed(const char *type) { return json_pack("{ss}", "type", type); }

/* The MEM_ALLOC node of n's graph that made n's allocation, or NULL (a free of another graph's). */
static const struct gcap_node *alloc_node_of(const struct gcap_node *n) {
  const struct gcap_graph *g = n->graph;
  for (size_t i = 0; i < g->nodes.count; i++)
    if (g->nodes.items[i]->type == GCAP_NODE_MEM_ALLOC && g->nodes.items[i]->p.mem == n->p.mem)
      return g->nodes.items[i];
  return NULL;
}

/* Everything a graph allocation records, though no loader can give it the same address again. */
static json_t *mem_node(const struct gcap_node *n, int *oom) {
  const struct gcap__galloc *a = n->p.mem;
  json_t *o = typed(n->type == GCAP_NODE_MEM_ALLOC ? "mem_alloc" : "mem_free");
  if (!o) return NULL;
  put(o, "address", address((uintptr_t)a->ptr), oom);
  put(o, "bytes", count(a->bytes), oom);
  if (n->type == GCAP_NODE_MEM_ALLOC) {
    put(o, "reserved_bytes", count(a->block_bytes), oom);
    put(o, "pool", json_boolean(a->pool != NULL), oom);
  } else {
    const struct gcap_node *alloc = alloc_node_of(n);
    put(o, "alloc", alloc ? json_integer((json_int_t)alloc->index) : json_null(), oom);
  }
  return o;
}

static const char *const cond_types[] = {"if", "while", "switch"};

/* Version 2: its handle by position in the top-level graph's table, and its bodies. */
static json_t *conditional_node(const struct gcap_node *n, struct save_tables *t, int *oom) {
  const struct gcap_graph *top = gcap__graph_top(n->graph);
  size_t handle = 0;
  while (handle < top->num_conds && top->conds[handle] != n->p.cond->cond) handle++;
  json_t *o = typed("conditional"), *bodies = json_array();
  if (!o || !bodies) {
    json_decref(o), json_decref(bodies);
    *oom = 1;
    return NULL;
  }
  put(o, "handle", json_integer((json_int_t)handle), oom);
  put(o, "conditional_type", json_string(cond_types[n->p.cond->type]), oom);
  for (unsigned b = 0; b < n->p.cond->size && !*oom; b++)
    if (json_array_append_new(bodies, graph_object(n->p.cond->bodies[b], t, oom)) != 0) *oom = 1;
  put(o, "bodies", bodies, oom);
  return o;
}

static json_t *conditionals_array(const struct gcap_graph *g, int *oom) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < g->num_conds; i++) {
    json_t *o =
        json_pack("{sIsI}", "default", (json_int_t)g->conds[i]->default_value, "flags", (json_int_t)g->conds[i]->flags);
    if (!o || json_array_append_new(a, o) != 0) *oom = 1;
  }
  if (!a) *oom = 1;
  return a;
}

static json_t *node_object(const struct gcap_node *n, struct save_tables *t, int *oom) {
  json_t *o = NULL;
  switch (n->type) {
  case GCAP_NODE_KERNEL:
    if (add_kernel(t, n->p.kernel.kernel) != 0 || add_extents(t, n) != 0) *oom = 1;
    return kernel_node(n, t, oom);
  case GCAP_NODE_MEMCPY:
    return n->p.memcpy.p3 ? memcpy_3d_node(n->p.memcpy.p3, oom) : memcpy_node(&n->p.memcpy.flat, oom);
  case GCAP_NODE_MEMSET: return memset_node(&n->p.memset, oom);
  case GCAP_NODE_HOST: return typed("host");
  case GCAP_NODE_EMPTY: return typed("empty");
  case GCAP_NODE_GRAPH:
    o = typed("graph");
    if (o) put(o, "graph", graph_object(n->p.child, t, oom), oom);
    return o;
  case GCAP_NODE_EVENT_RECORD:
  case GCAP_NODE_EVENT_WAIT:
    o = typed(n->type == GCAP_NODE_EVENT_RECORD ? "event_record" : "event_wait");
    if (o) put(o, "event", json_integer((json_int_t)event_number(t, n->p.event, oom)), oom);
    return o;
  case GCAP_NODE_MEM_ALLOC:
  case GCAP_NODE_MEM_FREE: return mem_node(n, oom);
  case GCAP_NODE_CONDITIONAL: return conditional_node(n, t, oom);
  default: return NULL; /* native children are refused before saving starts */
  }
}

static json_t *graph_object(const struct gcap_graph *g, struct save_tables *t, int *oom) {
  json_t *o = json_object(), *nodes = json_array(), *edges = json_array();
  if (!o || !nodes || !edges) {
    json_decref(o), json_decref(nodes), json_decref(edges);
    *oom = 1;
    return NULL;
  }
  for (size_t i = 0; i < g->nodes.count && !*oom; i++) {
    json_t *node = node_object(g->nodes.items[i], t, oom);
    if (!node || json_array_append_new(nodes, node) != 0) *oom = 1;
  }
  for (size_t i = 0; i < g->edge_count && !*oom; i++) {
    json_t *edge = json_pack("[II]", (json_int_t)g->edges[i].from->index, (json_int_t)g->edges[i].to->index);
    if (!edge || json_array_append_new(edges, edge) != 0) *oom = 1;
  }
  put(o, "nodes", nodes, oom);
  put(o, "edges", edges, oom);
  return o;
}

static json_t *kernels_array(const struct save_tables *t, int *oom) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < t->num_kernels; i++) {
    const struct gcap_kernel *k = t->kernels[i];
    json_t *sizes = json_array(), *access = json_array(), *o = json_object();
    for (size_t p = 0; sizes && access && p < k->info.num_params; p++) {
      if (json_array_append_new(sizes, json_integer((json_int_t)k->param_sizes[p])) != 0) *oom = 1;
      if (json_array_append_new(access, json_string(access_names[k->param_access[p]])) != 0) *oom = 1;
    }
    if (!o || !sizes || !access) {
      json_decref(o), json_decref(sizes), json_decref(access);
      *oom = 1;
      continue;
    }
    put(o, "name", json_string(k->name), oom);
    put(o, "param_sizes", sizes, oom);
    put(o, "param_access", access, oom);
    if (json_array_append_new(a, o) != 0) *oom = 1;
  }
  if (!a) *oom = 1;
  return a;
}

static json_t *extents_array(const struct save_tables *t, int *oom) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < t->num_extents; i++) {
    json_t *o = json_object();
    if (!o) {
      *oom = 1;
      break;
    }
    put(o, "base", address(t->extents[i].base), oom);
    put(o, "bytes", count(t->extents[i].bytes), oom);
    if (json_array_append_new(a, o) != 0) *oom = 1;
  }
  if (!a) *oom = 1;
  return a;
}

/* A conditional body saved on its own carries the handle table of the graph it lies in, which
 * its conditional nodes and handle arguments index. */
static json_t *document(const struct gcap_graph *g, int *oom) {
  struct save_tables t = {.saved = gcap__graph_top(g)};
  json_t *graph = graph_object(g, &t, oom);
  unique_extents(&t);
  json_t *doc = json_object();
  if (doc) {
    put(doc, "format", json_string(FORMAT_NAME), oom);
    put(doc, "version", json_integer(t.handle_args ? FORMAT_VERSION : FORMAT_VERSION_WITHOUT_HANDLE_ARGS), oom);
    put(doc, "kernels", kernels_array(&t, oom), oom);
    put(doc, "allocations", extents_array(&t, oom), oom);
    put(doc, "events", json_integer((json_int_t)t.num_events), oom);
    if (t.saved->num_conds) put(doc, "conditionals", conditionals_array(t.saved, oom), oom);
    put(doc, "graph", graph, oom);
  } else {
    json_decref(graph);
    *oom = 1;
  }
  tables_free(&t);
  return doc;
}

/* Native CUDA children have no parameters gcap can write down. */
static const struct gcap_node *find_native(const struct gcap_graph *g) {
  for (size_t i = 0; i < g->nodes.count; i++) {
    const struct gcap_node *n = g->nodes.items[i];
    if (n->type == GCAP__NODE_NATIVE) return n;
    const struct gcap_node *inner = n->type == GCAP_NODE_GRAPH ? find_native(n->p.child) : NULL;
    if (inner) return inner;
  }
  return NULL;
}

gcap_status gcap_graph_save(const gcap_graph *g, FILE *out) {
  GCAP_ENTER();
  gcap_status st = gcap__check_graph(g, "graph");
  if (st != GCAP_SUCCESS) return st;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  gcap__lock(g->ctx);
  const struct gcap_node *native = find_native(g);
  int oom = 0;
  json_t *doc = native ? NULL : document(g, &oom);
  clearerr(out); /* an earlier error on the stream is not this call's */
  errno = 0;
  if (native)
    st = gcap__fail(GCAP_ERROR_NOT_SUPPORTED,
                    "node %zu is a native CUDA graph (gcap_cuda_graph_add_native_child), which cannot be saved",
                    native->index);
  else if (oom || !doc) st = no_memory();
  else if (json_dumpf(doc, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0 || fputc('\n', out) == EOF ||
           fflush(out) != 0 || ferror(out))
    st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "out could not be written%s%s%s", errno ? " (" : "",
                    errno ? strerror(errno) : "", errno ? ")" : "");
  json_decref(doc);
  gcap__unlock(g->ctx);
  return st;
}

/* ================================================================ loading */

#define MAX_NODES (1u << 20) /* in all graphs of a file together */

struct loader {
  struct gcap_context *ctx;
  json_t *kernels; /* the file's table */
  struct gcap_kernel **resolved;
  uint64_t declared_events;   /* the file's "events" */
  struct gcap_event **events; /* made on first use, so a large "events" costs nothing */
  size_t num_events, events_cap;
  size_t num_nodes;
  char where[160]; /* "node 3 of the child graph in node 1", for messages */
};

static gcap_status bad(const struct loader *l, const char *field, const char *why) {
  return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s%s\"%s\" %s", l->where, l->where[0] ? ": " : "", field, why);
}

static int digit_value(char c, int base) {
  if (c >= '0' && c <= '9') return c - '0';
  if (base == 16 && c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (base == 16 && c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* "0x" and hex digits, or decimal digits; nothing else (no sign, space or second prefix). */
static int parse_u64(const char *text, uint64_t *out) {
  int base = strncmp(text, "0x", 2) == 0 ? 16 : 10;
  const char *p = base == 16 ? text + 2 : text;
  if (!*p) return -1;
  uint64_t v = 0;
  for (; *p; p++) {
    int d = digit_value(*p, base);
    if (d < 0) return -1;
    if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) return 1;
    v = v * (uint64_t)base + (uint64_t)d;
  }
  *out = v;
  return 0;
}

static gcap_status get_u64(const struct loader *l, json_t *o, const char *field, uint64_t max, uint64_t *out) {
  json_t *v = json_object_get(o, field);
  if (json_is_integer(v)) {
    json_int_t i = json_integer_value(v);
    if (i < 0 || (uint64_t)i > max) return bad(l, field, "is out of range");
    *out = (uint64_t)i;
    return GCAP_SUCCESS;
  }
  if (!json_is_string(v)) return bad(l, field, v ? "is neither a number nor a string" : "is missing");
  uint64_t value = 0;
  int rc = parse_u64(json_string_value(v), &value);
  if (rc < 0) return bad(l, field, "is not a number");
  if (rc > 0 || value > max) return bad(l, field, "is out of range");
  *out = value;
  return GCAP_SUCCESS;
}

static gcap_status get_size(const struct loader *l, json_t *o, const char *field, size_t *out) {
  uint64_t v = 0;
  gcap_status st = get_u64(l, o, field, SIZE_MAX, &v);
  *out = (size_t)v;
  return st;
}

static gcap_status get_u32(const struct loader *l, json_t *o, const char *field, uint32_t *out) {
  uint64_t v = 0;
  gcap_status st = get_u64(l, o, field, UINT32_MAX, &v);
  *out = (uint32_t)v;
  return st;
}

static gcap_status get_pointer(const struct loader *l, json_t *o, const char *field, void **out) {
  uint64_t v = 0;
  gcap_status st = get_u64(l, o, field, UINTPTR_MAX, &v);
  *out = (void *)(uintptr_t)v;
  return st;
}

static gcap_status get_dim3(const struct loader *l, json_t *o, const char *field, gcap_dim3 *out) {
  json_t *a = json_object_get(o, field);
  if (!json_is_array(a) || json_array_size(a) != 3) return bad(l, field, "is not an array of three numbers");
  uint32_t v[3];
  for (size_t i = 0; i < 3; i++) {
    json_t *x = json_array_get(a, i);
    if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > UINT32_MAX)
      return bad(l, field, "is not an array of three numbers below 2^32");
    v[i] = (uint32_t)json_integer_value(x);
  }
  *out = (gcap_dim3){v[0], v[1], v[2]};
  return GCAP_SUCCESS;
}

/* Argument bytes are written in lowercase only, and read back only so. */
static int hex_digit(char c) { return c >= 'A' && c <= 'F' ? -1 : digit_value(c, 16); }

/* Exactly `bytes` bytes in lowercase hex, the way gcap_graph_save writes them. */
static gcap_status get_hex(const struct loader *l, json_t *v, size_t index, size_t bytes, unsigned char *out) {
  char field[32];
  snprintf(field, sizeof field, "args[%zu]", index);
  const char *text = json_string_value(v);
  if (!text) return bad(l, field, "is not a string");
  if (strlen(text) != 2 * bytes) {
    char why[96];
    snprintf(why, sizeof why, "has %zu hex digits; the kernel's parameter takes %zu bytes", strlen(text), bytes);
    return bad(l, field, why);
  }
  for (size_t i = 0; i < bytes; i++) {
    int hi = hex_digit(text[2 * i]), lo = hex_digit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return bad(l, field, "is not lowercase hex");
    out[i] = (unsigned char)(hi << 4 | lo);
  }
  return GCAP_SUCCESS;
}

static const char *type_of(json_t *node) { return json_string_value(json_object_get(node, "type")); }

/* ---------------------------------------------------------------- tables */

static gcap_param_access access_named(const char *s) {
  for (size_t i = 0; s && i < sizeof access_names / sizeof *access_names; i++)
    if (strcmp(s, access_names[i]) == 0) return (gcap_param_access)i;
  return (gcap_param_access)-1;
}

/* One entry of the kernel table: the context must have that kernel, with those parameters. */
static gcap_status resolve_kernel(struct loader *l, json_t *entry, size_t i) {
  snprintf(l->where, sizeof l->where, "kernels[%zu]", i);
  const char *name = json_string_value(json_object_get(entry, "name"));
  json_t *sizes = json_object_get(entry, "param_sizes"), *access = json_object_get(entry, "param_access");
  if (!name) return bad(l, "name", "is not a string");
  if (!json_is_array(sizes)) return bad(l, "param_sizes", "is not an array");
  if (!json_is_array(access) || json_array_size(access) != json_array_size(sizes))
    return bad(l, "param_access", "is not an array as long as param_sizes");
  for (size_t p = 0; p < json_array_size(access); p++)
    if ((int)access_named(json_string_value(json_array_get(access, p))) < 0)
      return bad(l, "param_access", "holds a name other than unknown, none, read, write, read_write");
  gcap_status st = gcap__find_kernel(l->ctx, name, &l->resolved[i]);
  if (st != GCAP_SUCCESS) return gcap__fail_context(st, "the saved graph uses kernel \"%s\"", name);
  const struct gcap_kernel *k = l->resolved[i];
  if (json_array_size(sizes) != k->info.num_params)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "kernel \"%s\" takes %zu parameters here but %zu in the saved graph",
                      name, k->info.num_params, json_array_size(sizes));
  for (size_t p = 0; p < k->info.num_params; p++) {
    json_t *size = json_array_get(sizes, p);
    if (!json_is_integer(size) || (uint64_t)json_integer_value(size) != k->param_sizes[p])
      return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                        "kernel \"%s\" parameter %zu is %zu bytes here but not in the saved graph", name, p,
                        k->param_sizes[p]);
  }
  return GCAP_SUCCESS;
}

static gcap_status resolve_kernels(struct loader *l) {
  if (!json_is_array(l->kernels)) return bad(l, "kernels", "is not an array");
  size_t n = json_array_size(l->kernels);
  l->resolved = gcap__calloc(n ? n : 1, sizeof *l->resolved);
  if (!l->resolved) return no_memory();
  gcap_status st = GCAP_SUCCESS;
  for (size_t i = 0; st == GCAP_SUCCESS && i < n; i++) st = resolve_kernel(l, json_array_get(l->kernels, i), i);
  l->where[0] = '\0';
  return st;
}

static gcap_status record_allocations(struct loader *l, struct gcap_graph *g, json_t *list) {
  if (!json_is_array(list)) return bad(l, "allocations", "is not an array");
  for (size_t i = 0; i < json_array_size(list); i++) {
    json_t *a = json_array_get(list, i);
    snprintf(l->where, sizeof l->where, "allocations[%zu]", i);
    struct gcap__extent e;
    void *base = NULL;
    gcap_status st = json_is_object(a) ? get_pointer(l, a, "base", &base) : bad(l, "allocations", "holds a non-object");
    if (st == GCAP_SUCCESS) st = get_size(l, a, "bytes", &e.bytes);
    if (st != GCAP_SUCCESS) return st;
    e.base = (uintptr_t)base;
    if (e.bytes == 0 || e.bytes - 1 > UINTPTR_MAX - e.base)
      return bad(l, "bytes", "is 0 or runs past the address space");
    if (gcap__graph_record_extent(g, e) != 0) return no_memory();
  }
  l->where[0] = '\0';
  return GCAP_SUCCESS;
}

static gcap_status count_events(struct loader *l, json_t *doc) {
  return get_u64(l, doc, "events", UINT64_MAX, &l->declared_events);
}

/* Event k of the file: numbered in order of first use, so a new number is the next one. */
static gcap_status event_of(struct loader *l, uint64_t k, struct gcap_event **out) {
  if (k >= l->declared_events) return bad(l, "event", "is not below the file's \"events\" count");
  if (k > l->num_events) return bad(l, "event", "skips a number: events are numbered in order of first use");
  if (k == l->num_events) {
    if (gcap__grow((void **)&l->events, &l->events_cap, l->num_events + 1, sizeof *l->events) != 0) return no_memory();
    gcap_status st = gcap__event_new(l->ctx, GCAP_EVENT_DEFAULT, &l->events[l->num_events]);
    if (st != GCAP_SUCCESS) return st;
    l->num_events++;
  }
  *out = l->events[k];
  return GCAP_SUCCESS;
}

/* ---------------------------------------------------------------- nodes */

/* Loaded host nodes run nothing: the saving process's functions do not exist here. */
static void loaded_host_node(void *user_data) { (void)user_data; }

static gcap_status load_graph(struct loader *l, struct gcap_graph *g, json_t *o, unsigned depth);

static gcap_status append(struct gcap_graph *g, struct gcap_node *n) {
  gcap_status st = gcap__node_append(g, n, NULL, 0, false);
  if (st != GCAP_SUCCESS) gcap__node_discard(n);
  return st;
}

static gcap_status kernel_from_table(struct loader *l, json_t *node, struct gcap_kernel **out) {
  const char *name = json_string_value(json_object_get(node, "kernel"));
  if (!name) return bad(l, "kernel", "is not a string");
  for (size_t i = 0; i < json_array_size(l->kernels); i++)
    if (strcmp(json_string_value(json_object_get(json_array_get(l->kernels, i), "name")), name) == 0)
      return *out = l->resolved[i], GCAP_SUCCESS;
  return bad(l, "kernel", "names a kernel missing from the file's kernel table");
}

/* Optional (version 2): 0 when absent. */
static gcap_status get_priority(const struct loader *l, json_t *node, int *out) {
  json_t *v = json_object_get(node, "priority");
  if (!v) return GCAP_SUCCESS;
  if (!json_is_integer(v) || json_integer_value(v) < INT_MIN || json_integer_value(v) > INT_MAX)
    return bad(l, "priority", "is not an int");
  *out = (int)json_integer_value(v);
  return GCAP_SUCCESS;
}

/*
 * Version 3: the arguments "handle_args" names hold handles of the file's "conditionals"; they get
 * the loaded graph's handles (made from that table before any node), whatever bytes "args" had.
 */
static gcap_status load_handle_args(const struct loader *l, const struct gcap_graph *g, json_t *node,
                                    const struct gcap_kernel *k, void **args) {
  json_t *list = json_object_get(node, "handle_args");
  if (!list) return GCAP_SUCCESS;
  if (!json_is_array(list)) return bad(l, "handle_args", "is not an array");
  const struct gcap_graph *top = gcap__graph_top(g);
  bool *seen = gcap__calloc(k->info.num_params ? k->info.num_params : 1, sizeof *seen);
  if (!seen) return no_memory();
  gcap_status st = GCAP_SUCCESS;
  for (size_t i = 0; st == GCAP_SUCCESS && i < json_array_size(list); i++) {
    char field[48], why[128];
    snprintf(field, sizeof field, "handle_args[%zu]", i);
    json_t *pair = json_array_get(list, i), *a = json_array_get(pair, 0), *b = json_array_get(pair, 1);
    if (!json_is_array(pair) || json_array_size(pair) != 2 || !json_is_integer(a) || !json_is_integer(b) ||
        json_integer_value(a) < 0 || json_integer_value(b) < 0) {
      st = bad(l, field, "is not a pair [parameter index, handle index]");
      break;
    }
    uint64_t param = (uint64_t)json_integer_value(a), handle = (uint64_t)json_integer_value(b);
    if (param >= k->info.num_params)
      snprintf(why, sizeof why, "names parameter %" PRIu64 " of a kernel with %zu", param, k->info.num_params);
    else if (k->param_sizes[param] != sizeof(gcap_conditional_handle))
      snprintf(why, sizeof why, "names parameter %" PRIu64 ", of %zu bytes; a conditional handle has %zu", param,
               k->param_sizes[param], sizeof(gcap_conditional_handle));
    else if (handle >= top->num_conds)
      snprintf(why, sizeof why, "names handle %" PRIu64 " of a file with %zu (\"conditionals\")", handle,
               top->num_conds);
    else if (seen[param]) snprintf(why, sizeof why, "names parameter %" PRIu64 " again", param);
    else {
      seen[param] = true;
      memcpy(args[param], &top->conds[handle]->handle, sizeof(gcap_conditional_handle));
      continue;
    }
    st = bad(l, field, why);
  }
  gcap__free(seen);
  return st;
}

static gcap_status load_kernel(struct loader *l, struct gcap_graph *g, json_t *node) {
  gcap_kernel_node_params p = {0};
  gcap_status st = kernel_from_table(l, node, &p.kernel);
  if (st == GCAP_SUCCESS) st = get_dim3(l, node, "grid", &p.grid);
  if (st == GCAP_SUCCESS) st = get_dim3(l, node, "block", &p.block);
  if (st == GCAP_SUCCESS) st = get_u32(l, node, "shared_mem_bytes", &p.shared_mem_bytes);
  json_t *args = json_object_get(node, "args");
  if (st == GCAP_SUCCESS && (!json_is_array(args) || json_array_size(args) != p.kernel->info.num_params))
    st = bad(l, "args", "is not an array with one entry per kernel parameter");
  if (st != GCAP_SUCCESS) return st;
  const struct gcap_kernel *k = p.kernel;
  unsigned char *values = gcap__malloc(k->args_bytes ? k->args_bytes : 1);
  p.args = gcap__calloc(k->info.num_params ? k->info.num_params : 1, sizeof *p.args);
  if (!values || !p.args) st = no_memory();
  for (size_t i = 0; st == GCAP_SUCCESS && i < k->info.num_params; i++) {
    p.args[i] = values + k->param_offsets[i];
    st = get_hex(l, json_array_get(args, i), i, k->param_sizes[i], p.args[i]);
  }
  if (st == GCAP_SUCCESS) st = load_handle_args(l, g, node, k, p.args);
  if (st == GCAP_SUCCESS) st = gcap__check_launch(p.kernel, p.grid, p.block, p.shared_mem_bytes, p.args);
  int priority = 0;
  if (st == GCAP_SUCCESS) st = get_priority(l, node, &priority);
  struct gcap_node *n = NULL;
  if (st == GCAP_SUCCESS) st = gcap__node_make_kernel(g, &p, &n);
  if (st == GCAP_SUCCESS) n->p.kernel.priority = priority;
  if (st == GCAP_SUCCESS) st = append(g, n);
  gcap__free(values);
  gcap__free(p.args);
  return st;
}

/*
 * Copies and fills are checked as gcap_graph_add_memcpy/memset_node check them, against a context
 * that knows no allocations: the file's addresses are kept as recorded even where nothing is
 * allocated in this process (instantiation checks them against the real one).
 */
static const struct gcap_backend_ops unknown_memory_ops = {.name = "saved graph", .knows_all_device_memory = false};
static const struct gcap_context unknown_memory = {.ops = &unknown_memory_ops};

static gcap_status checked(const struct loader *l, gcap_status st) {
  return st == GCAP_SUCCESS ? st : gcap__fail_context(st, "%s", l->where);
}

static gcap_status get_kind(const struct loader *l, json_t *node, gcap_memcpy_kind *out) {
  const char *kind = json_string_value(json_object_get(node, "kind"));
  size_t k = 0;
  while (kind && k < sizeof copy_kinds / sizeof *copy_kinds && strcmp(kind, copy_kinds[k]) != 0) k++;
  if (!kind || k == sizeof copy_kinds / sizeof *copy_kinds)
    return bad(l, "kind", "is not one of host_to_host, host_to_device, device_to_host, device_to_device, default");
  *out = (gcap_memcpy_kind)k;
  return GCAP_SUCCESS;
}

static gcap_status load_memcpy(struct loader *l, struct gcap_graph *g, json_t *node) {
  gcap_memcpy_node_params p = {0};
  gcap_status st = get_pointer(l, node, "dst", &p.dst);
  void *src = NULL;
  if (st == GCAP_SUCCESS) st = get_pointer(l, node, "src", &src);
  if (st == GCAP_SUCCESS) st = get_size(l, node, "bytes", &p.bytes);
  if (st == GCAP_SUCCESS) st = get_kind(l, node, &p.kind);
  if (st != GCAP_SUCCESS) return st;
  p.src = src;
  struct gcap__copy c = gcap__copy_of(&p);
  st = checked(l, gcap__check_copy(&unknown_memory, &c, false));
  struct gcap_node *n = NULL;
  if (st == GCAP_SUCCESS) st = gcap__node_make_value(g, GCAP_NODE_MEMCPY, &p, sizeof p, &n);
  return st == GCAP_SUCCESS ? append(g, n) : st;
}

/* An object field holding three sizes named a, b, c. */
static gcap_status get_triple(const struct loader *l, json_t *node, const char *field, const char *const names[3],
                              size_t *out[3]) {
  json_t *o = json_object_get(node, field);
  if (!json_is_object(o)) return bad(l, field, "is not an object");
  gcap_status st = GCAP_SUCCESS;
  for (int i = 0; st == GCAP_SUCCESS && i < 3; i++) st = get_size(l, o, names[i], out[i]);
  return st;
}

static gcap_status get_pitched(const struct loader *l, json_t *node, const char *field, gcap_pitched_ptr *out) {
  static const char *const names[] = {"pitch", "xsize", "ysize"};
  size_t *sizes[] = {&out->pitch, &out->xsize, &out->ysize};
  gcap_status st = get_triple(l, node, field, names, sizes);
  return st == GCAP_SUCCESS ? get_pointer(l, json_object_get(node, field), "ptr", &out->ptr) : st;
}

static gcap_status load_memcpy_3d(struct loader *l, struct gcap_graph *g, json_t *node) {
  static const char *const xyz[] = {"x", "y", "z"}, *const whd[] = {"width", "height", "depth"};
  gcap_memcpy_3d_params p;
  memset(&p, 0, sizeof p);
  size_t *src_pos[] = {&p.src_pos.x, &p.src_pos.y, &p.src_pos.z},
         *dst_pos[] = {&p.dst_pos.x, &p.dst_pos.y, &p.dst_pos.z};
  size_t *extent[] = {&p.extent.width, &p.extent.height, &p.extent.depth};
  gcap_status st = get_pitched(l, node, "src", &p.src);
  if (st == GCAP_SUCCESS) st = get_triple(l, node, "src_pos", xyz, src_pos);
  if (st == GCAP_SUCCESS) st = get_pitched(l, node, "dst", &p.dst);
  if (st == GCAP_SUCCESS) st = get_triple(l, node, "dst_pos", xyz, dst_pos);
  if (st == GCAP_SUCCESS) st = get_triple(l, node, "extent", whd, extent);
  if (st == GCAP_SUCCESS) st = get_kind(l, node, &p.kind);
  struct gcap__copy c;
  struct gcap__copy_shape shape;
  if (st == GCAP_SUCCESS) st = checked(l, gcap__check_copy_3d(&unknown_memory, &p, &c, &shape));
  struct gcap_node *n = NULL;
  if (st == GCAP_SUCCESS) st = gcap__node_make_copy_3d(g, &p, &n);
  return st == GCAP_SUCCESS ? append(g, n) : st;
}

static gcap_status load_memset(struct loader *l, struct gcap_graph *g, json_t *node) {
  gcap_memset_node_params p = {0};
  uint32_t element = 0;
  gcap_status st = get_pointer(l, node, "dst", &p.dst);
  if (st == GCAP_SUCCESS) st = get_u32(l, node, "value", &p.value);
  if (st == GCAP_SUCCESS) st = get_u32(l, node, "element_size", &element);
  if (st == GCAP_SUCCESS) st = get_size(l, node, "width", &p.width);
  if (st == GCAP_SUCCESS) st = get_size(l, node, "height", &p.height);
  if (st == GCAP_SUCCESS) st = get_size(l, node, "pitch", &p.pitch);
  if (st != GCAP_SUCCESS) return st;
  p.element_size = element;
  struct gcap__fill f = gcap__fill_of(&p);
  st = checked(l, gcap__check_fill(&unknown_memory, &f, false));
  struct gcap_node *n = NULL;
  if (st == GCAP_SUCCESS) st = gcap__node_make_value(g, GCAP_NODE_MEMSET, &p, sizeof p, &n);
  return st == GCAP_SUCCESS ? append(g, n) : st;
}

static gcap_status load_event_node(struct loader *l, struct gcap_graph *g, json_t *node, gcap_node_type type) {
  uint64_t k = 0;
  struct gcap_event *e = NULL;
  gcap_status st = get_u64(l, node, "event", UINT64_MAX, &k);
  if (st == GCAP_SUCCESS) st = event_of(l, k, &e);
  if (st != GCAP_SUCCESS) return st;
  struct gcap_node *n = gcap__node_alloc(g, type);
  if (!n) return no_memory();
  n->p.event = e;
  gcap__event_retain(e);
  return append(g, n);
}

static gcap_status load_plain(struct gcap_graph *g, gcap_node_type type) {
  struct gcap_node *n = gcap__node_alloc(g, type);
  if (!n) return no_memory();
  if (type == GCAP_NODE_HOST) n->p.host = (gcap_host_node_params){loaded_host_node, NULL};
  return append(g, n);
}

static gcap_status load_child(struct loader *l, struct gcap_graph *g, json_t *node, unsigned depth) {
  if (depth >= MAX_DEPTH) return bad(l, "graph", "nests child graphs deeper than 64 levels");
  json_t *inner = json_object_get(node, "graph");
  if (!json_is_object(inner)) return bad(l, "graph", "is not an object");
  struct gcap_node *n = gcap__node_alloc(g, GCAP_NODE_GRAPH);
  if (!n) return no_memory();
  gcap_status st = gcap__graph_new(l->ctx, n, &n->p.child);
  if (st != GCAP_SUCCESS) {
    gcap__node_unalloc(n);
    return st;
  }
  st = append(g, n);
  return st == GCAP_SUCCESS ? load_graph(l, n->p.child, inner, depth + 1) : st;
}

/* The file's conditional handles (version 2), made on the loaded graph in their order. */
static gcap_status load_conditionals(struct loader *l, struct gcap_graph *g, json_t *list) {
  if (!list) return GCAP_SUCCESS;
  if (!json_is_array(list)) return bad(l, "conditionals", "is not an array");
  for (size_t i = 0; i < json_array_size(list); i++) {
    json_t *c = json_array_get(list, i);
    snprintf(l->where, sizeof l->where, "conditionals[%zu]", i);
    uint32_t def = 0, flags = 0;
    gcap_status st = json_is_object(c) ? get_u32(l, c, "default", &def) : bad(l, "conditionals", "holds a non-object");
    if (st == GCAP_SUCCESS) st = get_u32(l, c, "flags", &flags);
    if (st == GCAP_SUCCESS && (flags & ~GCAP_GRAPH_COND_ASSIGN_DEFAULT)) st = bad(l, "flags", "has unknown bits");
    struct gcap__cond *made = NULL;
    if (st == GCAP_SUCCESS) st = gcap__cond_new(g, def, flags, &made);
    if (st != GCAP_SUCCESS) return st;
  }
  l->where[0] = '\0';
  return GCAP_SUCCESS;
}

static gcap_status load_conditional(struct loader *l, struct gcap_graph *g, json_t *node, unsigned depth) {
  /* as gcap_graph_add_conditional_node refuses it */
  for (const struct gcap_graph *at = g; at->owner; at = at->owner->graph)
    if (at->owner->type == GCAP_NODE_GRAPH)
      return gcap__fail(GCAP_ERROR_NOT_SUPPORTED,
                        "%s: a conditional node in the graph of a child-graph node, which cannot hold conditional "
                        "nodes",
                        l->where);
  if (depth >= MAX_DEPTH) return bad(l, "bodies", "nest graphs deeper than 64 levels");
  const struct gcap_graph *top = gcap__graph_top(g);
  uint64_t handle = 0;
  gcap_status st = get_u64(l, node, "handle", UINT64_MAX, &handle);
  if (st == GCAP_SUCCESS && handle >= top->num_conds) return bad(l, "handle", "is not an index into \"conditionals\"");
  const char *type = json_string_value(json_object_get(node, "conditional_type"));
  unsigned t = 0;
  while (type && t < 3 && strcmp(type, cond_types[t]) != 0) t++;
  if (st == GCAP_SUCCESS && (!type || t == 3)) return bad(l, "conditional_type", "is not if, while or switch");
  json_t *bodies = json_object_get(node, "bodies");
  size_t size = json_array_size(bodies);
  if (st == GCAP_SUCCESS && (!json_is_array(bodies) || size == 0 || size > 4096 ||
                             (t == GCAP_CONDITIONAL_IF && size > 2) || (t == GCAP_CONDITIONAL_WHILE && size != 1)))
    return bad(l, "bodies",
               "is not an array of as many graphs as the type takes (IF: 1 or 2, WHILE: 1, SWITCH: 1 to 4096)");
  if (st != GCAP_SUCCESS) return st;
  gcap_conditional_node_params p = {top->conds[handle]->handle, (gcap_conditional_type)t,
                                    (unsigned)json_array_size(bodies), NULL};
  struct gcap_node *n = NULL;
  st = gcap__cond_node_make(g, &p, &n);
  if (st == GCAP_SUCCESS) st = append(g, n);
  for (unsigned b = 0; st == GCAP_SUCCESS && b < p.size; b++) {
    json_t *body = json_array_get(bodies, b);
    st = json_is_object(body) ? load_graph(l, n->p.cond->bodies[b], body, depth + 1)
                              : bad(l, "bodies", "holds a non-object");
  }
  return st;
}

static gcap_status load_node(struct loader *l, struct gcap_graph *g, json_t *node, unsigned depth) {
  const char *type = json_is_object(node) ? type_of(node) : NULL;
  if (!type) return bad(l, "type", "is missing (or the node is not an object)");
  if (++l->num_nodes > MAX_NODES)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s: the file holds more than %u nodes", l->where, MAX_NODES);
  if (strcmp(type, "kernel") == 0) return load_kernel(l, g, node);
  if (strcmp(type, "memcpy") == 0) return load_memcpy(l, g, node);
  if (strcmp(type, "memcpy_3d") == 0) return load_memcpy_3d(l, g, node);
  if (strcmp(type, "memset") == 0) return load_memset(l, g, node);
  if (strcmp(type, "host") == 0) return load_plain(g, GCAP_NODE_HOST);
  if (strcmp(type, "empty") == 0) return load_plain(g, GCAP_NODE_EMPTY);
  if (strcmp(type, "graph") == 0) return load_child(l, g, node, depth);
  if (strcmp(type, "event_record") == 0) return load_event_node(l, g, node, GCAP_NODE_EVENT_RECORD);
  if (strcmp(type, "event_wait") == 0) return load_event_node(l, g, node, GCAP_NODE_EVENT_WAIT);
  if (strcmp(type, "conditional") == 0) return load_conditional(l, g, node, depth);
  if (strcmp(type, "mem_alloc") == 0 || strcmp(type, "mem_free") == 0)
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED,
                      "%s: a %s node: graph allocations get new addresses in a new process, so graphs that allocate "
                      "cannot be loaded",
                      l->where, type);
  return bad(l, "type", "is not a node type gcap knows");
}

/* Edge i's node indices, both inside g. */
static gcap_status edge_ends(const struct loader *l, const struct gcap_graph *g, json_t *e, const char *field,
                             size_t *from, size_t *to) {
  json_t *a = json_array_get(e, 0), *b = json_array_get(e, 1);
  if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_integer(a) || !json_is_integer(b) ||
      json_integer_value(a) < 0 || json_integer_value(b) < 0 || (uint64_t)json_integer_value(a) >= g->nodes.count ||
      (uint64_t)json_integer_value(b) >= g->nodes.count)
    return bad(l, field, "is not a pair of node indices of its graph");
  *from = (size_t)json_integer_value(a);
  *to = (size_t)json_integer_value(b);
  return GCAP_SUCCESS;
}

/* Edges in file order, through the same check as gcap_graph_add_dependencies (so the order is kept). */
static gcap_status load_edges(struct loader *l, struct gcap_graph *g, json_t *edges) {
  if (!json_is_array(edges)) return bad(l, "edges", "is not an array");
  const char *sep = l->where[0] ? ": " : "";
  for (size_t i = 0; i < json_array_size(edges); i++) {
    char field[32];
    snprintf(field, sizeof field, "edges[%zu]", i);
    size_t a = 0, b = 0;
    gcap_status st = edge_ends(l, g, json_array_get(edges, i), field, &a, &b);
    if (st != GCAP_SUCCESS) return st;
    struct gcap_node *from = g->nodes.items[a], *to = g->nodes.items[b];
    if (a == b)
      return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s%s\"%s\" is a self edge on node %zu", l->where, sep, field, a);
    if (gcap__nlist_contains(&from->dependents, to))
      return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s%s\"%s\" repeats the edge %zu -> %zu", l->where, sep, field, a, b);
    st = gcap__graph_add_edge(g, from, to);
    if (st == GCAP_ERROR_INVALID_VALUE) /* what is left: b already reaches a */
      return gcap__fail(st, "%s%s\"%s\" (%zu -> %zu): edges form a cycle through node %zu", l->where, sep, field, a, b,
                        a);
    if (st != GCAP_SUCCESS) return st;
  }
  return GCAP_SUCCESS;
}

/* l->where names the child-graph node whose graph g is ("" for the top level) and is kept. */
static gcap_status load_graph(struct loader *l, struct gcap_graph *g, json_t *o, unsigned depth) {
  json_t *nodes = json_object_get(o, "nodes");
  if (!json_is_array(nodes)) return bad(l, "nodes", "is not an array");
  char outer[sizeof l->where];
  memcpy(outer, l->where, sizeof outer);
  gcap_status st = GCAP_SUCCESS;
  for (size_t i = 0; st == GCAP_SUCCESS && i < json_array_size(nodes); i++) {
    if (outer[0]) snprintf(l->where, sizeof l->where, "node %zu of the child graph in %.100s", i, outer);
    else snprintf(l->where, sizeof l->where, "node %zu", i);
    st = load_node(l, g, json_array_get(nodes, i), depth);
  }
  if (st != GCAP_SUCCESS) return st;
  if (outer[0]) snprintf(l->where, sizeof l->where, "the child graph in %.100s", outer);
  else l->where[0] = '\0';
  st = load_edges(l, g, json_object_get(o, "edges"));
  memcpy(l->where, outer, sizeof outer);
  return st;
}

static gcap_status check_header(const struct loader *l, json_t *doc) {
  if (!json_is_object(doc)) return bad(l, "the file", "is not a JSON object");
  const char *format = json_string_value(json_object_get(doc, "format"));
  if (!format || strcmp(format, FORMAT_NAME) != 0) return bad(l, "format", "is not \"" FORMAT_NAME "\"");
  json_t *version = json_object_get(doc, "version");
  if (!json_is_integer(version)) return bad(l, "version", "is not a number");
  if (json_integer_value(version) < FORMAT_OLDEST || json_integer_value(version) > FORMAT_VERSION)
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED,
                      "the file is format version %" JSON_INTEGER_FORMAT "; this gcap reads versions %d to %d",
                      json_integer_value(version), FORMAT_OLDEST, FORMAT_VERSION);
  if (!json_is_object(json_object_get(doc, "graph"))) return bad(l, "graph", "is not an object");
  return GCAP_SUCCESS;
}

static gcap_status load_document(struct loader *l, json_t *doc, struct gcap_graph **out) {
  gcap_status st = check_header(l, doc);
  l->kernels = json_object_get(doc, "kernels");
  if (st == GCAP_SUCCESS) st = resolve_kernels(l);
  if (st == GCAP_SUCCESS) st = count_events(l, doc);
  struct gcap_graph *g = NULL;
  if (st == GCAP_SUCCESS) st = gcap__graph_new(l->ctx, NULL, &g);
  if (st == GCAP_SUCCESS) st = record_allocations(l, g, json_object_get(doc, "allocations"));
  if (st == GCAP_SUCCESS) st = load_conditionals(l, g, json_object_get(doc, "conditionals"));
  if (st == GCAP_SUCCESS) st = load_graph(l, g, json_object_get(doc, "graph"), 0);
  if (st != GCAP_SUCCESS && g) gcap__graph_free(g);
  if (st == GCAP_SUCCESS) *out = g;
  return st;
}

gcap_status gcap_graph_load(gcap_context *ctx, FILE *in, gcap_graph **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st != GCAP_SUCCESS) return st;
  if (!in) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "in is NULL");
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  json_error_t err;
  json_t *doc = json_loadf(in, JSON_REJECT_DUPLICATES, &err);
  if (!doc)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "the saved graph is not valid JSON: line %d, column %d: %s", err.line,
                      err.column, err.text);
  struct loader l = {.ctx = ctx};
  gcap__lock(ctx);
  st = load_document(&l, doc, out);
  for (size_t i = 0; i < l.num_events; i++) gcap__event_destroy_locked(l.events[i]); /* the nodes keep theirs */
  gcap__unlock(ctx);
  gcap__free(l.events);
  gcap__free(l.resolved);
  json_decref(doc);
  return st;
}

#else /* without jansson */

static gcap_status no_json(void) {
  return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "this gcap was built without JSON support (jansson; -Djson=enabled)");
}

gcap_status gcap_graph_save(const gcap_graph *g, FILE *out) {
  GCAP_ENTER();
  gcap_status st = gcap__check_graph(g, "graph");
  if (st == GCAP_SUCCESS && !out) st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  return st == GCAP_SUCCESS ? no_json() : st;
}

gcap_status gcap_graph_load(gcap_context *ctx, FILE *in, gcap_graph **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st == GCAP_SUCCESS && (!in || !out)) st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s is NULL", in ? "out" : "in");
  return st == GCAP_SUCCESS ? no_json() : st;
}

#endif
