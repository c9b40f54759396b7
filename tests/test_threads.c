/* Several threads sharing one context: eager work, graphs, and one exec launched from many threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define LAUNCHES 50
#define ELEMS 64u
#define FILL_FROM 48u /* elements [FILL_FROM, ELEMS) are set to 1.0f by a d32 fill */

/* x[i] = x[i] * 2 + 1 for i < n. Params: float *x, uint32_t n. */
static void axpb_sim(const gcap_sim_thread *t, void *const *args) {
  float *x;
  uint32_t n;
  memcpy(&x, args[0], sizeof x);
  memcpy(&n, args[1], sizeof n);
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < n) x[i] = x[i] * 2.0f + 1.0f;
}

/* c[0] += 1 (one thread). Params: uint32_t *c. */
static void inc_sim(const gcap_sim_thread *t, void *const *args) {
  uint32_t *c;
  memcpy(&c, args[0], sizeof c);
  if (t->block_idx.x == 0 && t->thread_idx.x == 0) c[0] += 1;
}

static const size_t axpb_sizes[] = {sizeof(float *), sizeof(uint32_t)};
static const size_t inc_sizes[] = {sizeof(uint32_t *)};

static gcap_module *load_kernels(gcap_context *ctx) {
  const gcap_kernel_def defs[] = {
      {.name = "axpb", .sim_fn = axpb_sim, .num_params = 2, .param_sizes = axpb_sizes},
      {.name = "inc", .sim_fn = inc_sim, .num_params = 1, .param_sizes = inc_sizes},
  };
  gcap_module_desc d = {.image = NULL, .image_size = 0, .kernels = defs, .num_kernels = 2};
  gcap_module *m = NULL;
  assert_ok(test_module_load(ctx, &d, &m));
  return m;
}

static const uint32_t one_bits = 0x3f800000u; /* 1.0f */

/* ------------------------------------------------------ per-thread failures */

struct worker {
  int id;
  gcap_context *ctx;
  gcap_kernel *axpb; /* NULL off the simulator: kernels are skipped */
  bool failed;
  char why[512];
};

static void worker_fail(struct worker *w, int line, const char *what, gcap_status st) {
  if (w->failed) return;
  w->failed = true;
  snprintf(w->why, sizeof w->why, "thread %d, line %d: %s -> %s (%s)", w->id, line, what, gcap_status_name(st),
           gcap_last_error_message());
}

