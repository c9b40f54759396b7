/*
 * The capture object (capture.md#the-capture-object-and-gcap_scoped_capture): begin and its options, recording by
 * name, the recorded count, status through the life cycle, end, finish, destroy, cleanup,
 * GCAP_SCOPED_CAPTURE and invalid handles.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ helpers */

static gcap_capture_status stream_status(gcap_stream *s) {
  gcap_capture_status st = (gcap_capture_status)-1;
  assert_ok(gcap_stream_is_capturing(s, &st));
  return st;
}

static gcap_capture_status object_status(const gcap_capture *c) {
  gcap_capture_status st = (gcap_capture_status)-1;
  assert_ok(gcap_capture_get_status(c, &st));
  return st;
}

static uint64_t capture_id(gcap_stream *s) {
  gcap_capture_info info;
  assert_ok(gcap_stream_get_capture_info(s, &info));
  assert_true(info.id != 0);
  return info.id;
}

static void assert_message_nonempty(void) { assert_true(gcap_last_error_message()[0] != '\0'); }

static void assert_bytes(const uint8_t *p, uint8_t v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] != v) {
      print_error("byte %zu is 0x%02x, expected 0x%02x\n", i, p[i], v);
      fail();
    }
  }
}

static void read_device(gcap_context *ctx, void *out, const void *d, size_t bytes) {
  assert_ok(gcap_memcpy(ctx, out, d, bytes, GCAP_MEMCPY_DEVICE_TO_HOST));
}

static void zero_device(gcap_context *ctx, gcap_stream *s, void *d, size_t bytes) {
  assert_ok(gcap_memset_async(s, d, 0, bytes));
  assert_ok(gcap_stream_synchronize(s));
  (void)ctx;
}

static gcap_sim_stats stats(gcap_context *ctx) {
  gcap_sim_stats st;
  memset(&st, 0, sizeof st);
  if (test_on_sim()) assert_ok(gcap_sim_get_stats(ctx, &st));
  return st;
}

static void assert_same_stats(const gcap_sim_stats *a, const gcap_sim_stats *b) {
  assert_int_equal(a->graph_launches, b->graph_launches);
  assert_int_equal(a->nodes_executed, b->nodes_executed);
  assert_int_equal(a->kernels_executed, b->kernels_executed);
  assert_int_equal(a->kernels_stubbed, b->kernels_stubbed);
  assert_int_equal(a->bytes_copied, b->bytes_copied);
  assert_int_equal(a->bytes_set, b->bytes_set);
  assert_int_equal(a->host_calls, b->host_calls);
}

/* x[i] = v for i < n. Params: uint32_t *x, uint32_t v, uint32_t n. */
static void fill_sim(const gcap_sim_thread *t, void *const *args) {
  uint32_t *x, v, n;
  memcpy(&x, args[0], sizeof x);
  memcpy(&v, args[1], sizeof v);
  memcpy(&n, args[2], sizeof n);
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < n) x[i] = v;
}

/* x[0] = 1 / x[0] = 2. Params: uint32_t *x. */
static void one_sim(const gcap_sim_thread *t, void *const *args) {
  uint32_t *x;
  memcpy(&x, args[0], sizeof x);
  if (t->thread_idx.x == 0) x[0] = 1;
}
static void two_sim(const gcap_sim_thread *t, void *const *args) {
  uint32_t *x;
  memcpy(&x, args[0], sizeof x);
  if (t->thread_idx.x == 0) x[0] = 2;
}

static const size_t fill_sizes[] = {sizeof(uint32_t *), sizeof(uint32_t), sizeof(uint32_t)};
static const size_t ptr_sizes[] = {sizeof(uint32_t *)};

static gcap_module *load_one(gcap_context *ctx, const char *name, gcap_sim_kernel_fn fn, size_t np,
                             const size_t *sizes) {
  const gcap_kernel_def defs[] = {{.name = name, .sim_fn = fn, .num_params = np, .param_sizes = sizes}};
  gcap_module_desc d = {.image = NULL, .image_size = 0, .kernels = defs, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(test_module_load(ctx, &d, &m));
  return m;
}

struct fx {
  gcap_context *ctx;
  gcap_stream *s;
  void *d; /* 256 bytes of device memory, zeroed */
};

static void fx_init(struct fx *f) {
  f->ctx = test_context_create();
  assert_ok(gcap_stream_create(f->ctx, &f->s));
  assert_ok(gcap_mem_alloc(f->ctx, 256, &f->d));
  zero_device(f->ctx, f->s, f->d, 256);
}

/* A helper thread that makes one call while the test thread waits in pthread_join. */
struct other_call {
  gcap_context *ctx;
  gcap_capture *c;
  int what; /* 0: gcap_mem_alloc, 1: gcap_capture_end */
  gcap_status st;
  gcap_graph *g;
  char msg[512];
};

static void *other_main(void *p) {
  struct other_call *o = p;
  void *mem = NULL;
  if (o->what == 0) {
    o->st = gcap_mem_alloc(o->ctx, 32, &mem);
    snprintf(o->msg, sizeof o->msg, "%s", gcap_last_error_message());
    if (o->st == GCAP_SUCCESS) gcap_mem_free(o->ctx, mem);
  } else {
    o->st = gcap_capture_end(o->c, &o->g);
    snprintf(o->msg, sizeof o->msg, "%s", gcap_last_error_message());
  }
  return NULL;
}

static gcap_status call_from_other_thread(struct other_call *o) {
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, other_main, o), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  return o->st;
}

/* ------------------------------------------------------------------ begin */

static void test_options_init(void **state) {
  (void)state;
  gcap_capture_options o;
  memset(&o, 0xa5, sizeof o);
  gcap_capture_options_init(&o);
  assert_int_equal(o.mode, GCAP_CAPTURE_MODE_GLOBAL);
  assert_null(o.pool);
  gcap_capture_options_init(NULL); /* does nothing */
}

