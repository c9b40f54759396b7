/* Saved graphs: gcap_graph_save / gcap_graph_load (docs/format.md). */
#define _POSIX_C_SOURCE 200809L /* fmemopen, open_memstream */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "core/race.h" /* gcap__graph_extent_of: the recorded allocations */

struct fx {
  gcap_context *ctx;
  gcap_stream *s;
  gcap_kernel *scale, *opaque;
  float *a, *b; /* 64 floats each */
};

static void scale_sim(const gcap_sim_thread *t, void *const *args) {
  float *y, k;
  memcpy(&y, args[0], sizeof y);
  memcpy(&k, args[1], sizeof k);
  y[t->thread_idx.x] *= k;
}

static const size_t scale_sizes[] = {sizeof(float *), sizeof(float)};
static const gcap_param_access scale_access[] = {GCAP_ACCESS_READ_WRITE, GCAP_ACCESS_NONE};
static const size_t opaque_sizes[] = {sizeof(void *)};

static void load_kernels(gcap_context *ctx) {
  const gcap_kernel_def defs[] = {
      {.name = "scale", .sim_fn = scale_sim, .num_params = 2, .param_sizes = scale_sizes, .param_access = scale_access},
      {.name = "opaque", .num_params = 1, .param_sizes = opaque_sizes},
  };
  gcap_module_desc d = {.kernels = defs, .num_kernels = 2};
  gcap_module *m = NULL;
  assert_ok(test_module_load(ctx, &d, &m));
}

static int setup(void **state) {
  struct fx *f = calloc(1, sizeof *f);
  if (!f) return -1;
  f->ctx = test_context_create();
  if (gcap_stream_create(f->ctx, &f->s) != GCAP_SUCCESS) return -1;
  load_kernels(f->ctx);
  if (gcap_context_find_kernel(f->ctx, "scale", &f->scale) != GCAP_SUCCESS) return -1;
  if (gcap_context_find_kernel(f->ctx, "opaque", &f->opaque) != GCAP_SUCCESS) return -1;
  f->a = test_dev_alloc(f->ctx, 64 * sizeof(float));
  f->b = test_dev_alloc(f->ctx, 64 * sizeof(float));
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fx *f = *state;
  assert_ok(gcap_stream_destroy(f->s));
  gcap_context_destroy(f->ctx);
  free(f);
  return 0;
}

/* ---------------------------------------------------------------- helpers */

static char *saved(const gcap_graph *g) {
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  assert_non_null(out);
  assert_ok(gcap_graph_save(g, out));
  assert_int_equal(fclose(out), 0);
  return text;
}

static gcap_status load_text(gcap_context *ctx, const char *text, gcap_graph **g) {
  FILE *in = fmemopen((void *)text, strlen(text), "r");
  assert_non_null(in);
  *g = (gcap_graph *)g; /* must be cleared on failure */
  gcap_status st = gcap_graph_load(ctx, in, g);
  fclose(in);
  if (st != GCAP_SUCCESS) assert_null(*g);
  return st;
}

static gcap_graph *loaded(gcap_context *ctx, const char *text) {
  gcap_graph *g = NULL;
  assert_ok(load_text(ctx, text, &g));
  assert_non_null(g);
  return g;
}

/* The stream's buffer pointer lives on the heap: gcc's -O3 dangling-pointer analysis otherwise
 * takes the returned text for a pointer to this function's local. */
static char *dot_of(const gcap_graph *g, unsigned flags) {
  char **buffer = calloc(1, sizeof *buffer);
  size_t len = 0;
  assert_non_null(buffer);
  FILE *out = open_memstream(buffer, &len);
  assert_non_null(out);
  assert_ok(gcap_graph_write_dot(g, out, flags));
  fclose(out);
  char *text = *buffer;
  free(buffer);
  return text;
}

/* Host labels name the function; a loaded graph's host nodes run a function of the loader's own. */
static void drop_host_functions(char *dot) {
  for (char *at = strstr(dot, "host "); at; at = strstr(at, "host ")) {
    char *end = strchr(at, '"');
    assert_non_null(end);
    memmove(at + 4, end, strlen(end) + 1);
    at += 4;
  }
}

static size_t nodes_of(const gcap_graph *g, gcap_node **nodes, size_t room) {
  size_t n = room;
  assert_ok(gcap_graph_get_nodes(g, nodes, &n));
  return n;
}

static size_t index_of(gcap_node *const *nodes, size_t n, const gcap_node *x) {
  for (size_t i = 0; i < n; i++)
    if (nodes[i] == x) return i;
  fail_msg("node not found");
  return 0;
}

/* Same node types, parameters and edges (by index), recursively. */
static void assert_same_graph(const gcap_graph *x, const gcap_graph *y) {
  gcap_node *a[32], *b[32];
  size_t n = nodes_of(x, a, 32);
  assert_int_equal(nodes_of(y, b, 32), n);
  for (size_t i = 0; i < n; i++) {
    gcap_node_type t = gcap_node_get_type(a[i]);
    assert_int_equal(gcap_node_get_type(b[i]), t);
    if (t == GCAP_NODE_KERNEL) {
      gcap_kernel_node_params p, q;
      assert_ok(gcap_node_get_kernel_params(a[i], &p));
      assert_ok(gcap_node_get_kernel_params(b[i], &q));
      assert_ptr_equal(p.kernel, q.kernel);
      assert_memory_equal(&p.grid, &q.grid, sizeof p.grid);
      assert_memory_equal(&p.block, &q.block, sizeof p.block);
      assert_int_equal(p.shared_mem_bytes, q.shared_mem_bytes);
      gcap_kernel_node_attr_value pa, qa;
      assert_ok(gcap_graph_kernel_node_get_attribute(a[i], GCAP_KERNEL_NODE_ATTR_PRIORITY, &pa));
      assert_ok(gcap_graph_kernel_node_get_attribute(b[i], GCAP_KERNEL_NODE_ATTR_PRIORITY, &qa));
      assert_int_equal(pa.priority, qa.priority);
      bool is_scale = strcmp(gcap_kernel_name(p.kernel), "scale") == 0;
      const size_t *sizes = is_scale ? scale_sizes : opaque_sizes;
      for (size_t k = 0; k < (is_scale ? 2u : 1u); k++) assert_memory_equal(p.args[k], q.args[k], sizes[k]);
    } else if (t == GCAP_NODE_MEMCPY) {
      gcap_memcpy_node_params p, q;
      assert_ok(gcap_node_get_memcpy_params(a[i], &p));
      assert_ok(gcap_node_get_memcpy_params(b[i], &q));
      assert_ptr_equal(p.dst, q.dst);
      assert_ptr_equal(p.src, q.src);
      assert_int_equal(p.bytes, q.bytes);
      assert_int_equal(p.kind, q.kind);
    } else if (t == GCAP_NODE_MEMSET) {
      gcap_memset_node_params p, q;
      assert_ok(gcap_node_get_memset_params(a[i], &p));
      assert_ok(gcap_node_get_memset_params(b[i], &q)); /* field by field: padding is not a parameter */
      assert_ptr_equal(p.dst, q.dst);
      assert_int_equal(p.value, q.value);
      assert_int_equal(p.element_size, q.element_size);
      assert_int_equal(p.width, q.width);
      assert_int_equal(p.height, q.height);
      assert_int_equal(p.pitch, q.pitch);
    } else if (t == GCAP_NODE_GRAPH) {
      gcap_graph *cx, *cy;
      assert_ok(gcap_node_get_child_graph(a[i], &cx));
      assert_ok(gcap_node_get_child_graph(b[i], &cy));
      assert_same_graph(cx, cy);
    }
  }
  gcap_node *fa[64], *ta[64], *fb[64], *tb[64];
  size_t ea = 64, eb = 64;
  assert_ok(gcap_graph_get_edges(x, fa, ta, &ea));
  assert_ok(gcap_graph_get_edges(y, fb, tb, &eb));
  assert_int_equal(ea, eb);
  for (size_t e = 0; e < ea; e++) {
    assert_int_equal(index_of(a, n, fa[e]), index_of(b, n, fb[e]));
    assert_int_equal(index_of(a, n, ta[e]), index_of(b, n, tb[e]));
  }
}

