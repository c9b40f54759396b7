/* Graphviz output: gcap_graph_write_dot's structure, labels, flags and errors. */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define assert_fails(expr, expected, fn)                                                                               \
  do {                                                                                                                 \
    assert_status((expr), (expected));                                                                                 \
    assert_true(strlen(gcap_last_error_message()) > 0);                                                                \
    test_assert_message_contains(fn);                                                                                  \
  } while (0)

struct fixture {
  gcap_context *ctx;
  gcap_module *module;
  gcap_kernel *kernel;
  void *dev;
  void *host;
  gcap_event *event;
};

static const size_t saxpy_sizes[2] = {sizeof(float), sizeof(void *)};

static int setup(void **state) {
  struct fixture *fx = calloc(1, sizeof *fx);
  if (fx == NULL) return -1;
  *state = fx;
  fx->ctx = test_context_create();
  gcap_kernel_def def = {.name = "saxpy_kernel_zq", .sim_fn = NULL, .num_params = 2, .param_sizes = saxpy_sizes};
  gcap_module_desc desc = {.image = NULL, .image_size = 0, .kernels = &def, .num_kernels = 1};
  assert_ok(test_module_load(fx->ctx, &desc, &fx->module));
  assert_ok(gcap_module_get_kernel(fx->module, "saxpy_kernel_zq", &fx->kernel));
  assert_ok(gcap_mem_alloc(fx->ctx, 8192, &fx->dev));
  assert_ok(gcap_host_alloc(fx->ctx, 8192, &fx->host));
  assert_ok(gcap_event_create(fx->ctx, &fx->event));
  return 0;
}

static int teardown(void **state) {
  struct fixture *fx = *state;
  gcap_context_destroy(fx->ctx);
  free(fx);
  return 0;
}

/* ------------------------------------------------------------- helpers */

/* The DOT text of g with `flags`, as a malloc'd string. */
static char *dot_text(const gcap_graph *g, unsigned flags) {
  FILE *f = tmpfile();
  assert_non_null(f);
  assert_ok(gcap_graph_write_dot(g, f, flags));
  assert_string_equal(gcap_last_error_message(), "");
  long len = ftell(f);
  assert_true(len > 0);
  rewind(f);
  char *buf = malloc((size_t)len + 1);
  assert_non_null(buf);
  size_t got = fread(buf, 1, (size_t)len, f);
  assert_int_equal(got, (size_t)len);
  buf[len] = '\0';
  fclose(f);
  return buf;
}

static size_t count_substr(const char *text, const char *needle) {
  size_t n = 0, len = strlen(needle);
  for (const char *p = strstr(text, needle); p != NULL; p = strstr(p + len, needle)) n++;
  return n;
}

/* Node statements: lines with a label attribute that are not edges. */
static size_t count_node_statements(const char *text) {
  size_t n = 0;
  const char *line = text;
  while (*line) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char *copy = malloc(len + 1);
    assert_non_null(copy);
    memcpy(copy, line, len);
    copy[len] = '\0';
    if (strstr(copy, "label=") != NULL && strstr(copy, "->") == NULL) n++;
    free(copy);
    line += len;
    if (*line == '\n') line++;
  }
  return n;
}

static bool starts_with_digraph(const char *text) {
  while (*text == ' ' || *text == '\t' || *text == '\n') text++;
  return strncmp(text, "digraph", 7) == 0;
}

/* The checks every output must pass. */
static void expect_shape(const gcap_graph *g, const char *text) {
  assert_true(starts_with_digraph(text));
  assert_int_equal(count_substr(text, "digraph"), 1);
  assert_int_equal(count_substr(text, "->"), gcap_graph_edge_count(g));
  assert_int_equal(count_node_statements(text), gcap_graph_node_count(g));
  assert_non_null(strchr(text, '{'));
  assert_non_null(strrchr(text, '}'));
  assert_true(strrchr(text, '}') > strchr(text, '{'));
}

/* Feeds text to `dot -Tsvg` when Graphviz is installed; it must accept it. */
static bool have_dot(void) { return access("/usr/bin/dot", X_OK) == 0; }