static void test_begin_defaults_global(void **state) {
  (void)state;
  for (int explicit_options = 0; explicit_options <= 1; explicit_options++) {
    struct fx f;
    fx_init(&f);
    gcap_capture_options o;
    gcap_capture_options_init(&o);
    gcap_capture *c = NULL;
    assert_ok(gcap_capture_begin(f.s, explicit_options ? &o : NULL, &c));
    test_assert_message_empty();
    assert_non_null(c);
    assert_true(gcap_capture_is_active(c));
    assert_int_equal(object_status(c), GCAP_CAPTURE_STATUS_ACTIVE);
    assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_ACTIVE);
    assert_int_equal(gcap_capture_recorded_count(c), 0);
    (void)capture_id(f.s);
    /* GLOBAL: another thread in GLOBAL mode is prohibited, and the capture is invalidated. */
    struct other_call oc = {.ctx = f.ctx, .what = 0};
    assert_status(call_from_other_thread(&oc), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_non_null(strstr(oc.msg, "GLOBAL mode"));
    assert_true(gcap_capture_is_active(c));
    assert_int_equal(object_status(c), GCAP_CAPTURE_STATUS_INVALIDATED);
    gcap_graph *g = (gcap_graph *)(uintptr_t)1;
    assert_status(gcap_capture_end(c, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_null(g);
    test_assert_message_contains("gcap_mem_alloc(ctx ");
    gcap_capture_destroy(c);
    gcap_context_destroy(f.ctx);
  }
}

static void test_begin_options_modes(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  gcap_capture_options o;
  void *p = NULL;

  /* THREAD_LOCAL: the owner is prohibited, another thread is not. */
  gcap_capture_options_init(&o);
  o.mode = GCAP_CAPTURE_MODE_THREAD_LOCAL;
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f.s, &o, &c));
  struct other_call oc = {.ctx = f.ctx, .what = 0};
  assert_ok(call_from_other_thread(&oc));
  assert_int_equal(object_status(c), GCAP_CAPTURE_STATUS_ACTIVE);
  /* A non-RELAXED capture cannot be ended from another thread; it stays ACTIVE. */
  oc = (struct other_call){.c = c, .what = 1};
  assert_status(call_from_other_thread(&oc), GCAP_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  assert_null(oc.g);
  assert_true(gcap_capture_is_active(c));
  assert_int_equal(object_status(c), GCAP_CAPTURE_STATUS_ACTIVE);
  assert_status(gcap_mem_alloc(f.ctx, 32, &p), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  test_assert_message_contains("THREAD_LOCAL mode");
  assert_int_equal(object_status(c), GCAP_CAPTURE_STATUS_INVALIDATED);
  gcap_capture_destroy(c);
  assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_NONE);

  /* RELAXED: nobody is prohibited; any thread may end it. */
  o.mode = GCAP_CAPTURE_MODE_RELAXED;
  assert_ok(gcap_capture_begin(f.s, &o, &c));
  assert_ok(gcap_mem_alloc(f.ctx, 32, &p));
  assert_ok(gcap_mem_free(f.ctx, p));
  oc = (struct other_call){.ctx = f.ctx, .what = 0};
  assert_ok(call_from_other_thread(&oc));
  assert_ok(gcap_capture_record_memset(c, f.d, 1, 8));
  assert_int_equal(object_status(c), GCAP_CAPTURE_STATUS_ACTIVE);
  oc = (struct other_call){.c = c, .what = 1};
  assert_ok(call_from_other_thread(&oc));
  assert_non_null(oc.g);
  assert_int_equal(gcap_graph_node_count(oc.g), 1);
  gcap_graph_destroy(oc.g);
  assert_false(gcap_capture_is_active(c));
  gcap_capture_destroy(c);
  gcap_context_destroy(f.ctx);
}

static void test_begin_with_pool(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  gcap_pool *pool = NULL;
  assert_ok(gcap_pool_create(f.ctx, &pool));
  gcap_capture_options o;
  gcap_capture_options_init(&o);
  o.pool = pool;
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f.s, &o, &c));
  void *p = NULL;
  assert_ok(gcap_mem_alloc_async(f.s, 4096, &p));
  gcap_pool_stats ps;
  assert_ok(gcap_pool_get_stats(pool, &ps));
  assert_int_equal(ps.reserved_bytes, 4096); /* reserved at capture, not yet allocated by a launch */
  assert_int_equal(ps.used_bytes, 0);
  gcap_exec *x = NULL;
  assert_ok(gcap_capture_finish(c, GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH, &x));
  assert_ok(gcap_pool_get_stats(pool, &ps));
  assert_int_equal(ps.attached_execs, 1);
  assert_ok(gcap_exec_launch(x, f.s));
  assert_ok(gcap_stream_synchronize(f.s));
  assert_ok(gcap_pool_get_stats(pool, &ps));
  assert_int_equal(ps.used_bytes, 4096);
  assert_int_equal(ps.peak_bytes, 4096);
  gcap_exec_destroy(x);
  assert_ok(gcap_pool_get_stats(pool, &ps));
  assert_int_equal(ps.attached_execs, 0);
  assert_int_equal(ps.used_bytes, 4096); /* still allocated: graph memory outlives its executable */
  assert_ok(gcap_mem_free(f.ctx, p));
  assert_ok(gcap_pool_get_stats(pool, &ps));
  assert_int_equal(ps.used_bytes, 0);
  assert_int_equal(ps.reserved_bytes, 4096); /* kept for the pool's next capture */
  gcap_capture_destroy(c);
  gcap_pool_release(pool);
  assert_status(gcap_pool_get_stats(pool, &ps), GCAP_ERROR_INVALID_HANDLE);
  gcap_context_destroy(f.ctx);
}

static void test_begin_bad_mode(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  const int bad[] = {3, 4, -1, 1000};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gcap_capture_options o;
    gcap_capture_options_init(&o);
    o.mode = (gcap_capture_mode)bad[i];
    gcap_capture *c = (gcap_capture *)(uintptr_t)1;
    assert_status(gcap_capture_begin(f.s, &o, &c), GCAP_ERROR_INVALID_VALUE);
    assert_null(c);
    test_assert_message_contains("gcap_capture_begin");
    assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_NONE);
  }
  gcap_context_destroy(f.ctx);
}