static void nothing(void *user_data) { (void)user_data; }

static gcap_node *fill(gcap_graph *g, void *dst, size_t width, size_t height, size_t pitch, gcap_node **deps,
                       size_t n) {
  gcap_memset_node_params p = {dst, 0x3f800000u, 4, width, height, pitch};
  gcap_node *node = NULL;
  assert_ok(gcap_graph_add_memset_node(g, deps, n, &p, &node));
  return node;
}

/* Every node type the file holds: kernel, memcpy, 1D and 2D memset, host, empty, events, children. */
static gcap_graph *every_type(struct fx *f, gcap_event *e) {
  gcap_graph *g = NULL, *child = NULL, *grandchild = NULL;
  assert_ok(gcap_graph_create(f->ctx, &g));
  assert_ok(gcap_graph_create(f->ctx, &child));
  assert_ok(gcap_graph_create(f->ctx, &grandchild));
  gcap_node *root = fill(g, f->a, 64, 1, 0, NULL, 0);
  gcap_node *rows = fill(g, f->b, 8, 4, 64, &root, 1);
  float k = 2.5f;
  void *args[] = {&f->a, &k};
  gcap_kernel_node_params kp = {f->scale, {1, 1, 1}, {64, 1, 1}, 0, args};
  gcap_node *kn = NULL, *copy = NULL, *host = NULL, *empty = NULL, *rec = NULL, *wait = NULL, *sub = NULL;
  assert_ok(gcap_graph_add_kernel_node(g, &rows, 1, &kp, &kn));
  gcap_kernel_node_attr_value urgent = {.priority = -2};
  assert_ok(gcap_graph_kernel_node_set_attribute(kn, GCAP_KERNEL_NODE_ATTR_PRIORITY, &urgent));
  gcap_memcpy_node_params cp = {f->b, f->a, 64 * sizeof(float), GCAP_MEMCPY_DEVICE_TO_DEVICE};
  assert_ok(gcap_graph_add_memcpy_node(g, &kn, 1, &cp, &copy));
  gcap_host_node_params hp = {nothing, NULL};
  assert_ok(gcap_graph_add_host_node(g, &copy, 1, &hp, &host));
  assert_ok(gcap_graph_add_empty_node(g, &root, 1, &empty));
  assert_ok(gcap_graph_add_event_record_node(g, &empty, 1, e, &rec));
  assert_ok(gcap_graph_add_event_wait_node(g, &rec, 1, e, &wait));
  fill(grandchild, f->b, 4, 1, 0, NULL, 0);
  gcap_node *inner = fill(child, f->a, 2, 1, 0, NULL, 0), *nested = NULL;
  assert_ok(gcap_graph_add_child_graph_node(child, &inner, 1, grandchild, &nested));
  gcap_node *both[] = {host, wait};
  assert_ok(gcap_graph_add_child_graph_node(g, both, 2, child, &sub));
  gcap_node *extra_from[] = {root}, *extra_to[] = {host};
  assert_ok(gcap_graph_add_dependencies(g, extra_from, extra_to, 1));
  gcap_graph_destroy(grandchild);
  gcap_graph_destroy(child);
  return g;
}

/* ---------------------------------------------------------------- round trips */

static void test_round_trip_every_type(void **state) {
  struct fx *f = *state;
  gcap_event *e = NULL;
  assert_ok(gcap_event_create(f->ctx, &e));
  gcap_graph *g = every_type(f, e);
  char *first = saved(g);
  gcap_graph *h = loaded(f->ctx, first);
  assert_same_graph(g, h);
  char *second = saved(h);
  assert_string_equal(first, second); /* save -> load -> save is byte-identical */
  char *dot_g = dot_of(g, 0), *dot_h = dot_of(h, 0);
  assert_non_null(strstr(dot_g, "host 0x")); /* `nothing` is static: no symbol, so its address */
  drop_host_functions(dot_g);
  drop_host_functions(dot_h);
  assert_string_equal(dot_g, dot_h);
  /* The loaded graph's event nodes share one event of their own. */
  gcap_node *nodes[16];
  nodes_of(h, nodes, 16);
  gcap_event *r = NULL, *w = NULL;
  assert_ok(gcap_node_get_event(nodes[6], &r));
  assert_ok(gcap_node_get_event(nodes[7], &w));
  assert_ptr_equal(r, w);
  assert_ptr_not_equal(r, e);
  /* Host nodes come back calling a function of gcap's own, not the saving process's. */
  gcap_host_node_params hp;
  assert_ok(gcap_node_get_host_params(nodes[4], &hp));
  assert_non_null(hp.fn);
  assert_true(hp.fn != nothing);
  assert_null(hp.user_data);
  free(first), free(second), free(dot_g), free(dot_h);
  gcap_graph_destroy(h);
  gcap_graph_destroy(g);
  assert_ok(gcap_event_destroy(e));
}

/* A loaded graph runs and computes what the original computes. */
static void test_loaded_graph_runs(void **state) {
  struct fx *f = *state;
  test_require_sim();
  gcap_event *e = NULL;
  assert_ok(gcap_event_create(f->ctx, &e));
  gcap_graph *g = every_type(f, e);
  char *text = saved(g);
  gcap_graph *h = loaded(f->ctx, text);
  float want[64], got[64];
  gcap_exec *x = NULL;
  for (int run = 0; run < 2; run++) {
    assert_ok(gcap_graph_instantiate(run ? h : g, 0, &x));
    assert_ok(gcap_exec_launch(x, f->s));
    assert_ok(gcap_stream_synchronize(f->s));
    assert_ok(gcap_memcpy(f->ctx, run ? got : want, f->b, sizeof want, GCAP_MEMCPY_DEVICE_TO_HOST));
    gcap_exec_destroy(x);
    static const float zero[64];
    assert_ok(gcap_memcpy(f->ctx, f->b, zero, sizeof zero, GCAP_MEMCPY_HOST_TO_DEVICE));
  }
  assert_memory_equal(want, got, sizeof want);
  assert_true(want[4] == 2.5f); /* filled with 1.0f, scaled, copied; the grandchild refilled b[0..3] */
  assert_true(want[0] == 1.0f);
  free(text);
  gcap_graph_destroy(h);
  gcap_graph_destroy(g);
  assert_ok(gcap_event_destroy(e));
}