static void expect_valid_graphviz(const char *text) {
  if (!have_dot()) return;
  FILE *p = popen("/usr/bin/dot -Tsvg -o /dev/null", "w");
  assert_non_null(p);
  assert_int_equal(fputs(text, p) >= 0, 1);
  int rc = pclose(p);
  assert_true(WIFEXITED(rc));
  assert_int_equal(WEXITSTATUS(rc), 0);
}

static gcap_node *add_empty(gcap_graph *g, gcap_node *const *deps, size_t n) {
  gcap_node *out = NULL;
  assert_ok(gcap_graph_add_empty_node(g, deps, n, &out));
  return out;
}

static gcap_node *add_kernel(struct fixture *fx, gcap_graph *g, gcap_node *const *deps, size_t n) {
  float a = 2.0f;
  void *x = fx->dev;
  void *args[2] = {&a, &x};
  gcap_kernel_node_params p = {.kernel = fx->kernel,
                               .grid = GCAP_DIM3(7, 3, 1),
                               .block = GCAP_DIM3(128, 1, 1),
                               .shared_mem_bytes = 0,
                               .args = args};
  gcap_node *out = NULL;
  assert_ok(gcap_graph_add_kernel_node(g, deps, n, &p, &out));
  return out;
}

static gcap_node *add_memcpy(struct fixture *fx, gcap_graph *g, gcap_node *const *deps, size_t n, size_t bytes) {
  gcap_memcpy_node_params p = {.dst = fx->dev, .src = fx->host, .bytes = bytes, .kind = GCAP_MEMCPY_HOST_TO_DEVICE};
  gcap_node *out = NULL;
  assert_ok(gcap_graph_add_memcpy_node(g, deps, n, &p, &out));
  return out;
}

static void host_fn(void *user_data) { (void)user_data; }

/* --------------------------------------------------------------- tests */

static void test_empty_graph(void **state) {
  struct fixture *fx = *state;
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(fx->ctx, &g));
  char *text = dot_text(g, 0);
  expect_shape(g, text);
  expect_valid_graphviz(text);
  free(text);
  gcap_graph_destroy(g);
}

static void test_shapes(void **state) {
  struct fixture *fx = *state;
  gcap_graph *g = NULL;

  /* A single node. */
  assert_ok(gcap_graph_create(fx->ctx, &g));
  add_empty(g, NULL, 0);
  char *text = dot_text(g, 0);
  expect_shape(g, text);
  expect_valid_graphviz(text);
  free(text);
  gcap_graph_destroy(g);

  /* A chain of 10. */
  assert_ok(gcap_graph_create(fx->ctx, &g));
  gcap_node *prev = add_empty(g, NULL, 0);
  for (int i = 0; i < 9; i++) prev = add_empty(g, &prev, 1);
  text = dot_text(g, 0);
  assert_int_equal(count_substr(text, "->"), 9);
  expect_shape(g, text);
  expect_valid_graphviz(text);
  free(text);
  gcap_graph_destroy(g);

  /* A diamond with a wide fan-out and fan-in, plus an added edge. */
  assert_ok(gcap_graph_create(fx->ctx, &g));
  gcap_node *top = add_empty(g, NULL, 0);
  gcap_node *mid[6];
  for (int i = 0; i < 6; i++) mid[i] = add_empty(g, &top, 1);
  gcap_node *bottom = add_empty(g, mid, 6);
  gcap_node *lone = add_empty(g, NULL, 0);
  assert_ok(gcap_graph_add_dependencies(g, &lone, &bottom, 1));
  text = dot_text(g, 0);
  assert_int_equal(count_substr(text, "->"), 13);
  expect_shape(g, text);
  expect_valid_graphviz(text);
  free(text);

  /* After removing an edge and destroying a node. */
  assert_ok(gcap_graph_remove_dependencies(g, &lone, &bottom, 1));
  assert_ok(gcap_graph_destroy_node(mid[2]));
  text = dot_text(g, GCAP_DOT_VERBOSE);
  assert_int_equal(count_substr(text, "->"), 10);
  expect_shape(g, text);
  expect_valid_graphviz(text);
  free(text);
  gcap_graph_destroy(g);

  /* Several disconnected components. */
  assert_ok(gcap_graph_create(fx->ctx, &g));
  for (int c = 0; c < 4; c++) {
    gcap_node *a = add_empty(g, NULL, 0);
    gcap_node *b = add_empty(g, &a, 1);
    gcap_node *ab[2] = {a, b};
    add_empty(g, ab, 2);
  }
  text = dot_text(g, 0);
  assert_int_equal(count_substr(text, "->"), 12);
  expect_shape(g, text);
  expect_valid_graphviz(text);
  free(text);
  gcap_graph_destroy(g);
}