/* cmocka's asserts must not run off the main thread: workers record the first failure and stop. */
#define W_OK(w, expr)                                                                                                  \
  do {                                                                                                                 \
    gcap_status st_ = (expr);                                                                                          \
    if (st_ != GCAP_SUCCESS) {                                                                                         \
      worker_fail((w), __LINE__, #expr, st_);                                                                          \
      return false;                                                                                                    \
    }                                                                                                                  \
  } while (0)
#define W_CHECK(w, cond)                                                                                               \
  do {                                                                                                                 \
    if (!(cond)) {                                                                                                     \
      worker_fail((w), __LINE__, #cond, GCAP_SUCCESS);                                                                 \
      return false;                                                                                                    \
    }                                                                                                                  \
  } while (0)

static float expected(const struct worker *w, const float *in, uint32_t i) {
  if (i >= FILL_FROM) return 1.0f;
  return w->axpb ? in[i] * 2.0f + 1.0f : in[i];
}

static bool check_out(struct worker *w, const float *in, const float *out, int round) {
  for (uint32_t i = 0; i < ELEMS; i++) {
    if (out[i] != expected(w, in, i)) {
      char what[128];
      snprintf(what, sizeof what, "round %d: out[%u] = %g, expected %g", round, i, (double)out[i],
               (double)expected(w, in, i));
      worker_fail(w, __LINE__, what, GCAP_SUCCESS);
      return false;
    }
  }
  return true;
}

static void count_cb(void *p) {
  int *n = p;
  (*n)++;
}

static bool worker_body(struct worker *w, float *hin, float *hout) {
  gcap_context *ctx = w->ctx;
  const size_t bytes = ELEMS * sizeof(float);
  gcap_stream *s[2] = {NULL, NULL};
  W_OK(w, gcap_stream_create(ctx, &s[0]));
  W_OK(w, gcap_stream_create(ctx, &s[1]));
  void *dmem = NULL;
  W_OK(w, gcap_mem_alloc(ctx, bytes, &dmem));
  float *d = dmem;
  uint32_t n = ELEMS;
  void *args[] = {&d, &n};

  /* Each thread's last-error message is its own. */
  void *none = NULL;
  W_CHECK(w, gcap_mem_alloc(ctx, 0, &none) == GCAP_ERROR_INVALID_VALUE);
  W_CHECK(w, strstr(gcap_last_error_message(), "gcap_mem_alloc") != NULL);
  W_OK(w, gcap_stream_query(s[0]));
  W_CHECK(w, strcmp(gcap_last_error_message(), "") == 0);

  /* Eager stream work. */
  for (int r = 0; r < 5; r++) {
    for (uint32_t i = 0; i < ELEMS; i++) hin[i] = (float)(w->id * 1000 + r * 10 + (int)i);
    memset(hout, 0, bytes);
    gcap_stream *st = s[r % 2];
    W_OK(w, gcap_memcpy_async(st, d, hin, bytes, GCAP_MEMCPY_HOST_TO_DEVICE));
    if (w->axpb) W_OK(w, gcap_launch_kernel(st, w->axpb, GCAP_DIM3(1, 1, 1), GCAP_DIM3(ELEMS, 1, 1), 0, args));
    W_OK(w, gcap_memset_d32_async(st, d + FILL_FROM, one_bits, ELEMS - FILL_FROM));
    W_OK(w, gcap_memcpy_async(st, hout, d, bytes, GCAP_MEMCPY_DEVICE_TO_HOST));
    W_OK(w, gcap_stream_synchronize(st));
    if (!check_out(w, hin, hout, r)) return false;

    W_OK(w, gcap_memset_async(st, d, 0, bytes));
    W_OK(w, gcap_stream_synchronize(st)); /* gcap_memcpy does not wait for other streams */
    W_OK(w, gcap_memcpy(ctx, hout, d, bytes, GCAP_MEMCPY_DEVICE_TO_HOST));
    for (uint32_t i = 0; i < ELEMS; i++) W_CHECK(w, hout[i] == 0.0f);
  }

  /* A graph: upload -> [kernel] -> fill tail -> download -> host counter. */
  gcap_graph *g = NULL;
  W_OK(w, gcap_graph_create(ctx, &g));
  gcap_node *prev = NULL, *node = NULL;
  gcap_memcpy_node_params up = {.dst = d, .src = hin, .bytes = bytes, .kind = GCAP_MEMCPY_HOST_TO_DEVICE};
  W_OK(w, gcap_graph_add_memcpy_node(g, NULL, 0, &up, &prev));
  if (w->axpb) {
    gcap_kernel_node_params kp = {.kernel = w->axpb,
                                  .grid = GCAP_DIM3(2, 1, 1),
                                  .block = GCAP_DIM3(32, 1, 1),
                                  .shared_mem_bytes = 0,
                                  .args = args};
    W_OK(w, gcap_graph_add_kernel_node(g, &prev, 1, &kp, &node));
    prev = node;
  }
  gcap_memset_node_params mp = {
      .dst = d + FILL_FROM, .value = one_bits, .element_size = 4, .width = ELEMS - FILL_FROM, .height = 1, .pitch = 0};
  W_OK(w, gcap_graph_add_memset_node(g, &prev, 1, &mp, &node));
  prev = node;
  gcap_memcpy_node_params down = {.dst = hout, .src = d, .bytes = bytes, .kind = GCAP_MEMCPY_DEVICE_TO_HOST};
  W_OK(w, gcap_graph_add_memcpy_node(g, &prev, 1, &down, &node));
  prev = node;
  int calls = 0;
  gcap_host_node_params hp = {.fn = count_cb, .user_data = &calls};
  W_OK(w, gcap_graph_add_host_node(g, &prev, 1, &hp, &node));
  const size_t want_nodes = w->axpb ? 5u : 4u;
  W_CHECK(w, gcap_graph_node_count(g) == want_nodes);

  gcap_exec *x = NULL;
  W_OK(w, gcap_graph_instantiate(g, 0, &x));
  gcap_graph_destroy(g);
  W_CHECK(w, gcap_exec_node_count(x) == want_nodes);
  for (int it = 0; it < LAUNCHES; it++) {
    for (uint32_t i = 0; i < ELEMS; i++) hin[i] = (float)(w->id * 100 - it + (int)i);
    memset(hout, 0, bytes);
    gcap_stream *st = s[it % 2];
    W_OK(w, gcap_exec_launch(x, st));
    W_OK(w, gcap_stream_synchronize(st));
    W_CHECK(w, calls == it + 1);
    if (!check_out(w, hin, hout, 100 + it)) return false;
  }
  gcap_exec_destroy(x);

  W_OK(w, gcap_mem_free(ctx, dmem));
  W_OK(w, gcap_stream_destroy(s[0]));
  W_OK(w, gcap_stream_destroy(s[1]));
  W_CHECK(w, strcmp(gcap_last_error_message(), "") == 0);
  return true;
}

static void *worker_main(void *p) {
  struct worker *w = p;
  float *hin = malloc(ELEMS * sizeof(float));
  float *hout = malloc(ELEMS * sizeof(float));
  if (hin == NULL || hout == NULL) {
    w->failed = true;
    snprintf(w->why, sizeof w->why, "thread %d: out of host memory", w->id);
  } else {
    (void)worker_body(w, hin, hout);
  }
  free(hin);
  free(hout);
  return NULL;
}

static void test_threads_share_one_context(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_module *m = NULL;
  gcap_kernel *axpb = NULL;
  if (test_on_sim()) {
    m = load_kernels(ctx);
    assert_ok(gcap_module_get_kernel(m, "axpb", &axpb));
  }
  struct worker w[THREADS];
  pthread_t th[THREADS];
  memset(w, 0, sizeof w);
  for (int i = 0; i < THREADS; i++) {
    w[i].id = i;
    w[i].ctx = ctx;
    w[i].axpb = axpb;
    assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
  bool any = false;
  for (int i = 0; i < THREADS; i++) {
    if (w[i].failed) {
      print_error("%s\n", w[i].why);
      any = true;
    }
  }
  assert_false(any);
  assert_ok(gcap_context_synchronize(ctx));
  if (m) assert_ok(gcap_module_unload(m));
  gcap_context_destroy(ctx);
}

/* ----------------------------------------------- one exec, many threads */

struct shared_exec {
  gcap_context *ctx;
  gcap_exec *x;
  atomic_int inflight;
  atomic_int overlaps;
  int enters; /* plain: only correct when launches are serialised */
  int leaves;
};

static void enter_cb(void *p) {
  struct shared_exec *sh = p;
  if (atomic_fetch_add(&sh->inflight, 1) != 0) atomic_fetch_add(&sh->overlaps, 1);
  sh->enters++;
  sched_yield(); /* widen the window in which an unserialised launch would overlap */
}

static void leave_cb(void *p) {
  struct shared_exec *sh = p;
  sh->leaves++;
  atomic_fetch_sub(&sh->inflight, 1);
}

struct launcher {
  struct shared_exec *sh;
  int id;
  bool failed;
  char why[512];
};

static void *launcher_main(void *p) {
  struct launcher *l = p;
  gcap_stream *s = NULL;
  gcap_status st = gcap_stream_create(l->sh->ctx, &s);
  const char *what = "gcap_stream_create";
  for (int i = 0; st == GCAP_SUCCESS && i < LAUNCHES; i++) {
    st = gcap_exec_launch(l->sh->x, s);
    what = "gcap_exec_launch";
    if (st == GCAP_SUCCESS && i % 10 == 9) {
      st = gcap_stream_synchronize(s);
      what = "gcap_stream_synchronize";
    }
  }
  if (st == GCAP_SUCCESS) {
    st = gcap_stream_synchronize(s);
    what = "gcap_stream_synchronize";
  }
  if (st == GCAP_SUCCESS) {
    st = gcap_stream_destroy(s);
    what = "gcap_stream_destroy";
  }
  if (st != GCAP_SUCCESS) {
    l->failed = true;
    snprintf(l->why, sizeof l->why, "thread %d: %s -> %s (%s)", l->id, what, gcap_status_name(st),
             gcap_last_error_message());
  }
  return NULL;
}

static void test_threads_launch_same_exec(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_module *m = NULL;
  gcap_kernel *inc = NULL;
  if (test_on_sim()) {
    m = load_kernels(ctx);
    assert_ok(gcap_module_get_kernel(m, "inc", &inc));
  }
  void *counter_mem = NULL;
  assert_ok(gcap_mem_alloc(ctx, sizeof(uint32_t), &counter_mem));
  uint32_t zero = 0;
  assert_ok(gcap_memcpy(ctx, counter_mem, &zero, sizeof zero, GCAP_MEMCPY_HOST_TO_DEVICE));
  uint32_t *counter = counter_mem;

  struct shared_exec sh;
  memset(&sh, 0, sizeof sh);
  sh.ctx = ctx;
  atomic_init(&sh.inflight, 0);
  atomic_init(&sh.overlaps, 0);

  /* enter -> [inc kernel] -> leave */
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_node *enter = NULL, *mid = NULL, *leave = NULL;
  gcap_host_node_params hp = {.fn = enter_cb, .user_data = &sh};
  assert_ok(gcap_graph_add_host_node(g, NULL, 0, &hp, &enter));
  mid = enter;
  if (inc) {
    void *args[] = {&counter};
    gcap_kernel_node_params kp = {
        .kernel = inc, .grid = GCAP_DIM3(1, 1, 1), .block = GCAP_DIM3(1, 1, 1), .shared_mem_bytes = 0, .args = args};
    assert_ok(gcap_graph_add_kernel_node(g, &enter, 1, &kp, &mid));
  }
  hp.fn = leave_cb;
  assert_ok(gcap_graph_add_host_node(g, &mid, 1, &hp, &leave));
  assert_ok(gcap_graph_instantiate(g, 0, &sh.x));
  gcap_graph_destroy(g);

  struct launcher l[THREADS];
  pthread_t th[THREADS];
  memset(l, 0, sizeof l);
  for (int i = 0; i < THREADS; i++) {
    l[i].sh = &sh;
    l[i].id = i;
    assert_int_equal(pthread_create(&th[i], NULL, launcher_main, &l[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
  bool any = false;
  for (int i = 0; i < THREADS; i++) {
    if (l[i].failed) {
      print_error("%s\n", l[i].why);
      any = true;
    }
  }
  assert_false(any);
  assert_ok(gcap_context_synchronize(ctx));

  assert_int_equal(atomic_load(&sh.overlaps), 0);
  assert_int_equal(atomic_load(&sh.inflight), 0);
  assert_int_equal(sh.enters, THREADS * LAUNCHES);
  assert_int_equal(sh.leaves, THREADS * LAUNCHES);
  uint32_t got = 0;
  assert_ok(gcap_memcpy(ctx, &got, counter_mem, sizeof got, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_int_equal(got, inc ? (uint32_t)(THREADS * LAUNCHES) : 0u);

  gcap_exec_destroy(sh.x);
  assert_ok(gcap_mem_free(ctx, counter_mem));
  if (m) assert_ok(gcap_module_unload(m));
  gcap_context_destroy(ctx);
}

/* Threads creating, launching and destroying their own graphs, events, streams and execs on one context. */
struct churn {
  gcap_context *ctx;
  int id;
  bool failed;
  char why[512];
};

static void *churn_main(void *p) {
  struct churn *c = p;
  gcap_status st = GCAP_SUCCESS;
  const char *what = "";
  for (int round = 0; round < 10 && st == GCAP_SUCCESS; round++) {
    gcap_graph *g = NULL;
    gcap_stream *s = NULL;
    gcap_event *e = NULL;
    gcap_exec *x = NULL;
    gcap_node *h = NULL, *r = NULL;
    int calls = 0;
    gcap_host_node_params hp = {.fn = count_cb, .user_data = &calls};
    what = "gcap_graph_create";
    st = gcap_graph_create(c->ctx, &g);
    if (st == GCAP_SUCCESS) {
      what = "gcap_stream_create";
      st = gcap_stream_create(c->ctx, &s);
    }
    if (st == GCAP_SUCCESS) {
      what = "gcap_event_create";
      st = gcap_event_create(c->ctx, &e);
    }
    if (st == GCAP_SUCCESS) {
      what = "gcap_graph_add_host_node";
      st = gcap_graph_add_host_node(g, NULL, 0, &hp, &h);
    }
    if (st == GCAP_SUCCESS) {
      what = "gcap_graph_add_event_record_node";
      st = gcap_graph_add_event_record_node(g, &h, 1, e, &r);
    }
    if (st == GCAP_SUCCESS) {
      what = "gcap_graph_instantiate";
      st = gcap_graph_instantiate(g, 0, &x);
    }
    for (int i = 0; i < 5 && st == GCAP_SUCCESS; i++) {
      what = "gcap_exec_launch";
      st = gcap_exec_launch(x, s);
    }
    if (st == GCAP_SUCCESS) {
      what = "gcap_event_synchronize";
      st = gcap_event_synchronize(e);
    }
    if (st == GCAP_SUCCESS && calls != 5) {
      what = "host node call count";
      st = GCAP_ERROR_BACKEND;
    }
    gcap_exec_destroy(x);
    gcap_graph_destroy(g);
    if (e != NULL && st == GCAP_SUCCESS) {
      what = "gcap_event_destroy";
      st = gcap_event_destroy(e);
    }
    if (s != NULL && st == GCAP_SUCCESS) {
      what = "gcap_stream_destroy";
      st = gcap_stream_destroy(s);
    }
  }
  if (st != GCAP_SUCCESS) {
    c->failed = true;
    snprintf(c->why, sizeof c->why, "thread %d: %s -> %s (%s)", c->id, what, gcap_status_name(st),
             gcap_last_error_message());
  }
  return NULL;
}

static void test_threads_object_churn(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  struct churn c[THREADS];
  pthread_t th[THREADS];
  memset(c, 0, sizeof c);
  for (int i = 0; i < THREADS; i++) {
    c[i].ctx = ctx;
    c[i].id = i;
    assert_int_equal(pthread_create(&th[i], NULL, churn_main, &c[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
  bool any = false;
  for (int i = 0; i < THREADS; i++) {
    if (c[i].failed) {
      print_error("%s\n", c[i].why);
      any = true;
    }
  }
  assert_false(any);
  gcap_context_destroy(ctx);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_threads_share_one_context),
      cmocka_unit_test(test_threads_launch_same_exec),
      cmocka_unit_test(test_threads_object_churn),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
