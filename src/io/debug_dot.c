/* gcap_graph_debug_dot_print: the graph in the shape cudaGraphDebugDotPrint gives it. */
#include <errno.h>
#include <string.h>

#include "dot.h"

#define ALL_FLAGS 0xffffu

/* The node's type as the driver (CU_GRAPH_NODE_TYPE_*) or the runtime (cudaGraphNodeType*) names it. */
static const char *type_label(gcap_node_type t, bool runtime) {
  static const char *const driver[] = {"KERNEL",     "MEMCPY",       "MEMSET",    "HOST",     "GRAPH",      "EMPTY",
                                       "WAIT_EVENT", "EVENT_RECORD", "MEM_ALLOC", "MEM_FREE", "CONDITIONAL"};
  static const char *const rt[] = {
      "cudaGraphNodeTypeKernel",    "cudaGraphNodeTypeMemcpy",      "cudaGraphNodeTypeMemset",
      "cudaGraphNodeTypeHost",      "cudaGraphNodeTypeGraph",       "cudaGraphNodeTypeEmpty",
      "cudaGraphNodeTypeWaitEvent", "cudaGraphNodeTypeEventRecord", "cudaGraphNodeTypeMemAlloc",
      "cudaGraphNodeTypeMemFree",   "cudaGraphNodeTypeConditional"};
  int i;
  switch (t) {
  case GCAP_NODE_KERNEL: i = 0; break;
  case GCAP_NODE_MEMCPY: i = 1; break;
  case GCAP_NODE_MEMSET: i = 2; break;
  case GCAP_NODE_HOST: i = 3; break;
  case GCAP_NODE_EVENT_WAIT: i = 6; break;
  case GCAP_NODE_EVENT_RECORD: i = 7; break;
  case GCAP_NODE_MEM_ALLOC: i = 8; break;
  case GCAP_NODE_MEM_FREE: i = 9; break;
  case GCAP_NODE_EMPTY: i = 5; break;
  case GCAP_NODE_CONDITIONAL: i = 10; break;
  default: i = 4; break; /* child graphs, native ones included */
  }
  return runtime ? rt[i] : driver[i];
}

/* Whether `flags` asks for the parameters of nodes of type t. */
static bool wants_params(gcap_node_type t, unsigned flags) {
  if (flags & GCAP_GRAPH_DEBUG_DOT_FLAGS_VERBOSE) return true;
  switch (t) {
  case GCAP_NODE_KERNEL: return flags & GCAP_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_PARAMS;
  case GCAP_NODE_MEMCPY: return flags & GCAP_GRAPH_DEBUG_DOT_FLAGS_MEMCPY_NODE_PARAMS;
  case GCAP_NODE_MEMSET: return flags & GCAP_GRAPH_DEBUG_DOT_FLAGS_MEMSET_NODE_PARAMS;
  case GCAP_NODE_HOST: return flags & GCAP_GRAPH_DEBUG_DOT_FLAGS_HOST_NODE_PARAMS;
  case GCAP_NODE_EVENT_RECORD:
  case GCAP_NODE_EVENT_WAIT: return flags & GCAP_GRAPH_DEBUG_DOT_FLAGS_EVENT_NODE_PARAMS;
  case GCAP_NODE_MEM_ALLOC: return flags & GCAP_GRAPH_DEBUG_DOT_FLAGS_MEM_ALLOC_NODE_PARAMS;
  case GCAP_NODE_MEM_FREE: return flags & GCAP_GRAPH_DEBUG_DOT_FLAGS_MEM_FREE_NODE_PARAMS;
  case GCAP_NODE_CONDITIONAL: return flags & GCAP_GRAPH_DEBUG_DOT_FLAGS_CONDITIONAL_NODE_PARAMS;
  default: return false;
  }
}