static void test_begin_null_out(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  assert_status(gcap_capture_begin(f.s, NULL, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_capture_begin");
  assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_NONE);
  gcap_context_destroy(f.ctx);
}

static void test_begin_invalid_stream(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  gcap_capture *c = (gcap_capture *)(uintptr_t)1;
  assert_status(gcap_capture_begin(NULL, NULL, &c), GCAP_ERROR_INVALID_HANDLE);
  assert_null(c);
  gcap_stream *dead = NULL;
  assert_ok(gcap_stream_create(f.ctx, &dead));
  assert_ok(gcap_stream_destroy(dead));
  c = (gcap_capture *)(uintptr_t)1;
  assert_status(gcap_capture_begin(dead, NULL, &c), GCAP_ERROR_INVALID_HANDLE);
  assert_null(c);
  assert_message_nonempty();
  /* A handle comes before the other arguments. */
  assert_status(gcap_capture_begin(NULL, NULL, NULL), GCAP_ERROR_INVALID_HANDLE);
  gcap_context_destroy(f.ctx);
}

static void test_begin_on_capturing_stream(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  gcap_stream *fork = NULL;
  gcap_event *e = NULL;
  assert_ok(gcap_stream_create(f.ctx, &fork));
  assert_ok(gcap_event_create(f.ctx, &e));

  /* A stream-level capture. */
  assert_ok(gcap_stream_begin_capture(f.s, GCAP_CAPTURE_MODE_GLOBAL));
  gcap_capture *c = (gcap_capture *)(uintptr_t)1;
  assert_status(gcap_capture_begin(f.s, NULL, &c), GCAP_ERROR_ILLEGAL_STATE);
  assert_null(c);
  test_assert_message_contains("gcap_capture_begin");
  assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_ACTIVE);
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_end_capture(f.s, &g));
  gcap_graph_destroy(g);

  /* Another capture object, on its origin and on a joined member. */
  gcap_capture *c1 = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c1));
  assert_ok(gcap_capture_record_memset(c1, f.d, 1, 8));
  assert_ok(gcap_event_record(e, f.s));
  assert_ok(gcap_stream_wait_event(fork, e));
  c = (gcap_capture *)(uintptr_t)1;
  assert_status(gcap_capture_begin(f.s, NULL, &c), GCAP_ERROR_ILLEGAL_STATE);
  assert_null(c);
  c = (gcap_capture *)(uintptr_t)1;
  assert_status(gcap_capture_begin(fork, NULL, &c), GCAP_ERROR_ILLEGAL_STATE);
  assert_null(c);
  assert_int_equal(object_status(c1), GCAP_CAPTURE_STATUS_ACTIVE);
  assert_int_equal(gcap_capture_recorded_count(c1), 1);
  assert_ok(gcap_capture_end(c1, &g));
  assert_int_equal(gcap_graph_node_count(g), 1);
  gcap_graph_destroy(g);
  gcap_capture_destroy(c1);
  gcap_context_destroy(f.ctx);
}

/* ------------------------------------------------------------------ recording */

static void test_record_kernel_by_name(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  gcap_module *m = load_one(f.ctx, "fill", fill_sim, 3, fill_sizes);
  (void)m;
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  uint32_t *x = f.d, v = 0xabcd0123u, n = 8;
  void *args[] = {&x, &v, &n};
  assert_ok(gcap_capture_record_kernel(c, "fill", GCAP_DIM3(1, 1, 1), GCAP_DIM3(8, 1, 1), 0, args));
  test_assert_message_empty();
  v = 0x55555555u; /* the argument values were copied when recorded */
  assert_int_equal(gcap_capture_recorded_count(c), 1);
  gcap_capture_info info;
  assert_ok(gcap_stream_get_capture_info(f.s, &info));
  assert_int_equal(gcap_graph_node_count(info.graph), 1);
  assert_int_equal(info.num_dependencies, 1);
  gcap_node *node = (gcap_node *)info.dependencies[0];
  assert_int_equal(gcap_node_get_type(node), GCAP_NODE_KERNEL);
  gcap_kernel_node_params kp;
  assert_ok(gcap_node_get_kernel_params(node, &kp));
  gcap_kernel *k = NULL;
  assert_ok(gcap_context_find_kernel(f.ctx, "fill", &k));
  assert_ptr_equal(kp.kernel, k);
  assert_int_equal(kp.block.x, 8);
  assert_int_equal(kp.grid.x, 1);

  gcap_exec *exec = NULL;
  assert_ok(gcap_capture_finish(c, 0, &exec));
  assert_int_equal(gcap_exec_node_count(exec), 1);
  assert_ok(gcap_exec_launch(exec, f.s));
  assert_ok(gcap_stream_synchronize(f.s));
  uint32_t back[8];
  read_device(f.ctx, back, f.d, sizeof back);
  if (test_on_sim()) /* fill_sim ran with the recorded values */
    for (int i = 0; i < 8; i++) assert_int_equal(back[i], 0xabcd0123u);
  gcap_exec_destroy(exec);
  gcap_capture_destroy(c);
  gcap_context_destroy(f.ctx);
}

/* The name is looked up as gcap_context_find_kernel does: modules in load order. */
static void test_record_kernel_uses_load_order(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  gcap_module *m1 = load_one(f.ctx, "dup", one_sim, 1, ptr_sizes);
  gcap_module *m2 = load_one(f.ctx, "dup", two_sim, 1, ptr_sizes);
  (void)m2;
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  uint32_t *x = f.d;
  void *args[] = {&x};
  assert_ok(gcap_capture_record_kernel(c, "dup", GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, args));
  gcap_capture_info info;
  assert_ok(gcap_stream_get_capture_info(f.s, &info));
  assert_int_equal(info.num_dependencies, 1);
  gcap_kernel_node_params kp;
  assert_ok(gcap_node_get_kernel_params(info.dependencies[0], &kp));
  gcap_kernel *first = NULL;
  assert_ok(gcap_module_get_kernel(m1, "dup", &first));
  assert_ptr_equal(kp.kernel, first);
  gcap_exec *exec = NULL;
  assert_ok(gcap_capture_finish(c, 0, &exec));
  assert_ok(gcap_exec_launch(exec, f.s));
  assert_ok(gcap_stream_synchronize(f.s));
  uint32_t back = 0;
  read_device(f.ctx, &back, f.d, sizeof back);
  if (test_on_sim()) assert_int_equal(back, 1); /* one_sim, of the module loaded first */
  gcap_exec_destroy(exec);
  gcap_capture_destroy(c);
  gcap_context_destroy(f.ctx);
}

