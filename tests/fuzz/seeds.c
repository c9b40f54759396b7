/*
 * Writes the fuzzer's seed inputs into a directory: saved graphs of several shapes (every node
 * type, child graphs, events, races, graph allocations) and a few broken copies of them (a cycle,
 * a later version, a cut file, an unknown kernel), so that the fuzzer starts from every branch of
 * the loader. A seed that is already there is left as it is: addresses differ from run to run.
 *   fuzz_seeds DIR
 */
#define _GNU_SOURCE /* open_memstream */
#include <gcap/gcap.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

static gcap_context *ctx;
static gcap_kernel *blend, *scale, *noargs;
static void *buf_a, *buf_b; /* device allocations the graphs use */
static const char *dir;

#define CHECK(expr)                                                                                                    \
  do {                                                                                                                 \
    gcap_status st_ = (expr);                                                                                          \
    if (st_ != GCAP_SUCCESS) {                                                                                         \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, gcap_last_error_message());                        \
      exit(1);                                                                                                         \
    }                                                                                                                  \
  } while (0)

static void nothing(void *user_data) { (void)user_data; }

/* Writes text as DIR/name unless that file exists. */
static void put_seed(const char *name, const char *text) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wx");
  if (!f) return; /* there already */
  fputs(text, f);
  if (fclose(f) != 0) {
    perror(path);
    exit(1);
  }
}

static char *saved(const gcap_graph *g) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) exit(1);
  CHECK(gcap_graph_save(g, f));
  fclose(f);
  return text;
}

static void save_seed(const char *name, gcap_graph *g) {
  char *text = saved(g);
  put_seed(name, text);
  free(text);
  gcap_graph_destroy(g);
}

static gcap_node *kernel(gcap_graph *g, gcap_kernel *k, gcap_node **deps, size_t n, void *p, void *q) {
  float f = 0.5f;
  unsigned count = 64;
  void *args[3] = {&p, k == blend ? (void *)&q : (void *)&f, &count};
  gcap_kernel_node_params kp = {k, GCAP_DIM3(2, 1, 1), GCAP_DIM3(32, 1, 1), k == scale ? 256u : 0u,
                                k == noargs ? NULL : args};
  gcap_node *node = NULL;
  CHECK(gcap_graph_add_kernel_node(g, deps, n, &kp, &node));
  return node;
}

static gcap_node *fill(gcap_graph *g, gcap_node **deps, size_t n, void *dst, unsigned element, size_t width,
                       size_t height, size_t pitch) {
  gcap_memset_node_params p = {dst, 0x7f, element, width, height, pitch};
  gcap_node *node = NULL;
  CHECK(gcap_graph_add_memset_node(g, deps, n, &p, &node));
  return node;
}

static gcap_graph *new_graph(void) {
  gcap_graph *g = NULL;
  CHECK(gcap_graph_create(ctx, &g));
  return g;
}

/* memset -> blend -> memcpy -> host -> empty. */
static gcap_graph *chain(void) {
  gcap_graph *g = new_graph();
  gcap_node *n = fill(g, NULL, 0, buf_a, 4, 64, 1, 0);
  n = kernel(g, blend, &n, 1, buf_a, buf_b);
  gcap_memcpy_node_params cp = {buf_b, buf_a, 256, GCAP_MEMCPY_DEVICE_TO_DEVICE};
  gcap_node *copy = NULL, *host = NULL, *empty = NULL;
  CHECK(gcap_graph_add_memcpy_node(g, &n, 1, &cp, &copy));
  gcap_host_node_params hp = {nothing, NULL};
  CHECK(gcap_graph_add_host_node(g, &copy, 1, &hp, &host));
  CHECK(gcap_graph_add_empty_node(g, &host, 1, &empty));
  return g;
}

/* One root, three kernels, one join; edges added after the nodes, out of creation order. */
static gcap_graph *fork_join(void) {
  gcap_graph *g = new_graph();
  gcap_node *root = NULL, *join = NULL;
  CHECK(gcap_graph_add_empty_node(g, NULL, 0, &root));
  gcap_node *k[3] = {kernel(g, scale, NULL, 0, buf_a, NULL), kernel(g, blend, NULL, 0, buf_b, buf_a),
                     kernel(g, noargs, NULL, 0, NULL, NULL)};
  CHECK(gcap_graph_add_empty_node(g, NULL, 0, &join));
  gcap_node *from[] = {k[2], k[0], root, k[1], root, root}, *to[] = {join, join, k[2], join, k[0], k[1]};
  CHECK(gcap_graph_add_dependencies(g, from, to, 6));
  return g;
}

/* A child graph holding a child graph. */
static gcap_graph *child(void) {
  gcap_graph *inner = new_graph(), *middle = new_graph(), *g = new_graph();
  fill(inner, NULL, 0, buf_a, 1, 16, 1, 0);
  gcap_node *m = kernel(middle, scale, NULL, 0, buf_b, NULL), *sub = NULL, *top = NULL;
  CHECK(gcap_graph_add_child_graph_node(middle, &m, 1, inner, &sub));
  gcap_node *before = fill(g, NULL, 0, buf_b, 2, 8, 1, 0);
  CHECK(gcap_graph_add_child_graph_node(g, &before, 1, middle, &top));
  kernel(g, noargs, &top, 1, NULL, NULL);
  gcap_graph_destroy(inner);
  gcap_graph_destroy(middle);
  return g;
}