/* One "| field" line per parameter, as the driver's record-shaped labels list them. */
static void put_params(FILE *out, const struct gcap_node *n, unsigned flags) {
  switch (n->type) {
  case GCAP_NODE_KERNEL: {
    const struct gcap__kernel_params *k = &n->p.kernel;
    fputs("|func: ", out);
    gcap__dot_put_escaped(out, k->kernel->name);
    if (flags & (GCAP_GRAPH_DEBUG_DOT_FLAGS_HANDLES | GCAP_GRAPH_DEBUG_DOT_FLAGS_VERBOSE))
      fprintf(out, " (%p)", (void *)k->kernel);
    fprintf(out, "|gridDim: (%u,%u,%u)|blockDim: (%u,%u,%u)|sharedMem: %u|params: %zu", k->grid.x, k->grid.y, k->grid.z,
            k->block.x, k->block.y, k->block.z, k->shared_mem_bytes, k->kernel->info.num_params);
    break;
  }
  case GCAP_NODE_MEMCPY: {
    static const char *const kinds[] = {"HostToHost", "HostToDevice", "DeviceToHost", "DeviceToDevice", "Default"};
    const gcap_memcpy_node_params *c = &n->p.memcpy.flat;
    fprintf(out, "|kind: %s|src: %p|dst: %p|bytes: %zu", (unsigned)c->kind <= 4 ? kinds[c->kind] : "?", c->src, c->dst,
            c->bytes);
    const gcap_memcpy_3d_params *p3 = n->p.memcpy.p3;
    if (p3)
      fprintf(out, "|extent: (%zu,%zu,%zu)|srcPitch: %zu|dstPitch: %zu", p3->extent.width, p3->extent.height,
              p3->extent.depth, p3->src.pitch, p3->dst.pitch);
    break;
  }
  case GCAP_NODE_MEMSET: {
    const gcap_memset_node_params *m = &n->p.memset;
    fprintf(out, "|dst: %p|value: 0x%x|elementSize: %u|width: %zu|height: %zu|pitch: %zu", m->dst, (unsigned)m->value,
            m->element_size, m->width, m->height, m->pitch);
    break;
  }
  case GCAP_NODE_HOST:
    fputs("|fn:", out);
    gcap__dot_put_host_fn(out, n->p.host.fn);
    fprintf(out, "|userData: %p", n->p.host.user_data);
    break;
  case GCAP_NODE_EVENT_RECORD:
  case GCAP_NODE_EVENT_WAIT: fprintf(out, "|event: %p", (void *)n->p.event); break;
  case GCAP_NODE_MEM_ALLOC: fprintf(out, "|dptr: %p|bytesize: %zu", n->p.mem->ptr, n->p.mem->bytes); break;
  case GCAP_NODE_MEM_FREE: fprintf(out, "|dptr: %p", n->p.mem->ptr); break;
  case GCAP_NODE_CONDITIONAL: {
    static const char *const kinds[] = {"cudaGraphCondTypeIf", "cudaGraphCondTypeWhile", "cudaGraphCondTypeSwitch"};
    const struct gcap__cond *c = n->p.cond->cond;
    fprintf(out, "|type: %s|size: %u|handle: 0x%llx|default: %u|flags: %u", kinds[n->p.cond->type], n->p.cond->size,
            (unsigned long long)c->handle, c->default_value, c->flags);
    break;
  }
  default: break;
  }
}

static void put_graph(FILE *out, const struct gcap_graph *g, unsigned flags);

#define ATTRIBUTES (GCAP_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_ATTRIBUTES | GCAP_GRAPH_DEBUG_DOT_FLAGS_VERBOSE)