static void test_record_kernel_not_found_invalidates(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  for (int null_name = 0; null_name <= 1; null_name++) {
    gcap_capture *c = NULL;
    assert_ok(gcap_capture_begin(f.s, NULL, &c));
    uint64_t id = capture_id(f.s);
    assert_ok(gcap_capture_record_memset(c, f.d, 1, 8));
    uint32_t *x = f.d;
    void *args[] = {&x};
    gcap_status st =
        gcap_capture_record_kernel(c, null_name ? NULL : "missing", GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, args);
    assert_status(st, null_name ? GCAP_ERROR_INVALID_VALUE : GCAP_ERROR_NOT_FOUND);
    test_assert_message_contains("gcap_capture_record_kernel");
    if (!null_name) test_assert_message_contains("missing");
    assert_int_equal(gcap_capture_recorded_count(c), 1);
    assert_true(gcap_capture_is_active(c));
    assert_int_equal(object_status(c), GCAP_CAPTURE_STATUS_INVALIDATED);
    assert_status(gcap_capture_record_memset(c, f.d, 1, 8), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_int_equal(gcap_capture_recorded_count(c), 1);
    gcap_graph *g = (gcap_graph *)(uintptr_t)1;
    assert_status(gcap_capture_end(c, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_null(g);
    char want[200];
    snprintf(want, sizeof want, "capture %" PRIu64 " was invalidated by gcap_capture_record_kernel(stream %p)", id,
             (void *)f.s);
    test_assert_message_contains(want);
    test_assert_message_contains(null_name ? ": INVALID_VALUE (it would have been node 1)"
                                           : ": NOT_FOUND (it would have been node 1)");
    assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_NONE);
    gcap_capture_destroy(c);
  }
  gcap_context_destroy(f.ctx);
}

static void test_record_memcpy_and_memset(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  uint8_t host[32];
  for (int i = 0; i < 32; i++) host[i] = (uint8_t)(0x80 + i);
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  char *d = f.d;
  assert_ok(gcap_capture_record_memcpy(c, d, host, 32, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_capture_record_memcpy(c, d + 32, d, 32, GCAP_MEMCPY_DEFAULT));
  assert_ok(gcap_capture_record_memset(c, d + 64, 0x3c, 16));
  assert_ok(gcap_capture_record_memcpy(c, d, host, 0, GCAP_MEMCPY_HOST_TO_DEVICE)); /* 0 bytes: no node */
  assert_ok(gcap_capture_record_memset(c, d, 0, 0));
  assert_int_equal(gcap_capture_recorded_count(c), 3);
  gcap_graph *g = NULL;
  assert_ok(gcap_capture_end(c, &g));
  assert_int_equal(gcap_graph_node_count(g), 3);
  assert_int_equal(gcap_graph_edge_count(g), 2);
  gcap_node *nodes[3] = {NULL, NULL, NULL};
  size_t count = 3;
  assert_ok(gcap_graph_get_nodes(g, nodes, &count));
  assert_int_equal(count, 3);
  assert_int_equal(gcap_node_get_type(nodes[0]), GCAP_NODE_MEMCPY);
  assert_int_equal(gcap_node_get_type(nodes[1]), GCAP_NODE_MEMCPY);
  assert_int_equal(gcap_node_get_type(nodes[2]), GCAP_NODE_MEMSET);
  gcap_memcpy_node_params cp;
  assert_ok(gcap_node_get_memcpy_params(nodes[0], &cp));
  assert_ptr_equal(cp.dst, d);
  assert_ptr_equal(cp.src, host);
  assert_int_equal(cp.bytes, 32);
  gcap_memset_node_params sp;
  assert_ok(gcap_node_get_memset_params(nodes[2], &sp));
  assert_ptr_equal(sp.dst, d + 64);
  assert_int_equal(sp.value, 0x3c);
  assert_int_equal(sp.element_size, 1);
  assert_int_equal(sp.width, 16);
  assert_int_equal(sp.height, 1);
  /* Nothing ran during capture. */
  uint8_t back[80];
  read_device(f.ctx, back, d, sizeof back);
  assert_bytes(back, 0, sizeof back);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, f.s));
  assert_ok(gcap_stream_synchronize(f.s));
  read_device(f.ctx, back, d, sizeof back);
  assert_memory_equal(back, host, 32);
  assert_memory_equal(back + 32, host, 32);
  assert_bytes(back + 64, 0x3c, 16);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  gcap_capture_destroy(c);
  gcap_context_destroy(f.ctx);
}

static void test_record_memcpy_bad_arguments_invalidate(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  uint8_t host[8] = {0};
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  assert_status(gcap_capture_record_memcpy(c, (char *)f.d + 250, host, 8, GCAP_MEMCPY_HOST_TO_DEVICE),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_capture_record_memcpy");
  assert_int_equal(gcap_capture_recorded_count(c), 0);
  assert_int_equal(object_status(c), GCAP_CAPTURE_STATUS_INVALIDATED);
  gcap_graph *g = NULL;
  assert_status(gcap_capture_end(c, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  test_assert_message_contains("gcap_capture_record_memcpy(stream ");
  test_assert_message_contains("(it would have been node 0)");
  gcap_capture_destroy(c);
  gcap_context_destroy(f.ctx);
}

/* Nodes recorded on streams that joined the capture count too; events add none. Frozen after end. */
static void test_recorded_count_includes_forks(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  gcap_stream *fork = NULL;
  gcap_event *e1 = NULL, *e2 = NULL;
  assert_ok(gcap_stream_create(f.ctx, &fork));
  assert_ok(gcap_event_create(f.ctx, &e1));
  assert_ok(gcap_event_create(f.ctx, &e2));
  char *d = f.d;
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  assert_ok(gcap_capture_record_memset(c, d, 1, 16)); /* 1 */
  assert_ok(gcap_event_record(e1, f.s));
  assert_ok(gcap_stream_wait_event(fork, e1));
  assert_int_equal(gcap_capture_recorded_count(c), 1);
  assert_ok(gcap_memset_async(fork, d + 16, 2, 16));              /* 2 */
  assert_ok(gcap_memset_d32_async(fork, d + 32, 0x03030303u, 4)); /* 3 */
  assert_ok(gcap_memset_async(f.s, d + 48, 4, 16));               /* 4, on the origin, not through the object */
  assert_int_equal(gcap_capture_recorded_count(c), 4);
  assert_ok(gcap_event_record(e2, fork));
  assert_ok(gcap_stream_wait_event(f.s, e2));
  assert_int_equal(gcap_capture_recorded_count(c), 4);
  assert_ok(gcap_capture_record_memset(c, d + 64, 5, 16)); /* 5 */
  assert_int_equal(gcap_capture_recorded_count(c), 5);
  gcap_exec *x = NULL;
  assert_ok(gcap_capture_finish(c, 0, &x));
  assert_int_equal(gcap_capture_recorded_count(c), 5);
  assert_int_equal(gcap_exec_node_count(x), 5);
  assert_int_equal(stream_status(fork), GCAP_CAPTURE_STATUS_NONE);
  /* Frozen: eager work on the streams afterwards changes nothing. */
  assert_ok(gcap_memset_async(f.s, d + 80, 6, 16));
  assert_ok(gcap_memset_async(fork, d + 96, 7, 16));
  assert_int_equal(gcap_capture_recorded_count(c), 5);
  assert_ok(gcap_exec_launch(x, f.s));
  assert_ok(gcap_stream_synchronize(f.s));
  assert_ok(gcap_stream_synchronize(fork)); /* its eager memset: gcap_memcpy waits for no stream */
  uint8_t back[112];
  read_device(f.ctx, back, d, sizeof back);
  for (int i = 0; i < 7; i++) assert_bytes(back + 16 * i, (uint8_t)(i + 1), 16);
  gcap_exec_destroy(x);
  gcap_capture_destroy(c);
  gcap_context_destroy(f.ctx);
}

/* ------------------------------------------------------------------ life cycle */

static void test_status_through_life_cycle(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  assert_true(gcap_capture_is_active(c));
  assert_int_equal(object_status(c), GCAP_CAPTURE_STATUS_ACTIVE);
  assert_ok(gcap_capture_record_memset(c, f.d, 1, 8));
  assert_status(gcap_stream_query(f.s), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_true(gcap_capture_is_active(c)); /* invalidated, but not ended */
  assert_int_equal(object_status(c), GCAP_CAPTURE_STATUS_INVALIDATED);
  assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_INVALIDATED);
  assert_int_equal(gcap_capture_recorded_count(c), 1);
  gcap_graph *g = (gcap_graph *)(uintptr_t)1;
  assert_status(gcap_capture_end(c, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_null(g);
  assert_false(gcap_capture_is_active(c));
  assert_int_equal(object_status(c), GCAP_CAPTURE_STATUS_NONE);
  assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_NONE);
  assert_int_equal(gcap_capture_recorded_count(c), 1);

  /* A successful end: NONE too. */
  gcap_capture *c2 = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c2));
  assert_ok(gcap_capture_end(c2, &g));
  test_assert_message_empty();
  assert_int_equal(gcap_graph_node_count(g), 0);
  gcap_graph_destroy(g);
  assert_false(gcap_capture_is_active(c2));
  assert_int_equal(object_status(c2), GCAP_CAPTURE_STATUS_NONE);
  assert_int_equal(gcap_capture_recorded_count(c2), 0);
  gcap_capture_destroy(c2);
  gcap_capture_destroy(c);
  gcap_context_destroy(f.ctx);
}

/* After end: end, record_* and finish give UNMATCHED and touch no stream. */
static void test_after_end_unmatched_touches_nothing(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  gcap_module *m = load_one(f.ctx, "fill", fill_sim, 3, fill_sizes);
  (void)m;
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  assert_ok(gcap_capture_record_memset(c, f.d, 1, 8));
  gcap_graph *g = NULL;
  assert_ok(gcap_capture_end(c, &g));
  gcap_graph_destroy(g);

  /* A new capture on the same stream, by another object: the old object must not reach it. */
  gcap_capture *c2 = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c2));
  gcap_sim_stats before = stats(f.ctx);

  g = (gcap_graph *)(uintptr_t)1;
  assert_status(gcap_capture_end(c, &g), GCAP_ERROR_STREAM_CAPTURE_UNMATCHED);
  assert_null(g);
  test_assert_message_contains("gcap_capture_end");
  assert_status(gcap_capture_record_memset(c, f.d, 9, 8), GCAP_ERROR_STREAM_CAPTURE_UNMATCHED);
  test_assert_message_contains("gcap_capture_record_memset");
  uint8_t host[8];
  memset(host, 9, sizeof host);
  assert_status(gcap_capture_record_memcpy(c, f.d, host, 8, GCAP_MEMCPY_HOST_TO_DEVICE),
                GCAP_ERROR_STREAM_CAPTURE_UNMATCHED);
  test_assert_message_contains("gcap_capture_record_memcpy");
  uint32_t *x = f.d, v = 9, n = 2;
  void *args[] = {&x, &v, &n};
  assert_status(gcap_capture_record_kernel(c, "fill", GCAP_DIM3(1, 1, 1), GCAP_DIM3(2, 1, 1), 0, args),
                GCAP_ERROR_STREAM_CAPTURE_UNMATCHED);
  assert_status(gcap_capture_record_kernel(c, "missing", GCAP_DIM3(1, 1, 1), GCAP_DIM3(2, 1, 1), 0, args),
                GCAP_ERROR_STREAM_CAPTURE_UNMATCHED);
  gcap_exec *exec = (gcap_exec *)(uintptr_t)1;
  assert_status(gcap_capture_finish(c, 0, &exec), GCAP_ERROR_STREAM_CAPTURE_UNMATCHED);
  assert_null(exec);
  test_assert_message_contains("gcap_capture_finish");
  assert_int_equal(gcap_capture_recorded_count(c), 1);
  assert_false(gcap_capture_is_active(c));
  assert_int_equal(object_status(c), GCAP_CAPTURE_STATUS_NONE);

  /* The stream's new capture is untouched: still ACTIVE, still empty. */
  assert_int_equal(object_status(c2), GCAP_CAPTURE_STATUS_ACTIVE);
  assert_int_equal(gcap_capture_recorded_count(c2), 0);
  gcap_sim_stats after = stats(f.ctx);
  assert_same_stats(&before, &after);
  assert_ok(gcap_capture_end(c2, &g));
  assert_int_equal(gcap_graph_node_count(g), 0);
  gcap_graph_destroy(g);
  uint8_t back[8];
  read_device(f.ctx, back, f.d, 8);
  assert_bytes(back, 0, 8);
  /* Not capturing at all now: still UNMATCHED, nothing runs. */
  assert_status(gcap_capture_record_memset(c, f.d, 9, 8), GCAP_ERROR_STREAM_CAPTURE_UNMATCHED);
  read_device(f.ctx, back, f.d, 8);
  assert_bytes(back, 0, 8);
  gcap_capture_destroy(c2);
  gcap_capture_destroy(c);
  gcap_context_destroy(f.ctx);
}

static void test_end_twice_unmatched(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  gcap_graph *g = NULL;
  assert_ok(gcap_capture_end(c, &g));
  gcap_graph_destroy(g);
  g = (gcap_graph *)(uintptr_t)1;
  assert_status(gcap_capture_end(c, &g), GCAP_ERROR_STREAM_CAPTURE_UNMATCHED);
  assert_null(g);
  assert_message_nonempty();
  assert_status(gcap_capture_end(c, &g), GCAP_ERROR_STREAM_CAPTURE_UNMATCHED);
  gcap_capture_destroy(c);
  gcap_context_destroy(f.ctx);
}

static void test_end_invalidated_names_offence(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  uint64_t id = capture_id(f.s);
  assert_ok(gcap_capture_record_memset(c, f.d, 1, 8));
  assert_status(gcap_stream_synchronize(f.s), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_status(gcap_capture_record_memset(c, f.d, 1, 8), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  char want[200];
  snprintf(want, sizeof want, "capture %" PRIu64 " was invalidated by gcap_stream_synchronize(stream %p) on thread ",
           id, (void *)f.s);
  test_assert_message_contains(want);
  gcap_graph *g = (gcap_graph *)(uintptr_t)1;
  assert_status(gcap_capture_end(c, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_null(g);
  test_assert_message_contains("gcap_capture_end");
  test_assert_message_contains(want);
  test_assert_message_contains("STREAM_CAPTURE_UNSUPPORTED");
  assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_NONE);
  assert_ok(gcap_stream_synchronize(f.s));
  assert_status(gcap_capture_end(c, &g), GCAP_ERROR_STREAM_CAPTURE_UNMATCHED);
  gcap_capture_destroy(c);
  gcap_context_destroy(f.ctx);
}

/* ------------------------------------------------------------------ finish */

static void test_finish(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  char *d = f.d;
  uint8_t host[16];
  memset(host, 0x21, sizeof host);
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  assert_ok(gcap_capture_record_memcpy(c, d, host, 16, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_capture_record_memset(c, d + 16, 0x42, 16));
  assert_ok(gcap_memset_d16_async(f.s, d + 32, 0x6363, 8));

  /* Flags are checked before the capture is ended; so is the output pointer. */
  gcap_exec *x = (gcap_exec *)(uintptr_t)1;
  assert_status(gcap_capture_finish(c, 2u, &x), GCAP_ERROR_INVALID_VALUE);
  assert_null(x);
  test_assert_message_contains("gcap_capture_finish");
  assert_true(gcap_capture_is_active(c));
  assert_int_equal(object_status(c), GCAP_CAPTURE_STATUS_ACTIVE);
  assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_ACTIVE);
  assert_status(gcap_capture_finish(c, ~0u, &x), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_capture_finish(c, 0, NULL), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(object_status(c), GCAP_CAPTURE_STATUS_ACTIVE);
  assert_int_equal(gcap_capture_recorded_count(c), 3);

  gcap_sim_stats before = stats(f.ctx);
  assert_ok(gcap_capture_finish(c, 0, &x));
  test_assert_message_empty();
  assert_non_null(x);
  assert_false(gcap_capture_is_active(c));
  assert_int_equal(object_status(c), GCAP_CAPTURE_STATUS_NONE);
  assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_NONE);
  assert_int_equal(gcap_exec_node_count(x), 3);
  uint8_t back[48];
  read_device(f.ctx, back, d, sizeof back);
  assert_bytes(back, 0, sizeof back); /* finish only instantiates */
  for (int round = 0; round < 2; round++) {
    assert_ok(gcap_exec_launch(x, f.s));
    assert_ok(gcap_stream_synchronize(f.s));
    read_device(f.ctx, back, d, sizeof back);
    assert_bytes(back, 0x21, 16);
    assert_bytes(back + 16, 0x42, 16);
    assert_bytes(back + 32, 0x63, 16);
    zero_device(f.ctx, f.s, d, 48);
  }
  if (test_on_sim()) {
    gcap_sim_stats after = stats(f.ctx);
    assert_int_equal(after.graph_launches, before.graph_launches + 2);
    assert_int_equal(after.nodes_executed, before.nodes_executed + 6);
  }
  gcap_exec *x2 = (gcap_exec *)(uintptr_t)1;
  assert_status(gcap_capture_finish(c, 0, &x2), GCAP_ERROR_STREAM_CAPTURE_UNMATCHED);
  assert_null(x2);
  gcap_exec_destroy(x);
  gcap_capture_destroy(c);

  /* The one valid flag. */
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  assert_ok(gcap_capture_record_memset(c, d, 0x11, 8));
  assert_ok(gcap_capture_finish(c, GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH, &x));
  assert_ok(gcap_exec_launch(x, f.s));
  assert_ok(gcap_stream_synchronize(f.s));
  read_device(f.ctx, back, d, 8);
  assert_bytes(back, 0x11, 8);
  gcap_exec_destroy(x);
  gcap_capture_destroy(c);

  /* An invalidated capture: finish ends it with INVALIDATED and makes nothing. */
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  assert_ok(gcap_capture_record_memset(c, d, 0x11, 8));
  assert_status(gcap_context_synchronize(f.ctx), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  x = (gcap_exec *)(uintptr_t)1;
  assert_status(gcap_capture_finish(c, 0, &x), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_null(x);
  test_assert_message_contains("gcap_context_synchronize(ctx ");
  assert_false(gcap_capture_is_active(c));
  assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_NONE);
  gcap_capture_destroy(c);
  gcap_context_destroy(f.ctx);
}

/* ------------------------------------------------------------------ destroy, cleanup, scoped */

static void test_destroy_while_active(void **state) {
  (void)state;
  for (int invalidated = 0; invalidated <= 1; invalidated++) {
    struct fx f;
    fx_init(&f);
    char *d = f.d;
    gcap_capture *c = NULL;
    assert_ok(gcap_capture_begin(f.s, NULL, &c));
    assert_ok(gcap_capture_record_memset(c, d, 7, 16));
    if (invalidated) assert_status(gcap_stream_query(f.s), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    gcap_sim_stats before = stats(f.ctx);
    gcap_capture_destroy(c);
    assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_NONE);
    gcap_sim_stats after = stats(f.ctx);
    assert_same_stats(&before, &after); /* nothing instantiated or launched */
    /* The stream is usable: eager work runs. */
    assert_ok(gcap_memset_async(f.s, d + 16, 3, 16));
    assert_ok(gcap_stream_synchronize(f.s));
    uint8_t back[32];
    read_device(f.ctx, back, d, sizeof back);
    assert_bytes(back, 0, 16); /* the discarded capture never ran */
    assert_bytes(back + 16, 3, 16);
    if (test_on_sim()) {
      after = stats(f.ctx);
      assert_int_equal(after.graph_launches, before.graph_launches);
      assert_int_equal(after.nodes_executed, before.nodes_executed);
    }
    /* The handle is gone; a new capture can begin. */
    assert_false(gcap_capture_is_active(c));
    assert_ok(gcap_capture_begin(f.s, NULL, &c));
    gcap_capture_destroy(c);
    assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_NONE);
    gcap_context_destroy(f.ctx);
  }
}

/* Destroying an object whose capture forked: every member leaves capture. */
static void test_destroy_while_active_with_fork(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  gcap_stream *fork = NULL;
  gcap_event *e = NULL;
  assert_ok(gcap_stream_create(f.ctx, &fork));
  assert_ok(gcap_event_create(f.ctx, &e));
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  assert_ok(gcap_event_record(e, f.s));
  assert_ok(gcap_stream_wait_event(fork, e));
  assert_ok(gcap_memset_async(fork, f.d, 1, 8));
  gcap_capture_destroy(c);
  assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_NONE);
  assert_int_equal(stream_status(fork), GCAP_CAPTURE_STATUS_NONE);
  assert_ok(gcap_stream_synchronize(fork));
  assert_ok(gcap_stream_destroy(fork));
  gcap_context_destroy(f.ctx);
}

static void test_capture_cleanup(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  assert_ok(gcap_capture_record_memset(c, f.d, 1, 8));
  gcap_capture_cleanup(&c);
  assert_null(c);
  assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_NONE);
  gcap_capture_cleanup(&c); /* NULL inside: nothing */
  assert_null(c);
  gcap_capture_cleanup(NULL);
  /* After end too. */
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  gcap_graph *g = NULL;
  assert_ok(gcap_capture_end(c, &g));
  gcap_capture *keep = c;
  gcap_capture_cleanup(&c);
  assert_null(c);
  assert_false(gcap_capture_is_active(keep));
  gcap_capture_status st;
  assert_status(gcap_capture_get_status(keep, &st), GCAP_ERROR_INVALID_HANDLE);
  gcap_graph_destroy(g);
  uint8_t back[8];
  read_device(f.ctx, back, f.d, 8);
  assert_bytes(back, 0, 8);
  gcap_context_destroy(f.ctx);
}

static void test_scoped_capture(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  gcap_capture *seen = NULL;
  {
    gcap_capture *c GCAP_SCOPED_CAPTURE = NULL;
    assert_ok(gcap_capture_begin(f.s, NULL, &c));
    assert_ok(gcap_capture_record_memset(c, f.d, 1, 8));
    assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_ACTIVE);
    seen = c;
  }
  assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_NONE);
  assert_false(gcap_capture_is_active(seen));
  {
    gcap_capture *c GCAP_SCOPED_CAPTURE = NULL; /* ended inside the scope, freed at its end */
    assert_ok(gcap_capture_begin(f.s, NULL, &c));
    gcap_exec *x = NULL;
    assert_ok(gcap_capture_finish(c, 0, &x));
    gcap_exec_destroy(x);
  }
  {
    gcap_capture *c GCAP_SCOPED_CAPTURE = NULL; /* never begun */
    (void)c;
  }
  assert_ok(gcap_memset_async(f.s, (char *)f.d + 8, 2, 8));
  assert_ok(gcap_stream_synchronize(f.s));
  uint8_t back[16];
  read_device(f.ctx, back, f.d, sizeof back);
  assert_bytes(back, 0, 8);
  assert_bytes(back + 8, 2, 8);
  gcap_context_destroy(f.ctx);
}