static void test_every_node_type(void **state) {
  struct fixture *fx = *state;
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(fx->ctx, &g));
  gcap_node *k = add_kernel(fx, g, NULL, 0);
  gcap_node *c = add_memcpy(fx, g, &k, 1, 4000);
  gcap_memset_node_params mp = {.dst = fx->dev, .value = 3, .element_size = 4, .width = 64, .height = 2, .pitch = 512};
  gcap_node *s = NULL;
  assert_ok(gcap_graph_add_memset_node(g, &c, 1, &mp, &s));
  gcap_host_node_params hp = {.fn = host_fn, .user_data = NULL};
  gcap_node *h = NULL;
  assert_ok(gcap_graph_add_host_node(g, &s, 1, &hp, &h));
  gcap_node *r = NULL, *w = NULL;
  assert_ok(gcap_graph_add_event_record_node(g, &h, 1, fx->event, &r));
  assert_ok(gcap_graph_add_event_wait_node(g, &r, 1, fx->event, &w));
  gcap_graph *child = NULL;
  assert_ok(gcap_graph_create(fx->ctx, &child));
  gcap_node *c0 = add_empty(child, NULL, 0);
  gcap_node *c1 = add_empty(child, &c0, 1);
  add_empty(child, &c1, 1);
  gcap_node *cn = NULL;
  gcap_node *deps[2] = {w, k};
  assert_ok(gcap_graph_add_child_graph_node(g, deps, 2, child, &cn));
  add_empty(g, &cn, 1);
  assert_int_equal(gcap_graph_node_count(g), 8);
  assert_int_equal(gcap_graph_edge_count(g), 8);

  unsigned flag_sets[2] = {0, GCAP_DOT_VERBOSE};
  for (int i = 0; i < 2; i++) {
    char *text = dot_text(g, flag_sets[i]);
    /* The child is one node: its 3 nodes and 2 edges are not drawn. */
    expect_shape(g, text);
    assert_non_null(strstr(text, "saxpy_kernel_zq"));
    assert_int_equal(count_substr(text, "saxpy_kernel_zq"), 1);
    expect_valid_graphviz(text);
    free(text);
  }

  /* Edits of the embedded child do not add statements to the parent. */
  gcap_graph *emb = NULL;
  assert_ok(gcap_node_get_child_graph(cn, &emb));
  add_empty(emb, NULL, 0);
  char *text = dot_text(g, 0);
  expect_shape(g, text);
  free(text);
  /* The embedded child can be written on its own. */
  text = dot_text(emb, 0);
  assert_int_equal(count_node_statements(text), 4);
  assert_int_equal(count_substr(text, "->"), 2);
  expect_valid_graphviz(text);
  free(text);
  gcap_graph_destroy(child);
  gcap_graph_destroy(g);
}

static void test_verbose_adds_parameters(void **state) {
  struct fixture *fx = *state;
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(fx->ctx, &g));
  gcap_node *c = add_memcpy(fx, g, NULL, 0, 7331);
  add_kernel(fx, g, &c, 1);

  char *plain = dot_text(g, 0);
  char *verbose = dot_text(g, GCAP_DOT_VERBOSE);
  expect_shape(g, plain);
  expect_shape(g, verbose);
  /* The byte count of the copy and the kernel's launch shape only with the flag. */
  assert_null(strstr(plain, "7331"));
  assert_non_null(strstr(verbose, "7331"));
  assert_null(strstr(plain, "grid"));
  assert_non_null(strstr(verbose, "grid"));
  assert_non_null(strstr(verbose, "128"));
  /* Both name the kernel. */
  assert_non_null(strstr(plain, "saxpy_kernel_zq"));
  assert_non_null(strstr(verbose, "saxpy_kernel_zq"));
  assert_true(strlen(verbose) > strlen(plain));
  expect_valid_graphviz(plain);
  expect_valid_graphviz(verbose);
  free(plain);
  free(verbose);
  gcap_graph_destroy(g);
}

