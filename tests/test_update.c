/*
 * Updating executables: per-node setters, enable/disable and whole-graph update
 * (rules.md#update-pairing through rules.md#update-host).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <stdlib.h>
#include <string.h>

#define N 16

/* ------------------------------------------------------------------ kernels */

/* x[i] *= a for i < n. Params: float *x, float a, uint32_t n. */
static void scale_sim(const gcap_sim_thread *t, void *const *args) {
  float *x;
  float a;
  uint32_t n;
  memcpy(&x, args[0], sizeof x);
  memcpy(&a, args[1], sizeof a);
  memcpy(&n, args[2], sizeof n);
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < n) x[i] *= a;
}

/* p[i] = v for i < n. Params: float *p, float v, uint32_t n. */
static void fill_sim(const gcap_sim_thread *t, void *const *args) {
  float *p;
  float v;
  uint32_t n;
  memcpy(&p, args[0], sizeof p);
  memcpy(&v, args[1], sizeof v);
  memcpy(&n, args[2], sizeof n);
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < n) p[i] = v;
}

/* One Jacobi sweep: out[i] = (in[i-1] + in[i+1]) / 2 inside, boundaries copied. Params: float *out, const float *in,
 * uint32_t n. */
static void jacobi_sim(const gcap_sim_thread *t, void *const *args) {
  float *out;
  const float *in;
  uint32_t n;
  memcpy(&out, args[0], sizeof out);
  memcpy(&in, args[1], sizeof in);
  memcpy(&n, args[2], sizeof n);
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i >= n) return;
  out[i] = (i == 0 || i == n - 1) ? in[i] : 0.5f * (in[i - 1] + in[i + 1]);
}

/* Writes the block's shared-memory size marker: p[0] = shared_mem != NULL, p[1] = block threads. Params: float *p. */
static void probe_sim(const gcap_sim_thread *t, void *const *args) {
  float *p;
  memcpy(&p, args[0], sizeof p);
  if (t->thread_idx.x == 0 && t->block_idx.x == 0) {
    p[0] = t->shared_mem != NULL ? 1.0f : 0.0f;
    p[1] = (float)(t->block_dim.x * t->block_dim.y * t->block_dim.z);
    p[2] = (float)(t->grid_dim.x * t->grid_dim.y * t->grid_dim.z);
  }
}

static const size_t three_sizes[] = {sizeof(float *), sizeof(float), sizeof(uint32_t)};
static const size_t jacobi_sizes[] = {sizeof(float *), sizeof(const float *), sizeof(uint32_t)};
static const size_t probe_sizes[] = {sizeof(float *)};

static gcap_module *load_kernels(gcap_context *ctx) {
  const gcap_kernel_def defs[] = {
      {.name = "scale", .sim_fn = scale_sim, .num_params = 3, .param_sizes = three_sizes},
      {.name = "fill", .sim_fn = fill_sim, .num_params = 3, .param_sizes = three_sizes},
      {.name = "jacobi", .sim_fn = jacobi_sim, .num_params = 3, .param_sizes = jacobi_sizes},
      {.name = "probe", .sim_fn = probe_sim, .num_params = 1, .param_sizes = probe_sizes},
      {.name = "stub", .sim_fn = NULL, .num_params = 3, .param_sizes = three_sizes},
  };
  gcap_module_desc d = {.image = NULL, .image_size = 0, .kernels = defs, .num_kernels = 5};
  gcap_module *m = NULL;
  assert_ok(test_module_load(ctx, &d, &m));
  assert_non_null(m);
  return m;
}

/* ------------------------------------------------------------------ helpers */

static void to_dev(gcap_context *ctx, void *d, const void *h, size_t bytes) {
  assert_ok(gcap_memcpy(ctx, d, h, bytes, GCAP_MEMCPY_HOST_TO_DEVICE));
}

static void from_dev(gcap_context *ctx, void *h, const void *d, size_t bytes) {
  assert_ok(gcap_memcpy(ctx, h, d, bytes, GCAP_MEMCPY_DEVICE_TO_HOST));
}

/* Sets device memory to `byte` with a synchronous copy (no fill path). */
static void dev_set(gcap_context *ctx, void *d, unsigned char byte, size_t bytes) {
  unsigned char *h = malloc(bytes);
  assert_non_null(h);
  memset(h, byte, bytes);
  to_dev(ctx, d, h, bytes);
  free(h);
}

/* Asserts that `bytes` of device memory all equal `byte`. */
static void assert_dev_bytes(gcap_context *ctx, const void *d, unsigned char byte, size_t bytes) {
  unsigned char *h = malloc(bytes);
  assert_non_null(h);
  from_dev(ctx, h, d, bytes);
  for (size_t i = 0; i < bytes; i++)
    if (h[i] != byte) {
      print_error("byte %zu is 0x%02x, expected 0x%02x\n", i, h[i], byte);
      free(h);
      fail();
    }
  free(h);
}

static void assert_host_bytes(const void *h, unsigned char byte, size_t bytes) {
  const unsigned char *p = h;
  for (size_t i = 0; i < bytes; i++)
    if (p[i] != byte) {
      print_error("host byte %zu is 0x%02x, expected 0x%02x\n", i, p[i], byte);
      fail();
    }
}

static void launch(gcap_exec *x, gcap_stream *s) {
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
}

static gcap_sim_stats stats_of(gcap_context *ctx) {
  gcap_sim_stats st;
  memset(&st, 0, sizeof st);
  assert_ok(gcap_sim_get_stats(ctx, &st));
  return st;
}

static gcap_exec *instantiate(gcap_graph *g) {
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_non_null(x);
  return x;
}

static gcap_node *add_memset(gcap_graph *g, gcap_node *const *deps, size_t nd, void *dst, uint32_t value, unsigned es,
                             size_t width, size_t height, size_t pitch) {
  gcap_memset_node_params p = {dst, value, es, width, height, pitch};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_memset_node(g, deps, nd, &p, &n));
  return n;
}

static gcap_node *add_memcpy(gcap_graph *g, gcap_node *const *deps, size_t nd, void *dst, const void *src, size_t bytes,
                             gcap_memcpy_kind kind) {
  gcap_memcpy_node_params p = {dst, src, bytes, kind};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_memcpy_node(g, deps, nd, &p, &n));
  return n;
}

static gcap_node *add_empty(gcap_graph *g, gcap_node *const *deps, size_t nd) {
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_empty_node(g, deps, nd, &n));
  return n;
}

static gcap_node *add_kernel(gcap_graph *g, gcap_node *const *deps, size_t nd, gcap_kernel *k, uint32_t grid,
                             uint32_t block, void **args) {
  gcap_kernel_node_params p = {k, GCAP_DIM3(grid, 1, 1), GCAP_DIM3(block, 1, 1), 0, args};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_kernel_node(g, deps, nd, &p, &n));
  return n;
}

struct counter {
  int a, b;
};
static void count_a(void *u) { ((struct counter *)u)->a++; }
static void count_b(void *u) { ((struct counter *)u)->b += 100; }

static gcap_node *add_host(gcap_graph *g, gcap_node *const *deps, size_t nd, gcap_host_fn fn, void *u) {
  gcap_host_node_params p = {fn, u};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_host_node(g, deps, nd, &p, &n));
  return n;
}

static void assert_memset_params(const gcap_node *n, const void *dst, uint32_t value, unsigned es, size_t width,
                                 size_t height) {
  gcap_memset_node_params p;
  assert_ok(gcap_node_get_memset_params(n, &p));
  assert_ptr_equal(p.dst, dst);
  assert_int_equal(p.value, value);
  assert_int_equal(p.element_size, es);
  assert_int_equal(p.width, width);
  assert_int_equal(p.height, height);
}

static void assert_memcpy_params(const gcap_node *n, const void *dst, const void *src, size_t bytes,
                                 gcap_memcpy_kind kind) {
  gcap_memcpy_node_params p;
  assert_ok(gcap_node_get_memcpy_params(n, &p));
  assert_ptr_equal(p.dst, dst);
  assert_ptr_equal(p.src, src);
  assert_int_equal(p.bytes, bytes);
  assert_int_equal(p.kind, kind);
}

static void assert_info(const gcap_exec_update_info *info, gcap_exec_update_result r, const gcap_node *at,
                        const gcap_node *from) {
  assert_int_equal(info->result, r);
  assert_ptr_equal(info->error_node, at);
  assert_ptr_equal(info->error_from_node, from);
}

static void assert_floats(const float *got, const float *want, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i]) {
      print_error("element %zu is %g, expected %g\n", i, (double)got[i], (double)want[i]);
      fail();
    }
}

/* One memset node (1-D, 64 bytes of d set to 0x11) in a graph, instantiated. */
struct one_memset {
  gcap_graph *g;
  gcap_node *n;
  gcap_exec *x;
  unsigned char *d;
};

static struct one_memset make_one_memset(gcap_context *ctx) {
  struct one_memset o;
  o.d = test_dev_alloc(ctx, 64);
  dev_set(ctx, o.d, 0, 64);
  o.g = test_graph_create(ctx);
  o.n = add_memset(o.g, NULL, 0, o.d, 0x11, 1, 64, 1, 64);
  o.x = instantiate(o.g);
  return o;
}

/* ====================================================== shared setter rules (rules.md#update-setter) */

