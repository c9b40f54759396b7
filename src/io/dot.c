#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <dlfcn.h>
#include <string.h>

#include "dot.h"

/* Fill colours by node type; docs/graphs.md shows the legend, so keep the two in step. */
static const char *fill_colour(gcap_node_type t) {
  if (t == GCAP__NODE_NATIVE) return "#bdbdbd"; /* outside the public enum, so not a case */
  switch (t) {
  case GCAP_NODE_KERNEL: return "#a6cee3";
  case GCAP_NODE_MEMCPY: return "#b2df8a";
  case GCAP_NODE_MEMSET: return "#fdbf6f";
  case GCAP_NODE_HOST: return "#fb9a99";
  case GCAP_NODE_GRAPH: return "#cab2d6";
  case GCAP_NODE_EVENT_RECORD:
  case GCAP_NODE_EVENT_WAIT: return "#ffff99";
  case GCAP_NODE_MEM_ALLOC:
  case GCAP_NODE_MEM_FREE: return "#d9d9d9";
  case GCAP_NODE_CONDITIONAL: return "#ff7f00";
  default: return "#ffffff";
  }
}

/* The host function's symbol name, or its address when the dynamic symbol table has no
 * symbol starting exactly there (static functions, stripped or statically linked programs):
 * dladdr's nearest preceding symbol would name the wrong function. */
void gcap__dot_put_host_fn(FILE *out, gcap_host_fn fn) {
  void *addr;
  _Static_assert(sizeof addr == sizeof fn, "function pointers fit in void *");
  memcpy(&addr, &fn, sizeof addr); /* ISO C has no cast from function to object pointer */
  Dl_info info;
  if (dladdr(addr, &info) != 0 && info.dli_sname != NULL && info.dli_saddr == addr) fprintf(out, " %s", info.dli_sname);
  else fprintf(out, " %p", addr);
}

static const char *copy_direction(gcap_memcpy_kind k) {
  static const char *const names[] = {"HtoH", "HtoD", "DtoH", "DtoD", "default"};
  return (unsigned)k <= GCAP_MEMCPY_DEFAULT ? names[k] : "?";
}

/* Writes s with the characters DOT treats specially inside a quoted string escaped. */
void gcap__dot_put_escaped(FILE *out, const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', out);
    fputc(*s, out);
  }
}

static void put_params(FILE *out, const struct gcap_node *n) {
  switch (n->type) {
  case GCAP_NODE_KERNEL: {
    const struct gcap__kernel_params *k = &n->p.kernel;
    fprintf(out, "\\ngrid (%u,%u,%u) block (%u,%u,%u)\\nshared %u bytes, %zu params", k->grid.x, k->grid.y, k->grid.z,
            k->block.x, k->block.y, k->block.z, k->shared_mem_bytes, k->kernel->info.num_params);
    if (k->priority) fprintf(out, "\\npriority %d", k->priority);
    break;
  }
  case GCAP_NODE_MEMCPY:
    fprintf(out, "\\ndst %p src %p\\n%zu bytes", n->p.memcpy.flat.dst, n->p.memcpy.flat.src, n->p.memcpy.flat.bytes);
    if (n->p.memcpy.p3) {
      const gcap_memcpy_3d_params *p3 = n->p.memcpy.p3;
      fprintf(out, " x %zu rows x %zu slices\\npitch %zu (dst) %zu (src)", p3->extent.height, p3->extent.depth,
              p3->dst.pitch, p3->src.pitch);
    }
    break;
  case GCAP_NODE_MEMSET: {
    const gcap_memset_node_params *m = &n->p.memset;
    fprintf(out, "\\ndst %p value 0x%x\\n%u-byte x %zu x %zu rows, pitch %zu", m->dst, (unsigned)m->value,
            m->element_size, m->width, m->height, m->pitch);
    break;
  }
  case GCAP_NODE_HOST: fprintf(out, "\\nuser_data %p", n->p.host.user_data); break;
  case GCAP_NODE_EVENT_RECORD:
  case GCAP_NODE_EVENT_WAIT: fprintf(out, "\\nevent %p", (void *)n->p.event); break;
  case GCAP_NODE_MEM_ALLOC:
  case GCAP_NODE_MEM_FREE: fprintf(out, "\\n%p, %zu bytes", n->p.mem->ptr, n->p.mem->bytes); break;
  case GCAP_NODE_CONDITIONAL: fprintf(out, "\\nhandle 0x%llx", (unsigned long long)n->p.cond->cond->handle); break;
  default: break;
  }
}

static void put_node(FILE *out, const struct gcap_node *n, unsigned flags) {
  fprintf(out, "  n%zu [label=\"%zu: %s", n->index, n->index, gcap__node_type_name(n->type));
  if (n->type == GCAP_NODE_KERNEL) {
    fputc(' ', out);
    gcap__dot_put_escaped(out, n->p.kernel.kernel->name);
  } else if (n->type == GCAP_NODE_MEMCPY) {
    fprintf(out, " %s", copy_direction(n->p.memcpy.flat.kind));
  } else if (n->type == GCAP_NODE_GRAPH) {
    fprintf(out, " (%zu nodes)", n->p.child->nodes.count);
  } else if (n->type == GCAP_NODE_CONDITIONAL) {
    static const char *const kinds[] = {"IF", "WHILE", "SWITCH"};
    fprintf(out, " %s (bodies of", kinds[n->p.cond->type]);
    for (unsigned b = 0; b < n->p.cond->size; b++)
      fprintf(out, "%s %zu", b ? "," : "", n->p.cond->bodies[b]->nodes.count);
    fputs(" nodes)", out);
  } else if (n->type == GCAP_NODE_HOST) {
    gcap__dot_put_host_fn(out, n->p.host.fn);
  }
  if (flags & GCAP_DOT_VERBOSE) put_params(out, n);
  fprintf(out, "\", style=filled, fillcolor=\"%s\"%s];\n", fill_colour(n->type),
          n->type == GCAP_NODE_GRAPH || n->type == GCAP__NODE_NATIVE ? ", shape=box3d"
          : n->type == GCAP_NODE_CONDITIONAL                         ? ", shape=diamond"
                                                                     : "");
}

gcap_status gcap_graph_write_dot(const gcap_graph *g, FILE *out, unsigned flags) {
  GCAP_ENTER();
  gcap_status st = gcap__check_graph(g, "graph");
  if (st != GCAP_SUCCESS) return st;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  if (flags & ~GCAP_DOT_VERBOSE)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "flags 0x%x has unknown bits 0x%x", flags, flags & ~GCAP_DOT_VERBOSE);
  gcap__lock(g->ctx);
  clearerr(out);
  fprintf(out, "digraph gcap {\n  node [shape=box, fontname=\"Helvetica\"];\n");
  for (size_t i = 0; i < g->nodes.count; i++) put_node(out, g->nodes.items[i], flags);
  for (size_t i = 0; i < g->edge_count; i++)
    fprintf(out, "  n%zu -> n%zu;\n", g->edges[i].from->index, g->edges[i].to->index);
  fputs("}\n", out);
  bool failed = fflush(out) != 0 || ferror(out);
  gcap__unlock(g->ctx);
  if (failed) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "writing to the FILE failed");
  return GCAP_SUCCESS;
}