/* Addresses and allocation extents are kept as saved, even once the memory is gone. */
static void test_extents_survive_the_allocation(void **state) {
  struct fx *f = *state;
  float *c = test_dev_alloc(f->ctx, 256);
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(f->ctx, &g));
  void *args[] = {&c};
  gcap_kernel_node_params kp = {f->opaque, {1, 1, 1}, {1, 1, 1}, 0, args};
  gcap_node *kn = NULL;
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &kp, &kn));
  char *text = saved(g);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, c));
  assert_non_null(strstr(text, "\"bytes\": \"256\""));

  gcap_graph *h = loaded(f->ctx, text);
  gcap_node *nodes[1];
  nodes_of(h, nodes, 1);
  gcap_kernel_node_params got;
  assert_ok(gcap_node_get_kernel_params(nodes[0], &got));
  float *value;
  memcpy(&value, got.args[0], sizeof value);
  assert_ptr_equal(value, c); /* as recorded */
  struct gcap__extent ext = {0};
  assert_true(gcap__graph_extent_of(h, (uintptr_t)c + 100, &ext));
  assert_int_equal(ext.base, (uintptr_t)c);
  assert_int_equal(ext.bytes, 256);
  assert_false(gcap__graph_extent_of(h, (uintptr_t)c + 256, &ext));
  size_t races = 0;
  assert_ok(gcap_graph_find_races(h, NULL, &races));
  assert_int_equal(races, 0);
  char *again = saved(h);
  assert_string_equal(text, again); /* the extent is saved again from the recorded set */
  free(again);
  gcap_graph_destroy(h);
  free(text);
}

/* The example of docs/format.md, written by hand in its compact layout. */
static const char documented_example[] =
    "{\n \"format\": \"gcap-graph\",\n \"version\": 2,\n \"kernels\": [\n"
    "  {\"name\": \"scale\", \"param_sizes\": [8, 4], \"param_access\": [\"read_write\", \"none\"]}\n ],\n"
    " \"allocations\": [\n  {\"base\": \"0x55d0c2a1f000\", \"bytes\": \"256\"}\n ],\n \"events\": 1,\n"
    " \"graph\": {\n  \"nodes\": [\n"
    "   {\"type\": \"memset\", \"dst\": \"0x55d0c2a1f000\", \"value\": 0, \"element_size\": 4,\n"
    "    \"width\": \"64\", \"height\": \"1\", \"pitch\": \"0\"},\n"
    "   {\"type\": \"kernel\", \"kernel\": \"scale\", \"grid\": [1, 1, 1], \"block\": [64, 1, 1],\n"
    "    \"shared_mem_bytes\": 0, \"priority\": -1, \"args\": [\"00f0a1c2d0550000\", \"00002040\"]},\n"
    "   {\"type\": \"event_record\", \"event\": 0},\n"
    "   {\"type\": \"graph\", \"graph\": {\"nodes\": [{\"type\": \"host\"}], \"edges\": []}}\n"
    "  ],\n  \"edges\": [[0, 1], [1, 2], [1, 3]]\n }\n}\n";

static void test_documented_example(void **state) {
  struct fx *f = *state;
  gcap_graph *g = loaded(f->ctx, documented_example);
  gcap_node *n[4];
  assert_int_equal(nodes_of(g, n, 4), 4);
  assert_int_equal(gcap_graph_edge_count(g), 3);
  gcap_kernel_node_params kp;
  assert_ok(gcap_node_get_kernel_params(n[1], &kp));
  assert_ptr_equal(kp.kernel, f->scale);
  uintptr_t y;
  float k;
  memcpy(&y, kp.args[0], sizeof y);
  memcpy(&k, kp.args[1], sizeof k);
  assert_int_equal(y, 0x55d0c2a1f000u);
  assert_true(k == 2.5f);
  gcap_kernel_node_attr_value v;
  assert_ok(gcap_graph_kernel_node_get_attribute(n[1], GCAP_KERNEL_NODE_ATTR_PRIORITY, &v));
  assert_int_equal(v.priority, -1);
  struct gcap__extent e;
  assert_true(gcap__graph_extent_of(g, y + 255, &e));
  assert_int_equal(e.base, 0x55d0c2a1f000u);
  assert_int_equal(e.bytes, 256);
  char *text = saved(g); /* the saved layout is one value per line, the content the same */
  gcap_graph *h = loaded(f->ctx, text);
  assert_same_graph(g, h);
  free(text);
  gcap_graph_destroy(h);
  gcap_graph_destroy(g);
}

/* The example of docs/format.md with a conditional handle in a kernel argument, as written there. */
static const char documented_handle_example[] =
    "{\n"
    " \"format\": \"gcap-graph\",\n"
    " \"version\": 3,\n"
    " \"kernels\": [\n"
    "  {\"name\": \"step\", \"param_sizes\": [8, 8], \"param_access\": [\"read_write\", \"none\"]}\n"
    " ],\n"
    " \"allocations\": [\n"
    "  {\"base\": \"0x55d0c2a1f000\", \"bytes\": \"256\"}\n"
    " ],\n"
    " \"events\": 0,\n"
    " \"conditionals\": [\n"
    "  {\"default\": 1, \"flags\": 1}\n"
    " ],\n"
    " \"graph\": {\n"
    "  \"nodes\": [\n"
    "   {\"type\": \"conditional\", \"handle\": 0, \"conditional_type\": \"while\", \"bodies\": [\n"
    "    {\"nodes\": [\n"
    "      {\"type\": \"kernel\", \"kernel\": \"step\", \"grid\": [1, 1, 1], \"block\": [64, 1, 1], \"shared_mem_bytes\": 0,\n"
    "       \"args\": [\"00f0a1c2d0550000\", \"0000000000000000\"], \"handle_args\": [[1, 0]]}\n"
    "     ],\n"
    "     \"edges\": []}\n"
    "   ]}\n"
    "  ],\n"
    "  \"edges\": []\n"
    " }\n"
    "}\n";

static void test_documented_handle_example(void **state) {
  test_require_sim();
  struct fx *f = *state;
  static const size_t step_sizes[] = {8, 8};
  static const gcap_param_access step_access[] = {GCAP_ACCESS_READ_WRITE, GCAP_ACCESS_NONE};
  const gcap_kernel_def defs[] = {
      {.name = "step", .num_params = 2, .param_sizes = step_sizes, .param_access = step_access}};
  gcap_module_desc d = {.kernels = defs, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(test_module_load(f->ctx, &d, &m));
  gcap_graph *g = loaded(f->ctx, documented_handle_example);
  gcap_node *loop = NULL;
  assert_int_equal(nodes_of(g, &loop, 1), 1);
  gcap_graph *body[1] = {NULL};
  gcap_conditional_node_params p = {.body_out = body};
  assert_ok(gcap_node_get_conditional_params(loop, &p));
  assert_int_equal(p.type, GCAP_CONDITIONAL_WHILE);
  gcap_node *kernel = NULL;
  assert_int_equal(nodes_of(body[0], &kernel, 1), 1);
  gcap_kernel_node_params kp;
  assert_ok(gcap_node_get_kernel_params(kernel, &kp));
  uintptr_t x;
  gcap_conditional_handle h;
  memcpy(&x, kp.args[0], sizeof x);
  memcpy(&h, kp.args[1], sizeof h);
  assert_int_equal(x, 0x55d0c2a1f000u);
  assert_true(h == p.handle); /* the zeros became the loaded graph's handle */
  char *text = saved(g);
  assert_non_null(strstr(text, "\"version\": 3,"));
  gcap_graph *again = loaded(f->ctx, text);
  char *text2 = saved(again);
  assert_string_equal(text, text2);
  free(text2);
  free(text);
  gcap_graph_destroy(again);
  gcap_graph_destroy(g);
}

/* Files of format version 1, which had no priorities, still load: their kernels get priority 0. */
static void test_version_1_still_loads(void **state) {
  struct fx *f = *state;
  char text[sizeof documented_example];
  memcpy(text, documented_example, sizeof text);
  char *version = strstr(text, "\"version\": 2"), *priority = strstr(text, "\"priority\": -1, ");
  version[strlen("\"version\": ")] = '1';
  memmove(priority, priority + strlen("\"priority\": -1, "), strlen(priority + strlen("\"priority\": -1, ")) + 1);
  gcap_graph *g = loaded(f->ctx, text);
  gcap_node *n[4];
  assert_int_equal(nodes_of(g, n, 4), 4);
  gcap_kernel_node_attr_value v = {.priority = 5};
  assert_ok(gcap_graph_kernel_node_get_attribute(n[1], GCAP_KERNEL_NODE_ATTR_PRIORITY, &v));
  assert_int_equal(v.priority, 0);
  char *again = saved(g);
  assert_non_null(strstr(again, "\"version\": 2"));
  free(again);
  gcap_graph_destroy(g);
}

static void test_graph_allocations_save_but_do_not_load(void **state) {
  struct fx *f = *state;
  assert_ok(gcap_stream_begin_capture(f->s, GCAP_CAPTURE_MODE_GLOBAL));
  void *p = NULL;
  assert_ok(gcap_mem_alloc_async(f->s, 128, &p));
  assert_ok(gcap_mem_free_async(f->s, p));
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_end_capture(f->s, &g));
  char *text = saved(g);
  assert_non_null(strstr(text, "\"type\": \"mem_alloc\""));
  assert_non_null(strstr(text, "\"type\": \"mem_free\""));
  assert_non_null(strstr(text, "\"bytes\": \"128\""));
  assert_non_null(strstr(text, "\"pool\": false"));
  assert_non_null(strstr(text, "\"alloc\": 0")); /* the free names the node that allocated */
  gcap_graph *h = NULL;
  assert_status(load_text(f->ctx, text, &h), GCAP_ERROR_NOT_SUPPORTED);
  test_assert_message_contains("node 0: a mem_alloc node");
  free(text);
  gcap_graph_destroy(g);
}