static void test_quoted_labels(void **state) {
  struct fixture *fx = *state;
  test_require_sim(); /* no PTX image can name a kernel with quotes and backslashes */
  /* A kernel name with characters DOT needs escaped inside a quoted label. */
  static const size_t sizes[1] = {sizeof(int)};
  gcap_kernel_def def = {.name = "odd\"name\\x", .sim_fn = NULL, .num_params = 1, .param_sizes = sizes};
  gcap_module_desc desc = {.image = NULL, .image_size = 0, .kernels = &def, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(test_module_load(fx->ctx, &desc, &m));
  gcap_kernel *k = NULL;
  assert_ok(gcap_module_get_kernel(m, "odd\"name\\x", &k));
  int v = 1;
  void *args[1] = {&v};
  gcap_kernel_node_params p = {
      .kernel = k, .grid = GCAP_DIM3(1, 1, 1), .block = GCAP_DIM3(1, 1, 1), .shared_mem_bytes = 0, .args = args};
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(fx->ctx, &g));
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &p, &n));
  add_empty(g, &n, 1);
  char *text = dot_text(g, GCAP_DOT_VERBOSE);
  expect_shape(g, text);
  assert_non_null(strstr(text, "odd\\\"name\\\\x"));
  expect_valid_graphviz(text);
  free(text);
  gcap_graph_destroy(g);
  assert_ok(gcap_module_unload(m));
}

