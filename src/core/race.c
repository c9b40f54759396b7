/* Race analysis: gcap_graph_find_races (simulator.md#race-analysis) and the simulator's check at instantiation. */
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "pool.h"
#include "race.h"

/* Index of the first recorded extent whose base is above p. */
static size_t recorded_upper_bound(const struct gcap_graph *g, uintptr_t p) {
  return gcap__first_above(g->recorded, g->recorded_count, sizeof *g->recorded, p);
}

bool gcap__graph_extent_of(const struct gcap_graph *g, uintptr_t p, struct gcap__extent *out) {
  const struct gcap__allocation *a = gcap__find_allocation(g->ctx, (const void *)p);
  if (a) {
    *out = (struct gcap__extent){a->base, a->bytes};
    return true;
  }
  const struct gcap_graph *top = gcap__graph_top(g);
  size_t i = recorded_upper_bound(top, p);
  if (i == 0 || p - top->recorded[i - 1].base >= top->recorded[i - 1].bytes) return false;
  *out = top->recorded[i - 1];
  return true;
}

int gcap__graph_record_extent(struct gcap_graph *g, struct gcap__extent e) {
  if (gcap__grow((void **)&g->recorded, &g->recorded_cap, g->recorded_count + 1, sizeof *g->recorded) != 0) return -1;
  size_t i = recorded_upper_bound(g, e.base);
  memmove(&g->recorded[i + 1], &g->recorded[i], (g->recorded_count - i) * sizeof *g->recorded);
  g->recorded[i] = e;
  g->recorded_count++;
  return 0;
}

/*
 * How the analysis works. The graph is flattened, child graphs inlined between an entry and an
 * exit, into entries in a topological order. Each entry's memory accesses are cut at every
 * access boundary into elementary segments, so that within one segment two accesses overlap
 * exactly. Entries are visited in order; on each segment an access is compared with the earlier
 * ones, newest first, and the scan stops at a "clean" write that reaches it: one that every
 * earlier access of the segment reaches, so all older ones reach the new access too. Only
 * racing accesses (reported) and reads between a write and its clean predecessor are passed
 * over, so ordered graphs cost time linear in their accesses.
 * Reachability: entries are covered by chains (each extends a chain whose tail reaches it); an
 * entry keeps, per chain, the highest position that reaches it, and a reaches b exactly when
 * a's position is at most b's figure for a's chain. Those rows are kept only until the
 * entry's last dependent has been visited.
 */

#define NONE SIZE_MAX

struct flat {
  const struct gcap_node **node; /* NULL: the exit of a child graph */
  size_t *first_dep;             /* count + 1 offsets into deps once built */
  size_t count, cap, first_cap;
  size_t *deps;
  size_t num_deps, deps_cap;
};

struct access {
  size_t entry;
  uintptr_t lo, hi; /* [lo, hi) */
  bool write;
};

struct history {      /* one access on one segment, newest first */
  size_t entry, next; /* next: older entry of the same list, or NONE */
  bool clean;
};

struct chain_pos {
  size_t chain, pos;
};

struct raw_race {
  size_t a, b; /* entries, a earlier in the topological order */
  uintptr_t lo, hi;
};

struct analysis {
  struct flat f;
  struct access *acc;
  size_t num_acc, acc_cap;
  size_t *acc_first; /* per entry: offset into acc (acc is grouped by entry in entry order) */
  uintptr_t *bounds; /* sorted distinct access boundaries: segment k is [bounds[k], bounds[k+1]) */
  size_t num_bounds;
  size_t *write_head, *read_head; /* per segment */
  struct history *hist;
  size_t num_hist, hist_cap;
  /* reachability */
  size_t *chain_of, *pos_of, *remaining;
  struct chain_pos **rows;
  size_t *row_len;
  size_t *tail, *stamp, *best, *touched; /* per chain */
  size_t num_chains, chain_cap, num_touched;
  struct raw_race *raw;
  size_t num_raw, raw_cap;
};