/* ---------------------------------------------------------------- bad files */

#define HEADER "{\"format\": \"gcap-graph\", \"version\": 1, \"kernels\": [%s], \"allocations\": [], \"events\": %d, "
#define SCALE_ENTRY "{\"name\": \"scale\", \"param_sizes\": [8, 4], \"param_access\": [\"read_write\", \"none\"]}"

static void assert_refused(struct fx *f, const char *text, gcap_status want, const char *fragment) {
  gcap_graph *g = NULL;
  assert_status(load_text(f->ctx, text, &g), want);
  test_assert_message_contains(fragment);
}

static void assert_graph_refused(struct fx *f, const char *kernels, int events, const char *graph, gcap_status want,
                                 const char *fragment) {
  char text[4096];
  snprintf(text, sizeof text, HEADER "\"graph\": %s}", kernels, events, graph);
  assert_refused(f, text, want, fragment);
}

static void test_not_json(void **state) {
  struct fx *f = *state;
  assert_refused(f, "this is not json", GCAP_ERROR_INVALID_VALUE, "not valid JSON: line 1");
  assert_refused(f, "{\"format\": \"gcap-graph\", \"version\": 1, \"graph\": {\"nod", GCAP_ERROR_INVALID_VALUE,
                 "not valid JSON");
  assert_refused(f, "[1, 2]", GCAP_ERROR_INVALID_VALUE, "is not a JSON object");
  assert_refused(f, "{\"format\": \"gcap-graph\", \"format\": \"x\"}", GCAP_ERROR_INVALID_VALUE, "duplicate");
}

static void test_truncated(void **state) {
  struct fx *f = *state;
  gcap_event *e = NULL;
  assert_ok(gcap_event_create(f->ctx, &e));
  gcap_graph *g = every_type(f, e);
  char *text = saved(g);
  size_t len = strlen(text);
  for (size_t cut = 0; cut < len - 1; cut += len / 50 + 1) {
    text[cut] = '\0';
    gcap_graph *h = NULL;
    assert_status(load_text(f->ctx, text, &h), GCAP_ERROR_INVALID_VALUE);
    free(text);
    text = saved(g);
  }
  free(text);
  gcap_graph_destroy(g);
  assert_ok(gcap_event_destroy(e));
}

static void test_wrong_format_or_version(void **state) {
  struct fx *f = *state;
  assert_refused(f, "{\"format\": \"other\", \"version\": 1}", GCAP_ERROR_INVALID_VALUE, "\"format\" is not");
  assert_refused(f, "{\"format\": \"gcap-graph\", \"version\": 4, \"graph\": {}}", GCAP_ERROR_NOT_SUPPORTED,
                 "version 4; this gcap reads versions 1 to 3");
  assert_refused(f, "{\"format\": \"gcap-graph\", \"version\": 0, \"graph\": {}}", GCAP_ERROR_NOT_SUPPORTED,
                 "version 0; this gcap reads versions 1 to 3");
  assert_refused(f, "{\"format\": \"gcap-graph\", \"version\": \"1\"}", GCAP_ERROR_INVALID_VALUE,
                 "\"version\" is not a number");
}

static void test_wrong_types_and_missing_fields(void **state) {
  struct fx *f = *state;
  assert_graph_refused(f, "", 0, "[]", GCAP_ERROR_INVALID_VALUE, "\"graph\" is not an object");
  assert_graph_refused(f, "", 0, "{\"nodes\": {}, \"edges\": []}", GCAP_ERROR_INVALID_VALUE, "\"nodes\" is not");
  assert_graph_refused(f, "", 0, "{\"nodes\": [{\"type\": \"teleport\"}], \"edges\": []}", GCAP_ERROR_INVALID_VALUE,
                       "node 0: \"type\" is not a node type");
  assert_graph_refused(f, "", 0, "{\"nodes\": [7], \"edges\": []}", GCAP_ERROR_INVALID_VALUE, "node 0: \"type\"");
  assert_graph_refused(f, "", 0,
                       "{\"nodes\": [{\"type\": \"memset\", \"dst\": \"0x100\", \"value\": 0, \"element_size\": 3, "
                       "\"width\": \"4\", \"height\": \"1\", \"pitch\": \"0\"}], \"edges\": []}",
                       GCAP_ERROR_INVALID_VALUE, "node 0: element_size 3 is not 1, 2 or 4");
  assert_graph_refused(f, "", 0,
                       "{\"nodes\": [{\"type\": \"memcpy\", \"dst\": \"0x100\", \"src\": 5.5, \"bytes\": \"4\", "
                       "\"kind\": \"default\"}], \"edges\": []}",
                       GCAP_ERROR_INVALID_VALUE, "node 0: \"src\" is neither a number nor a string");
  assert_graph_refused(
      f, "", 0,
      "{\"nodes\": [{\"type\": \"memcpy\", \"dst\": \"0x100\", \"src\": \"0x200\", \"bytes\": \"4\"}], "
      "\"edges\": []}",
      GCAP_ERROR_INVALID_VALUE, "\"kind\" is not one of");
  assert_graph_refused(f, "", 0,
                       "{\"nodes\": [{\"type\": \"memcpy\", \"dst\": \"0x100\", \"src\": \"0xzz\", \"bytes\": \"4\", "
                       "\"kind\": \"default\"}], \"edges\": []}",
                       GCAP_ERROR_INVALID_VALUE, "\"src\" is not a number");
  assert_graph_refused(f, "", 0, "{\"nodes\": [{\"type\": \"event_record\", \"event\": 0}], \"edges\": []}",
                       GCAP_ERROR_INVALID_VALUE, "\"event\" is not below");
  assert_graph_refused(f, "", 0,
                       "{\"nodes\": [{\"type\": \"graph\", \"graph\": {\"nodes\": [{}], \"edges\": []}}], "
                       "\"edges\": []}",
                       GCAP_ERROR_INVALID_VALUE, "node 0 of the child graph in node 0");
}