static void test_bad_arguments(void **state) {
  struct fixture *fx = *state;
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(fx->ctx, &g));
  add_empty(g, NULL, 0);
  FILE *f = tmpfile();
  assert_non_null(f);

  assert_fails(gcap_graph_write_dot(g, f, 2u), GCAP_ERROR_INVALID_VALUE, "gcap_graph_write_dot");
  assert_fails(gcap_graph_write_dot(g, f, 0x80000000u), GCAP_ERROR_INVALID_VALUE, "gcap_graph_write_dot");
  assert_fails(gcap_graph_write_dot(g, f, GCAP_DOT_VERBOSE | 4u), GCAP_ERROR_INVALID_VALUE, "gcap_graph_write_dot");
  assert_fails(gcap_graph_write_dot(g, f, ~0u), GCAP_ERROR_INVALID_VALUE, "gcap_graph_write_dot");
  /* Nothing was written by the refused calls. */
  assert_int_equal(ftell(f), 0);

  assert_fails(gcap_graph_write_dot(g, NULL, 0), GCAP_ERROR_INVALID_VALUE, "gcap_graph_write_dot");
  assert_fails(gcap_graph_write_dot(NULL, f, 0), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_write_dot");
  /* Handles first. */
  assert_fails(gcap_graph_write_dot(NULL, NULL, 2u), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_write_dot");
  gcap_graph *dead = NULL;
  assert_ok(gcap_graph_create(fx->ctx, &dead));
  gcap_graph_destroy(dead);
  assert_fails(gcap_graph_write_dot(dead, f, 0), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_write_dot");
  assert_int_equal(ftell(f), 0);

  /* Still usable after the failures. */
  assert_ok(gcap_graph_write_dot(g, f, GCAP_DOT_VERBOSE));
  assert_string_equal(gcap_last_error_message(), "");
  assert_true(ftell(f) > 0);
  fclose(f);
  gcap_graph_destroy(g);
}

static void test_write_errors(void **state) {
  struct fixture *fx = *state;
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(fx->ctx, &g));
  gcap_node *a = add_empty(g, NULL, 0);
  add_empty(g, &a, 1);

  /* A FILE opened read-only. */
  char path[] = "/tmp/gcap_test_dot_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  FILE *ro = fopen(path, "r");
  assert_non_null(ro);
  assert_fails(gcap_graph_write_dot(g, ro, 0), GCAP_ERROR_INVALID_VALUE, "gcap_graph_write_dot");
  fclose(ro);
  /* A failed call before does not make a later one on a good FILE fail. */
  FILE *ok = fopen(path, "w");
  assert_non_null(ok);
  assert_ok(gcap_graph_write_dot(g, ok, 0));
  fclose(ok);
  unlink(path);

  /* /dev/full, unbuffered, so the very first write fails. */
  FILE *full = fopen("/dev/full", "w");
  if (full != NULL) {
    setvbuf(full, NULL, _IONBF, 0);
    assert_fails(gcap_graph_write_dot(g, full, GCAP_DOT_VERBOSE), GCAP_ERROR_INVALID_VALUE, "gcap_graph_write_dot");
    fclose(full);
    /* Buffered: the error shows when the library flushes. */
    full = fopen("/dev/full", "w");
    assert_non_null(full);
    assert_fails(gcap_graph_write_dot(g, full, 0), GCAP_ERROR_INVALID_VALUE, "gcap_graph_write_dot");
    fclose(full);
  }
  gcap_graph_destroy(g);
}

/* The statement of node `index`, as a malloc'd line. */
static char *node_line(const char *text, size_t index) {
  char start[32];
  snprintf(start, sizeof start, "\n  n%zu [", index);
  const char *p = strstr(text, start);
  assert_non_null(p);
  p++;
  const char *end = strchr(p, '\n');
  assert_non_null(end);
  char *line = malloc((size_t)(end - p) + 1);
  assert_non_null(line);
  memcpy(line, p, (size_t)(end - p));
  line[end - p] = '\0';
  return line;
}

static void expect_fill(const char *text, size_t index, const char *colour) {
  char *line = node_line(text, index);
  char want[64];
  snprintf(want, sizeof want, "style=filled, fillcolor=\"%s\"", colour);
  if (strstr(line, want) == NULL) fail_msg("node %zu: want %s in: %s", index, want, line);
  free(line);
}

/* Every node type has its fill colour, the legend of docs/graphs.md. */
static void test_colours_by_type(void **state) {
  struct fixture *fx = *state;
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(fx->ctx, &s));
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  void *tmp = NULL;
  assert_ok(gcap_mem_alloc_async(s, 256, &tmp));
  assert_ok(gcap_mem_free_async(s, tmp));
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_end_capture(s, &g));
  gcap_node *k = add_kernel(fx, g, NULL, 0);
  add_memcpy(fx, g, &k, 1, 64);
  gcap_memset_node_params mp = {.dst = fx->dev, .value = 1, .element_size = 1, .width = 8, .height = 1, .pitch = 0};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &mp, &n));
  gcap_host_node_params hp = {.fn = host_fn, .user_data = NULL};
  assert_ok(gcap_graph_add_host_node(g, NULL, 0, &hp, &n));
  assert_ok(gcap_graph_add_event_record_node(g, NULL, 0, fx->event, &n));
  assert_ok(gcap_graph_add_event_wait_node(g, NULL, 0, fx->event, &n));
  gcap_graph *child = NULL;
  assert_ok(gcap_graph_create(fx->ctx, &child));
  assert_ok(gcap_graph_add_child_graph_node(g, NULL, 0, child, &n));
  add_empty(g, NULL, 0);
  static const char *const want[] = {"#d9d9d9", "#d9d9d9", "#a6cee3", "#b2df8a", "#fdbf6f",
                                     "#fb9a99", "#ffff99", "#ffff99", "#cab2d6", "#ffffff"};
  assert_int_equal(gcap_graph_node_count(g), 10);
  char *text = dot_text(g, 0);
  for (size_t i = 0; i < 10; i++) expect_fill(text, i, want[i]);
  assert_non_null(strstr(text, "  n0 [label=\"0: mem alloc\", style=filled, fillcolor=\"#d9d9d9\"];\n"));
  assert_non_null(strstr(text, "  n9 [label=\"9: empty\", style=filled, fillcolor=\"#ffffff\"];\n"));
  assert_non_null(strstr(text, "fillcolor=\"#cab2d6\", shape=box3d];"));
  expect_valid_graphviz(text);
  free(text);
  gcap_graph_destroy(child);
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
}