static gcap_status no_memory(void) { return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for race analysis"); }

/* ------------------------------------------------------------- flattening */

static gcap_status push_entry(struct flat *f, const struct gcap_node *n, size_t *entry) {
  if (gcap__grow((void **)&f->node, &f->cap, f->count + 1, sizeof *f->node) != 0) return no_memory();
  if (gcap__grow((void **)&f->first_dep, &f->first_cap, f->count + 2, sizeof *f->first_dep) != 0) return no_memory();
  f->node[f->count] = n;
  f->first_dep[f->count] = f->num_deps;
  *entry = f->count++;
  return GCAP_SUCCESS;
}

static gcap_status push_dep(struct flat *f, size_t dep) {
  if (gcap__grow((void **)&f->deps, &f->deps_cap, f->num_deps + 1, sizeof *f->deps) != 0) return no_memory();
  f->deps[f->num_deps++] = dep;
  return GCAP_SUCCESS;
}

static gcap_status flatten_graph(struct flat *f, const struct gcap_graph *g, size_t parent, size_t *entry_of);

/* A child graph: its contents wait for the child node's entry; an exit waits for its sinks. */
static gcap_status flatten_child(struct flat *f, const struct gcap_graph *child, size_t entry, size_t *exit) {
  size_t *inner = gcap__calloc(child->nodes.count ? child->nodes.count : 1, sizeof *inner);
  if (!inner) return no_memory();
  gcap_status st = flatten_graph(f, child, entry, inner);
  if (st == GCAP_SUCCESS) st = push_entry(f, NULL, exit);
  for (size_t i = 0; st == GCAP_SUCCESS && i < child->nodes.count; i++)
    if (child->nodes.items[i]->dependents.count == 0) st = push_dep(f, inner[i]);
  if (st == GCAP_SUCCESS && child->nodes.count == 0) st = push_dep(f, entry);
  gcap__free(inner);
  return st;
}

static gcap_status flatten_graph(struct flat *f, const struct gcap_graph *g, size_t parent, size_t *entry_of) {
  struct gcap_node **order = NULL;
  gcap_status st = gcap__topological_order(g, false, &order);
  for (size_t i = 0; st == GCAP_SUCCESS && i < g->nodes.count; i++) {
    const struct gcap_node *n = order[i];
    size_t entry = 0;
    st = push_entry(f, n, &entry);
    if (st != GCAP_SUCCESS) break;
    struct gcap_node **deps = gcap__nlist_items(&n->deps);
    for (size_t d = 0; st == GCAP_SUCCESS && d < n->deps.count; d++) st = push_dep(f, entry_of[deps[d]->index]);
    if (st == GCAP_SUCCESS && n->deps.count == 0 && parent != NONE) st = push_dep(f, parent);
    f->first_dep[entry + 1] = f->num_deps;
    entry_of[n->index] = entry;
    if (st == GCAP_SUCCESS && n->type == GCAP_NODE_GRAPH) {
      st = flatten_child(f, n->p.child, entry, &entry_of[n->index]);
      if (st == GCAP_SUCCESS) f->first_dep[entry_of[n->index] + 1] = f->num_deps;
    }
  }
  gcap__free(order);
  return st;
}

/* ------------------------------------------------------------- accesses */

static gcap_status add_access(struct analysis *an, size_t entry, uintptr_t lo, size_t bytes, bool write) {
  if (bytes == 0) return GCAP_SUCCESS;
  if (gcap__grow((void **)&an->acc, &an->acc_cap, an->num_acc + 1, sizeof *an->acc) != 0) return no_memory();
  uintptr_t hi = bytes > UINTPTR_MAX - lo ? UINTPTR_MAX : lo + bytes;
  an->acc[an->num_acc++] = (struct access){entry, lo, hi, write};
  return GCAP_SUCCESS;
}

/* A pointer-sized argument: per param_access, the whole allocation it points into. */
static gcap_status add_kernel_accesses(struct analysis *an, size_t entry, const struct gcap_node *n) {
  const struct gcap__kernel_params *kp = &n->p.kernel;
  const struct gcap_kernel *k = kp->kernel;
  gcap_status st = GCAP_SUCCESS;
  for (size_t i = 0; st == GCAP_SUCCESS && i < k->info.num_params; i++) {
    gcap_param_access how = k->param_access ? k->param_access[i] : GCAP_ACCESS_UNKNOWN;
    if (k->param_sizes[i] != sizeof(void *) || how == GCAP_ACCESS_NONE) continue;
    uintptr_t value;
    memcpy(&value, kp->args[i], sizeof value);
    struct gcap__extent e;
    if (!gcap__graph_extent_of(n->graph, value, &e)) continue;
    st = add_access(an, entry, e.base, e.bytes, how != GCAP_ACCESS_READ);
  }
  return st;
}

static gcap_status add_fill_accesses(struct analysis *an, size_t entry, const gcap_memset_node_params *p) {
  size_t row = p->width * p->element_size;
  if (p->height <= 1 || p->pitch == row) return add_access(an, entry, (uintptr_t)p->dst, row * p->height, true);
  gcap_status st = GCAP_SUCCESS;
  for (size_t r = 0; st == GCAP_SUCCESS && r < p->height; r++)
    st = add_access(an, entry, (uintptr_t)p->dst + r * p->pitch, row, true);
  return st;
}

/* A 2-D or 3-D copy touches its rows, not what lies between them. */
static gcap_status add_copy_accesses(struct analysis *an, size_t entry, const struct gcap_node *n) {
  struct gcap__copy_shape shape;
  struct gcap__copy c = gcap__copy_of_node(n, &shape);
  gcap_status st = GCAP_SUCCESS;
  for (int dst = 0; dst < 2; dst++) {
    uintptr_t base = dst ? (uintptr_t)c.dst : (uintptr_t)c.src;
    for (size_t r = 0, bytes = 0; st == GCAP_SUCCESS && r < gcap__copy_side_rows(&c, dst); r++) {
      size_t offset = gcap__copy_side_row(&c, dst, r, &bytes);
      st = add_access(an, entry, base + offset, bytes, dst);
    }
  }
  return st;
}

static gcap_status add_node_accesses(struct analysis *an, size_t entry, const struct gcap_node *n);

/*
 * A conditional node touches what any of its bodies may: it runs them (or not) between its
 * dependencies and its dependents, so inside it nothing races with the rest of the graph.
 */
static gcap_status add_body_accesses(struct analysis *an, size_t entry, const struct gcap_graph *body) {
  gcap_status st = GCAP_SUCCESS;
  for (size_t i = 0; st == GCAP_SUCCESS && i < body->nodes.count; i++) {
    const struct gcap_node *n = body->nodes.items[i];
    st = n->type == GCAP_NODE_GRAPH ? add_body_accesses(an, entry, n->p.child) : add_node_accesses(an, entry, n);
  }
  return st;
}

static gcap_status add_node_accesses(struct analysis *an, size_t entry, const struct gcap_node *n) {
  switch (n->type) {
  case GCAP_NODE_CONDITIONAL: {
    gcap_status st = GCAP_SUCCESS;
    for (unsigned b = 0; st == GCAP_SUCCESS && b < n->p.cond->size; b++)
      st = add_body_accesses(an, entry, n->p.cond->bodies[b]);
    return st;
  }
  case GCAP_NODE_KERNEL: return add_kernel_accesses(an, entry, n);
  case GCAP_NODE_MEMCPY: return add_copy_accesses(an, entry, n);
  case GCAP_NODE_MEMSET: return add_fill_accesses(an, entry, &n->p.memset);
  case GCAP_NODE_MEM_ALLOC:
  case GCAP_NODE_MEM_FREE: return add_access(an, entry, (uintptr_t)n->p.mem->ptr, n->p.mem->bytes, true);
  default: return GCAP_SUCCESS; /* host, empty, events, child entries: no memory gcap can see */
  }
}

static int by_address(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return x < y ? -1 : x > y;
}

static gcap_status collect_accesses(struct analysis *an) {
  an->acc_first = gcap__calloc(an->f.count + 1, sizeof *an->acc_first);
  if (!an->acc_first) return no_memory();
  gcap_status st = GCAP_SUCCESS;
  for (size_t e = 0; st == GCAP_SUCCESS && e < an->f.count; e++) {
    an->acc_first[e] = an->num_acc;
    if (an->f.node[e]) st = add_node_accesses(an, e, an->f.node[e]);
  }
  an->acc_first[an->f.count] = an->num_acc;
  if (st != GCAP_SUCCESS) return st;
  an->bounds = gcap__calloc(2 * an->num_acc + 1, sizeof *an->bounds);
  if (!an->bounds) return no_memory();
  for (size_t i = 0; i < an->num_acc; i++) an->bounds[2 * i] = an->acc[i].lo, an->bounds[2 * i + 1] = an->acc[i].hi;
  qsort(an->bounds, 2 * an->num_acc, sizeof *an->bounds, by_address);
  size_t distinct = 0;
  for (size_t i = 0; i < 2 * an->num_acc; i++)
    if (distinct == 0 || an->bounds[distinct - 1] != an->bounds[i]) an->bounds[distinct++] = an->bounds[i];
  an->num_bounds = distinct;
  size_t segments = distinct ? distinct - 1 : 0;
  an->write_head = gcap__malloc((segments ? segments : 1) * sizeof *an->write_head);
  an->read_head = gcap__malloc((segments ? segments : 1) * sizeof *an->read_head);
  if (!an->write_head || !an->read_head) return no_memory();
  for (size_t k = 0; k < segments; k++) an->write_head[k] = an->read_head[k] = NONE;
  return GCAP_SUCCESS;
}

static size_t segment_of(const struct analysis *an, uintptr_t boundary) {
  size_t lo = 0, hi = an->num_bounds;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (an->bounds[mid] < boundary) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* ------------------------------------------------------------- reachability */

static gcap_status grow_chains(struct analysis *an) {
  if (an->num_chains < an->chain_cap) return GCAP_SUCCESS;
  size_t cap = an->chain_cap ? 2 * an->chain_cap : 64;
  size_t **arrays[] = {&an->tail, &an->stamp, &an->best, &an->touched};
  for (int i = 0; i < 4; i++) {
    size_t *grown = gcap__realloc(*arrays[i], cap * sizeof **arrays[i]);
    if (!grown) return no_memory(); /* the ones grown already are kept, and freed with the rest */
    *arrays[i] = grown;
  }
  for (size_t c = an->chain_cap; c < cap; c++) an->stamp[c] = 0;
  an->chain_cap = cap;
  return GCAP_SUCCESS;
}

static void touch(struct analysis *an, size_t b, size_t chain, size_t pos) {
  if (an->stamp[chain] != b + 1) {
    an->stamp[chain] = b + 1;
    an->best[chain] = pos;
    an->touched[an->num_touched++] = chain;
  } else if (pos > an->best[chain]) {
    an->best[chain] = pos;
  }
}

/* Gathers what reaches b, puts b on a chain, keeps b's row while dependents need it. */
static gcap_status enter_entry(struct analysis *an, size_t b) {
  an->num_touched = 0;
  for (size_t d = an->f.first_dep[b]; d < an->f.first_dep[b + 1]; d++) {
    size_t dep = an->f.deps[d];
    for (size_t i = 0; i < an->row_len[dep]; i++) touch(an, b, an->rows[dep][i].chain, an->rows[dep][i].pos);
  }
  size_t chain = NONE;
  for (size_t i = 0; i < an->num_touched && chain == NONE; i++)
    if (an->best[an->touched[i]] == an->tail[an->touched[i]]) chain = an->touched[i];
  if (chain == NONE) {
    gcap_status st = grow_chains(an);
    if (st != GCAP_SUCCESS) return st;
    chain = an->num_chains++;
    an->tail[chain] = NONE;
  }
  an->chain_of[b] = chain;
  an->pos_of[b] = an->tail[chain] == NONE ? 0 : an->tail[chain] + 1;
  an->tail[chain] = an->pos_of[b];
  if (an->remaining[b] == 0) return GCAP_SUCCESS;
  size_t len = an->num_touched + 1;
  an->rows[b] = gcap__malloc(len * sizeof **an->rows);
  if (!an->rows[b]) return no_memory();
  for (size_t i = 0; i < an->num_touched; i++)
    an->rows[b][i] = (struct chain_pos){an->touched[i], an->best[an->touched[i]]};
  an->rows[b][an->num_touched] = (struct chain_pos){chain, an->pos_of[b]}; /* newer than any entry of its chain */
  an->row_len[b] = len;
  return GCAP_SUCCESS;
}

static void leave_entry(struct analysis *an, size_t b) {
  for (size_t d = an->f.first_dep[b]; d < an->f.first_dep[b + 1]; d++) {
    size_t dep = an->f.deps[d];
    if (--an->remaining[dep] == 0) {
      gcap__free(an->rows[dep]);
      an->rows[dep] = NULL;
      an->row_len[dep] = 0;
    }
  }
}

/* True when entry a (visited before b) has a path to b, b being the entry being visited. */
static bool reaches(const struct analysis *an, size_t a, size_t b) {
  size_t c = an->chain_of[a];
  return an->stamp[c] == b + 1 && an->best[c] >= an->pos_of[a];
}

static gcap_status init_reachability(struct analysis *an) {
  size_t n = an->f.count ? an->f.count : 1;
  an->chain_of = gcap__calloc(n, sizeof *an->chain_of);
  an->pos_of = gcap__calloc(n, sizeof *an->pos_of);
  an->remaining = gcap__calloc(n, sizeof *an->remaining);
  an->rows = gcap__calloc(n, sizeof *an->rows);
  an->row_len = gcap__calloc(n, sizeof *an->row_len);
  if (!an->chain_of || !an->pos_of || !an->remaining || !an->rows || !an->row_len) return no_memory();
  for (size_t i = 0; i < an->f.num_deps; i++) an->remaining[an->f.deps[i]]++;
  return GCAP_SUCCESS;
}

/* ------------------------------------------------------------- the scan */

static gcap_status report(struct analysis *an, size_t a, size_t b, size_t segment) {
  if (gcap__grow((void **)&an->raw, &an->raw_cap, an->num_raw + 1, sizeof *an->raw) != 0) return no_memory();
  an->raw[an->num_raw++] = (struct raw_race){a, b, an->bounds[segment], an->bounds[segment + 1]};
  return GCAP_SUCCESS;
}

static gcap_status push_history(struct analysis *an, size_t *head, size_t entry, bool clean) {
  if (gcap__grow((void **)&an->hist, &an->hist_cap, an->num_hist + 1, sizeof *an->hist) != 0) return no_memory();
  an->hist[an->num_hist] = (struct history){entry, *head, clean};
  *head = an->num_hist++;
  return GCAP_SUCCESS;
}

/* Compares b's access on one segment with the earlier ones there (see the top of this part). */
static gcap_status scan_segment(struct analysis *an, size_t b, size_t k, bool write) {
  gcap_status st = GCAP_SUCCESS;
  size_t cutoff = NONE;
  bool raced = false;
  for (size_t h = an->write_head[k]; h != NONE && st == GCAP_SUCCESS; h = an->hist[h].next) {
    size_t a = an->hist[h].entry;
    if (a == b) continue;
    if (!reaches(an, a, b)) {
      raced = true;
      st = report(an, a, b, k);
    } else if (an->hist[h].clean) {
      cutoff = a;
      break;
    }
  }
  if (write) {
    for (size_t h = an->read_head[k]; h != NONE && st == GCAP_SUCCESS; h = an->hist[h].next) {
      size_t a = an->hist[h].entry;
      if (cutoff != NONE && a < cutoff) break;
      if (a == b || reaches(an, a, b)) continue;
      raced = true;
      st = report(an, a, b, k);
    }
  }
  if (st != GCAP_SUCCESS) return st;
  return push_history(an, write ? &an->write_head[k] : &an->read_head[k], b, write && !raced);
}

static gcap_status visit(struct analysis *an, size_t b) {
  gcap_status st = enter_entry(an, b);
  for (size_t i = an->acc_first[b]; st == GCAP_SUCCESS && i < an->acc_first[b + 1]; i++) {
    const struct access *x = &an->acc[i];
    size_t last = segment_of(an, x->hi);
    for (size_t k = segment_of(an, x->lo); st == GCAP_SUCCESS && k < last; k++) st = scan_segment(an, b, k, x->write);
  }
  leave_entry(an, b);
  return st;
}

/* ------------------------------------------------------------- results */

static int by_pair(const void *x, const void *y) {
  const gcap_race *a = x, *b = y;
  if (a->first->id != b->first->id) return a->first->id < b->first->id ? -1 : 1;
  if (a->second->id != b->second->id) return a->second->id < b->second->id ? -1 : 1;
  return by_address(&a->addr, &b->addr);
}

/* One race per pair of nodes, in creation order, over the extent of all their overlaps. */
static gcap_status make_races(struct analysis *an, gcap_race **out, size_t *count) {
  *out = NULL;
  *count = 0;
  if (an->num_raw == 0) return GCAP_SUCCESS;
  gcap_race *r = gcap__calloc(an->num_raw, sizeof *r);
  if (!r) return no_memory();
  for (size_t i = 0; i < an->num_raw; i++) {
    gcap_node *a = (gcap_node *)an->f.node[an->raw[i].a], *b = (gcap_node *)an->f.node[an->raw[i].b];
    if (a->id > b->id) {
      gcap_node *t = a;
      a = b, b = t;
    }
    r[i] = (gcap_race){a, b, (const void *)an->raw[i].lo, an->raw[i].hi - an->raw[i].lo};
  }
  qsort(r, an->num_raw, sizeof *r, by_pair);
  size_t n = 0;
  for (size_t i = 0; i < an->num_raw; i++) {
    if (n > 0 && r[n - 1].first == r[i].first && r[n - 1].second == r[i].second) {
      uintptr_t lo = (uintptr_t)r[n - 1].addr, hi = (uintptr_t)r[i].addr + r[i].bytes;
      if (hi > lo + r[n - 1].bytes) r[n - 1].bytes = hi - lo;
      continue;
    }
    r[n++] = r[i];
  }
  *out = r;
  *count = n;
  return GCAP_SUCCESS;
}

static void analysis_free(struct analysis *an) {
  for (size_t i = 0; an->rows && i < an->f.count; i++) gcap__free(an->rows[i]);
  void *arrays[] = {an->f.node, an->f.first_dep, an->f.deps,    an->acc,     an->acc_first,
                    an->bounds, an->write_head,  an->read_head, an->hist,    an->chain_of,
                    an->pos_of, an->remaining,   an->rows,      an->row_len, an->tail,
                    an->stamp,  an->best,        an->touched,   an->raw};
  for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) gcap__free(arrays[i]);
}

gcap_status gcap__find_races(const struct gcap_graph *g, gcap_race **out, size_t *count) {
  struct analysis an = {0};
  *out = NULL;
  *count = 0;
  size_t *top = gcap__calloc(g->nodes.count ? g->nodes.count : 1, sizeof *top);
  gcap_status st = top ? flatten_graph(&an.f, g, NONE, top) : no_memory();
  gcap__free(top);
  if (st == GCAP_SUCCESS) st = collect_accesses(&an);
  if (st == GCAP_SUCCESS) st = init_reachability(&an);
  for (size_t b = 0; st == GCAP_SUCCESS && b < an.f.count; b++) st = visit(&an, b);
  if (st == GCAP_SUCCESS) st = make_races(&an, out, count);
  analysis_free(&an);
  return st;
}

gcap_status gcap_graph_find_races(const gcap_graph *g, gcap_race *races, size_t *count) {
  GCAP_ENTER();
  gcap_status st = gcap__check_graph(g, "graph");
  if (st != GCAP_SUCCESS) return st;
  if (!count) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "count is NULL");
  gcap__lock(g->ctx);
  gcap_race *found = NULL;
  size_t n = 0;
  st = gcap__find_races(g, &found, &n);
  gcap__unlock(g->ctx);
  if (st != GCAP_SUCCESS) return st;
  size_t room = races ? *count : 0;
  for (size_t i = 0; i < room; i++) races[i] = i < n ? found[i] : (gcap_race){NULL, NULL, NULL, 0};
  if (!races || room > n) *count = n; /* a short array keeps its count (rules.md#graph-enumerate) */
  gcap__free(found);
  return GCAP_SUCCESS;
}