/* ------------------------------------------------------------------ handles and arguments */

static void check_invalid_capture_handle(gcap_capture *c, void *d) {
  uint8_t host[4] = {0};
  uint32_t *x = d;
  void *args[] = {&x};
  assert_status(gcap_capture_record_kernel(c, "fill", GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, args),
                GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_capture_record_kernel");
  assert_status(gcap_capture_record_memcpy(c, d, host, 4, GCAP_MEMCPY_HOST_TO_DEVICE), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_capture_record_memcpy");
  assert_status(gcap_capture_record_memset(c, d, 1, 4), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_capture_record_memset");
  gcap_capture_status st;
  assert_status(gcap_capture_get_status(c, &st), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_capture_get_status(c, NULL), GCAP_ERROR_INVALID_HANDLE);
  gcap_graph *g = (gcap_graph *)(uintptr_t)1;
  assert_status(gcap_capture_end(c, &g), GCAP_ERROR_INVALID_HANDLE);
  assert_null(g);
  assert_status(gcap_capture_end(c, NULL), GCAP_ERROR_INVALID_HANDLE);
  gcap_exec *x2 = (gcap_exec *)(uintptr_t)1;
  assert_status(gcap_capture_finish(c, 0, &x2), GCAP_ERROR_INVALID_HANDLE);
  assert_null(x2);
  assert_status(gcap_capture_finish(c, 2u, &x2), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_capture_finish");
  assert_false(gcap_capture_is_active(c));
  assert_int_equal(gcap_capture_recorded_count(c), 0);
  gcap_capture_destroy(c); /* no-op */
}

static void test_invalid_handles(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  check_invalid_capture_handle(NULL, f.d);
  gcap_capture_destroy(NULL);

  /* Destroyed after recording (so a stale count would be non-zero). */
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  assert_ok(gcap_capture_record_memset(c, f.d, 1, 8));
  gcap_capture_destroy(c);
  check_invalid_capture_handle(c, f.d);

  /* Destroyed after end. */
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  assert_ok(gcap_capture_record_memset(c, f.d, 1, 8));
  gcap_graph *g = NULL;
  assert_ok(gcap_capture_end(c, &g));
  gcap_graph_destroy(g);
  gcap_capture_destroy(c);
  check_invalid_capture_handle(c, f.d);

  /* Freed with its context. */
  gcap_context *ctx2 = test_context_create();
  gcap_stream *s2 = NULL;
  assert_ok(gcap_stream_create(ctx2, &s2));
  gcap_capture *c2 = NULL;
  assert_ok(gcap_capture_begin(s2, NULL, &c2));
  gcap_context_destroy(ctx2);
  check_invalid_capture_handle(c2, f.d);
  assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_NONE);
  gcap_context_destroy(f.ctx);
}

/* Non-handle arguments of a live object: INVALID_VALUE, and the capture goes on. */
static void test_null_outputs_keep_capture_active(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  assert_ok(gcap_capture_record_memset(c, f.d, 1, 8));
  assert_status(gcap_capture_get_status(c, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_capture_get_status");
  assert_status(gcap_capture_end(c, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_capture_end");
  assert_true(gcap_capture_is_active(c));
  assert_int_equal(object_status(c), GCAP_CAPTURE_STATUS_ACTIVE);
  assert_int_equal(stream_status(f.s), GCAP_CAPTURE_STATUS_ACTIVE);
  gcap_graph *g = NULL;
  assert_ok(gcap_capture_end(c, &g));
  assert_int_equal(gcap_graph_node_count(g), 1);
  gcap_graph_destroy(g);
  gcap_capture_destroy(c);
  gcap_context_destroy(f.ctx);
}

/* A context destroyed with a live capture object frees it (checked under valgrind/ASan). */
static void test_context_destroy_with_live_capture(void **state) {
  (void)state;
  struct fx f;
  fx_init(&f);
  gcap_stream *fork = NULL;
  gcap_event *e = NULL;
  assert_ok(gcap_stream_create(f.ctx, &fork));
  assert_ok(gcap_event_create(f.ctx, &e));
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(f.s, NULL, &c));
  assert_ok(gcap_capture_record_memset(c, f.d, 1, 8));
  assert_ok(gcap_event_record(e, f.s));
  assert_ok(gcap_stream_wait_event(fork, e));
  assert_ok(gcap_memset_async(fork, f.d, 2, 8));
  gcap_capture *ended = NULL;
  gcap_stream *s3 = NULL;
  assert_ok(gcap_stream_create(f.ctx, &s3));
  assert_ok(gcap_capture_begin(s3, NULL, &ended));
  gcap_graph *g = NULL;
  assert_ok(gcap_capture_end(ended, &g));
  gcap_context_destroy(f.ctx); /* also frees g, c and ended */
  assert_false(gcap_capture_is_active(c));
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_init),
      cmocka_unit_test(test_begin_defaults_global),
      cmocka_unit_test(test_begin_options_modes),
      cmocka_unit_test(test_begin_with_pool),
      cmocka_unit_test(test_begin_bad_mode),
      cmocka_unit_test(test_begin_null_out),
      cmocka_unit_test(test_begin_invalid_stream),
      cmocka_unit_test(test_begin_on_capturing_stream),
      cmocka_unit_test(test_record_kernel_by_name),
      cmocka_unit_test(test_record_kernel_uses_load_order),
      cmocka_unit_test(test_record_kernel_not_found_invalidates),
      cmocka_unit_test(test_record_memcpy_and_memset),
      cmocka_unit_test(test_record_memcpy_bad_arguments_invalidate),
      cmocka_unit_test(test_recorded_count_includes_forks),
      cmocka_unit_test(test_status_through_life_cycle),
      cmocka_unit_test(test_after_end_unmatched_touches_nothing),
      cmocka_unit_test(test_end_twice_unmatched),
      cmocka_unit_test(test_end_invalidated_names_offence),
      cmocka_unit_test(test_finish),
      cmocka_unit_test(test_destroy_while_active),
      cmocka_unit_test(test_destroy_while_active_with_fork),
      cmocka_unit_test(test_capture_cleanup),
      cmocka_unit_test(test_scoped_capture),
      cmocka_unit_test(test_invalid_handles),
      cmocka_unit_test(test_null_outputs_keep_capture_active),
      cmocka_unit_test(test_context_destroy_with_live_capture),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