static void test_bad_edges(void **state) {
  struct fx *f = *state;
  const char *two = "[{\"type\": \"empty\"}, {\"type\": \"empty\"}]";
  char graph[256];
  snprintf(graph, sizeof graph, "{\"nodes\": %s, \"edges\": [[0, 2]]}", two);
  assert_graph_refused(f, "", 0, graph, GCAP_ERROR_INVALID_VALUE, "\"edges[0]\" is not a pair of node indices");
  snprintf(graph, sizeof graph, "{\"nodes\": %s, \"edges\": [[0, 1], [1, 0]]}", two);
  assert_graph_refused(f, "", 0, graph, GCAP_ERROR_INVALID_VALUE,
                       "\"edges[1]\" (1 -> 0): edges form a cycle through node 1");
  snprintf(graph, sizeof graph, "{\"nodes\": [%s, %s, %s], \"edges\": [[0, 1], [1, 2], [2, 0]]}",
           "{\"type\": \"empty\"}", "{\"type\": \"empty\"}", "{\"type\": \"empty\"}");
  assert_graph_refused(f, "", 0, graph, GCAP_ERROR_INVALID_VALUE, "edges form a cycle through node 2");
  snprintf(graph, sizeof graph, "{\"nodes\": %s, \"edges\": [[0, 1], [0, 1]]}", two);
  assert_graph_refused(f, "", 0, graph, GCAP_ERROR_INVALID_VALUE, "\"edges[1]\" repeats the edge 0 -> 1");
  snprintf(graph, sizeof graph, "{\"nodes\": %s, \"edges\": [[1, 1]]}", two);
  assert_graph_refused(f, "", 0, graph, GCAP_ERROR_INVALID_VALUE, "\"edges[0]\" is a self edge on node 1");
  snprintf(graph, sizeof graph, "{\"nodes\": %s, \"edges\": [[0, -1]]}", two);
  assert_graph_refused(f, "", 0, graph, GCAP_ERROR_INVALID_VALUE, "\"edges[0]\" is not a pair");
  snprintf(graph, sizeof graph,
           "{\"nodes\": [{\"type\": \"graph\", \"graph\": {\"nodes\": %s, "
           "\"edges\": [[0, 1], [1, 0]]}}], \"edges\": []}",
           two);
  assert_graph_refused(f, "", 0, graph, GCAP_ERROR_INVALID_VALUE, "the child graph in node 0: \"edges[1]\"");
  snprintf(graph, sizeof graph, "{\"nodes\": %s}", two);
  assert_graph_refused(f, "", 0, graph, GCAP_ERROR_INVALID_VALUE, "\"edges\" is not an array");
}

static void test_events(void **state) {
  struct fx *f = *state;
  const char *skip = "{\"nodes\": [{\"type\": \"event_record\", \"event\": 1}], \"edges\": []}";
  assert_graph_refused(f, "", 2, skip, GCAP_ERROR_INVALID_VALUE, "node 0: \"event\" skips a number");
  assert_graph_refused(f, "", 1, "{\"nodes\": [{\"type\": \"event_wait\", \"event\": \"x\"}], \"edges\": []}",
                       GCAP_ERROR_INVALID_VALUE, "node 0: \"event\" is not a number");
  /* A large "events" with nothing using it makes nothing: events are made on first use. */
  char text[512];
  snprintf(text, sizeof text,
           HEADER "\"graph\": {\"nodes\": [{\"type\": \"event_record\", \"event\": 0}, "
                  "{\"type\": \"event_wait\", \"event\": 0}], \"edges\": [[0, 1]]}}",
           "", 1000000000);
  gcap_graph *g = loaded(f->ctx, text);
  char *again = saved(g);
  assert_non_null(strstr(again, "\"events\": 1,"));
  free(again);
  gcap_graph_destroy(g);
}

/* Copies and fills keep addresses nothing here has allocated, but every other field is checked. */
static void test_copies_and_fills_away_from_home(void **state) {
  struct fx *f = *state;
#define COPY_NODE                                                                                                      \
  "{\"nodes\": [{\"type\": \"memcpy\", \"dst\": \"0x7f0000001000\", \"src\": \"0x7f0000002000\", \"bytes\": \"%s\", "  \
  "\"kind\": \"device_to_device\"}], \"edges\": []}"
  char graph[512], text[1024];
  snprintf(graph, sizeof graph, COPY_NODE, "4096");
  snprintf(text, sizeof text, HEADER "\"graph\": %s}", "", 0, graph);
  gcap_graph *g = loaded(f->ctx, text);
  gcap_node *n[1];
  nodes_of(g, n, 1);
  gcap_memcpy_node_params cp;
  assert_ok(gcap_node_get_memcpy_params(n[0], &cp));
  assert_ptr_equal(cp.dst, (void *)(uintptr_t)0x7f0000001000u);
  assert_ptr_equal(cp.src, (const void *)(uintptr_t)0x7f0000002000u);
  assert_int_equal(cp.bytes, 4096);
  if (test_on_sim()) { /* where it would run, the simulator refuses memory it does not know */
    gcap_exec *x = NULL;
    assert_status(gcap_graph_instantiate(g, 0, &x), GCAP_ERROR_INVALID_VALUE);
    assert_null(x);
  }
  gcap_graph_destroy(g);
  snprintf(graph, sizeof graph, COPY_NODE, "0");
  assert_graph_refused(f, "", 0, graph, GCAP_ERROR_INVALID_VALUE, "node 0: bytes is 0");
  snprintf(graph, sizeof graph, COPY_NODE, "18446744073709551615");
  assert_graph_refused(f, "", 0, graph, GCAP_ERROR_INVALID_VALUE, "wraps the address space");
  snprintf(graph, sizeof graph, COPY_NODE, "18446744073709551616");
  assert_graph_refused(f, "", 0, graph, GCAP_ERROR_INVALID_VALUE, "node 0: \"bytes\" is out of range");
  snprintf(graph, sizeof graph, COPY_NODE, "0x0x10");
  assert_graph_refused(f, "", 0, graph, GCAP_ERROR_INVALID_VALUE, "node 0: \"bytes\" is not a number");
  assert_graph_refused(f, "", 0,
                       "{\"nodes\": [{\"type\": \"memset\", \"dst\": \"0x7f0000000002\", \"value\": 0, "
                       "\"element_size\": 4, \"width\": \"4\", \"height\": \"1\", \"pitch\": \"0\"}], \"edges\": []}",
                       GCAP_ERROR_INVALID_VALUE, "node 0: dst 0x7f0000000002 is not aligned");
  assert_graph_refused(f, "", 0,
                       "{\"nodes\": [{\"type\": \"memset\", \"dst\": \"0x7f0000000000\", \"value\": 0, "
                       "\"element_size\": 4, \"width\": \"4\", \"height\": \"2\", \"pitch\": \"8\"}], \"edges\": []}",
                       GCAP_ERROR_INVALID_VALUE, "node 0: pitch 8 is below width * element_size = 16");
}

static void test_write_error(void **state) {
  struct fx *f = *state;
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(f->ctx, &g));
  FILE *ro = fopen("/dev/null", "r");
  assert_non_null(ro);
  assert_status(gcap_graph_save(g, ro), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("out could not be written");
  fclose(ro);
  gcap_graph_destroy(g);
}