/* A host node is labelled with its function's exported name, else with its address. */
static void test_host_function_names(void **state) {
  struct fixture *fx = *state;
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(fx->ctx, &g));
  /* Never run: a library function stands in for a callback because it is surely exported. */
  gcap_host_node_params exported = {.fn = (gcap_host_fn)(void (*)(void))gcap_graph_destroy, .user_data = NULL};
  gcap_host_node_params local = {.fn = host_fn, .user_data = NULL};
  gcap_node *first = NULL, *second = NULL;
  assert_ok(gcap_graph_add_host_node(g, NULL, 0, &exported, &first));
  assert_ok(gcap_graph_add_host_node(g, &first, 1, &local, &second));
  void *addr = NULL;
  gcap_host_fn fn = host_fn;
  memcpy(&addr, &fn, sizeof addr);
  for (unsigned flags = 0; flags <= GCAP_DOT_VERBOSE; flags++) {
    char after[64], want[160], first_want[160];
    if (flags) snprintf(after, sizeof after, "\\nuser_data %p\"", (void *)NULL);
    else snprintf(after, sizeof after, "\"");
    snprintf(want, sizeof want, "  n1 [label=\"1: host %p%s, style=filled", addr, after);
    snprintf(first_want, sizeof first_want,
             "  n0 [label=\"0: host gcap_graph_destroy%s, style=filled, fillcolor=\"#fb9a99\"];", after);
    char *text = dot_text(g, flags);
    char *line = node_line(text, 0);
    assert_string_equal(line, first_want);
    free(line);
    /* static: not in the dynamic symbol table, and the nearest symbol before it must not be named */
    if (strstr(text, want) == NULL) fail_msg("want %s in:\n%s", want, text);
    expect_valid_graphviz(text);
    free(text);
  }
  gcap_graph_destroy(g);
}

static void test_large_graph(void **state) {
  struct fixture *fx = *state;
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(fx->ctx, &g));
  gcap_node *n[300];
  uint32_t seed = 12345;
  for (int i = 0; i < 300; i++) {
    gcap_node *deps[3];
    size_t nd = 0;
    for (int t = 0; t < 3 && i > 0; t++) {
      seed = seed * 1103515245u + 12345u;
      gcap_node *cand = n[(seed >> 8) % (uint32_t)i];
      bool dup = false;
      for (size_t q = 0; q < nd; q++) dup = dup || deps[q] == cand;
      if (!dup) deps[nd++] = cand;
    }
    if (i % 3 == 0) n[i] = add_memcpy(fx, g, deps, nd, (size_t)(i + 1));
    else if (i % 3 == 1) n[i] = add_kernel(fx, g, deps, nd);
    else n[i] = add_empty(g, deps, nd);
  }
  char *text = dot_text(g, GCAP_DOT_VERBOSE);
  expect_shape(g, text);
  assert_int_equal(count_substr(text, "saxpy_kernel_zq"), 100);
  expect_valid_graphviz(text);
  free(text);
  gcap_graph_destroy(g);
}

/* ------------------------------------------------ cudaGraphDebugDotPrint's form */

static char *debug_dot(const gcap_graph *g, unsigned flags) {
  char path[] = "/tmp/gcap-debug-dot-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_ok(gcap_graph_debug_dot_print(g, path, flags));
  FILE *in = fopen(path, "r");
  assert_non_null(in);
  char *text = calloc(1, 1 << 16);
  assert_non_null(text);
  size_t got = fread(text, 1, (1 << 16) - 1, in);
  assert_true(got > 0);
  fclose(in);
  unlink(path);
  expect_valid_graphviz(text);
  return text;
}