/* "node 3 (kernel \"scale\")", then " in the child graph of node 1" for each enclosing graph. */
static void describe_node(const struct gcap_node *n, char *buf, size_t size) {
  size_t used = 0;
  for (const struct gcap_node *at = n; at && used < size; at = at->graph->owner) {
    int w;
    if (at == n && at->type == GCAP_NODE_KERNEL)
      w = snprintf(buf + used, size - used, "node %zu (kernel \"%s\")", at->index, at->p.kernel.kernel->info.name);
    else if (at == n) w = snprintf(buf + used, size - used, "node %zu (%s)", at->index, gcap__node_type_name(at->type));
    else w = snprintf(buf + used, size - used, " in the child graph of node %zu", at->index);
    if (w < 0) break;
    used += (size_t)w;
  }
}

gcap_status gcap__check_no_races(const struct gcap_graph *g) {
  gcap_race *found = NULL;
  size_t n = 0;
  gcap_status st = gcap__find_races(g, &found, &n);
  if (st != GCAP_SUCCESS || n == 0) return st;
  char first[160], second[160];
  describe_node(found[0].first, first, sizeof first);
  describe_node(found[0].second, second, sizeof second);
  st = gcap__fail(GCAP_ERROR_INVALID_VALUE,
                  "check_races: %zu race%s; the first: %s and %s both touch [%p, %p) (%zu bytes), one writing, "
                  "with no path between them; add an edge (a dependency) between them",
                  n, n == 1 ? "" : "s", first, second, found[0].addr,
                  (const void *)((uintptr_t)found[0].addr + found[0].bytes), found[0].bytes);
  gcap__free(found);
  return st;
}