static void test_kernels(void **state) {
  struct fx *f = *state;
#define KERNEL_NODE                                                                                                    \
  "{\"nodes\": [{\"type\": \"kernel\", \"kernel\": \"scale\", \"grid\": [1, 1, 1], \"block\": [1, 1, 1], "             \
  "\"shared_mem_bytes\": 0, \"args\": [\"%s\", \"%s\"]}], \"edges\": []}"
  char graph[512];
  snprintf(graph, sizeof graph, KERNEL_NODE, "0001000000000000", "0000803f");
  assert_graph_refused(f, "{\"name\": \"missing\", \"param_sizes\": [], \"param_access\": []}", 0, graph,
                       GCAP_ERROR_NOT_FOUND, "kernel \"missing\"");
  assert_graph_refused(f, "{\"name\": \"scale\", \"param_sizes\": [8, 8], \"param_access\": [\"none\", \"none\"]}", 0,
                       graph, GCAP_ERROR_INVALID_VALUE, "parameter 1 is 4 bytes here");
  assert_graph_refused(f, "{\"name\": \"scale\", \"param_sizes\": [8], \"param_access\": [\"none\"]}", 0, graph,
                       GCAP_ERROR_INVALID_VALUE, "takes 2 parameters here but 1");
  assert_graph_refused(f, "{\"name\": \"scale\", \"param_sizes\": [8, 4], \"param_access\": [\"none\", \"often\"]}", 0,
                       graph, GCAP_ERROR_INVALID_VALUE, "\"param_access\" holds a name");
  assert_graph_refused(f, "", 0, graph, GCAP_ERROR_INVALID_VALUE, "missing from the file's kernel table");
  snprintf(graph, sizeof graph, KERNEL_NODE, "00010000", "0000803f");
  assert_graph_refused(f, SCALE_ENTRY, 0, graph, GCAP_ERROR_INVALID_VALUE, "\"args[0]\" has 8 hex digits");
  snprintf(graph, sizeof graph, KERNEL_NODE, "0001000000000000", "0000803G");
  assert_graph_refused(f, SCALE_ENTRY, 0, graph, GCAP_ERROR_INVALID_VALUE, "\"args[1]\" is not lowercase hex");
  snprintf(graph, sizeof graph, KERNEL_NODE, "0001000000000000", "0000803f");
  char text[1024];
  snprintf(text, sizeof text, HEADER "\"graph\": %s}", SCALE_ENTRY, 0, graph);
  gcap_graph *g = loaded(f->ctx, text); /* and the well-formed one loads */
  gcap_graph_destroy(g);
}

static void test_deep_nesting(void **state) {
  struct fx *f = *state;
  size_t cap = 70 * 64 + 256;
  char *graph = calloc(1, cap), *text = calloc(1, cap + 256);
  assert_non_null(graph);
  assert_non_null(text);
  strcpy(graph, "{\"nodes\": [], \"edges\": []}");
  for (int depth = 0; depth < 70; depth++) {
    char *wrapped = calloc(1, cap);
    assert_non_null(wrapped);
    snprintf(wrapped, cap, "{\"nodes\": [{\"type\": \"graph\", \"graph\": %s}], \"edges\": []}", graph);
    free(graph);
    graph = wrapped;
  }
  snprintf(text, cap + 256, HEADER "\"graph\": %s}", "", 0, graph);
  assert_refused(f, text, GCAP_ERROR_INVALID_VALUE, "deeper than 64 levels");
  free(graph);
  free(text);
}