static void put_node(FILE *out, const struct gcap_graph *g, const struct gcap_node *n, unsigned flags) {
  bool runtime = flags & GCAP_GRAPH_DEBUG_DOT_FLAGS_RUNTIME_TYPES;
  fprintf(out, "\"graph_%llu_node_%zu\"[style=\"solid\" shape=\"record\" label=\"{%zu|%s",
          (unsigned long long)g->serial, n->index, n->index, type_label(n->type, runtime));
  if (flags & (GCAP_GRAPH_DEBUG_DOT_FLAGS_HANDLES | GCAP_GRAPH_DEBUG_DOT_FLAGS_VERBOSE)) fprintf(out, "|%p", (void *)n);
  if (wants_params(n->type, flags)) put_params(out, n, flags);
  if (n->type == GCAP_NODE_KERNEL && (flags & ATTRIBUTES)) fprintf(out, "|priority: %d", n->p.kernel.priority);
  fputs("}\"];\n", out);
  if (n->type == GCAP_NODE_GRAPH) put_graph(out, n->p.child, flags);
  for (unsigned b = 0; n->type == GCAP_NODE_CONDITIONAL && b < n->p.cond->size; b++)
    put_graph(out, n->p.cond->bodies[b], flags);
}

/* The dashed arrow from a node to the cluster of a graph it runs (a child graph, a body). */
static void point_at(FILE *out, const struct gcap_graph *g, const struct gcap_node *n, const struct gcap_graph *inner) {
  if (!inner->nodes.count) return;
  fprintf(out, "\"graph_%llu_node_%zu\" -> \"graph_%llu_node_0\" [style=\"dashed\" lhead=\"cluster_%llu\"];\n",
          (unsigned long long)g->serial, n->index, (unsigned long long)inner->serial,
          (unsigned long long)inner->serial);
}

/* A graph is a cluster; a child graph's cluster sits in its parent's, and its node points at it. */
static void put_graph(FILE *out, const struct gcap_graph *g, unsigned flags) {
  fprintf(out, "subgraph cluster_%llu {\nlabel=\"graph_%llu\" graph[style=\"dashed\"];\n",
          (unsigned long long)g->serial, (unsigned long long)g->serial);
  for (size_t i = 0; i < g->nodes.count; i++) put_node(out, g, g->nodes.items[i], flags);
  bool numbered = flags & (GCAP_GRAPH_DEBUG_DOT_FLAGS_EXTRA_TOPO_INFO | GCAP_GRAPH_DEBUG_DOT_FLAGS_VERBOSE);
  for (size_t i = 0; i < g->edge_count; i++) {
    fprintf(out, "\"graph_%llu_node_%zu\" -> \"graph_%llu_node_%zu\"", (unsigned long long)g->serial,
            g->edges[i].from->index, (unsigned long long)g->serial, g->edges[i].to->index);
    if (numbered) fprintf(out, " [label=\"edge %zu\"]", i);
    fputs(";\n", out);
  }
  fputs("}\n", out);
  for (size_t i = 0; i < g->nodes.count; i++) {
    const struct gcap_node *n = g->nodes.items[i];
    if (n->type == GCAP_NODE_GRAPH) point_at(out, g, n, n->p.child);
    for (unsigned b = 0; n->type == GCAP_NODE_CONDITIONAL && b < n->p.cond->size; b++)
      point_at(out, g, n, n->p.cond->bodies[b]);
  }
}

gcap_status gcap_graph_debug_dot_print(const gcap_graph *g, const char *path, unsigned flags) {
  GCAP_ENTER();
  gcap_status st = gcap__check_graph(g, "graph");
  if (st != GCAP_SUCCESS) return st;
  if (!path) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "path is NULL");
  if (flags & ~ALL_FLAGS)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "flags 0x%x has unknown bits 0x%x", flags, flags & ~ALL_FLAGS);
  FILE *out = fopen(path, "w");
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "cannot write path \"%s\": %s", path, strerror(errno));
  gcap__lock(g->ctx);
  fputs("digraph dot {\ncompound=true;\n", out);
  put_graph(out, g, flags);
  fputs("}\n", out);
  gcap__unlock(g->ctx);
  bool failed = ferror(out) != 0;
  if (fclose(out) != 0) failed = true;
  if (failed) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "writing path \"%s\" failed", path);
  return GCAP_SUCCESS;
}