static void test_update_setter_handle_and_params_errors(void **state) {
  struct test_fixture *f = *state;
  struct one_memset o = make_one_memset(f->ctx);
  gcap_memset_node_params mp = {o.d, 0x22, 1, 64, 1, 64};
  gcap_memcpy_node_params cp = {o.d, o.d, 4, GCAP_MEMCPY_DEVICE_TO_DEVICE};
  gcap_host_node_params hp = {count_a, NULL};

  assert_status(gcap_exec_memset_node_set_params(NULL, o.n, &mp), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_set();
  test_assert_message_contains("gcap_exec_memset_node_set_params");
  assert_status(gcap_exec_memcpy_node_set_params(NULL, o.n, &cp), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_exec_host_node_set_params(NULL, o.n, &hp), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_exec_node_set_enabled(NULL, o.n, false), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_exec_node_set_enabled");
  assert_status(gcap_exec_memset_node_set_params(o.x, NULL, &mp), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_set();
  assert_status(gcap_exec_node_set_enabled(o.x, NULL, true), GCAP_ERROR_INVALID_HANDLE);
  /* NULL handle wins over NULL params (handles first). */
  assert_status(gcap_exec_memset_node_set_params(NULL, NULL, NULL), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_exec_memset_node_set_params(o.x, NULL, NULL), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_exec_memset_node_set_params(o.x, o.n, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  assert_status(gcap_exec_memcpy_node_set_params(o.x, o.n, NULL), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_exec_host_node_set_params(o.x, o.n, NULL), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_exec_kernel_node_set_params(o.x, o.n, NULL), GCAP_ERROR_INVALID_VALUE);

  /* Nothing changed. */
  launch(o.x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0x11, 64);

  /* A destroyed exec. */
  assert_ok(gcap_exec_memset_node_set_params(o.x, o.n, &mp));
  test_assert_message_empty();
  gcap_exec_destroy(o.x);
  assert_status(gcap_exec_memset_node_set_params(o.x, o.n, &mp), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_set();
  assert_status(gcap_exec_node_set_enabled(o.x, o.n, false), GCAP_ERROR_INVALID_HANDLE);
  gcap_graph_destroy(o.g);
  assert_ok(gcap_mem_free(f->ctx, o.d));
}

/* gcap_exec_node_get_enabled follows the setter; gcap_exec_get_flags gives the instantiation flags. */
static void test_update_get_enabled_and_flags(void **state) {
  struct test_fixture *f = *state;
  struct one_memset o = make_one_memset(f->ctx);
  struct counter c = {0, 0};
  gcap_node *host = add_host(o.g, &o.n, 1, count_a, &c);
  gcap_node *later = add_memset(o.g, NULL, 0, o.d, 0x33, 1, 8, 1, 8);
  gcap_exec *x = instantiate(o.g);
  bool enabled = false;
  assert_ok(gcap_exec_node_get_enabled(x, o.n, &enabled));
  assert_true(enabled);
  assert_ok(gcap_exec_node_set_enabled(x, o.n, false));
  assert_ok(gcap_exec_node_get_enabled(x, o.n, &enabled));
  assert_false(enabled);
  assert_ok(gcap_exec_node_get_enabled(o.x, o.n, &enabled)); /* another executable of the graph: its own state */
  assert_true(enabled);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0x33, 8); /* the disabled fill of 0x11 did not run; `later` did */
  assert_dev_bytes(f->ctx, o.d + 8, 0x00, 56);
  assert_int_equal(c.a, 1);

  assert_status(gcap_exec_node_get_enabled(x, o.n, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_exec_node_get_enabled: enabled is NULL");
  assert_status(gcap_exec_node_get_enabled(x, host, &enabled), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("only kernel, memcpy and memset nodes");
  assert_status(gcap_exec_node_get_enabled(o.x, later, &enabled), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("is not in executable");
  assert_status(gcap_exec_node_get_enabled(NULL, o.n, &enabled), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_exec_node_get_enabled(x, NULL, &enabled), GCAP_ERROR_INVALID_HANDLE);

  unsigned flags = 99;
  assert_ok(gcap_exec_get_flags(x, &flags));
  assert_int_equal(flags, 0);
  gcap_exec *auto_free = NULL;
  assert_ok(gcap_graph_instantiate(o.g, GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH, &auto_free));
  assert_ok(gcap_exec_get_flags(auto_free, &flags));
  assert_int_equal(flags, GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH);
  assert_status(gcap_exec_get_flags(auto_free, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_exec_get_flags: flags is NULL");
  gcap_exec_destroy(auto_free);
  assert_status(gcap_exec_get_flags(auto_free, &flags), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_exec_get_flags(NULL, &flags), GCAP_ERROR_INVALID_HANDLE);

  gcap_exec_destroy(x);
  gcap_exec_destroy(o.x);
  gcap_graph_destroy(o.g);
  assert_ok(gcap_mem_free(f->ctx, o.d));
}

/* Event record and wait nodes take another event, in the graph and in an executable. */
static void test_update_event_node_setters(void **state) {
  struct test_fixture *f = *state;
  gcap_event *first = NULL, *second = NULL, *third = NULL;
  assert_ok(gcap_event_create(f->ctx, &first));
  assert_ok(gcap_event_create(f->ctx, &second));
  assert_ok(gcap_event_create(f->ctx, &third));
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *rec = NULL, *wait = NULL;
  assert_ok(gcap_graph_add_event_record_node(g, NULL, 0, first, &rec));
  assert_ok(gcap_graph_add_event_wait_node(g, &rec, 1, first, &wait));
  gcap_node *fill = add_memset(g, &wait, 1, test_dev_alloc(f->ctx, 8), 1, 1, 8, 1, 8);

  /* In the graph: the getter sees it, and an executable made afterwards records it. */
  assert_ok(gcap_node_set_event(rec, second));
  assert_ok(gcap_node_set_event(wait, second));
  gcap_event *got = NULL;
  assert_ok(gcap_node_get_event(rec, &got));
  assert_ptr_equal(got, second);
  gcap_exec *x = instantiate(g);
  launch(x, f->s);
  float ms = 0;
  assert_ok(gcap_event_elapsed_time(second, second, &ms));                              /* recorded by the node */
  assert_status(gcap_event_elapsed_time(first, first, &ms), GCAP_ERROR_INVALID_HANDLE); /* never recorded */

  /* In the executable: only its future launches change; the graph keeps its event. */
  assert_ok(gcap_exec_event_record_node_set_event(x, rec, third));
  assert_ok(gcap_exec_event_wait_node_set_event(x, wait, third));
  assert_ok(gcap_event_destroy(third)); /* the executable holds it */
  launch(x, f->s);
  assert_ok(gcap_node_get_event(rec, &got));
  assert_ptr_equal(got, second);

  assert_status(gcap_exec_event_record_node_set_event(x, wait, second), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("is an event wait node, not an event record node");
  assert_status(gcap_exec_event_wait_node_set_event(x, fill, second), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_exec_event_record_node_set_event(x, rec, NULL), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("event is NULL");
  assert_status(gcap_exec_event_record_node_set_event(NULL, rec, second), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_node_set_event(fill, second), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("not an event record or wait node");
  assert_status(gcap_node_set_event(rec, NULL), GCAP_ERROR_INVALID_HANDLE);
  gcap_context *other = test_context_create();
  gcap_event *foreign = NULL;
  assert_ok(gcap_event_create(other, &foreign));
  assert_status(gcap_node_set_event(rec, foreign), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("event belongs to another context");
  assert_status(gcap_exec_event_record_node_set_event(x, rec, foreign), GCAP_ERROR_INVALID_HANDLE);
  assert_ok(gcap_event_destroy(foreign));
  gcap_context_destroy(other);

  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_event_destroy(first));
  assert_ok(gcap_event_destroy(second));
}

static void test_update_setter_node_added_later(void **state) {
  struct test_fixture *f = *state;
  struct one_memset o = make_one_memset(f->ctx);
  gcap_node *later = add_memset(o.g, NULL, 0, o.d, 0x33, 1, 8, 1, 8);
  gcap_memset_node_params mp = {o.d, 0x44, 1, 64, 1, 64};
  assert_status(gcap_exec_memset_node_set_params(o.x, later, &mp), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  assert_status(gcap_exec_node_set_enabled(o.x, later, false), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  launch(o.x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0x11, 64);
  assert_int_equal(gcap_exec_node_count(o.x), 1);
  gcap_exec_destroy(o.x);
  gcap_graph_destroy(o.g);
  assert_ok(gcap_mem_free(f->ctx, o.d));
}

static void test_update_setter_node_of_other_graph_or_clone(void **state) {
  struct test_fixture *f = *state;
  struct one_memset o = make_one_memset(f->ctx);
  gcap_graph *other = test_graph_create(f->ctx);
  gcap_node *on = add_memset(other, NULL, 0, o.d, 0x55, 1, 64, 1, 64);
  gcap_graph *clone = NULL;
  assert_ok(gcap_graph_clone(o.g, &clone));
  gcap_node *cn = NULL;
  size_t count = 1;
  assert_ok(gcap_graph_get_nodes(clone, &cn, &count));
  assert_non_null(cn);
  assert_ptr_not_equal(cn, o.n);
  gcap_memset_node_params mp = {o.d, 0x66, 1, 64, 1, 64};
  assert_status(gcap_exec_memset_node_set_params(o.x, on, &mp), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_exec_memset_node_set_params(o.x, cn, &mp), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_exec_node_set_enabled(o.x, on, false), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_exec_node_set_enabled(o.x, cn, false), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  launch(o.x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0x11, 64);
  gcap_graph_destroy(clone);
  gcap_graph_destroy(other);
  gcap_exec_destroy(o.x);
  gcap_graph_destroy(o.g);
  assert_ok(gcap_mem_free(f->ctx, o.d));
}

static void test_update_setter_node_or_graph_destroyed(void **state) {
  struct test_fixture *f = *state;
  struct one_memset o = make_one_memset(f->ctx);
  gcap_memset_node_params mp = {o.d, 0x22, 1, 64, 1, 64};
  /* Destroyed node while the graph lives. */
  assert_ok(gcap_graph_destroy_node(o.n));
  assert_status(gcap_exec_memset_node_set_params(o.x, o.n, &mp), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_set();
  assert_status(gcap_exec_node_set_enabled(o.x, o.n, false), GCAP_ERROR_INVALID_HANDLE);
  launch(o.x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0x11, 64);
  gcap_exec_destroy(o.x);
  gcap_graph_destroy(o.g);

  /* Source graph destroyed: its nodes are invalid handles. */
  struct one_memset p = make_one_memset(f->ctx);
  gcap_graph_destroy(p.g);
  mp.dst = p.d;
  assert_status(gcap_exec_memset_node_set_params(p.x, p.n, &mp), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_set();
  assert_status(gcap_exec_node_set_enabled(p.x, p.n, false), GCAP_ERROR_INVALID_HANDLE);
  dev_set(f->ctx, p.d, 0, 64);
  launch(p.x, f->s);
  assert_dev_bytes(f->ctx, p.d, 0x11, 64);
  gcap_exec_destroy(p.x);
  assert_ok(gcap_mem_free(f->ctx, o.d));
  assert_ok(gcap_mem_free(f->ctx, p.d));
}

static void test_update_setter_wrong_node_type(void **state) {
  struct test_fixture *f = *state;
  unsigned char *d = test_dev_alloc(f->ctx, 64);
  unsigned char h[64];
  memset(h, 0x7a, sizeof h);
  dev_set(f->ctx, d, 0, 64);
  struct counter c = {0, 0};
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *cp = add_memcpy(g, NULL, 0, d, h, 64, GCAP_MEMCPY_HOST_TO_DEVICE);
  gcap_node *hn = add_host(g, &cp, 1, count_a, &c);
  gcap_exec *x = instantiate(g);
  gcap_memset_node_params mp = {d, 1, 1, 64, 1, 64};
  gcap_memcpy_node_params cpp = {d, h, 32, GCAP_MEMCPY_HOST_TO_DEVICE};
  gcap_host_node_params hp = {count_b, &c};
  assert_status(gcap_exec_memset_node_set_params(x, cp, &mp), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  assert_status(gcap_exec_host_node_set_params(x, cp, &hp), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_exec_memcpy_node_set_params(x, hn, &cpp), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_exec_memset_node_set_params(x, hn, &mp), GCAP_ERROR_INVALID_VALUE);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0x7a, 64);
  assert_int_equal(c.a, 1);
  assert_int_equal(c.b, 0);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, d));
}

static void test_update_setter_wrong_node_type_kernel(void **state) {
  struct test_fixture *f = *state;
  gcap_module *m = load_kernels(f->ctx);
  struct one_memset o = make_one_memset(f->ctx);
  float *p = (float *)(void *)o.d;
  float v = 2.0f;
  uint32_t n = 4;
  void *args[] = {&p, &v, &n};
  gcap_kernel_node_params kp = {test_kernel_of(m, "fill"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(4, 1, 1), 0, args};
  assert_status(gcap_exec_kernel_node_set_params(o.x, o.n, &kp), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  launch(o.x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0x11, 64);
  gcap_exec_destroy(o.x);
  gcap_graph_destroy(o.g);
  assert_ok(gcap_mem_free(f->ctx, o.d));
  assert_ok(gcap_module_unload(m));
}

static void test_update_setter_only_future_launches_source_unchanged(void **state) {
  struct test_fixture *f = *state;
  struct one_memset o = make_one_memset(f->ctx);
  launch(o.x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0x11, 64);
  gcap_memset_node_params mp = {o.d, 0x22, 1, 64, 1, 64};
  assert_ok(gcap_exec_memset_node_set_params(o.x, o.n, &mp));
  test_assert_message_empty();
  /* Nothing ran at the call. */
  assert_dev_bytes(f->ctx, o.d, 0x11, 64);
  launch(o.x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0x22, 64);
  assert_memset_params(o.n, o.d, 0x11, 1, 64, 1);
  /* A fresh exec of the source graph still does the original work. */
  gcap_exec *y = instantiate(o.g);
  launch(y, f->s);
  assert_dev_bytes(f->ctx, o.d, 0x11, 64);
  launch(o.x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0x22, 64);
  gcap_exec_destroy(y);
  gcap_exec_destroy(o.x);
  gcap_graph_destroy(o.g);
  assert_ok(gcap_mem_free(f->ctx, o.d));
}

static void test_update_setter_capture_finish_exec_has_no_source_nodes(void **state) {
  struct test_fixture *f = *state;
  unsigned char *d = test_dev_alloc(f->ctx, 64);
  dev_set(f->ctx, d, 0, 64);
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f->s, NULL, &c));
  assert_ok(gcap_capture_record_memset(c, d, 0x5a, 64));
  gcap_capture_info ci;
  assert_ok(gcap_stream_get_capture_info(f->s, &ci));
  assert_int_equal(ci.num_dependencies, 1);
  gcap_node *n = (gcap_node *)ci.dependencies[0];
  assert_int_equal(gcap_node_get_type(n), GCAP_NODE_MEMSET);
  gcap_exec *x = NULL;
  assert_ok(gcap_capture_finish(c, 0, &x));
  gcap_memset_node_params mp = {d, 0x01, 1, 64, 1, 64};
  gcap_status st = gcap_exec_memset_node_set_params(x, n, &mp);
  assert_true(st == GCAP_ERROR_INVALID_HANDLE || st == GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  st = gcap_exec_node_set_enabled(x, n, false);
  assert_true(st == GCAP_ERROR_INVALID_HANDLE || st == GCAP_ERROR_INVALID_VALUE);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0x5a, 64);
  gcap_exec_destroy(x);
  assert_ok(gcap_mem_free(f->ctx, d));
}

/* Calls every setter on its own running exec from a host node. */
struct inside {
  gcap_exec *x;
  gcap_node *memset_node, *host_node;
  gcap_graph *clone;
  unsigned char *d;
  gcap_status st_memset, st_host, st_enable, st_update;
  gcap_exec_update_info info;
  struct counter c;
  int calls;
};

static void call_setters_inside(void *u) {
  struct inside *in = u;
  in->calls++;
  gcap_memset_node_params mp = {in->d, 0x99, 1, 64, 1, 64};
  gcap_host_node_params hp = {count_b, &in->c};
  in->st_memset = gcap_exec_memset_node_set_params(in->x, in->memset_node, &mp);
  in->st_host = gcap_exec_host_node_set_params(in->x, in->host_node, &hp);
  in->st_enable = gcap_exec_node_set_enabled(in->x, in->memset_node, false);
  in->st_update = gcap_exec_update(in->x, in->clone, &in->info);
}

static void test_update_setter_inside_own_launch_illegal_state(void **state) {
  struct test_fixture *f = *state;
  struct inside in;
  memset(&in, 0, sizeof in);
  in.d = test_dev_alloc(f->ctx, 64);
  dev_set(f->ctx, in.d, 0, 64);
  gcap_graph *g = test_graph_create(f->ctx);
  in.host_node = add_host(g, NULL, 0, call_setters_inside, &in);
  in.memset_node = add_memset(g, &in.host_node, 1, in.d, 0x11, 1, 64, 1, 64);
  in.x = instantiate(g);
  assert_ok(gcap_graph_clone(g, &in.clone));
  launch(in.x, f->s);
  assert_int_equal(in.calls, 1);
  assert_int_equal(in.st_memset, GCAP_ERROR_ILLEGAL_STATE);
  assert_int_equal(in.st_host, GCAP_ERROR_ILLEGAL_STATE);
  assert_int_equal(in.st_enable, GCAP_ERROR_ILLEGAL_STATE);
  assert_int_equal(in.st_update, GCAP_ERROR_ILLEGAL_STATE);
  assert_int_equal(in.c.b, 0);
  /* Neither this launch nor the next saw a change. */
  assert_dev_bytes(f->ctx, in.d, 0x11, 64);
  dev_set(f->ctx, in.d, 0, 64);
  launch(in.x, f->s);
  assert_int_equal(in.calls, 2);
  assert_dev_bytes(f->ctx, in.d, 0x11, 64);
  gcap_graph_destroy(in.clone);
  gcap_exec_destroy(in.x);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, in.d));
}

/* ====================================================== kernel nodes (rules.md#update-kernel) */

static void test_update_kernel_all_fields(void **state) {
  struct test_fixture *f = *state;
  test_require_sim(); /* checks what scale_sim and probe_sim wrote, and the counters */
  gcap_module *m = load_kernels(f->ctx);
  gcap_kernel *scale = test_kernel_of(m, "scale"), *probe = test_kernel_of(m, "probe"),
              *stub = test_kernel_of(m, "stub");
  float *a = test_dev_alloc(f->ctx, N * sizeof(float));
  float *b = test_dev_alloc(f->ctx, N * sizeof(float));
  float ha[N], hb[N], want[N];
  for (int i = 0; i < N; i++) ha[i] = (float)i, hb[i] = -1.0f;
  to_dev(f->ctx, a, ha, sizeof ha);
  to_dev(f->ctx, b, hb, sizeof hb);
  float *pa = a, factor = 3.0f;
  uint32_t n = N;
  void *args[] = {&pa, &factor, &n};
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *k = add_kernel(g, NULL, 0, scale, 1, N, args);
  gcap_exec *x = instantiate(g);
  gcap_sim_stats s0 = stats_of(f->ctx);
  launch(x, f->s);
  gcap_sim_stats s1 = stats_of(f->ctx);
  assert_int_equal(s1.kernels_executed - s0.kernels_executed, 1);
  for (int i = 0; i < N; i++) want[i] = (float)i * 3.0f;
  float got[N];
  from_dev(f->ctx, got, a, sizeof got);
  assert_floats(got, want, N);

  /* New function, grid, block, shared memory and arguments. */
  float *pb = b;
  void *pargs[] = {&pb};
  gcap_kernel_node_params kp = {probe, GCAP_DIM3(3, 2, 1), GCAP_DIM3(4, 2, 2), 256, pargs};
  assert_ok(gcap_exec_kernel_node_set_params(x, k, &kp));
  test_assert_message_empty();
  pb = a; /* the value was copied at the call */
  launch(x, f->s);
  from_dev(f->ctx, got, b, sizeof got);
  assert_true(got[0] == 1.0f);  /* shared memory given */
  assert_true(got[1] == 16.0f); /* 4 * 2 * 2 threads per block */
  assert_true(got[2] == 6.0f);  /* 3 * 2 blocks */
  from_dev(f->ctx, got, a, sizeof got);
  assert_floats(got, want, N); /* scale no longer runs */

  /* The source node still holds the original launch. */
  gcap_kernel_node_params sp;
  assert_ok(gcap_node_get_kernel_params(k, &sp));
  assert_ptr_equal(sp.kernel, scale);
  assert_int_equal(sp.grid.x, 1);
  assert_int_equal(sp.block.x, N);
  assert_int_equal(sp.block.y, 1);
  assert_int_equal(sp.shared_mem_bytes, 0);
  float *sp0;
  float sp1;
  memcpy(&sp0, sp.args[0], sizeof sp0);
  memcpy(&sp1, sp.args[1], sizeof sp1);
  assert_ptr_equal(sp0, a);
  assert_true(sp1 == 3.0f);

  /* A stub kernel counts as stubbed. */
  void *sargs[] = {&pa, &factor, &n};
  kp = (gcap_kernel_node_params){stub, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, sargs};
  assert_ok(gcap_exec_kernel_node_set_params(x, k, &kp));
  s0 = stats_of(f->ctx);
  launch(x, f->s);
  s1 = stats_of(f->ctx);
  assert_int_equal(s1.kernels_stubbed - s0.kernels_stubbed, 1);
  assert_int_equal(s1.kernels_executed - s0.kernels_executed, 0);
  from_dev(f->ctx, got, a, sizeof got);
  assert_floats(got, want, N);

  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, a));
  assert_ok(gcap_mem_free(f->ctx, b));
  assert_ok(gcap_module_unload(m));
}

static void test_update_kernel_args_copied_at_call(void **state) {
  struct test_fixture *f = *state;
  test_require_sim(); /* checks what fill_sim wrote */
  gcap_module *m = load_kernels(f->ctx);
  gcap_kernel *fill = test_kernel_of(m, "fill");
  float *a = test_dev_alloc(f->ctx, N * sizeof(float));
  float *pa = a, v = 1.0f;
  uint32_t n = N;
  void *args[] = {&pa, &v, &n};
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *k = add_kernel(g, NULL, 0, fill, 1, N, args);
  gcap_exec *x = instantiate(g);
  v = 5.0f;
  gcap_kernel_node_params kp = {fill, GCAP_DIM3(1, 1, 1), GCAP_DIM3(N, 1, 1), 0, args};
  assert_ok(gcap_exec_kernel_node_set_params(x, k, &kp));
  v = 9.0f;
  n = 2;
  launch(x, f->s);
  float got[N], want[N];
  for (int i = 0; i < N; i++) want[i] = 5.0f;
  from_dev(f->ctx, got, a, sizeof got);
  assert_floats(got, want, N);
  gcap_kernel_node_params sp;
  assert_ok(gcap_node_get_kernel_params(k, &sp));
  float sv;
  memcpy(&sv, sp.args[1], sizeof sv);
  assert_true(sv == 1.0f);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, a));
  assert_ok(gcap_module_unload(m));
}

static void test_update_kernel_launch_checks(void **state) {
  struct test_fixture *f = *state;
  gcap_module *m = load_kernels(f->ctx);
  gcap_kernel *fill = test_kernel_of(m, "fill");
  float *a = test_dev_alloc(f->ctx, N * sizeof(float));
  float *pa = a, v = 4.0f;
  uint32_t n = N;
  void *args[] = {&pa, &v, &n};
  void *bad_args[] = {&pa, NULL, &n};
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *k = add_kernel(g, NULL, 0, fill, 1, N, args);
  gcap_exec *x = instantiate(g);
  const gcap_kernel_node_params bad[] = {
      {fill, GCAP_DIM3(0, 1, 1), GCAP_DIM3(N, 1, 1), 0, args},
      {fill, GCAP_DIM3(1, 1, 1), GCAP_DIM3(0, 1, 1), 0, args},
      {fill, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1025, 1, 1), 0, args},
      {fill, GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 32, 2), 0, args},
      {fill, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 65), 0, args},
      {fill, GCAP_DIM3(1, 65536, 1), GCAP_DIM3(1, 1, 1), 0, args},
      {fill, GCAP_DIM3(1, 1, 1), GCAP_DIM3(N, 1, 1), 49153, args},
      {fill, GCAP_DIM3(1, 1, 1), GCAP_DIM3(N, 1, 1), 0, NULL},
      {fill, GCAP_DIM3(1, 1, 1), GCAP_DIM3(N, 1, 1), 0, bad_args},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_status(gcap_exec_kernel_node_set_params(x, k, &bad[i]), GCAP_ERROR_INVALID_VALUE);
    test_assert_message_set();
  }
  launch(x, f->s);
  float got[N], want[N];
  for (int i = 0; i < N; i++) want[i] = 4.0f;
  from_dev(f->ctx, got, a, sizeof got);
  if (test_on_sim()) assert_floats(got, want, N); /* fill_sim ran with the unchanged params */
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, a));
  assert_ok(gcap_module_unload(m));
}

static void test_update_kernel_handle_errors(void **state) {
  struct test_fixture *f = *state;
  gcap_module *m = load_kernels(f->ctx);
  gcap_module *m2 = load_kernels(f->ctx);
  gcap_kernel *fill = test_kernel_of(m, "fill");
  gcap_kernel *gone = test_kernel_of(m2, "fill");
  assert_ok(gcap_module_unload(m2));
  gcap_context *other = test_context_create();
  gcap_module *om = load_kernels(other);
  gcap_kernel *foreign = test_kernel_of(om, "fill");
  float *a = test_dev_alloc(f->ctx, N * sizeof(float));
  float *pa = a, v = 4.0f;
  uint32_t n = N;
  void *args[] = {&pa, &v, &n};
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *k = add_kernel(g, NULL, 0, fill, 1, N, args);
  gcap_exec *x = instantiate(g);
  float v2 = 8.0f;
  void *args2[] = {&pa, &v2, &n};
  gcap_kernel_node_params kp = {NULL, GCAP_DIM3(1, 1, 1), GCAP_DIM3(N, 1, 1), 0, args2};
  assert_status(gcap_exec_kernel_node_set_params(x, k, &kp), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_set();
  kp.kernel = gone;
  assert_status(gcap_exec_kernel_node_set_params(x, k, &kp), GCAP_ERROR_INVALID_HANDLE);
  kp.kernel = foreign;
  assert_status(gcap_exec_kernel_node_set_params(x, k, &kp), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_set();
  launch(x, f->s);
  float got[N], want[N];
  for (int i = 0; i < N; i++) want[i] = 4.0f;
  from_dev(f->ctx, got, a, sizeof got);
  if (test_on_sim()) assert_floats(got, want, N); /* fill_sim ran with the unchanged params */
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, a));
  assert_ok(gcap_module_unload(m));
  gcap_context_destroy(other);
}

static void test_update_kernel_module_unloaded_after_set(void **state) {
  struct test_fixture *f = *state;
  gcap_module *m = load_kernels(f->ctx);
  gcap_module *m2 = load_kernels(f->ctx);
  float *a = test_dev_alloc(f->ctx, N * sizeof(float));
  float *pa = a, v = 4.0f;
  uint32_t n = N;
  void *args[] = {&pa, &v, &n};
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *k = add_kernel(g, NULL, 0, test_kernel_of(m, "fill"), 1, N, args);
  gcap_exec *x = instantiate(g);
  v = 6.0f;
  gcap_kernel_node_params kp = {test_kernel_of(m2, "fill"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(N, 1, 1), 0, args};
  assert_ok(gcap_exec_kernel_node_set_params(x, k, &kp));
  assert_ok(gcap_module_unload(m2)); /* the exec keeps the kernel alive */
  launch(x, f->s);
  float got[N], want[N];
  for (int i = 0; i < N; i++) want[i] = 6.0f;
  from_dev(f->ctx, got, a, sizeof got);
  if (test_on_sim()) assert_floats(got, want, N); /* fill_sim of the unloaded module ran */
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, a));
  assert_ok(gcap_module_unload(m));
}

static void jacobi_host(float *out, const float *in, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) out[i] = (i == 0 || i == n - 1) ? in[i] : 0.5f * (in[i - 1] + in[i + 1]);
}

static void test_update_kernel_jacobi_ping_pong(void **state) {
  struct test_fixture *f = *state;
  test_require_sim(); /* checks what jacobi_sim computed, and the counters */
  enum { NN = 64, ITERS = 9 };
  gcap_module *m = load_kernels(f->ctx);
  gcap_kernel *jac = test_kernel_of(m, "jacobi");
  float *buf[2], *eager[2];
  float init[NN];
  for (int i = 0; i < NN; i++) init[i] = (i == 0) ? 100.0f : (i == NN - 1 ? -50.0f : (float)(i % 7));
  for (int i = 0; i < 2; i++) {
    buf[i] = test_dev_alloc(f->ctx, sizeof init);
    eager[i] = test_dev_alloc(f->ctx, sizeof init);
    to_dev(f->ctx, buf[i], init, sizeof init);
    to_dev(f->ctx, eager[i], init, sizeof init);
  }
  uint32_t n = NN;
  float *out = buf[1], *in = buf[0];
  void *args[] = {&out, &in, &n};
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *k = add_kernel(g, NULL, 0, jac, 2, 32, args);
  gcap_exec *x = instantiate(g);

  float ref[2][NN];
  memcpy(ref[0], init, sizeof init);
  int cur = 0;
  gcap_sim_stats s0 = stats_of(f->ctx);
  for (int it = 0; it < ITERS; it++) {
    launch(x, f->s);
    /* Eager: the same sweep launched on the stream. */
    float *eo = eager[1 - cur], *ei = eager[cur];
    void *eargs[] = {&eo, &ei, &n};
    assert_ok(gcap_launch_kernel(f->s, jac, GCAP_DIM3(2, 1, 1), GCAP_DIM3(32, 1, 1), 0, eargs));
    assert_ok(gcap_stream_synchronize(f->s));
    jacobi_host(ref[1 - cur], ref[cur], NN);
    cur = 1 - cur;
    /* Swap the pointer arguments for the next sweep. */
    float *no = buf[1 - cur], *ni = buf[cur];
    void *nargs[] = {&no, &ni, &n};
    gcap_kernel_node_params kp = {jac, GCAP_DIM3(2, 1, 1), GCAP_DIM3(32, 1, 1), 0, nargs};
    assert_ok(gcap_exec_kernel_node_set_params(x, k, &kp));
  }
  gcap_sim_stats s1 = stats_of(f->ctx);
  assert_int_equal(s1.graph_launches - s0.graph_launches, ITERS);
  assert_int_equal(s1.kernels_executed - s0.kernels_executed, 2 * ITERS);
  float got[NN], eg[NN];
  from_dev(f->ctx, got, buf[cur], sizeof got);
  from_dev(f->ctx, eg, eager[cur], sizeof eg);
  assert_floats(got, ref[cur], NN);
  assert_floats(eg, ref[cur], NN);
  assert_false(got[1] == init[1]); /* it did change something */

  /* The source node still names the first pair. */
  gcap_kernel_node_params sp;
  assert_ok(gcap_node_get_kernel_params(k, &sp));
  float *s_out, *s_in;
  memcpy(&s_out, sp.args[0], sizeof s_out);
  memcpy(&s_in, sp.args[1], sizeof s_in);
  assert_ptr_equal(s_out, buf[1]);
  assert_ptr_equal(s_in, buf[0]);

  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  for (int i = 0; i < 2; i++) {
    assert_ok(gcap_mem_free(f->ctx, buf[i]));
    assert_ok(gcap_mem_free(f->ctx, eager[i]));
  }
  assert_ok(gcap_module_unload(m));
}

/* ====================================================== memcpy nodes (rules.md#update-memcpy) */

struct copy_graph {
  gcap_graph *g;
  gcap_node *n;
  gcap_exec *x;
  unsigned char *d;
  unsigned char h1[64], h2[64];
};

/* d (64 device bytes, zeroed) <- h1 (0xa1) through a copy of `kind`. */
static void make_copy(gcap_context *ctx, struct copy_graph *c, gcap_memcpy_kind kind) {
  c->d = test_dev_alloc(ctx, 64);
  dev_set(ctx, c->d, 0, 64);
  memset(c->h1, 0xa1, sizeof c->h1);
  memset(c->h2, 0xb2, sizeof c->h2);
  c->g = test_graph_create(ctx);
  c->n = add_memcpy(c->g, NULL, 0, c->d, c->h1, 64, kind);
  c->x = instantiate(c->g);
}

static void free_copy(gcap_context *ctx, struct copy_graph *c) {
  gcap_exec_destroy(c->x);
  gcap_graph_destroy(c->g);
  assert_ok(gcap_mem_free(ctx, c->d));
}

static void test_update_memcpy_new_operands(void **state) {
  struct test_fixture *f = *state;
  struct copy_graph c;
  make_copy(f->ctx, &c, GCAP_MEMCPY_HOST_TO_DEVICE);
  gcap_memcpy_node_params p = {c.d + 16, c.h2, 32, GCAP_MEMCPY_HOST_TO_DEVICE};
  assert_ok(gcap_exec_memcpy_node_set_params(c.x, c.n, &p));
  test_assert_message_empty();
  gcap_sim_stats s0 = {0};
  if (test_on_sim()) s0 = stats_of(f->ctx);
  launch(c.x, f->s);
  if (test_on_sim()) assert_int_equal(stats_of(f->ctx).bytes_copied - s0.bytes_copied, 32);
  assert_dev_bytes(f->ctx, c.d, 0, 16);
  assert_dev_bytes(f->ctx, c.d + 16, 0xb2, 32);
  assert_dev_bytes(f->ctx, c.d + 48, 0, 16);
  assert_memcpy_params(c.n, c.d, c.h1, 64, GCAP_MEMCPY_HOST_TO_DEVICE);
  free_copy(f->ctx, &c);
}

static void test_update_memcpy_zero_bytes(void **state) {
  struct test_fixture *f = *state;
  struct copy_graph c;
  make_copy(f->ctx, &c, GCAP_MEMCPY_HOST_TO_DEVICE);
  gcap_memcpy_node_params p = {c.d, c.h2, 0, GCAP_MEMCPY_HOST_TO_DEVICE};
  assert_status(gcap_exec_memcpy_node_set_params(c.x, c.n, &p), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  launch(c.x, f->s);
  assert_dev_bytes(f->ctx, c.d, 0xa1, 64);
  free_copy(f->ctx, &c);
}

static void test_update_memcpy_range_outside_allocation(void **state) {
  struct test_fixture *f = *state;
  struct copy_graph c;
  make_copy(f->ctx, &c, GCAP_MEMCPY_HOST_TO_DEVICE);
  gcap_memcpy_node_params p = {c.d + 1, c.h2, 64, GCAP_MEMCPY_HOST_TO_DEVICE};
  assert_status(gcap_exec_memcpy_node_set_params(c.x, c.n, &p), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  p = (gcap_memcpy_node_params){NULL, c.h2, 8, GCAP_MEMCPY_HOST_TO_DEVICE};
  assert_status(gcap_exec_memcpy_node_set_params(c.x, c.n, &p), GCAP_ERROR_INVALID_VALUE);
  p = (gcap_memcpy_node_params){c.d, NULL, 8, GCAP_MEMCPY_HOST_TO_DEVICE};
  assert_status(gcap_exec_memcpy_node_set_params(c.x, c.n, &p), GCAP_ERROR_INVALID_VALUE);
  p = (gcap_memcpy_node_params){c.d, c.h2, 8, (gcap_memcpy_kind)7};
  assert_status(gcap_exec_memcpy_node_set_params(c.x, c.n, &p), GCAP_ERROR_INVALID_VALUE);
  launch(c.x, f->s);
  assert_dev_bytes(f->ctx, c.d, 0xa1, 64);
  free_copy(f->ctx, &c);
}

static void test_update_memcpy_kind_change_refused(void **state) {
  struct test_fixture *f = *state;
  struct copy_graph c;
  make_copy(f->ctx, &c, GCAP_MEMCPY_HOST_TO_DEVICE);
  unsigned char *d2 = test_dev_alloc(f->ctx, 64);
  dev_set(f->ctx, d2, 0xc3, 64);
  /* Same operands, kind DEFAULT (which would resolve to H2D): still refused. */
  gcap_memcpy_node_params p = {c.d, c.h2, 64, GCAP_MEMCPY_DEFAULT};
  assert_status(gcap_exec_memcpy_node_set_params(c.x, c.n, &p), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  p = (gcap_memcpy_node_params){c.d, d2, 64, GCAP_MEMCPY_DEVICE_TO_DEVICE};
  assert_status(gcap_exec_memcpy_node_set_params(c.x, c.n, &p), GCAP_ERROR_INVALID_VALUE);
  p = (gcap_memcpy_node_params){c.h2, c.d, 64, GCAP_MEMCPY_DEVICE_TO_HOST};
  assert_status(gcap_exec_memcpy_node_set_params(c.x, c.n, &p), GCAP_ERROR_INVALID_VALUE);
  launch(c.x, f->s);
  assert_dev_bytes(f->ctx, c.d, 0xa1, 64);
  assert_host_bytes(c.h2, 0xb2, 64);
  free_copy(f->ctx, &c);

  /* From DEFAULT to an explicit kind that matches the resolved direction: refused too. */
  make_copy(f->ctx, &c, GCAP_MEMCPY_DEFAULT);
  p = (gcap_memcpy_node_params){c.d, c.h2, 64, GCAP_MEMCPY_HOST_TO_DEVICE};
  assert_status(gcap_exec_memcpy_node_set_params(c.x, c.n, &p), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  launch(c.x, f->s);
  assert_dev_bytes(f->ctx, c.d, 0xa1, 64);
  assert_memcpy_params(c.n, c.d, c.h1, 64, GCAP_MEMCPY_DEFAULT);
  free_copy(f->ctx, &c);
  assert_ok(gcap_mem_free(f->ctx, d2));
}

static void test_update_memcpy_default_direction_change_refused(void **state) {
  struct test_fixture *f = *state;
  struct copy_graph c;
  make_copy(f->ctx, &c, GCAP_MEMCPY_DEFAULT); /* resolves to H2D */
  unsigned char *d2 = test_dev_alloc(f->ctx, 64);
  dev_set(f->ctx, d2, 0xc3, 64);
  unsigned char host_dst[64];
  memset(host_dst, 0, sizeof host_dst);
  /* New dst is host memory: H2H. */
  gcap_memcpy_node_params p = {host_dst, c.h2, 64, GCAP_MEMCPY_DEFAULT};
  assert_status(gcap_exec_memcpy_node_set_params(c.x, c.n, &p), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  /* New src is device memory: D2D. */
  p = (gcap_memcpy_node_params){c.d, d2, 64, GCAP_MEMCPY_DEFAULT};
  assert_status(gcap_exec_memcpy_node_set_params(c.x, c.n, &p), GCAP_ERROR_INVALID_VALUE);
  launch(c.x, f->s);
  assert_host_bytes(host_dst, 0, 64);
  assert_dev_bytes(f->ctx, c.d, 0xa1, 64);
  /* Same direction with new operands is allowed. */
  p = (gcap_memcpy_node_params){d2, c.h2, 64, GCAP_MEMCPY_DEFAULT};
  assert_ok(gcap_exec_memcpy_node_set_params(c.x, c.n, &p));
  launch(c.x, f->s);
  assert_dev_bytes(f->ctx, d2, 0xb2, 64);
  free_copy(f->ctx, &c);
  assert_ok(gcap_mem_free(f->ctx, d2));
}

static void test_update_memcpy_d2h_new_operands(void **state) {
  struct test_fixture *f = *state;
  unsigned char *d = test_dev_alloc(f->ctx, 64);
  dev_set(f->ctx, d, 0x3c, 64);
  unsigned char h[64], h2[64];
  memset(h, 0, sizeof h);
  memset(h2, 0, sizeof h2);
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *n = add_memcpy(g, NULL, 0, h, d, 64, GCAP_MEMCPY_DEVICE_TO_HOST);
  gcap_exec *x = instantiate(g);
  gcap_memcpy_node_params p = {h2, d + 32, 32, GCAP_MEMCPY_DEVICE_TO_HOST};
  assert_ok(gcap_exec_memcpy_node_set_params(x, n, &p));
  launch(x, f->s);
  assert_host_bytes(h, 0, 64);
  assert_host_bytes(h2, 0x3c, 32);
  assert_host_bytes(h2 + 32, 0, 32);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, d));
}

/* ====================================================== memset nodes (rules.md#update-memset) */

static void test_update_memset_dst_and_value(void **state) {
  struct test_fixture *f = *state;
  struct one_memset o = make_one_memset(f->ctx);
  unsigned char *d2 = test_dev_alloc(f->ctx, 128);
  dev_set(f->ctx, d2, 0, 128);
  gcap_memset_node_params mp = {d2 + 64, 0x1234, 1, 64, 1, 64}; /* low byte 0x34 */
  assert_ok(gcap_exec_memset_node_set_params(o.x, o.n, &mp));
  test_assert_message_empty();
  gcap_sim_stats s0 = {0};
  if (test_on_sim()) s0 = stats_of(f->ctx);
  launch(o.x, f->s);
  if (test_on_sim()) assert_int_equal(stats_of(f->ctx).bytes_set - s0.bytes_set, 64);
  assert_dev_bytes(f->ctx, o.d, 0, 64);
  assert_dev_bytes(f->ctx, d2, 0, 64);
  assert_dev_bytes(f->ctx, d2 + 64, 0x34, 64);
  assert_memset_params(o.n, o.d, 0x11, 1, 64, 1);
  gcap_exec_destroy(o.x);
  gcap_graph_destroy(o.g);
  assert_ok(gcap_mem_free(f->ctx, o.d));
  assert_ok(gcap_mem_free(f->ctx, d2));
}

static void test_update_memset_2d_shape_fixed(void **state) {
  struct test_fixture *f = *state;
  unsigned char *d = test_dev_alloc(f->ctx, 256);
  unsigned char *d2 = test_dev_alloc(f->ctx, 256);
  dev_set(f->ctx, d, 0, 256);
  dev_set(f->ctx, d2, 0, 256);
  gcap_graph *g = test_graph_create(f->ctx);
  /* 4 rows of 8 four-byte elements, pitch 64. */
  gcap_node *n = add_memset(g, NULL, 0, d, 0x01010101u, 4, 8, 4, 64);
  gcap_exec *x = instantiate(g);
  const gcap_memset_node_params bad[] = {
      {d, 0x02020202u, 2, 16, 4, 64}, /* element size */
      {d, 0x02020202u, 4, 4, 4, 64},  /* width */
      {d, 0x02020202u, 4, 8, 3, 64},  /* height */
      {d, 0x02020202u, 4, 8, 1, 64},  /* height to 1 */
      {d, 0x02020202u, 4, 8, 4, 48},  /* pitch */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_status(gcap_exec_memset_node_set_params(x, n, &bad[i]), GCAP_ERROR_INVALID_VALUE);
    test_assert_message_set();
  }
  launch(x, f->s);
  for (int r = 0; r < 4; r++) {
    assert_dev_bytes(f->ctx, d + r * 64, 0x01, 32);
    assert_dev_bytes(f->ctx, d + r * 64 + 32, 0, 32);
  }
  /* dst and value may change. */
  dev_set(f->ctx, d, 0, 256);
  gcap_memset_node_params ok = {d2 + 16, 0x07070707u, 4, 8, 4, 64};
  assert_ok(gcap_exec_memset_node_set_params(x, n, &ok));
  gcap_sim_stats s0 = {0};
  if (test_on_sim()) s0 = stats_of(f->ctx);
  launch(x, f->s);
  if (test_on_sim()) assert_int_equal(stats_of(f->ctx).bytes_set - s0.bytes_set, 4 * 8 * 4);
  assert_dev_bytes(f->ctx, d, 0, 256);
  assert_dev_bytes(f->ctx, d2, 0, 16);
  for (int r = 0; r < 4; r++) {
    assert_dev_bytes(f->ctx, d2 + 16 + r * 64, 0x07, 32);
    if (r < 3) assert_dev_bytes(f->ctx, d2 + 16 + r * 64 + 32, 0, 32);
  }
  /* A new dst where the 2-D range no longer fits. */
  gcap_memset_node_params nofit = {d2 + 80, 0x09090909u, 4, 8, 4, 64};
  assert_status(gcap_exec_memset_node_set_params(x, n, &nofit), GCAP_ERROR_INVALID_VALUE);
  gcap_memset_node_params sp;
  assert_ok(gcap_node_get_memset_params(n, &sp));
  assert_ptr_equal(sp.dst, d);
  assert_int_equal(sp.value, 0x01010101u);
  assert_int_equal(sp.pitch, 64);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, d));
  assert_ok(gcap_mem_free(f->ctx, d2));
}

static void test_update_memset_1d_width_and_element_size(void **state) {
  struct test_fixture *f = *state;
  unsigned char *d = test_dev_alloc(f->ctx, 64);
  dev_set(f->ctx, d, 0, 64);
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *n = add_memset(g, NULL, 0, d, 0xaa, 1, 16, 1, 16);
  gcap_exec *x = instantiate(g);
  /* 12 four-byte elements = 48 bytes: fits. */
  gcap_memset_node_params p = {d, 0x5b5b5b5bu, 4, 12, 1, 0};
  assert_ok(gcap_exec_memset_node_set_params(x, n, &p));
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0x5b, 48);
  assert_dev_bytes(f->ctx, d + 48, 0, 16);
  /* 17 four-byte elements do not fit. */
  p.width = 17;
  assert_status(gcap_exec_memset_node_set_params(x, n, &p), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  dev_set(f->ctx, d, 0, 64);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0x5b, 48);
  assert_dev_bytes(f->ctx, d + 48, 0, 16);
  assert_memset_params(n, d, 0xaa, 1, 16, 1);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, d));
}

static void test_update_memset_1d_height_change_refused(void **state) {
  struct test_fixture *f = *state;
  struct one_memset o = make_one_memset(f->ctx);
  gcap_memset_node_params p = {o.d, 0x22, 1, 8, 2, 32};
  assert_status(gcap_exec_memset_node_set_params(o.x, o.n, &p), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  p.height = 0;
  assert_status(gcap_exec_memset_node_set_params(o.x, o.n, &p), GCAP_ERROR_INVALID_VALUE);
  launch(o.x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0x11, 64);
  gcap_exec_destroy(o.x);
  gcap_graph_destroy(o.g);
  assert_ok(gcap_mem_free(f->ctx, o.d));
}

static void test_update_memset_param_checks(void **state) {
  struct test_fixture *f = *state;
  struct one_memset o = make_one_memset(f->ctx);
  void *host = NULL;
  assert_ok(gcap_host_alloc(f->ctx, 64, &host));
  unsigned char stack[64];
  unsigned char *freed = test_dev_alloc(f->ctx, 64);
  assert_ok(gcap_mem_free(f->ctx, freed));
  const gcap_memset_node_params bad[] = {
      {NULL, 0x22, 1, 64, 1, 64},   /* dst NULL */
      {o.d, 0x22, 0, 64, 1, 64},    /* element size 0 */
      {o.d, 0x22, 3, 16, 1, 48},    /* element size 3 */
      {o.d, 0x22, 5, 8, 1, 40},     /* element size 5 */
      {o.d, 0x22, 1, 0, 1, 0},      /* width 0 */
      {o.d, 0x22, 1, 65, 1, 65},    /* past the end */
      {o.d + 1, 0x22, 2, 8, 1, 16}, /* misaligned */
      {host, 0x22, 1, 64, 1, 64},   /* page-locked host memory */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_status(gcap_exec_memset_node_set_params(o.x, o.n, &bad[i]), GCAP_ERROR_INVALID_VALUE);
    test_assert_message_set();
  }
  if (test_on_sim()) {
    gcap_memset_node_params p = {stack, 0x22, 1, 64, 1, 64};
    assert_status(gcap_exec_memset_node_set_params(o.x, o.n, &p), GCAP_ERROR_INVALID_VALUE);
    p.dst = freed;
    assert_status(gcap_exec_memset_node_set_params(o.x, o.n, &p), GCAP_ERROR_INVALID_VALUE);
  }
  launch(o.x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0x11, 64);
  gcap_exec_destroy(o.x);
  gcap_graph_destroy(o.g);
  assert_ok(gcap_mem_free(f->ctx, o.d));
  assert_ok(gcap_host_free(f->ctx, host));
}

/* ====================================================== host nodes (rules.md#update-host) */

static void test_update_host_unrestricted(void **state) {
  struct test_fixture *f = *state;
  struct counter c1 = {0, 0}, c2 = {0, 0};
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *h = add_host(g, NULL, 0, count_a, &c1);
  gcap_exec *x = instantiate(g);
  launch(x, f->s);
  assert_int_equal(c1.a, 1);
  gcap_host_node_params p = {count_b, &c2};
  assert_ok(gcap_exec_host_node_set_params(x, h, &p));
  test_assert_message_empty();
  gcap_sim_stats s0 = {0};
  if (test_on_sim()) s0 = stats_of(f->ctx);
  launch(x, f->s);
  if (test_on_sim()) assert_int_equal(stats_of(f->ctx).host_calls - s0.host_calls, 1);
  assert_int_equal(c1.a, 1);
  assert_int_equal(c1.b, 0);
  assert_int_equal(c2.b, 100);
  /* user_data may be NULL-free changes too; fn NULL is refused. */
  p = (gcap_host_node_params){NULL, &c1};
  assert_status(gcap_exec_host_node_set_params(x, h, &p), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  launch(x, f->s);
  assert_int_equal(c2.b, 200);
  assert_int_equal(c1.a + c1.b, 1);
  gcap_host_node_params sp;
  assert_ok(gcap_node_get_host_params(h, &sp));
  assert_ptr_equal(sp.fn, count_a);
  assert_ptr_equal(sp.user_data, &c1);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

/* ====================================================== enable / disable (rules.md#update-enable) */

static void test_update_enable_disable_kernel_memcpy_memset_only(void **state) {
  struct test_fixture *f = *state;
  unsigned char *d = test_dev_alloc(f->ctx, 64);
  unsigned char h[64];
  memset(h, 0x44, sizeof h);
  struct counter c = {0, 0};
  gcap_event *e = NULL;
  assert_ok(gcap_event_create(f->ctx, &e));
  gcap_graph *child = test_graph_create(f->ctx);
  add_empty(child, NULL, 0);
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *ms = add_memset(g, NULL, 0, d, 0x10, 1, 64, 1, 64);
  gcap_node *mc = add_memcpy(g, &ms, 1, d, h, 32, GCAP_MEMCPY_HOST_TO_DEVICE);
  gcap_node *hn = add_host(g, NULL, 0, count_a, &c);
  gcap_node *em = add_empty(g, NULL, 0);
  gcap_node *cn = NULL, *er = NULL, *ew = NULL;
  assert_ok(gcap_graph_add_child_graph_node(g, NULL, 0, child, &cn));
  assert_ok(gcap_graph_add_event_record_node(g, NULL, 0, e, &er));
  assert_ok(gcap_graph_add_event_wait_node(g, &er, 1, e, &ew));
  gcap_module *m = load_kernels(f->ctx);
  float *p = (float *)(void *)(d + 48);
  float v = 1.0f;
  uint32_t n = 4;
  void *args[] = {&p, &v, &n};
  gcap_node *k = add_kernel(g, &mc, 1, test_kernel_of(m, "fill"), 1, 4, args);
  gcap_exec *x = instantiate(g);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0x44, 32);
  assert_dev_bytes(f->ctx, d + 32, 0x10, 16);
  if (test_on_sim()) { /* fill_sim ran */
    float got[4];
    from_dev(f->ctx, got, d + 48, sizeof got);
    for (int i = 0; i < 4; i++) assert_true(got[i] == 1.0f);
  }
  assert_int_equal(c.a, 1);
  gcap_node *refused[] = {hn, em, cn, er, ew};
  for (size_t i = 0; i < 5; i++) {
    assert_status(gcap_exec_node_set_enabled(x, refused[i], false), GCAP_ERROR_INVALID_VALUE);
    test_assert_message_set();
    assert_status(gcap_exec_node_set_enabled(x, refused[i], true), GCAP_ERROR_INVALID_VALUE);
  }
  /* A node inside the child graph is an empty node: refused as well. */
  gcap_graph *emb = NULL;
  assert_ok(gcap_node_get_child_graph(cn, &emb));
  gcap_node *inner = NULL;
  size_t count = 1;
  assert_ok(gcap_graph_get_nodes(emb, &inner, &count));
  assert_status(gcap_exec_node_set_enabled(x, inner, false), GCAP_ERROR_INVALID_VALUE);
  launch(x, f->s);
  assert_int_equal(c.a, 2);
  assert_dev_bytes(f->ctx, d, 0x44, 32);

  dev_set(f->ctx, d, 0, 64);
  assert_ok(gcap_exec_node_set_enabled(x, ms, false));
  test_assert_message_empty();
  assert_ok(gcap_exec_node_set_enabled(x, mc, false));
  assert_ok(gcap_exec_node_set_enabled(x, k, false));
  gcap_sim_stats s0 = {0}, s1;
  if (test_on_sim()) s0 = stats_of(f->ctx);
  launch(x, f->s);
  if (test_on_sim()) s1 = stats_of(f->ctx);
  assert_int_equal(c.a, 3);
  assert_dev_bytes(f->ctx, d, 0, 64);
  if (test_on_sim()) {
    assert_int_equal(s1.nodes_executed - s0.nodes_executed, gcap_exec_node_count(x));
    assert_int_equal(gcap_exec_node_count(x), 9);
    assert_int_equal(s1.bytes_set - s0.bytes_set, 0);
    assert_int_equal(s1.bytes_copied - s0.bytes_copied, 0);
    assert_int_equal(s1.kernels_executed - s0.kernels_executed, 0);
    assert_int_equal(s1.host_calls - s0.host_calls, 1);
  }
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  gcap_graph_destroy(child);
  assert_ok(gcap_event_destroy(e));
  assert_ok(gcap_mem_free(f->ctx, d));
  assert_ok(gcap_module_unload(m));
}

static void test_update_enable_reenable_restores(void **state) {
  struct test_fixture *f = *state;
  struct one_memset o = make_one_memset(f->ctx);
  assert_ok(gcap_exec_node_set_enabled(o.x, o.n, false));
  launch(o.x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0, 64);
  /* Parameters changed while disabled are used once enabled again. */
  gcap_memset_node_params p = {o.d, 0x6e, 1, 32, 1, 32};
  assert_ok(gcap_exec_memset_node_set_params(o.x, o.n, &p));
  launch(o.x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0, 64);
  assert_ok(gcap_exec_node_set_enabled(o.x, o.n, true));
  launch(o.x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0x6e, 32);
  assert_dev_bytes(f->ctx, o.d + 32, 0, 32);
  /* Enabling twice is harmless; disabling is idempotent. */
  assert_ok(gcap_exec_node_set_enabled(o.x, o.n, true));
  assert_ok(gcap_exec_node_set_enabled(o.x, o.n, false));
  assert_ok(gcap_exec_node_set_enabled(o.x, o.n, false));
  dev_set(f->ctx, o.d, 0, 64);
  launch(o.x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0, 64);
  /* A fresh exec of the graph has the node enabled with its original params. */
  gcap_exec *y = instantiate(o.g);
  launch(y, f->s);
  assert_dev_bytes(f->ctx, o.d, 0x11, 64);
  gcap_exec_destroy(y);
  gcap_exec_destroy(o.x);
  gcap_graph_destroy(o.g);
  assert_ok(gcap_mem_free(f->ctx, o.d));
}

struct order_probe {
  int first_ran, second_ran, bad_order;
};
static void mark_first(void *u) { ((struct order_probe *)u)->first_ran++; }
static void check_second(void *u) {
  struct order_probe *o = u;
  if (o->first_ran != o->second_ran + 1) o->bad_order++;
  o->second_ran++;
}

static void test_update_enable_disabled_node_keeps_edges(void **state) {
  (void)state;
  test_require_sim(); /* GCAP_SIM_ORDER_SHUFFLE */
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.order = GCAP_SIM_ORDER_SHUFFLE;
  so.seed = 1234;
  gcap_context_options co;
  gcap_context_options_init(&co);
  co.backend = GCAP_BACKEND_SIM;
  co.sim = &so;
  gcap_context *ctx = NULL;
  assert_ok(gcap_context_create(&co, &ctx));
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  unsigned char *d = test_dev_alloc(ctx, 64);
  struct order_probe op = {0, 0, 0};
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *h1 = add_host(g, NULL, 0, mark_first, &op);
  gcap_node *mid = add_memset(g, &h1, 1, d, 0x01, 1, 64, 1, 64);
  add_host(g, &mid, 1, check_second, &op);
  for (int i = 0; i < 6; i++) add_empty(g, NULL, 0); /* freedom for the shuffle */
  gcap_exec *x = instantiate(g);
  assert_ok(gcap_exec_node_set_enabled(x, mid, false));
  for (int i = 0; i < 40; i++) launch(x, s);
  assert_int_equal(op.first_ran, 40);
  assert_int_equal(op.second_ran, 40);
  assert_int_equal(op.bad_order, 0);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

/* ====================================================== pairing (rules.md#update-pairing) */

/* A graph with one node of most kinds; params picked by `v`. */
struct rich {
  gcap_graph *g, *child;
  gcap_node *ms, *mc, *hn, *em, *cn, *er, *ew;
};

static void build_rich(gcap_context *ctx, struct rich *r, unsigned char *d, unsigned char *h, unsigned char v,
                       struct counter *c, gcap_event *e) {
  r->child = test_graph_create(ctx);
  add_memset(r->child, NULL, 0, d + 32, (uint32_t)v + 1, 1, 32, 1, 32);
  r->g = test_graph_create(ctx);
  r->ms = add_memset(r->g, NULL, 0, d, v, 1, 16, 1, 16);
  r->mc = add_memcpy(r->g, &r->ms, 1, h, d, 16, GCAP_MEMCPY_DEVICE_TO_HOST);
  r->hn = add_host(r->g, &r->mc, 1, count_a, c);
  r->em = add_empty(r->g, NULL, 0);
  gcap_node *deps[] = {r->hn, r->em};
  assert_ok(gcap_graph_add_child_graph_node(r->g, deps, 2, r->child, &r->cn));
  assert_ok(gcap_graph_add_event_record_node(r->g, &r->cn, 1, e, &r->er));
  assert_ok(gcap_graph_add_event_wait_node(r->g, &r->er, 1, e, &r->ew));
}

static void free_rich(struct rich *r) {
  gcap_graph_destroy(r->g);
  gcap_graph_destroy(r->child);
}

static void test_update_pairing_clone_pairs(void **state) {
  struct test_fixture *f = *state;
  unsigned char *d = test_dev_alloc(f->ctx, 64);
  dev_set(f->ctx, d, 0, 64);
  unsigned char h[16], h2[16];
  memset(h, 0, sizeof h);
  memset(h2, 0, sizeof h2);
  struct counter c = {0, 0}, c2 = {0, 0};
  gcap_event *e = NULL;
  assert_ok(gcap_event_create(f->ctx, &e));
  struct rich r;
  build_rich(f->ctx, &r, d, h, 0x20, &c, e);
  gcap_exec *x = instantiate(r.g);

  /* An unmodified clone pairs. */
  gcap_graph *cl = NULL;
  assert_ok(gcap_graph_clone(r.g, &cl));
  gcap_exec_update_info info = {GCAP_EXEC_UPDATE_ERROR, r.ms, r.ms};
  assert_ok(gcap_exec_update(x, cl, &info));
  test_assert_message_empty();
  assert_info(&info, GCAP_EXEC_UPDATE_SUCCESS, NULL, NULL);
  launch(x, f->s);
  assert_host_bytes(h, 0x20, 16);
  assert_dev_bytes(f->ctx, d + 32, 0x21, 32);
  assert_int_equal(c.a, 1);

  /* A clone with new parameters pairs and its work runs. */
  gcap_node *cn[7];
  size_t count = 7;
  assert_ok(gcap_graph_get_nodes(cl, cn, &count));
  assert_int_equal(count, 7);
  gcap_memset_node_params mp = {d, 0x30, 1, 16, 1, 16};
  assert_ok(gcap_node_set_memset_params(cn[0], &mp));
  gcap_memcpy_node_params cp = {h2, d, 16, GCAP_MEMCPY_DEVICE_TO_HOST};
  assert_ok(gcap_node_set_memcpy_params(cn[1], &cp));
  gcap_host_node_params hp = {count_b, &c2};
  assert_ok(gcap_node_set_host_params(cn[2], &hp));
  gcap_graph *emb = NULL;
  assert_ok(gcap_node_get_child_graph(cn[4], &emb));
  gcap_node *inner = NULL;
  count = 1;
  assert_ok(gcap_graph_get_nodes(emb, &inner, &count));
  gcap_memset_node_params ip = {d + 32, 0x31, 1, 32, 1, 32};
  assert_ok(gcap_node_set_memset_params(inner, &ip));
  assert_ok(gcap_exec_update(x, cl, &info));
  assert_info(&info, GCAP_EXEC_UPDATE_SUCCESS, NULL, NULL);
  memset(h, 0, sizeof h);
  launch(x, f->s);
  assert_host_bytes(h, 0, 16);
  assert_host_bytes(h2, 0x30, 16);
  assert_dev_bytes(f->ctx, d + 32, 0x31, 32);
  assert_int_equal(c.a, 1);
  assert_int_equal(c2.b, 100);
  /* The source graph is untouched; the clone too. */
  assert_memset_params(r.ms, d, 0x20, 1, 16, 1);
  assert_memcpy_params(r.mc, h, d, 16, GCAP_MEMCPY_DEVICE_TO_HOST);
  assert_memset_params(cn[0], d, 0x30, 1, 16, 1);
  assert_int_equal(gcap_graph_node_count(cl), 7);
  assert_int_equal(gcap_graph_edge_count(cl), gcap_graph_edge_count(r.g));

  gcap_graph_destroy(cl);
  gcap_exec_destroy(x);
  free_rich(&r);
  assert_ok(gcap_event_destroy(e));
  assert_ok(gcap_mem_free(f->ctx, d));
}

/* The same sequence of stream calls, with different arguments. */
static gcap_graph *capture_sequence(struct test_fixture *f, gcap_kernel *k, float *buf, float factor, uint32_t n,
                                    unsigned char *d, unsigned char fill, float *host_out, struct counter *c,
                                    gcap_host_fn fn) {
  gcap_stream *s2 = NULL;
  assert_ok(gcap_stream_create(f->ctx, &s2));
  gcap_event *fork = NULL, *join = NULL;
  assert_ok(gcap_event_create(f->ctx, &fork));
  assert_ok(gcap_event_create(f->ctx, &join));
  assert_ok(gcap_stream_begin_capture(f->s, GCAP_CAPTURE_MODE_GLOBAL));
  void *args[] = {&buf, &factor, &n};
  assert_ok(gcap_launch_kernel(f->s, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(N, 1, 1), 0, args));
  assert_ok(gcap_event_record(fork, f->s));
  assert_ok(gcap_stream_wait_event(s2, fork));
  assert_ok(gcap_memset_async(s2, d, fill, 32));
  assert_ok(gcap_event_record(join, s2));
  assert_ok(gcap_memcpy_async(f->s, host_out, buf, n * sizeof(float), GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_stream_wait_event(f->s, join));
  assert_ok(gcap_launch_host_func(f->s, fn, c));
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_end_capture(f->s, &g));
  assert_non_null(g);
  assert_ok(gcap_event_destroy(fork));
  assert_ok(gcap_event_destroy(join));
  assert_ok(gcap_stream_destroy(s2));
  return g;
}

static void test_update_pairing_recaptured_graph_pairs(void **state) {
  struct test_fixture *f = *state;
  test_require_sim(); /* checks what scale_sim computed */
  gcap_module *m = load_kernels(f->ctx);
  gcap_kernel *scale = test_kernel_of(m, "scale");
  float *a = test_dev_alloc(f->ctx, N * sizeof(float));
  float *b = test_dev_alloc(f->ctx, N * sizeof(float));
  unsigned char *d = test_dev_alloc(f->ctx, 64);
  float ones[N], out1[N], out2[N], want[N];
  for (int i = 0; i < N; i++) ones[i] = (float)(i + 1);
  memset(out1, 0, sizeof out1);
  memset(out2, 0, sizeof out2);
  struct counter c1 = {0, 0}, c2 = {0, 0};
  gcap_graph *g1 = capture_sequence(f, scale, a, 2.0f, N, d, 0x11, out1, &c1, count_a);
  gcap_graph *g2 = capture_sequence(f, scale, b, 5.0f, N / 2, d + 32, 0x22, out2, &c2, count_b);
  assert_int_equal(gcap_graph_node_count(g1), 4);
  assert_int_equal(gcap_graph_node_count(g2), 4);
  gcap_exec *x = instantiate(g1);
  to_dev(f->ctx, a, ones, sizeof ones);
  to_dev(f->ctx, b, ones, sizeof ones);
  dev_set(f->ctx, d, 0, 64);
  launch(x, f->s);
  for (int i = 0; i < N; i++) want[i] = ones[i] * 2.0f;
  assert_floats(out1, want, N);
  assert_dev_bytes(f->ctx, d, 0x11, 32);
  assert_int_equal(c1.a, 1);

  gcap_exec_update_info info;
  assert_ok(gcap_exec_update(x, g2, &info));
  assert_info(&info, GCAP_EXEC_UPDATE_SUCCESS, NULL, NULL);
  dev_set(f->ctx, d, 0, 64);
  memset(out1, 0, sizeof out1);
  launch(x, f->s);
  for (int i = 0; i < N; i++) want[i] = i < N / 2 ? ones[i] * 5.0f : 0.0f;
  assert_floats(out2, want, N);
  assert_host_bytes(out1, 0, sizeof out1);
  float got[N];
  for (int i = 0; i < N; i++) want[i] = ones[i] * 2.0f;
  from_dev(f->ctx, got, a, sizeof got);
  assert_floats(got, want, N); /* a scaled by the first launch only */
  assert_dev_bytes(f->ctx, d, 0, 32);
  assert_dev_bytes(f->ctx, d + 32, 0x22, 32);
  assert_int_equal(c1.a, 1);
  assert_int_equal(c2.b, 100);

  gcap_exec_destroy(x);
  gcap_graph_destroy(g1);
  gcap_graph_destroy(g2);
  assert_ok(gcap_mem_free(f->ctx, a));
  assert_ok(gcap_mem_free(f->ctx, b));
  assert_ok(gcap_mem_free(f->ctx, d));
  assert_ok(gcap_module_unload(m));
}

static void test_update_pairing_original_nodes_still_name_exec_nodes(void **state) {
  struct test_fixture *f = *state;
  struct one_memset o = make_one_memset(f->ctx);
  unsigned char *d2 = test_dev_alloc(f->ctx, 64);
  dev_set(f->ctx, d2, 0, 64);
  gcap_graph *g2 = test_graph_create(f->ctx);
  gcap_node *n2 = add_memset(g2, NULL, 0, d2, 0x77, 1, 64, 1, 64);
  gcap_exec_update_info info;
  assert_ok(gcap_exec_update(o.x, g2, &info));
  assert_info(&info, GCAP_EXEC_UPDATE_SUCCESS, NULL, NULL);
  launch(o.x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0, 64);
  assert_dev_bytes(f->ctx, d2, 0x77, 64);
  /* The node of g2 does not name an exec node; the original does. */
  gcap_memset_node_params p = {o.d, 0x78, 1, 16, 1, 16};
  assert_status(gcap_exec_memset_node_set_params(o.x, n2, &p), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_exec_node_set_enabled(o.x, n2, false), GCAP_ERROR_INVALID_VALUE);
  assert_ok(gcap_exec_memset_node_set_params(o.x, o.n, &p));
  launch(o.x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0x78, 16);
  assert_dev_bytes(f->ctx, o.d + 16, 0, 48);
  /* g2 is unchanged and may be destroyed; the exec keeps working. */
  assert_memset_params(n2, d2, 0x77, 1, 64, 1);
  gcap_graph_destroy(g2);
  dev_set(f->ctx, o.d, 0, 64);
  launch(o.x, f->s);
  assert_dev_bytes(f->ctx, o.d, 0x78, 16);
  gcap_exec_destroy(o.x);
  gcap_graph_destroy(o.g);
  assert_ok(gcap_mem_free(f->ctx, o.d));
  assert_ok(gcap_mem_free(f->ctx, d2));
}

/* ====================================================== refusals (rules.md#update-result) */

/* Exec: memset A (0x11 on d[0..31]) -> memset B (0x22 on d[32..63]); both checked after a refused update. */
struct two {
  gcap_graph *g;
  gcap_node *a, *b;
  gcap_exec *x;
  unsigned char *d;
};

static void make_two(gcap_context *ctx, struct two *t) {
  t->d = test_dev_alloc(ctx, 64);
  t->g = test_graph_create(ctx);
  t->a = add_memset(t->g, NULL, 0, t->d, 0x11, 1, 32, 1, 32);
  t->b = add_memset(t->g, &t->a, 1, t->d + 32, 0x22, 1, 32, 1, 32);
  t->x = instantiate(t->g);
}

static void assert_two_unchanged(struct test_fixture *f, struct two *t) {
  dev_set(f->ctx, t->d, 0, 64);
  launch(t->x, f->s);
  assert_dev_bytes(f->ctx, t->d, 0x11, 32);
  assert_dev_bytes(f->ctx, t->d + 32, 0x22, 32);
}

static void free_two(gcap_context *ctx, struct two *t) {
  gcap_exec_destroy(t->x);
  gcap_graph_destroy(t->g);
  assert_ok(gcap_mem_free(ctx, t->d));
}

static void test_update_result_count_mismatch(void **state) {
  struct test_fixture *f = *state;
  struct two t;
  make_two(f->ctx, &t);
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *a = add_memset(g, NULL, 0, t.d, 0x33, 1, 32, 1, 32);
  add_memset(g, &a, 1, t.d + 32, 0x44, 1, 32, 1, 32);
  add_empty(g, NULL, 0);
  gcap_exec_update_info info;
  assert_status(gcap_exec_update(t.x, g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  test_assert_message_set();
  test_assert_message_contains("gcap_exec_update");
  assert_info(&info, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, NULL, NULL);
  assert_two_unchanged(f, &t);
  gcap_graph_destroy(g);

  /* Fewer nodes. */
  g = test_graph_create(f->ctx);
  add_memset(g, NULL, 0, t.d, 0x33, 1, 32, 1, 32);
  assert_status(gcap_exec_update(t.x, g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  assert_info(&info, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, NULL, NULL);
  assert_two_unchanged(f, &t);
  gcap_graph_destroy(g);

  /* The source graph itself after adding a node. */
  add_empty(t.g, &t.b, 1);
  assert_status(gcap_exec_update(t.x, t.g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  assert_info(&info, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, NULL, NULL);
  assert_two_unchanged(f, &t);
  free_two(f->ctx, &t);
}

static void test_update_result_dependency_count(void **state) {
  struct test_fixture *f = *state;
  /* x: A, B, C (C after A). g: A', B', C' (C' after A' and B'). */
  unsigned char *d = test_dev_alloc(f->ctx, 48);
  gcap_graph *g0 = test_graph_create(f->ctx);
  gcap_node *a = add_memset(g0, NULL, 0, d, 0x01, 1, 16, 1, 16);
  add_memset(g0, NULL, 0, d + 16, 0x02, 1, 16, 1, 16);
  add_memset(g0, &a, 1, d + 32, 0x03, 1, 16, 1, 16);
  gcap_exec *x = instantiate(g0);
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *ab[2];
  ab[0] = add_memset(g, NULL, 0, d, 0x04, 1, 16, 1, 16);
  ab[1] = add_memset(g, NULL, 0, d + 16, 0x05, 1, 16, 1, 16);
  gcap_node *c = add_memset(g, ab, 2, d + 32, 0x06, 1, 16, 1, 16);
  gcap_exec_update_info info;
  assert_status(gcap_exec_update(x, g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  test_assert_message_set();
  assert_info(&info, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, c, NULL);
  dev_set(f->ctx, d, 0, 48);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0x01, 16);
  assert_dev_bytes(f->ctx, d + 16, 0x02, 16);
  assert_dev_bytes(f->ctx, d + 32, 0x03, 16);
  assert_memset_params(c, d + 32, 0x06, 1, 16, 1);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g0);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, d));
}

static void test_update_result_dependency_mismatch_reports_from_node(void **state) {
  struct test_fixture *f = *state;
  /* x: A, B, C (C after A). g: A', B', C' (C' after B'). */
  unsigned char *d = test_dev_alloc(f->ctx, 48);
  gcap_graph *g0 = test_graph_create(f->ctx);
  gcap_node *a = add_memset(g0, NULL, 0, d, 0x01, 1, 16, 1, 16);
  add_memset(g0, NULL, 0, d + 16, 0x02, 1, 16, 1, 16);
  add_memset(g0, &a, 1, d + 32, 0x03, 1, 16, 1, 16);
  gcap_exec *x = instantiate(g0);
  gcap_graph *g = test_graph_create(f->ctx);
  add_memset(g, NULL, 0, d, 0x04, 1, 16, 1, 16);
  gcap_node *b2 = add_memset(g, NULL, 0, d + 16, 0x05, 1, 16, 1, 16);
  gcap_node *c2 = add_memset(g, &b2, 1, d + 32, 0x06, 1, 16, 1, 16);
  gcap_exec_update_info info;
  assert_status(gcap_exec_update(x, g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  assert_info(&info, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, c2, b2);
  dev_set(f->ctx, d, 0, 48);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0x01, 16);
  assert_dev_bytes(f->ctx, d + 16, 0x02, 16);
  assert_dev_bytes(f->ctx, d + 32, 0x03, 16);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g0);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, d));
}

static void test_update_result_dependency_order_matters(void **state) {
  struct test_fixture *f = *state;
  /* x: A, B, C after (A, B). g: A', B', C' after (B', A'): same edges, other order. */
  unsigned char *d = test_dev_alloc(f->ctx, 48);
  gcap_graph *g0 = test_graph_create(f->ctx);
  gcap_node *ab[2];
  ab[0] = add_memset(g0, NULL, 0, d, 0x01, 1, 16, 1, 16);
  ab[1] = add_memset(g0, NULL, 0, d + 16, 0x02, 1, 16, 1, 16);
  add_memset(g0, ab, 2, d + 32, 0x03, 1, 16, 1, 16);
  gcap_exec *x = instantiate(g0);
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *ba[2];
  ba[1] = add_memset(g, NULL, 0, d, 0x04, 1, 16, 1, 16);
  ba[0] = add_memset(g, NULL, 0, d + 16, 0x05, 1, 16, 1, 16);
  gcap_node *c2 = add_memset(g, ba, 2, d + 32, 0x06, 1, 16, 1, 16);
  gcap_exec_update_info info;
  assert_status(gcap_exec_update(x, g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  assert_info(&info, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, c2, ba[0]);
  dev_set(f->ctx, d, 0, 48);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0x01, 16);
  assert_dev_bytes(f->ctx, d + 32, 0x03, 16);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g0);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, d));
}

static void test_update_result_topology_before_type(void **state) {
  struct test_fixture *f = *state;
  unsigned char *d = test_dev_alloc(f->ctx, 64);
  unsigned char h[64];
  memset(h, 0x5c, sizeof h);
  /* x: a memcpy root M, then an empty node after it. */
  gcap_graph *g0 = test_graph_create(f->ctx);
  gcap_node *mc = add_memcpy(g0, NULL, 0, d, h, 64, GCAP_MEMCPY_HOST_TO_DEVICE);
  add_empty(g0, &mc, 1);
  gcap_exec *x = instantiate(g0);
  /* g: its first node is a memset with one dependency (on an empty node created second). */
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *ms = add_memset(g, NULL, 0, d, 0x01, 1, 64, 1, 64);
  gcap_node *em = add_empty(g, NULL, 0);
  assert_ok(gcap_graph_add_dependencies(g, &em, &ms, 1));
  gcap_exec_update_info info;
  assert_status(gcap_exec_update(x, g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  test_assert_message_set();
  assert_info(&info, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, ms, NULL);
  dev_set(f->ctx, d, 0, 64);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0x5c, 64);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g0);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, d));
}

static void test_update_result_topology_before_type_later_node(void **state) {
  struct test_fixture *f = *state;
  unsigned char *d = test_dev_alloc(f->ctx, 64);
  unsigned char h[64];
  memset(h, 0x5c, sizeof h);
  /* x: memcpy M, empty E1, empty E2 after E1. g: memset S, E1', E2' after E1' and S. */
  gcap_graph *g0 = test_graph_create(f->ctx);
  add_memcpy(g0, NULL, 0, d, h, 64, GCAP_MEMCPY_HOST_TO_DEVICE);
  gcap_node *e1 = add_empty(g0, NULL, 0);
  add_empty(g0, &e1, 1);
  gcap_exec *x = instantiate(g0);
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *deps[2];
  deps[1] = add_memset(g, NULL, 0, d, 0x01, 1, 64, 1, 64);
  deps[0] = add_empty(g, NULL, 0);
  gcap_node *e2 = add_empty(g, deps, 2);
  gcap_exec_update_info info;
  assert_status(gcap_exec_update(x, g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  assert_info(&info, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, e2, NULL);
  dev_set(f->ctx, d, 0, 64);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0x5c, 64);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g0);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, d));
}

static void test_update_result_type_changed(void **state) {
  struct test_fixture *f = *state;
  struct two t;
  make_two(f->ctx, &t);
  unsigned char h[32];
  memset(h, 0x66, sizeof h);
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *a = add_memset(g, NULL, 0, t.d, 0x33, 1, 32, 1, 32);
  gcap_node *b = add_memcpy(g, &a, 1, t.d + 32, h, 32, GCAP_MEMCPY_HOST_TO_DEVICE);
  gcap_exec_update_info info;
  assert_status(gcap_exec_update(t.x, g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  test_assert_message_set();
  assert_info(&info, GCAP_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, b, NULL);
  assert_two_unchanged(f, &t);
  gcap_graph_destroy(g);

  /* memset -> empty. */
  g = test_graph_create(f->ctx);
  gcap_node *e = add_empty(g, NULL, 0);
  add_memset(g, &e, 1, t.d + 32, 0x44, 1, 32, 1, 32);
  assert_status(gcap_exec_update(t.x, g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  assert_info(&info, GCAP_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, e, NULL);
  assert_two_unchanged(f, &t);
  gcap_graph_destroy(g);
  free_two(f->ctx, &t);
}

/* ====================================================== what may change (rules.md#update-allowed) */

static void test_update_allowed_memcpy_direction(void **state) {
  struct test_fixture *f = *state;
  unsigned char *d = test_dev_alloc(f->ctx, 64);
  unsigned char h[64], h2[64];
  memset(h, 0x12, sizeof h);
  memset(h2, 0, sizeof h2);
  gcap_graph *g0 = test_graph_create(f->ctx);
  add_memcpy(g0, NULL, 0, d, h, 64, GCAP_MEMCPY_HOST_TO_DEVICE);
  gcap_exec *x = instantiate(g0);
  /* H2D -> D2H. */
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *n = add_memcpy(g, NULL, 0, h2, d, 64, GCAP_MEMCPY_DEVICE_TO_HOST);
  gcap_exec_update_info info;
  assert_status(gcap_exec_update(x, g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  test_assert_message_set();
  assert_info(&info, GCAP_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED, n, NULL);
  gcap_graph_destroy(g);
  /* H2D -> DEFAULT with the same operands (kind change). */
  g = test_graph_create(f->ctx);
  n = add_memcpy(g, NULL, 0, d, h, 64, GCAP_MEMCPY_DEFAULT);
  assert_status(gcap_exec_update(x, g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  assert_info(&info, GCAP_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED, n, NULL);
  gcap_graph_destroy(g);
  dev_set(f->ctx, d, 0, 64);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0x12, 64);
  assert_host_bytes(h2, 0, 64);
  /* Same kind, new operands: allowed. */
  memset(h2, 0x13, sizeof h2);
  g = test_graph_create(f->ctx);
  add_memcpy(g, NULL, 0, d + 32, h2, 32, GCAP_MEMCPY_HOST_TO_DEVICE);
  assert_ok(gcap_exec_update(x, g, &info));
  assert_info(&info, GCAP_EXEC_UPDATE_SUCCESS, NULL, NULL);
  dev_set(f->ctx, d, 0, 64);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0, 32);
  assert_dev_bytes(f->ctx, d + 32, 0x13, 32);
  gcap_graph_destroy(g);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g0);
  assert_ok(gcap_mem_free(f->ctx, d));
}

static void test_update_allowed_memset_shape(void **state) {
  struct test_fixture *f = *state;
  unsigned char *d = test_dev_alloc(f->ctx, 256);
  gcap_graph *g0 = test_graph_create(f->ctx);
  gcap_node *a = add_memset(g0, NULL, 0, d, 0x01, 1, 32, 4, 64); /* 2-D */
  add_memset(g0, &a, 1, d + 32, 0x02, 1, 16, 1, 16);             /* 1-D */
  gcap_exec *x = instantiate(g0);
  gcap_exec_update_info info;
  const struct {
    unsigned es;
    size_t w, h, pitch;
    unsigned es1;
    size_t w1, h1, p1;
    int bad_first;
  } cases[] = {
      {1, 16, 4, 64, 1, 16, 1, 16, 1}, /* 2-D width */
      {1, 32, 4, 48, 1, 16, 1, 16, 1}, /* 2-D pitch */
      {1, 32, 2, 64, 1, 16, 1, 16, 1}, /* 2-D height */
      {2, 16, 4, 64, 1, 16, 1, 16, 1}, /* 2-D element size */
      {1, 32, 4, 64, 1, 8, 2, 64, 0},  /* 1-D -> 2-D */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gcap_graph *g = test_graph_create(f->ctx);
    gcap_node *ga = add_memset(g, NULL, 0, d, 0x03, cases[i].es, cases[i].w, cases[i].h, cases[i].pitch);
    gcap_node *gb = add_memset(g, &ga, 1, d + 32, 0x04, cases[i].es1, cases[i].w1, cases[i].h1, cases[i].p1);
    assert_status(gcap_exec_update(x, g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    assert_info(&info, GCAP_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED, cases[i].bad_first ? ga : gb, NULL);
    gcap_graph_destroy(g);
  }
  dev_set(f->ctx, d, 0, 256);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0x01, 32);
  assert_dev_bytes(f->ctx, d + 32, 0x02, 16);
  assert_dev_bytes(f->ctx, d + 48, 0, 16);
  assert_dev_bytes(f->ctx, d + 64, 0x01, 32);
  /* 2-D with a new dst and value, 1-D with a new width and element size: allowed. */
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *ga = add_memset(g, NULL, 0, d + 4, 0x05, 1, 32, 4, 64);
  add_memset(g, &ga, 1, d + 40, 0x06060606u, 4, 5, 1, 20);
  assert_ok(gcap_exec_update(x, g, &info));
  assert_info(&info, GCAP_EXEC_UPDATE_SUCCESS, NULL, NULL);
  dev_set(f->ctx, d, 0, 256);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0, 4);
  assert_dev_bytes(f->ctx, d + 4, 0x05, 32);
  assert_dev_bytes(f->ctx, d + 36, 0, 4);
  assert_dev_bytes(f->ctx, d + 40, 0x06, 20);
  assert_dev_bytes(f->ctx, d + 60, 0, 8);
  assert_dev_bytes(f->ctx, d + 68, 0x05, 32);
  gcap_graph_destroy(g);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g0);
  assert_ok(gcap_mem_free(f->ctx, d));
}

static void test_update_allowed_kernel_function_change_allowed(void **state) {
  struct test_fixture *f = *state;
  gcap_module *m = load_kernels(f->ctx);
  float *a = test_dev_alloc(f->ctx, N * sizeof(float));
  float *b = test_dev_alloc(f->ctx, N * sizeof(float));
  float init[N], got[N], want[N];
  for (int i = 0; i < N; i++) init[i] = (float)i;
  to_dev(f->ctx, a, init, sizeof init);
  to_dev(f->ctx, b, init, sizeof init);
  float *pa = a, v = 2.0f;
  uint32_t n = N;
  void *args[] = {&pa, &v, &n};
  gcap_graph *g0 = test_graph_create(f->ctx);
  gcap_node *k0 = add_kernel(g0, NULL, 0, test_kernel_of(m, "scale"), 1, N, args);
  gcap_exec *x = instantiate(g0);
  float *pb = b, v2 = 7.0f;
  uint32_t n2 = N / 2;
  void *args2[] = {&pb, &v2, &n2};
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_kernel_node_params kp = {test_kernel_of(m, "fill"), GCAP_DIM3(2, 1, 1), GCAP_DIM3(4, 1, 1), 0, args2};
  gcap_node *k = NULL;
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &kp, &k));
  gcap_exec_update_info info;
  assert_ok(gcap_exec_update(x, g, &info));
  assert_info(&info, GCAP_EXEC_UPDATE_SUCCESS, NULL, NULL);
  launch(x, f->s);
  if (test_on_sim()) { /* fill_sim on b replaced scale_sim on a */
    from_dev(f->ctx, got, a, sizeof got);
    assert_floats(got, init, N);
    for (int i = 0; i < N; i++) want[i] = i < 8 ? 7.0f : (float)i;
    from_dev(f->ctx, got, b, sizeof got);
    assert_floats(got, want, N);
  }
  /* g unchanged, the original node still names the exec's node. */
  gcap_kernel_node_params sp;
  assert_ok(gcap_node_get_kernel_params(k, &sp));
  assert_int_equal(sp.grid.x, 2);
  assert_int_equal(sp.block.x, 4);
  void *args3[] = {&pa, &v, &n};
  kp = (gcap_kernel_node_params){test_kernel_of(m, "scale"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(N, 1, 1), 0, args3};
  assert_ok(gcap_exec_kernel_node_set_params(x, k0, &kp));
  assert_status(gcap_exec_kernel_node_set_params(x, k, &kp), GCAP_ERROR_INVALID_VALUE);
  launch(x, f->s);
  if (test_on_sim()) {
    for (int i = 0; i < N; i++) want[i] = (float)i * 2.0f;
    from_dev(f->ctx, got, a, sizeof got);
    assert_floats(got, want, N);
  }
  gcap_exec_destroy(x);
  gcap_graph_destroy(g0);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, a));
  assert_ok(gcap_mem_free(f->ctx, b));
  assert_ok(gcap_module_unload(m));
}

static void test_update_allowed_host_and_event_unrestricted(void **state) {
  struct test_fixture *f = *state;
  struct counter c1 = {0, 0}, c2 = {0, 0};
  gcap_event *e1 = NULL, *e2 = NULL;
  assert_ok(gcap_event_create(f->ctx, &e1));
  assert_ok(gcap_event_create(f->ctx, &e2));
  gcap_graph *g0 = test_graph_create(f->ctx);
  gcap_node *h = add_host(g0, NULL, 0, count_a, &c1);
  gcap_node *r = NULL, *w = NULL;
  assert_ok(gcap_graph_add_event_record_node(g0, &h, 1, e1, &r));
  assert_ok(gcap_graph_add_event_wait_node(g0, &r, 1, e1, &w));
  gcap_exec *x = instantiate(g0);
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *h2 = add_host(g, NULL, 0, count_b, &c2);
  gcap_node *r2 = NULL, *w2 = NULL;
  assert_ok(gcap_graph_add_event_record_node(g, &h2, 1, e2, &r2));
  assert_ok(gcap_graph_add_event_wait_node(g, &r2, 1, e2, &w2));
  gcap_exec_update_info info;
  assert_ok(gcap_exec_update(x, g, &info));
  assert_info(&info, GCAP_EXEC_UPDATE_SUCCESS, NULL, NULL);
  /* The new graph's events may go away; the exec holds them. */
  gcap_graph_destroy(g);
  assert_ok(gcap_event_destroy(e2));
  launch(x, f->s);
  assert_ok(gcap_event_synchronize(e1));
  assert_int_equal(c1.a, 0);
  assert_int_equal(c2.b, 100);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g0);
  assert_ok(gcap_event_destroy(e1));
}

/* A rewired edge inside a child graph, with the same nodes: TOPOLOGY_CHANGED naming the node. */
static void test_update_child_graph_edge_rewired(void **state) {
  struct test_fixture *f = *state;
  gcap_graph *graphs[2], *children[2];
  gcap_node *inner_c[2] = {NULL, NULL};
  for (int v = 0; v < 2; v++) {
    children[v] = test_graph_create(f->ctx);
    gcap_node *a = add_empty(children[v], NULL, 0), *b = add_empty(children[v], NULL, 0);
    gcap_node *from = v == 0 ? a : b; /* C depends on A, then on B */
    (void)add_empty(children[v], &from, 1);
    graphs[v] = test_graph_create(f->ctx);
    gcap_node *cn = NULL;
    assert_ok(gcap_graph_add_child_graph_node(graphs[v], NULL, 0, children[v], &cn));
    gcap_graph *emb = NULL;
    assert_ok(gcap_node_get_child_graph(cn, &emb));
    gcap_node *nodes[3];
    size_t count = 3;
    assert_ok(gcap_graph_get_nodes(emb, nodes, &count));
    inner_c[v] = nodes[2];
  }
  gcap_exec *x = instantiate(graphs[0]);
  gcap_exec_update_info info;
  assert_status(gcap_exec_update(x, graphs[1], &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  assert_int_equal(info.result, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  assert_ptr_equal(info.error_node, inner_c[1]);
  gcap_exec_destroy(x);
  for (int v = 0; v < 2; v++) {
    gcap_graph_destroy(graphs[v]);
    gcap_graph_destroy(children[v]);
  }
}

static void test_update_allowed_child_graph_compared_recursively(void **state) {
  struct test_fixture *f = *state;
  unsigned char *d = test_dev_alloc(f->ctx, 64);
  unsigned char h[32];
  memset(h, 0x70, sizeof h);
  gcap_graph *child = test_graph_create(f->ctx);
  add_memset(child, NULL, 0, d, 0x01, 1, 32, 1, 32);
  gcap_graph *g0 = test_graph_create(f->ctx);
  gcap_node *cn0 = NULL;
  assert_ok(gcap_graph_add_child_graph_node(g0, NULL, 0, child, &cn0));
  gcap_exec *x = instantiate(g0);
  gcap_exec_update_info info;

  /* The child's node changed type. */
  gcap_graph *child2 = test_graph_create(f->ctx);
  add_memcpy(child2, NULL, 0, d, h, 32, GCAP_MEMCPY_HOST_TO_DEVICE);
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *cn = NULL;
  assert_ok(gcap_graph_add_child_graph_node(g, NULL, 0, child2, &cn));
  gcap_graph *emb = NULL;
  assert_ok(gcap_node_get_child_graph(cn, &emb));
  gcap_node *inner = NULL;
  size_t count = 1;
  assert_ok(gcap_graph_get_nodes(emb, &inner, &count));
  assert_status(gcap_exec_update(x, g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  assert_info(&info, GCAP_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, inner, NULL);
  gcap_graph_destroy(g);
  gcap_graph_destroy(child2);

  /* The child has one more node. */
  child2 = test_graph_create(f->ctx);
  add_memset(child2, NULL, 0, d, 0x02, 1, 32, 1, 32);
  add_empty(child2, NULL, 0);
  g = test_graph_create(f->ctx);
  assert_ok(gcap_graph_add_child_graph_node(g, NULL, 0, child2, &cn));
  assert_status(gcap_exec_update(x, g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  assert_int_equal(info.result, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  gcap_graph_destroy(g);
  gcap_graph_destroy(child2);
  dev_set(f->ctx, d, 0, 64);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0x01, 32);
  assert_dev_bytes(f->ctx, d + 32, 0, 32);

  /* A child with the same shape and new params updates. */
  child2 = test_graph_create(f->ctx);
  add_memset(child2, NULL, 0, d + 32, 0x03, 1, 32, 1, 32);
  g = test_graph_create(f->ctx);
  assert_ok(gcap_graph_add_child_graph_node(g, NULL, 0, child2, &cn));
  assert_ok(gcap_exec_update(x, g, &info));
  assert_info(&info, GCAP_EXEC_UPDATE_SUCCESS, NULL, NULL);
  dev_set(f->ctx, d, 0, 64);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0, 32);
  assert_dev_bytes(f->ctx, d + 32, 0x03, 32);
  gcap_graph_destroy(g);
  gcap_graph_destroy(child2);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g0);
  gcap_graph_destroy(child);
  assert_ok(gcap_mem_free(f->ctx, d));
}

/* ====================================================== scope (rules.md#update-scope) */

static void test_update_scope_info_null(void **state) {
  struct test_fixture *f = *state;
  struct two t;
  make_two(f->ctx, &t);
  gcap_graph *cl = NULL;
  assert_ok(gcap_graph_clone(t.g, &cl));
  gcap_node *nodes[2];
  size_t count = 2;
  assert_ok(gcap_graph_get_nodes(cl, nodes, &count));
  gcap_memset_node_params p = {t.d, 0x55, 1, 32, 1, 32};
  assert_ok(gcap_node_set_memset_params(nodes[0], &p));
  assert_status(gcap_exec_update(t.x, cl, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  test_assert_message_contains("gcap_exec_update");
  assert_two_unchanged(f, &t);
  gcap_graph_destroy(cl);
  free_two(f->ctx, &t);
}

static void test_update_scope_handle_errors(void **state) {
  struct test_fixture *f = *state;
  struct two t;
  make_two(f->ctx, &t);
  gcap_exec_update_info info;
  assert_status(gcap_exec_update(NULL, t.g, &info), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_set();
  assert_status(gcap_exec_update(t.x, NULL, &info), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_exec_update(NULL, NULL, NULL), GCAP_ERROR_INVALID_HANDLE);
  gcap_graph *dead = test_graph_create(f->ctx);
  gcap_graph_destroy(dead);
  assert_status(gcap_exec_update(t.x, dead, &info), GCAP_ERROR_INVALID_HANDLE);
  gcap_context *other = test_context_create();
  unsigned char *od = test_dev_alloc(other, 64);
  gcap_graph *og = test_graph_create(other);
  gcap_node *oa = add_memset(og, NULL, 0, od, 0x33, 1, 32, 1, 32);
  add_memset(og, &oa, 1, od + 32, 0x44, 1, 32, 1, 32);
  assert_status(gcap_exec_update(t.x, og, &info), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_set();
  assert_two_unchanged(f, &t);
  gcap_context_destroy(other);
  gcap_exec *dx = instantiate(t.g);
  gcap_exec_destroy(dx);
  assert_status(gcap_exec_update(dx, t.g, &info), GCAP_ERROR_INVALID_HANDLE);
  free_two(f->ctx, &t);
}

static void test_update_scope_failed_update_leaves_exec_unchanged(void **state) {
  struct test_fixture *f = *state;
  struct two t;
  make_two(f->ctx, &t);
  /* Changes made by setters and enable flags survive a refused update. */
  gcap_memset_node_params p = {t.d, 0x5a, 1, 32, 1, 32};
  assert_ok(gcap_exec_memset_node_set_params(t.x, t.a, &p));
  assert_ok(gcap_exec_node_set_enabled(t.x, t.b, false));
  unsigned char h[32];
  memset(h, 0x66, sizeof h);
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *a = add_memset(g, NULL, 0, t.d, 0x33, 1, 32, 1, 32);
  add_memcpy(g, &a, 1, t.d + 32, h, 32, GCAP_MEMCPY_HOST_TO_DEVICE);
  gcap_exec_update_info info;
  assert_status(gcap_exec_update(t.x, g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  dev_set(f->ctx, t.d, 0, 64);
  launch(t.x, f->s);
  assert_dev_bytes(f->ctx, t.d, 0x5a, 32);
  assert_dev_bytes(f->ctx, t.d + 32, 0, 32);
  gcap_graph_destroy(g);

  /* g's params no longer valid (its memory was freed): result ERROR, exec unchanged. */
  unsigned char *tmp = test_dev_alloc(f->ctx, 64);
  g = test_graph_create(f->ctx);
  a = add_memset(g, NULL, 0, tmp, 0x33, 1, 32, 1, 32);
  add_memset(g, &a, 1, tmp + 32, 0x44, 1, 32, 1, 32);
  assert_ok(gcap_mem_free(f->ctx, tmp));
  if (test_on_sim()) {
    assert_status(gcap_exec_update(t.x, g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    test_assert_message_set();
    assert_int_equal(info.result, GCAP_EXEC_UPDATE_ERROR);
    dev_set(f->ctx, t.d, 0, 64);
    launch(t.x, f->s);
    assert_dev_bytes(f->ctx, t.d, 0x5a, 32);
    assert_dev_bytes(f->ctx, t.d + 32, 0, 32);
  }
  gcap_graph_destroy(g);
  free_two(f->ctx, &t);
}

static void test_update_scope_success_keeps_disabled_and_graph(void **state) {
  struct test_fixture *f = *state;
  struct two t;
  make_two(f->ctx, &t);
  assert_ok(gcap_exec_node_set_enabled(t.x, t.b, false));
  unsigned char *d2 = test_dev_alloc(f->ctx, 64);
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *a = add_memset(g, NULL, 0, d2, 0x33, 1, 32, 1, 32);
  gcap_node *b = add_memset(g, &a, 1, d2 + 32, 0x44, 1, 32, 1, 32);
  gcap_exec_update_info info;
  assert_ok(gcap_exec_update(t.x, g, &info));
  test_assert_message_empty();
  assert_info(&info, GCAP_EXEC_UPDATE_SUCCESS, NULL, NULL);
  dev_set(f->ctx, t.d, 0, 64);
  dev_set(f->ctx, d2, 0, 64);
  gcap_sim_stats s0 = {0};
  if (test_on_sim()) s0 = stats_of(f->ctx);
  launch(t.x, f->s);
  if (test_on_sim()) {
    gcap_sim_stats s1 = stats_of(f->ctx);
    assert_int_equal(s1.bytes_set - s0.bytes_set, 32);
    assert_int_equal(s1.nodes_executed - s0.nodes_executed, 2);
  }
  assert_dev_bytes(f->ctx, t.d, 0, 64);
  assert_dev_bytes(f->ctx, d2, 0x33, 32);
  assert_dev_bytes(f->ctx, d2 + 32, 0, 32); /* b stays disabled */
  assert_ok(gcap_exec_node_set_enabled(t.x, t.b, true));
  launch(t.x, f->s);
  assert_dev_bytes(f->ctx, d2 + 32, 0x44, 32);
  /* g unchanged. */
  assert_int_equal(gcap_graph_node_count(g), 2);
  assert_int_equal(gcap_graph_edge_count(g), 1);
  assert_memset_params(a, d2, 0x33, 1, 32, 1);
  assert_memset_params(b, d2 + 32, 0x44, 1, 32, 1);
  assert_memset_params(t.a, t.d, 0x11, 1, 32, 1);
  gcap_graph_destroy(g);
  free_two(f->ctx, &t);
  assert_ok(gcap_mem_free(f->ctx, d2));
}

/* A child graph takes the update through a full comparison; enable flags and node names survive it too. */
static void test_update_scope_child_graph_update_keeps_disabled(void **state) {
  struct test_fixture *f = *state;
  unsigned char *d = test_dev_alloc(f->ctx, 64);
  gcap_graph *child = test_graph_create(f->ctx);
  add_memset(child, NULL, 0, d + 32, 0x02, 1, 32, 1, 32);
  gcap_graph *g0 = test_graph_create(f->ctx);
  gcap_node *a = add_memset(g0, NULL, 0, d, 0x01, 1, 32, 1, 32);
  gcap_node *cn = NULL;
  assert_ok(gcap_graph_add_child_graph_node(g0, &a, 1, child, &cn));
  gcap_exec *x = instantiate(g0);
  assert_ok(gcap_exec_node_set_enabled(x, a, false));
  gcap_graph *cl = NULL;
  assert_ok(gcap_graph_clone(g0, &cl));
  gcap_node *nodes[2];
  size_t count = 2;
  assert_ok(gcap_graph_get_nodes(cl, nodes, &count));
  gcap_memset_node_params p = {d, 0x03, 1, 32, 1, 32};
  assert_ok(gcap_node_set_memset_params(nodes[0], &p));
  gcap_graph *emb = NULL;
  assert_ok(gcap_node_get_child_graph(nodes[1], &emb));
  gcap_node *inner = NULL;
  count = 1;
  assert_ok(gcap_graph_get_nodes(emb, &inner, &count));
  p = (gcap_memset_node_params){d + 32, 0x04, 1, 32, 1, 32};
  assert_ok(gcap_node_set_memset_params(inner, &p));
  gcap_exec_update_info info;
  assert_ok(gcap_exec_update(x, cl, &info));
  assert_info(&info, GCAP_EXEC_UPDATE_SUCCESS, NULL, NULL);
  dev_set(f->ctx, d, 0, 64);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0, 32); /* a is still disabled */
  assert_dev_bytes(f->ctx, d + 32, 0x04, 32);
  assert_ok(gcap_exec_node_set_enabled(x, a, true));
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0x03, 32);
  /* The original node still names the entry; the clone's does not. */
  p = (gcap_memset_node_params){d, 0x05, 1, 16, 1, 16};
  assert_ok(gcap_exec_memset_node_set_params(x, a, &p));
  assert_status(gcap_exec_memset_node_set_params(x, nodes[0], &p), GCAP_ERROR_INVALID_VALUE);
  launch(x, f->s);
  assert_dev_bytes(f->ctx, d, 0x05, 16);
  assert_dev_bytes(f->ctx, d + 16, 0x03, 16);
  assert_memset_params(a, d, 0x01, 1, 32, 1);
  gcap_graph_destroy(cl);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g0);
  gcap_graph_destroy(child);
  assert_ok(gcap_mem_free(f->ctx, d));
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_update_setter_handle_and_params_errors, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_setter_node_added_later, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_get_enabled_and_flags, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_event_node_setters, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_setter_node_of_other_graph_or_clone, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_setter_node_or_graph_destroyed, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_setter_wrong_node_type, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_setter_wrong_node_type_kernel, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_setter_only_future_launches_source_unchanged, test_setup,
                                      test_teardown),
      cmocka_unit_test_setup_teardown(test_update_setter_capture_finish_exec_has_no_source_nodes, test_setup,
                                      test_teardown),
      cmocka_unit_test_setup_teardown(test_update_setter_inside_own_launch_illegal_state, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_kernel_all_fields, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_kernel_args_copied_at_call, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_kernel_launch_checks, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_kernel_handle_errors, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_kernel_module_unloaded_after_set, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_kernel_jacobi_ping_pong, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_memcpy_new_operands, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_memcpy_zero_bytes, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_memcpy_range_outside_allocation, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_memcpy_kind_change_refused, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_memcpy_default_direction_change_refused, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_memcpy_d2h_new_operands, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_memset_dst_and_value, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_memset_2d_shape_fixed, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_memset_1d_width_and_element_size, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_memset_1d_height_change_refused, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_memset_param_checks, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_host_unrestricted, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_enable_disable_kernel_memcpy_memset_only, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_enable_reenable_restores, test_setup, test_teardown),
      cmocka_unit_test(test_update_enable_disabled_node_keeps_edges),
      cmocka_unit_test_setup_teardown(test_update_pairing_clone_pairs, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_pairing_recaptured_graph_pairs, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_pairing_original_nodes_still_name_exec_nodes, test_setup,
                                      test_teardown),
      cmocka_unit_test_setup_teardown(test_update_result_count_mismatch, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_result_dependency_count, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_result_dependency_mismatch_reports_from_node, test_setup,
                                      test_teardown),
      cmocka_unit_test_setup_teardown(test_update_result_dependency_order_matters, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_result_topology_before_type, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_result_topology_before_type_later_node, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_result_type_changed, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_allowed_memcpy_direction, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_allowed_memset_shape, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_allowed_kernel_function_change_allowed, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_allowed_host_and_event_unrestricted, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_allowed_child_graph_compared_recursively, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_child_graph_edge_rewired, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_scope_info_null, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_scope_handle_errors, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_scope_failed_update_leaves_exec_unchanged, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_scope_success_keeps_disabled_and_graph, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_update_scope_child_graph_update_keeps_disabled, test_setup, test_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