static gcap_graph *events(void) {
  gcap_event *e1 = NULL, *e2 = NULL;
  CHECK(gcap_event_create(ctx, &e1));
  CHECK(gcap_event_create(ctx, &e2));
  gcap_graph *g = new_graph();
  gcap_node *r1 = NULL, *w1 = NULL, *r2 = NULL;
  CHECK(gcap_graph_add_event_record_node(g, NULL, 0, e1, &r1));
  CHECK(gcap_graph_add_event_wait_node(g, &r1, 1, e1, &w1));
  CHECK(gcap_graph_add_event_record_node(g, NULL, 0, e2, &r2));
  CHECK(gcap_event_destroy(e1));
  CHECK(gcap_event_destroy(e2));
  return g;
}

/* 2-D fills of every element size and copies of every kind. */
static gcap_graph *pitched(void) {
  gcap_graph *g = new_graph();
  gcap_node *a = fill(g, NULL, 0, buf_a, 1, 10, 4, 16);
  gcap_node *b = fill(g, &a, 1, buf_a, 2, 6, 3, 32);
  fill(g, &b, 1, buf_b, 4, 4, 2, 64);
  static char host[256];
  void *pinned = NULL;
  CHECK(gcap_host_alloc(ctx, 256, &pinned));
  gcap_memcpy_node_params cps[] = {
      {buf_a, host, 64, GCAP_MEMCPY_HOST_TO_DEVICE},
      {host, buf_b, 64, GCAP_MEMCPY_DEVICE_TO_HOST},
      {pinned, host, 32, GCAP_MEMCPY_HOST_TO_HOST},
      {buf_b, buf_a, 128, GCAP_MEMCPY_DEFAULT},
  };
  for (size_t i = 0; i < sizeof cps / sizeof *cps; i++) {
    gcap_node *n = NULL;
    CHECK(gcap_graph_add_memcpy_node(g, &b, 1, &cps[i], &n));
  }
  return g;
}

/* Two unordered kernels writing one allocation: the file lists it for race analysis. */
static gcap_graph *racy(void) {
  gcap_graph *g = new_graph();
  kernel(g, blend, NULL, 0, buf_a, buf_b);
  kernel(g, blend, NULL, 0, buf_a, (char *)buf_b + 8);
  kernel(g, scale, NULL, 0, (char *)buf_b + 64, NULL);
  return g;
}

static gcap_graph *allocating(void) {
  gcap_stream *s = NULL;
  CHECK(gcap_stream_create(ctx, &s));
  CHECK(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  void *p = NULL;
  CHECK(gcap_mem_alloc_async(s, 512, &p));
  CHECK(gcap_memset_async(s, p, 0, 512));
  CHECK(gcap_mem_free_async(s, p));
  gcap_graph *g = NULL;
  CHECK(gcap_stream_end_capture(s, &g));
  CHECK(gcap_stream_destroy(s));
  return g;
}

/* A copy of text with the first `from` replaced by `to` (no longer than from). */
static char *edited(const char *text, const char *from, const char *to) {
  char *copy = strdup(text);
  char *at = copy ? strstr(copy, from) : NULL;
  if (!at) exit(1);
  memcpy(at, to, strlen(to));
  memmove(at + strlen(to), at + strlen(from), strlen(at + strlen(from)) + 1);
  return copy;
}

static void put_edited(const char *name, const char *text, const char *from, const char *to) {
  char *copy = edited(text, from, to);
  put_seed(name, copy);
  free(copy);
}

static void broken_seeds(void) {
  gcap_graph *g = chain();
  char *text = saved(g);
  gcap_graph_destroy(g);
  put_edited("future.json", text, "\"version\": 2", "\"version\": 9"); /* readers take 1 to 3 */
  char *renamed = edited(text, "\"name\": \"blend\"", "\"name\": \"nope\"");
  put_edited("unknown_kernel.json", renamed, "\"kernel\": \"blend\"", "\"kernel\": \"nope\"");
  free(renamed);
  text[strlen(text) / 2] = '\0';
  put_seed("truncated.json", text);
  free(text);
  g = new_graph();
  gcap_node *a = NULL, *b = NULL;
  CHECK(gcap_graph_add_empty_node(g, NULL, 0, &a));
  CHECK(gcap_graph_add_empty_node(g, &a, 1, &b));
  text = saved(g);
  gcap_graph_destroy(g);
  put_edited("cycle.json", text, "\"edges\": [\n   [\n    0,\n    1\n   ]\n  ]", "\"edges\": [[0, 1], [1, 0]]");
  free(text);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  dir = argv[1];
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  CHECK(gcap_context_create(&o, &ctx));
  CHECK(fuzz_load_module(ctx));
  CHECK(gcap_context_find_kernel(ctx, "blend", &blend));
  CHECK(gcap_context_find_kernel(ctx, "scale", &scale));
  CHECK(gcap_context_find_kernel(ctx, "noargs", &noargs));
  CHECK(gcap_mem_alloc(ctx, 1024, &buf_a));
  CHECK(gcap_mem_alloc(ctx, 1024, &buf_b));
  save_seed("empty.json", new_graph());
  save_seed("chain.json", chain());
  save_seed("fork_join.json", fork_join());
  save_seed("child.json", child());
  save_seed("events.json", events());
  save_seed("pitched.json", pitched());
  save_seed("racy.json", racy());
  save_seed("alloc.json", allocating());
  broken_seeds();
  gcap_context_destroy(ctx);
  return 0;
}