static void test_bad_arguments(void **state) {
  struct fx *f = *state;
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(f->ctx, &g));
  assert_status(gcap_graph_save(NULL, stdout), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_graph_save(g, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("out is NULL");
  gcap_graph *out = (gcap_graph *)&out;
  assert_status(gcap_graph_load(NULL, stdin, &out), GCAP_ERROR_INVALID_HANDLE);
  assert_null(out);
  assert_status(gcap_graph_load(f->ctx, NULL, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("in is NULL");
  assert_status(gcap_graph_load(f->ctx, stdin, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("out is NULL");
  out = (gcap_graph *)&out;
  assert_status(gcap_graph_load((gcap_context *)(void *)g, stdin, &out), GCAP_ERROR_INVALID_HANDLE);
  assert_null(out);
  gcap_graph_destroy(g);
  assert_status(gcap_graph_save(g, stdout), GCAP_ERROR_INVALID_HANDLE); /* destroyed */
  test_assert_message_contains("not a live graph handle");
}

/* ---------------------------------------------------------------- conditional handles */

/*
 * countdown_capped(words, h): words[1] counts passes, words[0] counts down and h says whether it is
 * still above 0. Past 64 passes it hands gcap_sim_set_conditional the handle 0 instead, which fails
 * the launch: a loop whose handle no kernel clears fails the test instead of running forever.
 */
static void countdown_capped_sim(const gcap_sim_thread *t, void *const *args) {
  uint32_t *w;
  gcap_conditional_handle h;
  memcpy(&w, args[0], sizeof w);
  memcpy(&h, args[1], sizeof h);
  if (t->thread_idx.x != 0) return;
  if (++w[1] > 64) {
    gcap_sim_set_conditional(0, 0);
    return;
  }
  --w[0];
  gcap_sim_set_conditional(h, w[0] != 0);
}

static const size_t countdown_capped_sizes[] = {sizeof(uint32_t *), sizeof(gcap_conditional_handle)};

static gcap_kernel *countdown_capped_kernel(struct fx *f) {
  const gcap_kernel_def defs[] = {
      {.name = "countdown_capped",
       .sim_fn = countdown_capped_sim,
       .num_params = 2,
       .param_sizes = countdown_capped_sizes},
  };
  gcap_module_desc d = {.kernels = defs, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(test_module_load(f->ctx, &d, &m));
  return test_kernel_of(m, "countdown_capped");
}

/*
 * Handle 0 (default 0) guards an IF with an empty body; handle 1 (default 1, `flags`) is the
 * handle of the WHILE node that follows it, whose body runs countdown_capped(words, handle 1).
 */
static gcap_graph *while_graph(struct fx *f, gcap_kernel *k, uint32_t *words, unsigned flags,
                               gcap_conditional_handle *loop_handle) {
  gcap_graph *g = test_graph_create(f->ctx), *if_body[1] = {NULL}, *body[1] = {NULL};
  gcap_conditional_handle guard = 0, h = 0;
  assert_ok(gcap_graph_conditional_handle_create(g, 0, 0, &guard));
  assert_ok(gcap_graph_conditional_handle_create(g, 1, flags, &h));
  gcap_conditional_node_params ifp = {guard, GCAP_CONDITIONAL_IF, 1, if_body},
                               wp = {h, GCAP_CONDITIONAL_WHILE, 1, body};
  gcap_node *first = NULL, *loop = NULL, *kernel = NULL;
  assert_ok(gcap_graph_add_conditional_node(g, NULL, 0, &ifp, &first));
  assert_ok(gcap_graph_add_conditional_node(g, &first, 1, &wp, &loop));
  void *args[] = {&words, &h};
  gcap_kernel_node_params kp = {k, {1, 1, 1}, {1, 1, 1}, 0, args};
  assert_ok(gcap_graph_add_kernel_node(body[0], NULL, 0, &kp, &kernel));
  *loop_handle = h;
  return g;
}

/* The WHILE node of a while_graph, its handle, and the handle its body's kernel holds as argument 1. */
static void loop_of(const gcap_graph *g, gcap_conditional_handle *node_handle, gcap_conditional_handle *arg_handle) {
  gcap_node *nodes[2];
  assert_int_equal(nodes_of(g, nodes, 2), 2);
  gcap_graph *body[1] = {NULL};
  gcap_conditional_node_params p = {.body_out = body};
  assert_ok(gcap_node_get_conditional_params(nodes[1], &p));
  assert_int_equal(p.type, GCAP_CONDITIONAL_WHILE);
  *node_handle = p.handle;
  gcap_node *kernel = NULL;
  assert_int_equal(nodes_of(body[0], &kernel, 1), 1);
  gcap_kernel_node_params kp;
  assert_ok(gcap_node_get_kernel_params(kernel, &kp));
  memcpy(arg_handle, kp.args[1], sizeof *arg_handle);
}

/* One launch of x with words = {counter, 0}; the words after it in *after. */
static gcap_status launch_counting(struct fx *f, gcap_exec *x, uint32_t *words, uint32_t counter, uint32_t after[2]) {
  uint32_t w[2] = {counter, 0};
  assert_ok(gcap_memcpy(f->ctx, words, w, sizeof w, GCAP_MEMCPY_HOST_TO_DEVICE));
  gcap_status st = gcap_exec_launch(x, f->s);
  if (st == GCAP_SUCCESS) st = gcap_stream_synchronize(f->s);
  assert_ok(gcap_memcpy(f->ctx, after, words, sizeof w, GCAP_MEMCPY_DEVICE_TO_HOST));
  return st;
}

/* The lowercase hex of a handle's bytes, as "args" would hold them. */
static void handle_hex(gcap_conditional_handle h, char out[2 * sizeof h + 1]) {
  unsigned char b[sizeof h];
  memcpy(b, &h, sizeof h);
  for (size_t i = 0; i < sizeof h; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/*
 * A kernel argument holding a handle of the saved graph holds the loaded graph's handle after
 * loading, so the loaded WHILE ends without the original graph, which is destroyed first.
 */
static void test_handle_arguments_follow_the_load(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_kernel *k = countdown_capped_kernel(f);
  uint32_t *words = test_dev_alloc(f->ctx, 2 * sizeof(uint32_t));
  gcap_conditional_handle h = 0;
  gcap_graph *g = while_graph(f, k, words, GCAP_GRAPH_COND_ASSIGN_DEFAULT, &h);
  char *text = saved(g);
  assert_non_null(strstr(text, "\"version\": 3,"));
  assert_non_null(strstr(text, "\"handle_args\": [\n         [\n          1,\n          1\n         ]\n        ]"));
  char hex[2 * sizeof h + 1];
  handle_hex(h, hex);
  assert_null(strstr(text, hex)); /* this process's handle value is not in the file */
  assert_non_null(strstr(text, "\"0000000000000000\""));

  gcap_graph *l = loaded(f->ctx, text);
  gcap_conditional_handle node_handle = 0, arg_handle = 0;
  loop_of(l, &node_handle, &arg_handle);
  assert_true(node_handle != h);
  assert_true(arg_handle == node_handle);
  char *again = saved(l); /* deterministic: the loaded graph's handle is written as the same index */
  assert_string_equal(again, text);
  free(again);
  free(text);
  gcap_graph_destroy(g);

  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(l, 0, &x));
  uint32_t after[2];
  assert_ok(launch_counting(f, x, words, 5, after));
  assert_int_equal(after[0], 0);
  assert_int_equal(after[1], 5); /* five passes, then the loaded handle is 0 and the loop ends */
  assert_ok(launch_counting(f, x, words, 3, after));
  assert_int_equal(after[0], 0);
  assert_int_equal(after[1], 3);
  gcap_exec_destroy(x);
  gcap_graph_destroy(l);
}

/*
 * With the original alive, the loaded graph's kernel sets the loaded handle, not the original's:
 * without ASSIGN_DEFAULT a handle keeps its last value between launches, so each graph's next
 * launch shows whose handle the other one's launch set.
 */
static void test_loaded_and_original_handles_are_independent(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_kernel *k = countdown_capped_kernel(f);
  uint32_t *words = test_dev_alloc(f->ctx, 2 * sizeof(uint32_t));
  gcap_conditional_handle h = 0;
  gcap_graph *g = while_graph(f, k, words, 0, &h);
  char *text = saved(g);
  gcap_graph *l = loaded(f->ctx, text);
  free(text);
  gcap_exec *xg = NULL, *xl = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &xg));
  assert_ok(gcap_graph_instantiate(l, 0, &xl));
  uint32_t after[2];
  assert_ok(launch_counting(f, xl, words, 3, after)); /* the loaded handle: 1, then 0 after 3 passes */
  assert_int_equal(after[0], 0);
  assert_int_equal(after[1], 3);
  assert_ok(launch_counting(f, xg, words, 4, after)); /* the original's is still its default 1 */
  assert_int_equal(after[0], 0);
  assert_int_equal(after[1], 4);
  assert_ok(launch_counting(f, xl, words, 2, after)); /* the loaded one kept its 0: no pass */
  assert_int_equal(after[0], 2);
  assert_int_equal(after[1], 0);
  gcap_exec_destroy(xl);
  gcap_graph_destroy(l);
  assert_ok(launch_counting(f, xg, words, 2, after)); /* and the original kept its own 0 */
  assert_int_equal(after[0], 2);
  assert_int_equal(after[1], 0);
  gcap_exec_destroy(xg);
  gcap_graph_destroy(g);
}

/* Version 2 had conditional nodes; version 3 added "handle_args". */
#define COND_HEADER                                                                                                    \
  "{\"format\": \"gcap-graph\", \"version\": %d, \"kernels\": [%s], \"allocations\": [], \"events\": 0, "              \
  "\"conditionals\": [{\"default\": 1, \"flags\": 0}], "
#define IF_NODE "{\"type\": \"conditional\", \"handle\": 0, \"conditional_type\": \"if\", \"bodies\": [%s]}"
#define EMPTY_GRAPH "{\"nodes\": [], \"edges\": []}"
#define CAPPED_ENTRY                                                                                                   \
  "{\"name\": \"countdown_capped\", \"param_sizes\": [8, 8], \"param_access\": [\"unknown\", \"unknown\"]}"

static void assert_cond_refused(struct fx *f, int version, const char *kernels, const char *graph, gcap_status want,
                                const char *fragment) {
  char text[4096];
  snprintf(text, sizeof text, COND_HEADER "\"graph\": %s}", version, kernels, graph);
  assert_refused(f, text, want, fragment);
}

/* Child graphs cannot hold conditional nodes: the loader refuses one as the API does. */
static void test_conditional_in_a_child_graph_is_refused(void **state) {
  struct fx *f = *state;
  /* what the API says when building such a graph */
  gcap_graph *parent = test_graph_create(f->ctx), *child = test_graph_create(f->ctx), *body[1] = {NULL};
  gcap_node *cn = NULL, *n = NULL;
  assert_ok(gcap_graph_add_child_graph_node(parent, NULL, 0, child, &cn));
  gcap_graph *inside = NULL;
  assert_ok(gcap_node_get_child_graph(cn, &inside));
  gcap_conditional_handle h = 0;
  assert_ok(gcap_graph_conditional_handle_create(parent, 1, 0, &h));
  gcap_conditional_node_params p = {h, GCAP_CONDITIONAL_IF, 1, body};
  assert_status(gcap_graph_add_conditional_node(inside, NULL, 0, &p, &n), GCAP_ERROR_NOT_SUPPORTED);
  test_assert_message_contains("cannot hold conditional nodes");
  gcap_graph_destroy(child);
  gcap_graph_destroy(parent);

  char graph[1024], if_node[256];
  snprintf(if_node, sizeof if_node, IF_NODE, EMPTY_GRAPH);
  /* node 1 is a child graph whose node 0 is an IF */
  snprintf(graph, sizeof graph,
           "{\"nodes\": [{\"type\": \"empty\"}, {\"type\": \"graph\", \"graph\": "
           "{\"nodes\": [%s], \"edges\": []}}], \"edges\": [[0, 1]]}",
           if_node);
  assert_cond_refused(f, 2, "", graph, GCAP_ERROR_NOT_SUPPORTED,
                      "gcap_graph_load: node 0 of the child graph in node 1: a conditional node in the graph of a "
                      "child-graph node, which cannot hold conditional nodes");
  /* a child graph inside the body of a top-level IF, holding an IF */
  char child_in_body[1024], outer[1536];
  snprintf(child_in_body, sizeof child_in_body,
           "{\"nodes\": [{\"type\": \"graph\", \"graph\": {\"nodes\": [%s], "
           "\"edges\": []}}], \"edges\": []}",
           if_node);
  snprintf(outer, sizeof outer, "{\"nodes\": [" IF_NODE "], \"edges\": []}", child_in_body);
  assert_cond_refused(f, 2, "", outer, GCAP_ERROR_NOT_SUPPORTED,
                      "gcap_graph_load: node 0 of the child graph in node 0 of the child graph in node 0: a "
                      "conditional node in the graph of a child-graph node");
  /* an IF in the body of an IF, outside any child graph, loads */
  char body_if[512], fine[2048];
  snprintf(body_if, sizeof body_if, "{\"nodes\": [%s], \"edges\": []}", if_node);
  snprintf(fine, sizeof fine, COND_HEADER "\"graph\": {\"nodes\": [" IF_NODE "], \"edges\": []}}", 2, "", body_if);
  gcap_graph *g = loaded(f->ctx, fine);
  assert_int_equal(gcap_graph_node_count(g), 1);
  gcap_graph_destroy(g);
}

static void assert_handle_args_refused(struct fx *f, const char *handle_args, const char *fragment) {
  char graph[1024];
  snprintf(graph, sizeof graph,
           "{\"nodes\": [" IF_NODE ", {\"type\": \"kernel\", \"kernel\": \"scale\", "
           "\"grid\": [1, 1, 1], \"block\": [1, 1, 1], \"shared_mem_bytes\": 0, "
           "\"args\": [\"0000000000000000\", \"00000000\"], \"handle_args\": %s}], \"edges\": []}",
           EMPTY_GRAPH, handle_args);
  assert_cond_refused(f, 3, SCALE_ENTRY, graph, GCAP_ERROR_INVALID_VALUE, fragment);
}

/* "handle_args" must name parameters of the kernel that are 8 bytes, once each, and handles the file has. */
static void test_bad_handle_args(void **state) {
  struct fx *f = *state;
  assert_handle_args_refused(f, "5", "gcap_graph_load: node 1: \"handle_args\" is not an array");
  assert_handle_args_refused(f, "[[0]]", "node 1: \"handle_args[0]\" is not a pair [parameter index, handle index]");
  assert_handle_args_refused(f, "[[0, -1]]", "\"handle_args[0]\" is not a pair [parameter index, handle index]");
  assert_handle_args_refused(f, "[[2, 0]]", "node 1: \"handle_args[0]\" names parameter 2 of a kernel with 2");
  assert_handle_args_refused(f, "[[1, 0]]",
                             "node 1: \"handle_args[0]\" names parameter 1, of 4 bytes; a conditional handle has 8");
  assert_handle_args_refused(f, "[[0, 1]]",
                             "node 1: \"handle_args[0]\" names handle 1 of a file with 1 (\"conditionals\")");
  assert_handle_args_refused(f, "[[0, 0], [0, 0]]", "node 1: \"handle_args[1]\" names parameter 0 again");
}

/* A build without jansson: both calls refuse, saying why; the rest of this file does not apply. */
static bool built_without_json(void) {
  gcap_context *ctx = test_context_create();
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  FILE *f = tmpfile();
  assert_non_null(f);
  gcap_status st = gcap_graph_save(g, f);
  bool without = st == GCAP_ERROR_NOT_SUPPORTED;
  if (without) {
    test_assert_message_contains("without JSON support");
    gcap_graph *h = (gcap_graph *)&h;
    assert_status(gcap_graph_load(ctx, f, &h), GCAP_ERROR_NOT_SUPPORTED);
    assert_null(h);
  } else {
    assert_ok(st);
  }
  fclose(f);
  gcap_graph_destroy(g);
  gcap_context_destroy(ctx);
  return without;
}

/* A body saved on its own carries its graph's handles: its nested conditional node loads. */
static void test_body_saved_alone_loads(void **state) {
  struct fx *f = *state;
  gcap_graph *g = NULL, *outer_body = NULL, *inner_body = NULL;
  assert_ok(gcap_graph_create(f->ctx, &g));
  gcap_conditional_handle outer = 0, inner = 0;
  assert_ok(gcap_graph_conditional_handle_create(g, 1, 0, &outer));
  assert_ok(gcap_graph_conditional_handle_create(g, 0, 0, &inner));
  gcap_conditional_node_params po = {outer, GCAP_CONDITIONAL_IF, 1, &outer_body};
  gcap_node *n = NULL, *nested = NULL;
  assert_ok(gcap_graph_add_conditional_node(g, NULL, 0, &po, &n));
  gcap_conditional_node_params pi = {inner, GCAP_CONDITIONAL_IF, 1, &inner_body};
  assert_ok(gcap_graph_add_conditional_node(outer_body, NULL, 0, &pi, &nested));
  char *text = saved(outer_body);
  assert_non_null(strstr(text, "\"conditionals\""));
  assert_non_null(strstr(text, "\"handle\": 1"));
  gcap_graph *back = loaded(f->ctx, text);
  assert_int_equal(gcap_graph_node_count(back), 1);
  gcap_node *got = NULL;
  size_t count = 1;
  assert_ok(gcap_graph_get_nodes(back, &got, &count));
  assert_int_equal(gcap_node_get_type(got), GCAP_NODE_CONDITIONAL);
  free(text);
  gcap_graph_destroy(back);
  gcap_graph_destroy(g);
}

int main(void) {
  test_require_backend();
  if (built_without_json()) return 77;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_round_trip_every_type, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loaded_graph_runs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_extents_survive_the_allocation, setup, teardown),
      cmocka_unit_test_setup_teardown(test_documented_example, setup, teardown),
      cmocka_unit_test_setup_teardown(test_documented_handle_example, setup, teardown),
      cmocka_unit_test_setup_teardown(test_version_1_still_loads, setup, teardown),
      cmocka_unit_test_setup_teardown(test_graph_allocations_save_but_do_not_load, setup, teardown),
      cmocka_unit_test_setup_teardown(test_not_json, setup, teardown),
      cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wrong_format_or_version, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wrong_types_and_missing_fields, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_edges, setup, teardown),
      cmocka_unit_test_setup_teardown(test_events, setup, teardown),
      cmocka_unit_test_setup_teardown(test_copies_and_fills_away_from_home, setup, teardown),
      cmocka_unit_test_setup_teardown(test_write_error, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kernels, setup, teardown),
      cmocka_unit_test_setup_teardown(test_deep_nesting, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
      cmocka_unit_test_setup_teardown(test_handle_arguments_follow_the_load, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loaded_and_original_handles_are_independent, setup, teardown),
      cmocka_unit_test_setup_teardown(test_conditional_in_a_child_graph_is_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_handle_args, setup, teardown),
      cmocka_unit_test_setup_teardown(test_body_saved_alone_loads, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