static void test_debug_dot_print(void **state) {
  struct fixture *fx = *state;
  gcap_graph *g = NULL, *child = NULL;
  assert_ok(gcap_graph_create(fx->ctx, &g));
  assert_ok(gcap_graph_create(fx->ctx, &child));
  gcap_node *k = add_kernel(fx, g, NULL, 0);
  gcap_memset_node_params mp = {
      .dst = fx->dev, .value = 0x5a, .element_size = 1, .width = 64, .height = 1, .pitch = 64};
  gcap_node *m = NULL, *h = NULL, *cn = NULL;
  assert_ok(gcap_graph_add_memset_node(g, &k, 1, &mp, &m));
  gcap_host_node_params hp = {.fn = host_fn, .user_data = NULL};
  assert_ok(gcap_graph_add_host_node(g, &m, 1, &hp, &h));
  gcap_node *c0 = add_empty(child, NULL, 0);
  add_empty(child, &c0, 1);
  assert_ok(gcap_graph_add_child_graph_node(g, &h, 1, child, &cn));

  char *plain = debug_dot(g, 0);
  assert_non_null(strstr(plain, "digraph dot {"));
  assert_int_equal(count_substr(plain, "subgraph cluster_"), 2); /* the graph and its child, nested */
  assert_non_null(strstr(plain, "|KERNEL"));
  assert_non_null(strstr(plain, "|MEMSET"));
  assert_non_null(strstr(plain, "|HOST"));
  assert_non_null(strstr(plain, "|GRAPH"));
  assert_int_equal(count_substr(plain, "|EMPTY"), 2);
  assert_int_equal(count_substr(plain, " -> "), 3 + 1 + 1); /* 3 edges, the child's 1, and the node to its cluster */
  assert_null(strstr(plain, "value: 0x5a"));
  assert_null(strstr(plain, "edge 0"));
  char handle[32];
  snprintf(handle, sizeof handle, "|%p", (void *)m);
  assert_null(strstr(plain, handle));
  free(plain);

  char *memset_only = debug_dot(g, GCAP_GRAPH_DEBUG_DOT_FLAGS_MEMSET_NODE_PARAMS);
  assert_non_null(strstr(memset_only, "value: 0x5a|elementSize: 1|width: 64"));
  assert_null(strstr(memset_only, "gridDim"));
  free(memset_only);

  char *runtime = debug_dot(g, GCAP_GRAPH_DEBUG_DOT_FLAGS_RUNTIME_TYPES | GCAP_GRAPH_DEBUG_DOT_FLAGS_HANDLES |
                                   GCAP_GRAPH_DEBUG_DOT_FLAGS_EXTRA_TOPO_INFO);
  assert_non_null(strstr(runtime, "cudaGraphNodeTypeKernel"));
  assert_null(strstr(runtime, "|KERNEL"));
  assert_non_null(strstr(runtime, handle));
  assert_non_null(strstr(runtime, "edge 2"));
  free(runtime);

  char *verbose = debug_dot(g, GCAP_GRAPH_DEBUG_DOT_FLAGS_VERBOSE);
  assert_non_null(strstr(verbose, "func: saxpy_kernel_zq"));
  assert_non_null(strstr(verbose, "gridDim: ("));
  assert_non_null(strstr(verbose, "value: 0x5a"));
  assert_non_null(strstr(verbose, "|fn: "));
  assert_non_null(strstr(verbose, "|userData: "));
  assert_non_null(strstr(verbose, handle));
  free(verbose);

  assert_status(gcap_graph_debug_dot_print(g, NULL, 0), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_graph_debug_dot_print: path is NULL");
  assert_status(gcap_graph_debug_dot_print(g, "/tmp/x.dot", 1u << 16), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("unknown bits 0x10000");
  assert_status(gcap_graph_debug_dot_print(g, "/nonexistent-dir/x.dot", 0), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("/nonexistent-dir/x.dot");
  assert_status(gcap_graph_debug_dot_print(NULL, "/tmp/x.dot", 0), GCAP_ERROR_INVALID_HANDLE);
  gcap_graph_destroy(g);
  gcap_graph_destroy(child);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_empty_graph, setup, teardown),
      cmocka_unit_test_setup_teardown(test_shapes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_every_node_type, setup, teardown),
      cmocka_unit_test_setup_teardown(test_debug_dot_print, setup, teardown),
      cmocka_unit_test_setup_teardown(test_verbose_adds_parameters, setup, teardown),
      cmocka_unit_test_setup_teardown(test_quoted_labels, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
      cmocka_unit_test_setup_teardown(test_write_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_large_graph, setup, teardown),
      cmocka_unit_test_setup_teardown(test_colours_by_type, setup, teardown),
      cmocka_unit_test_setup_teardown(test_host_function_names, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
