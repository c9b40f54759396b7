/*
 * Writes saved graphs for the gcap-inspect test: OUT/clean.json (a fork/join of fills, copies and
 * a kernel with declared accesses, and a child graph; no race) and OUT/racy.json (the same plus
 * a fill of b ordered only after the first node: it races with every later user of b).
 */
#include <gcap/gcap.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                                    \
  do {                                                                                                                 \
    gcap_status st_ = (call);                                                                                          \
    if (st_ != GCAP_SUCCESS) {                                                                                         \
      fprintf(stderr, "%s: %s: %s\n", #call, gcap_status_name(st_), gcap_last_error_message());                        \
      exit(st_ == GCAP_ERROR_NOT_SUPPORTED ? 77 : 1);                                                                  \
    }                                                                                                                  \
  } while (0)

static const size_t sizes[] = {sizeof(float *), sizeof(float *), sizeof(unsigned)};
static const gcap_param_access access[] = {GCAP_ACCESS_READ, GCAP_ACCESS_WRITE, GCAP_ACCESS_NONE};

static gcap_node *fill(gcap_graph *g, void *dst, size_t bytes, gcap_node **deps, size_t n) {
  gcap_memset_node_params p = {dst, 0, 1, bytes, 1, 0};
  gcap_node *node;
  CHECK(gcap_graph_add_memset_node(g, deps, n, &p, &node));
  return node;
}

static void save(const gcap_graph *g, const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(1);
  }
  CHECK(gcap_graph_save(g, f));
  fclose(f);
}

int main(int argc, char **argv) {
  if (argc != 2) return fprintf(stderr, "usage: %s OUTDIR\n", argv[0]), 2;
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  gcap_context *ctx;
  CHECK(gcap_context_create(&o, &ctx));
  gcap_kernel_def def = {.name = "blend", .num_params = 3, .param_sizes = sizes, .param_access = access};
  gcap_module_desc d = {.kernels = &def, .num_kernels = 1};
  gcap_module *m;
  gcap_kernel *k;
  CHECK(gcap_module_load(ctx, &d, &m));
  CHECK(gcap_module_get_kernel(m, "blend", &k));
  unsigned char *a, *b;
  CHECK(gcap_mem_alloc(ctx, 1024, (void **)&a));
  CHECK(gcap_mem_alloc(ctx, 1024, (void **)&b));

  gcap_graph *g, *child;
  CHECK(gcap_graph_create(ctx, &g));
  CHECK(gcap_graph_create(ctx, &child));
  fill(child, b + 512, 256, NULL, 0);
  gcap_node *top = fill(g, a, 1024, NULL, 0);
  gcap_node *left = fill(g, b, 256, &top, 1);
  unsigned n = 256;
  void *args[] = {&a, &b, &n};
  gcap_kernel_node_params kp = {k, {1, 1, 1}, {256, 1, 1}, 0, args};
  gcap_node *kernel, *sub;
  CHECK(gcap_graph_add_kernel_node(g, &left, 1, &kp, &kernel)); /* reads a, writes b */
  CHECK(gcap_graph_add_child_graph_node(g, &kernel, 1, child, &sub));
  gcap_node *both[] = {kernel, sub};
  gcap_memcpy_node_params cp = {a, b, 1024, GCAP_MEMCPY_DEVICE_TO_DEVICE};
  gcap_node *back;
  CHECK(gcap_graph_add_memcpy_node(g, both, 2, &cp, &back));
  save(g, argv[1], "clean.json");
  fill(g, b + 100, 8, &top, 1); /* races with left, the kernel and the copy back */
  save(g, argv[1], "racy.json");

  /* A fill, then an IF whose two bodies hold two fills and one: 5 nodes at all levels. */
  gcap_graph *cond;
  CHECK(gcap_graph_create(ctx, &cond));
  gcap_conditional_handle h;
  CHECK(gcap_graph_conditional_handle_create(cond, 1, 0, &h));
  gcap_node *first = fill(cond, a, 64, NULL, 0), *if_node;
  gcap_graph *bodies[2];
  gcap_conditional_node_params ip = {h, GCAP_CONDITIONAL_IF, 2, bodies};
  CHECK(gcap_graph_add_conditional_node(cond, &first, 1, &ip, &if_node));
  gcap_node *then_first = fill(bodies[0], b, 64, NULL, 0);
  fill(bodies[0], b + 64, 64, &then_first, 1);
  fill(bodies[1], b + 128, 64, NULL, 0);
  save(cond, argv[1], "conditional.json");
  gcap_graph_destroy(cond);

  gcap_graph_destroy(child);
  gcap_graph_destroy(g);
  gcap_context_destroy(ctx);
  return 0;
}
