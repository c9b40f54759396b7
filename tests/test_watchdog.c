/*
 * The simulator's watchdog (gcap_sim_options.kernel_timeout_ms, GCAP_SIM_KERNEL_TIMEOUT) and
 * gcap_sim_interrupt: a kernel that never ends fails its launch, or the wait that ran it, with
 * GCAP_ERROR_LAUNCH_TIMEOUT, naming the kernel, the block and where its warps were; the context
 * keeps the fault.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

#define ARGS(...) ((void *[]){__VA_ARGS__})

/* spin: waits for *flag to become non-zero (never, here); count: n turns of a loop, then *out = n. */
static const char ptx[] = ".version 7.0\n"
                          ".target sm_70\n"
                          ".address_size 64\n"
                          ".file 1 \"spin.cu\"\n"
                          ".visible .entry spin(.param .u64 flag, .param .u64 started)\n"
                          "{\n"
                          "  .reg .pred %p<2>;\n"
                          "  .reg .b32 %r<3>;\n"
                          "  .reg .b64 %rd<5>;\n"
                          "  ld.param.u64 %rd1, [flag];\n"
                          "  ld.param.u64 %rd3, [started];\n"
                          "  cvta.to.global.u64 %rd2, %rd1;\n"
                          "  cvta.to.global.u64 %rd4, %rd3;\n"
                          "  mov.u32 %r2, 1;\n"
                          "  atom.global.exch.b32 %r2, [%rd4], %r2;\n"
                          "$L_wait:\n"
                          "  .loc 1 7 3\n"
                          "  ld.volatile.global.u32 %r1, [%rd2];\n"
                          "  setp.eq.s32 %p1, %r1, 0;\n"
                          "  @%p1 bra $L_wait;\n"
                          "  ret;\n"
                          "}\n"
                          ".visible .entry wait_flag(.param .u64 flag, .param .u64 started)\n"
                          "{\n"
                          "  .reg .pred %p<2>;\n"
                          "  .reg .b32 %r<4>;\n"
                          "  .reg .b64 %rd<5>;\n"
                          "  ld.param.u64 %rd1, [flag];\n"
                          "  ld.param.u64 %rd3, [started];\n"
                          "  cvta.to.global.u64 %rd2, %rd1;\n"
                          "  cvta.to.global.u64 %rd4, %rd3;\n"
                          "  atom.global.exch.b32 %r3, [%rd4], 1;\n"
                          "$L_poll:\n"
                          "  atom.global.add.u32 %r1, [%rd2], 0;\n"
                          "  setp.eq.s32 %p1, %r1, 0;\n"
                          "  @%p1 bra $L_poll;\n"
                          "  ret;\n"
                          "}\n"
                          ".visible .entry count(.param .u32 n, .param .u64 out)\n"
                          "{\n"
                          "  .reg .pred %p<2>;\n"
                          "  .reg .b32 %r<4>;\n"
                          "  .reg .b64 %rd<3>;\n"
                          "  ld.param.u32 %r1, [n];\n"
                          "  ld.param.u64 %rd1, [out];\n"
                          "  cvta.to.global.u64 %rd2, %rd1;\n"
                          "  mov.u32 %r2, 0;\n"
                          "$L_count:\n"
                          "  add.u32 %r2, %r2, 1;\n"
                          "  setp.lt.u32 %p1, %r2, %r1;\n"
                          "  @%p1 bra $L_count;\n"
                          "  st.global.u32 [%rd2], %r2;\n"
                          "  ret;\n"
                          "}\n";

struct spin {
  gcap_context *ctx;
  gcap_stream *s;
  gcap_module *m;
  uint32_t *flag, *started; /* device memory (host memory on the simulator without strict memory) */
};

static void spin_open(struct spin *sp, gcap_sim_exec exec, uint32_t timeout_ms, unsigned threads) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.kernels = GCAP_SIM_KERNELS_PTX;
  so.exec = exec;
  so.kernel_timeout_ms = timeout_ms;
  so.threads = threads;
  sp->ctx = test_sim_context_create(&so);
  assert_ok(gcap_stream_create(sp->ctx, &sp->s));
  gcap_module_desc d = {.image = ptx, .image_size = sizeof ptx - 1};
  assert_ok(gcap_module_load(sp->ctx, &d, &sp->m));
  sp->flag = test_dev_alloc(sp->ctx, 4);
  sp->started = test_dev_alloc(sp->ctx, 4);
  assert_ok(gcap_memset_d32_async(sp->s, sp->flag, 0, 1));
  assert_ok(gcap_memset_d32_async(sp->s, sp->started, 0, 1));
  assert_ok(gcap_stream_synchronize(sp->s));
}

static gcap_status spin_launch(struct spin *sp, gcap_dim3 grid, gcap_dim3 block) {
  return gcap_launch_kernel(sp->s, test_kernel_of(sp->m, "spin"), grid, block, 0, ARGS(&sp->flag, &sp->started));
}

/*
 * The report of a stopped spin: the kernel, the block, and where the warps were: the warp that
 * ran at the loop's branch, PTX line 20, with the .loc line of the loop (which warp that is
 * depends on when the watchdog fires).
 */
static void assert_spin_report(const char *block, const char *why) {
  test_assert_message_contains("kernel \"spin\"");
  test_assert_message_contains(block);
  test_assert_message_contains(why);
  test_assert_message_contains(" at PTX line 20 \"@%p1 bra $L_wait\" (spin.cu:7)");
  test_assert_message_contains("warp 0 at PTX line ");
}

static void watchdog_ends_immediate_launch(void **state) {
  (void)state;
  struct spin sp;
  spin_open(&sp, GCAP_SIM_EXEC_IMMEDIATE, 200, 1);
  assert_status(spin_launch(&sp, GCAP_DIM3(1, 1, 1), GCAP_DIM3(64, 1, 1)), GCAP_ERROR_LAUNCH_TIMEOUT);
  assert_spin_report("block (0,0,0)", "ran past the simulator's watchdog (200 ms");
  /* Spinning warps take turns: the second one spins too. */
  test_assert_message_contains("(spin.cu:7); warp 1 at PTX line ");
  /* Sticky: every later call on the context fails the same way, quoting the report. */
  assert_status(gcap_stream_synchronize(sp.s), GCAP_ERROR_LAUNCH_TIMEOUT);
  test_assert_message_contains("sticky");
  test_assert_message_contains("kernel \"spin\" block (0,0,0)");
  void *p = NULL;
  assert_status(gcap_mem_alloc(sp.ctx, 16, &p), GCAP_ERROR_LAUNCH_TIMEOUT);
  assert_status(spin_launch(&sp, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1)), GCAP_ERROR_LAUNCH_TIMEOUT);
  gcap_context_destroy(sp.ctx);
}

static void watchdog_ends_deferred_wait(void **state) {
  (void)state;
  struct spin sp;
  spin_open(&sp, GCAP_SIM_EXEC_DEFERRED, 200, 1);
  uint32_t *out = test_dev_alloc(sp.ctx, 4);
  uint32_t n = 5;
  assert_ok(spin_launch(&sp, GCAP_DIM3(2, 1, 1), GCAP_DIM3(32, 1, 1))); /* queued */
  /* A second kernel queued behind it does not run once the context is faulted. */
  assert_ok(gcap_launch_kernel(sp.s, test_kernel_of(sp.m, "count"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0,
                               ARGS(&n, &out)));
  assert_status(gcap_stream_synchronize(sp.s), GCAP_ERROR_LAUNCH_TIMEOUT);
  assert_spin_report("block (0,0,0)", "ran past the simulator's watchdog (200 ms");
  assert_status(gcap_context_synchronize(sp.ctx), GCAP_ERROR_LAUNCH_TIMEOUT);
  gcap_sim_stats stats;
  assert_status(gcap_sim_get_stats(sp.ctx, &stats), GCAP_ERROR_LAUNCH_TIMEOUT);
  gcap_context_destroy(sp.ctx);
}

/* With worker threads, every block stops, and one of them reports. */
static void watchdog_stops_every_worker(void **state) {
  (void)state;
  struct spin sp;
  spin_open(&sp, GCAP_SIM_EXEC_IMMEDIATE, 100, 4);
  assert_status(spin_launch(&sp, GCAP_DIM3(8, 1, 1), GCAP_DIM3(32, 1, 1)), GCAP_ERROR_LAUNCH_TIMEOUT);
  assert_spin_report("block (", "ran past the simulator's watchdog (100 ms");
  gcap_context_destroy(sp.ctx);
}

/* 0 turns the watchdog off: a kernel that runs a while finishes (and times out with 1 ms). */
static void zero_means_no_watchdog(void **state) {
  (void)state;
  uint32_t n = 3000000, got = 0;
  for (int timeout = 0; timeout <= 1; timeout++) {
    struct spin sp;
    spin_open(&sp, GCAP_SIM_EXEC_IMMEDIATE, (uint32_t)timeout, 1);
    uint32_t *out = test_dev_alloc(sp.ctx, 4);
    gcap_status st = gcap_launch_kernel(sp.s, test_kernel_of(sp.m, "count"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0,
                                        ARGS(&n, &out));
    if (timeout == 0) {
      assert_ok(st);
      assert_ok(gcap_memcpy(sp.ctx, &got, out, 4, GCAP_MEMCPY_DEVICE_TO_HOST));
      assert_int_equal(got, n);
    } else {
      assert_status(st, GCAP_ERROR_LAUNCH_TIMEOUT);
      test_assert_message_contains("kernel \"count\" block (0,0,0) ran past the simulator's watchdog (1 ms");
      test_assert_message_contains("warp 0 at PTX line");
    }
    gcap_context_destroy(sp.ctx);
  }
}

static void default_and_environment(void **state) {
  (void)state;
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  assert_int_equal(so.kernel_timeout_ms, 60000);
  assert_int_equal(GCAP_SIM_KERNEL_TIMEOUT_DEFAULT_MS, 60000);
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  const char *bad[] = {"", "-1", " 5", "5ms", "4294967296", "1e3", "0x10"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gcap_context *ctx = NULL;
    setenv("GCAP_SIM_KERNEL_TIMEOUT", bad[i], 1);
    if (bad[i][0] == '\0') { /* empty: unset, as every GCAP_SIM_* variable */
      assert_ok(gcap_context_create(&o, &ctx));
      gcap_context_destroy(ctx);
      continue;
    }
    assert_status(gcap_context_create(&o, &ctx), GCAP_ERROR_INVALID_VALUE);
    assert_null(ctx);
    test_assert_message_contains("GCAP_SIM_KERNEL_TIMEOUT=\"");
    test_assert_message_contains(bad[i]);
  }
  /* A good value sets the watchdog of a context made without explicit options. */
  setenv("GCAP_SIM_KERNEL_TIMEOUT", "150", 1);
  setenv("GCAP_SIM_KERNELS", "ptx", 1);
  gcap_context *ctx = NULL;
  assert_ok(gcap_context_create(&o, &ctx));
  unsetenv("GCAP_SIM_KERNEL_TIMEOUT");
  unsetenv("GCAP_SIM_KERNELS");
  gcap_stream *s = test_stream_create(ctx);
  gcap_module *m = NULL;
  gcap_module_desc d = {.image = ptx, .image_size = sizeof ptx - 1};
  assert_ok(gcap_module_load(ctx, &d, &m));
  uint32_t *flag = test_dev_alloc(ctx, 4), *started = test_dev_alloc(ctx, 4);
  assert_ok(gcap_memset_d32_async(s, flag, 0, 1));
  assert_ok(gcap_memset_d32_async(s, started, 0, 1));
  assert_ok(gcap_stream_synchronize(s));
  gcap_status st = gcap_launch_kernel(s, test_kernel_of(m, "spin"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0,
                                      ARGS(&flag, &started));
  if (st == GCAP_SUCCESS) st = gcap_stream_synchronize(s); /* GCAP_SIM_EXEC=deferred in the environment */
  assert_status(st, GCAP_ERROR_LAUNCH_TIMEOUT);
  test_assert_message_contains("(150 ms");
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------------ gcap_sim_interrupt */

struct interrupter {
  volatile uint32_t *started;
  pthread_t id;
};

static void *interrupt_when_started(void *arg) {
  struct interrupter *it = arg;
  while (__atomic_load_n(it->started, __ATOMIC_ACQUIRE) == 0) {
    struct timespec t = {0, 1000000};
    nanosleep(&t, NULL);
  }
  gcap_sim_interrupt();
  return NULL;
}

static void interrupt_stops_a_running_kernel(void **state) {
  (void)state;
  for (int deferred = 0; deferred <= 1; deferred++) {
    struct spin sp;
    spin_open(&sp, deferred ? GCAP_SIM_EXEC_DEFERRED : GCAP_SIM_EXEC_IMMEDIATE, 0, 1);
    gcap_sim_interrupt(); /* before the launch: it changes nothing */
    struct interrupter it = {sp.started, 0};
    assert_int_equal(pthread_create(&it.id, NULL, interrupt_when_started, &it), 0);
    gcap_status st = spin_launch(&sp, GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1));
    if (deferred) {
      assert_ok(st);
      st = gcap_stream_synchronize(sp.s);
    }
    assert_status(st, GCAP_ERROR_LAUNCH_TIMEOUT);
    assert_spin_report("block (0,0,0)", "was stopped by gcap_sim_interrupt");
    pthread_join(it.id, NULL);
    assert_status(gcap_stream_query(sp.s), GCAP_ERROR_LAUNCH_TIMEOUT);
    gcap_context_destroy(sp.ctx);
  }
}

/* A CPU implementation stops between blocks. */
static void slow_block(const gcap_sim_block *b, void *const *args) {
  (void)b;
  (void)args;
  struct timespec t = {0, 2000000};
  nanosleep(&t, NULL);
}

static void watchdog_stops_cpu_kernels_between_blocks(void **state) {
  (void)state;
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.kernel_timeout_ms = 50;
  gcap_context *ctx = test_sim_context_create(&so);
  gcap_stream *s = test_stream_create(ctx);
  gcap_kernel_def k = {.name = "slow", .sim_block_fn = slow_block};
  gcap_module_desc d = {.kernels = &k, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  assert_status(gcap_launch_kernel(s, test_kernel_of(m, "slow"), GCAP_DIM3(100000, 1, 1), GCAP_DIM3(1, 1, 1), 0, NULL),
                GCAP_ERROR_LAUNCH_TIMEOUT);
  test_assert_message_contains("kernel \"slow\" ran past the simulator's watchdog (50 ms");
  test_assert_message_contains("before block (");
  test_assert_message_contains("a CPU implementation stops only between blocks");
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------------ other threads while a kernel runs */

/*
 * Thread B's calls while thread A's kernel runs (wait_flag, which ends when B sets the flag):
 * each outcome is kept for the main thread to check. B's calls must all return while A is still
 * inside its call; before the kernel could run with the lock released they waited for it (and,
 * the kernel waiting for B, for the watchdog).
 */
struct other {
  struct spin *sp;
  bool deferred;
  atomic_bool a_returned; /* A's launch (IMMEDIATE) or synchronize (DEFERRED) returned */
  bool a_returned_early;  /* seen by B before it let the kernel end */
  gcap_status create, alloc, query_a, query_own, event, stats, memset, record, query_event, sync, free;
  uint32_t got[4];
};

static void *other_thread(void *arg) {
  struct other *o = arg;
  struct spin *sp = o->sp;
  while (__atomic_load_n(sp->started, __ATOMIC_RELAXED) == 0 && !atomic_load(&o->a_returned)) {
    struct timespec t = {0, 1000000};
    nanosleep(&t, NULL);
  }
  gcap_stream *s2 = NULL;
  gcap_event *e = NULL;
  uint32_t *p = NULL;
  gcap_sim_stats stats;
  o->create = gcap_stream_create(sp->ctx, &s2);
  o->alloc = gcap_mem_alloc(sp->ctx, 16, (void **)&p);
  o->query_a = gcap_stream_query(sp->s); /* A's kernel is running: NOT_READY */
  o->query_own = s2 ? gcap_stream_query(s2) : GCAP_ERROR_INVALID_HANDLE;
  o->event = gcap_event_create(sp->ctx, &e);
  o->stats = gcap_sim_get_stats(sp->ctx, &stats);
  if (o->deferred && s2 && p && e) { /* queued behind nothing, but only a wait runs it */
    o->memset = gcap_memset_d32_async(s2, p, 7, 4);
    o->record = gcap_event_record(e, s2);
    o->query_event = gcap_event_query(e); /* A's drain runs: nothing runs here, NOT_READY */
  }
  o->a_returned_early = atomic_load(&o->a_returned);
  __atomic_store_n(sp->flag, 1, __ATOMIC_RELAXED); /* the kernel ends */
  if (s2) o->sync = gcap_stream_synchronize(s2);
  if (p) gcap_memcpy(sp->ctx, o->got, p, sizeof o->got, GCAP_MEMCPY_DEVICE_TO_HOST);
  if (p) o->free = gcap_mem_free(sp->ctx, p);
  gcap_event_destroy(e);
  gcap_stream_destroy(s2);
  return NULL;
}

static void others_go_on_while_a_kernel_runs(void **state) {
  (void)state;
  for (unsigned run = 0; run < 4; run++) {
    bool deferred = run & 1;
    struct spin sp;
    spin_open(&sp, deferred ? GCAP_SIM_EXEC_DEFERRED : GCAP_SIM_EXEC_IMMEDIATE, 30000, run < 2 ? 1 : 3);
    struct other o = {.sp = &sp, .deferred = deferred};
    atomic_init(&o.a_returned, false);
    pthread_t b;
    assert_int_equal(pthread_create(&b, NULL, other_thread, &o), 0);
    gcap_status st = gcap_launch_kernel(sp.s, test_kernel_of(sp.m, "wait_flag"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1),
                                        0, ARGS(&sp.flag, &sp.started));
    if (st == GCAP_SUCCESS && deferred) st = gcap_stream_synchronize(sp.s);
    atomic_store(&o.a_returned, true);
    pthread_join(b, NULL);
    assert_ok(st);
    assert_false(o.a_returned_early);
    assert_ok(o.create);
    assert_ok(o.alloc);
    assert_status(o.query_a, GCAP_ERROR_NOT_READY);
    assert_ok(o.query_own);
    assert_ok(o.event);
    assert_ok(o.stats);
    if (deferred) {
      assert_ok(o.memset);
      assert_ok(o.record);
      assert_status(o.query_event, GCAP_ERROR_NOT_READY);
      for (int i = 0; i < 4; i++) assert_int_equal(o.got[i], 7);
    }
    assert_ok(o.sync);
    assert_ok(o.free);
    assert_ok(gcap_context_synchronize(sp.ctx));
    gcap_context_destroy(sp.ctx);
  }
}

/* -------------------------------------------------- other threads while a graph's kernel runs */

/*
 * A graph of four entries, launched in IMMEDIATE mode: a fill of `before`, wait_flag, a host node
 * (counts the launches that got past the kernel) and a fill of `after`. Its kernel waits for a
 * flag that another thread sets.
 */
struct graph_run {
  struct spin sp;
  uint32_t *before, *after;
  uint32_t *started2; /* the kernel's `started` after CHANGE_SET_KERNEL */
  gcap_graph *g;
  gcap_node *kernel, *fill_after;
  gcap_exec *x;
  atomic_int launches_done; /* the host node: one more launch got past its kernel */
};

static void count_launch_done(void *user_data) { atomic_fetch_add((atomic_int *)user_data, 1); }

static void graph_run_open(struct graph_run *r, gcap_sim_exec exec, unsigned threads, gcap_sim_order order) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.kernels = GCAP_SIM_KERNELS_PTX;
  so.exec = exec;
  so.kernel_timeout_ms = 30000;
  so.threads = threads;
  so.order = order;
  struct spin *sp = &r->sp;
  sp->ctx = test_sim_context_create(&so);
  assert_ok(gcap_stream_create(sp->ctx, &sp->s));
  gcap_module_desc d = {.image = ptx, .image_size = sizeof ptx - 1};
  assert_ok(gcap_module_load(sp->ctx, &d, &sp->m));
  sp->flag = test_dev_alloc(sp->ctx, 4);
  sp->started = test_dev_alloc(sp->ctx, 4);
  r->before = test_dev_alloc(sp->ctx, 16);
  r->after = test_dev_alloc(sp->ctx, 16);
  r->started2 = test_dev_alloc(sp->ctx, 4);
  assert_ok(gcap_memset_d32_async(sp->s, r->started2, 0, 1));
  assert_ok(gcap_memset_d32_async(sp->s, sp->flag, 0, 1));
  assert_ok(gcap_memset_d32_async(sp->s, sp->started, 0, 1));
  assert_ok(gcap_memset_d32_async(sp->s, r->before, 0, 4));
  assert_ok(gcap_memset_d32_async(sp->s, r->after, 0, 4));
  assert_ok(gcap_stream_synchronize(sp->s));
  atomic_init(&r->launches_done, 0);
  r->g = test_graph_create(sp->ctx);
  gcap_node *fill = NULL, *host = NULL;
  gcap_memset_node_params f = {.dst = r->before, .value = 3, .element_size = 4, .width = 4, .height = 1};
  assert_ok(gcap_graph_add_memset_node(r->g, NULL, 0, &f, &fill));
  gcap_kernel_node_params k = {test_kernel_of(sp->m, "wait_flag"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0,
                               ARGS(&sp->flag, &sp->started)};
  assert_ok(gcap_graph_add_kernel_node(r->g, &fill, 1, &k, &r->kernel));
  gcap_host_node_params h = {count_launch_done, &r->launches_done};
  assert_ok(gcap_graph_add_host_node(r->g, &r->kernel, 1, &h, &host));
  f = (gcap_memset_node_params){.dst = r->after, .value = 4, .element_size = 4, .width = 4, .height = 1};
  assert_ok(gcap_graph_add_memset_node(r->g, &host, 1, &f, &r->fill_after));
  assert_ok(gcap_graph_instantiate(r->g, 0, &r->x));
}

static void graph_run_close(struct graph_run *r) {
  gcap_exec_destroy(r->x);
  gcap_graph_destroy(r->g);
  gcap_context_destroy(r->sp.ctx);
}

static void wait_until_started(struct spin *sp, const atomic_bool *give_up) {
  while (__atomic_load_n(sp->started, __ATOMIC_RELAXED) == 0 && !atomic_load(give_up)) {
    struct timespec t = {0, 1000000};
    nanosleep(&t, NULL);
  }
}

struct graph_other {
  struct graph_run *r;
  atomic_bool a_returned;
  bool a_returned_early;
  int done_before_flag; /* launches past their kernel when B set the flag: 0 */
  gcap_status create, alloc, query_a, query_own, event, instantiate, launch, sync, free;
  uint32_t got[4];
};

/* B: the calls of others_go_on_while_a_kernel_runs, and a second graph instantiated, all before the kernel may end. */
static void *graph_other_thread(void *arg) {
  struct graph_other *o = arg;
  struct spin *sp = &o->r->sp;
  wait_until_started(sp, &o->a_returned);
  gcap_stream *s2 = NULL;
  gcap_event *e = NULL;
  uint32_t *p = NULL;
  gcap_graph *g2 = NULL;
  gcap_exec *x2 = NULL;
  o->create = gcap_stream_create(sp->ctx, &s2);
  o->alloc = gcap_mem_alloc(sp->ctx, 16, (void **)&p);
  o->query_a = gcap_stream_query(sp->s); /* A's graph is running its kernel: NOT_READY */
  o->query_own = s2 ? gcap_stream_query(s2) : GCAP_ERROR_INVALID_HANDLE;
  o->event = gcap_event_create(sp->ctx, &e);
  o->instantiate = gcap_graph_create(sp->ctx, &g2);
  gcap_memset_node_params f = {.dst = p, .value = 7, .element_size = 4, .width = 4, .height = 1};
  gcap_node *fill = NULL;
  if (o->instantiate == GCAP_SUCCESS && p) o->instantiate = gcap_graph_add_memset_node(g2, NULL, 0, &f, &fill);
  if (o->instantiate == GCAP_SUCCESS) o->instantiate = gcap_graph_instantiate(g2, 0, &x2);
  o->a_returned_early = atomic_load(&o->a_returned);
  o->done_before_flag = atomic_load(&o->r->launches_done);
  __atomic_store_n(sp->flag, 1, __ATOMIC_RELAXED); /* the kernel ends */
  if (x2 && s2) o->launch = gcap_exec_launch(x2, s2);
  if (s2) o->sync = gcap_stream_synchronize(s2);
  if (p) gcap_memcpy(sp->ctx, o->got, p, sizeof o->got, GCAP_MEMCPY_DEVICE_TO_HOST);
  if (p) o->free = gcap_mem_free(sp->ctx, p);
  gcap_exec_destroy(x2);
  gcap_graph_destroy(g2);
  gcap_event_destroy(e);
  gcap_stream_destroy(s2);
  return NULL;
}

static void assert_graph_ran(struct graph_run *r, int launches) {
  uint32_t got[8];
  assert_ok(gcap_memcpy(r->sp.ctx, got, r->before, 16, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_memcpy(r->sp.ctx, got + 4, r->after, 16, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (int i = 0; i < 4; i++) assert_int_equal(got[i], 3);
  for (int i = 4; i < 8; i++) assert_int_equal(got[i], 4);
  assert_int_equal(atomic_load(&r->launches_done), launches);
}

/*
 * As others_go_on_while_a_kernel_runs, for a kernel inside a graph launched in IMMEDIATE mode:
 * the launch's kernel runs with the context lock released, its other entries with it held.
 */
static void others_go_on_while_a_graph_kernel_runs(void **state) {
  (void)state;
  for (unsigned run = 0; run < 4; run++) {
    struct graph_run r;
    graph_run_open(&r, GCAP_SIM_EXEC_IMMEDIATE, run & 1 ? 3 : 1,
                   run & 2 ? GCAP_SIM_ORDER_SHUFFLE : GCAP_SIM_ORDER_CAPTURE);
    struct graph_other o = {.r = &r};
    atomic_init(&o.a_returned, false);
    pthread_t b;
    assert_int_equal(pthread_create(&b, NULL, graph_other_thread, &o), 0);
    gcap_status st = gcap_exec_launch(r.x, r.sp.s);
    atomic_store(&o.a_returned, true);
    pthread_join(b, NULL);
    assert_ok(st);
    assert_false(o.a_returned_early);
    assert_int_equal(o.done_before_flag, 0);
    assert_ok(o.create);
    assert_ok(o.alloc);
    assert_status(o.query_a, GCAP_ERROR_NOT_READY);
    assert_ok(o.query_own);
    assert_ok(o.event);
    assert_ok(o.instantiate);
    assert_ok(o.launch);
    assert_ok(o.sync);
    for (int i = 0; i < 4; i++) assert_int_equal(o.got[i], 7);
    assert_ok(o.free);
    assert_graph_ran(&r, 1);
    graph_run_close(&r);
  }
}

/*
 * What thread B does to A's running executable; each must wait for A's launch to end, then work
 * (but for a DEFERRED launch, which is queued and returns).
 */
enum exec_change {
  CHANGE_SET,        /* fill_after's value 4 -> 9 */
  CHANGE_UPDATE,     /* from the graph unchanged */
  CHANGE_LAUNCH,     /* once more */
  CHANGE_DESTROY,    /* the executable */
  CHANGE_SET_KERNEL, /* the kernel's `started` -> started2, two blocks */
  CHANGE_DISABLE,    /* fill_after */
  CHANGE_UPDATE_NEW, /* from the graph with fill_after's value 9 */
  CHANGE_KINDS
};

struct changer {
  struct graph_run *r;
  enum exec_change change;
  atomic_bool a_returned, calling;
  gcap_status st;
  int done_at_return; /* launches past their kernel when B's call returned */
};

static void *change_running_exec(void *arg) {
  struct changer *c = arg;
  struct graph_run *r = c->r;
  wait_until_started(&r->sp, &c->a_returned);
  atomic_store(&c->calling, true);
  gcap_memset_node_params f = {.dst = r->after, .value = 9, .element_size = 4, .width = 4, .height = 1};
  gcap_exec_update_info info;
  switch (c->change) {
  case CHANGE_SET: c->st = gcap_exec_memset_node_set_params(r->x, r->fill_after, &f); break;
  case CHANGE_UPDATE: c->st = gcap_exec_update(r->x, r->g, &info); break;
  case CHANGE_LAUNCH: c->st = gcap_exec_launch(r->x, r->sp.s); break; /* the flag is set by then */
  case CHANGE_DESTROY:
    gcap_exec_destroy(r->x);
    c->st = GCAP_SUCCESS;
    break;
  case CHANGE_SET_KERNEL: {
    gcap_kernel_node_params k = {test_kernel_of(r->sp.m, "wait_flag"), GCAP_DIM3(2, 1, 1), GCAP_DIM3(1, 1, 1), 0,
                                 ARGS(&r->sp.flag, &r->started2)};
    c->st = gcap_exec_kernel_node_set_params(r->x, r->kernel, &k);
    break;
  }
  case CHANGE_DISABLE: c->st = gcap_exec_node_set_enabled(r->x, r->fill_after, false); break;
  case CHANGE_UPDATE_NEW:
    c->st = gcap_node_set_memset_params(r->fill_after, &f); /* the graph's node: x keeps 4 until updated */
    if (c->st == GCAP_SUCCESS) c->st = gcap_exec_update(r->x, r->g, &info);
    break;
  default: break;
  }
  c->done_at_return = atomic_load(&r->launches_done);
  return NULL;
}

/* The kernel ends once B is about to call (a short pause lets B's call reach its wait first). */
static void *end_kernel_after_call(void *arg) {
  struct changer *c = arg;
  while (!atomic_load(&c->calling) && !atomic_load(&c->a_returned)) {
    struct timespec t = {0, 1000000};
    nanosleep(&t, NULL);
  }
  struct timespec t = {0, 50000000};
  nanosleep(&t, NULL);
  __atomic_store_n(c->r->sp.flag, 1, __ATOMIC_RELAXED);
  return NULL;
}

/* What `after` holds once an executable changed by `change` has launched again (it was 0 before). */
static uint32_t after_next_launch(enum exec_change change) {
  if (change == CHANGE_SET || change == CHANGE_UPDATE_NEW) return 9;
  return change == CHANGE_DISABLE ? 0 : 4;
}

static uint32_t read_u32(struct graph_run *r, const uint32_t *p) {
  uint32_t v = 0xdeadbeef;
  assert_ok(gcap_memcpy(r->sp.ctx, &v, p, sizeof v, GCAP_MEMCPY_DEVICE_TO_HOST));
  return v;
}

/* Sets `after` to 0, launches x once more and waits for it. */
static void relaunch(struct graph_run *r) {
  assert_ok(gcap_memset_d32_async(r->sp.s, r->after, 0, 4));
  assert_ok(gcap_exec_launch(r->x, r->sp.s));
  assert_ok(gcap_stream_synchronize(r->sp.s));
}

/*
 * While A's IMMEDIATE launch runs its kernel (lock released), B sets a node of the same
 * executable, disables one, updates it, launches it again or destroys it: each waits until A's
 * launch has run every entry (the host node counted it), then works; the next launch has B's change.
 */
static void changes_of_a_running_exec_wait_for_its_launch(void **state) {
  (void)state;
  for (unsigned run = 0; run < 2 * CHANGE_KINDS; run++) {
    struct graph_run r;
    graph_run_open(&r, GCAP_SIM_EXEC_IMMEDIATE, run & 1 ? 3 : 1, GCAP_SIM_ORDER_CAPTURE);
    struct changer c = {.r = &r, .change = (enum exec_change)(run / 2)};
    atomic_init(&c.a_returned, false);
    atomic_init(&c.calling, false);
    pthread_t b, ender;
    assert_int_equal(pthread_create(&b, NULL, change_running_exec, &c), 0);
    assert_int_equal(pthread_create(&ender, NULL, end_kernel_after_call, &c), 0);
    gcap_status st = gcap_exec_launch(r.x, r.sp.s);
    atomic_store(&c.a_returned, true);
    pthread_join(b, NULL);
    pthread_join(ender, NULL);
    assert_ok(st);
    assert_ok(c.st);
    assert_true(c.done_at_return >= 1); /* A's launch got past its kernel before B's call returned */
    if (c.change == CHANGE_DESTROY) {
      r.x = NULL;
      assert_graph_ran(&r, 1);
    } else if (c.change == CHANGE_LAUNCH) {
      assert_ok(gcap_stream_synchronize(r.sp.s));
      assert_graph_ran(&r, 2);
    } else {
      assert_graph_ran(&r, 1); /* the change came after the launch */
      assert_int_equal(read_u32(&r, r.started2), 0);
      relaunch(&r);
      assert_int_equal(read_u32(&r, r.after), after_next_launch(c.change));
      assert_int_equal(read_u32(&r, r.started2), c.change == CHANGE_SET_KERNEL ? 1 : 0);
    }
    graph_run_close(&r);
  }
}

/*
 * DEFERRED: A's launch is queued and A's wait runs it, its kernel with the context lock released.
 * B sets a node of the same executable, disables one, updates it, launches it again or destroys
 * it meanwhile: each but the launch (which only queues) waits until the wait has run A's launch
 * to its end with the values it was issued with; the next launch has B's change.
 */
static void changes_wait_for_the_wait_that_runs_their_exec(void **state) {
  (void)state;
  for (unsigned run = 0; run < 2 * CHANGE_KINDS; run++) {
    struct graph_run r;
    graph_run_open(&r, GCAP_SIM_EXEC_DEFERRED, run & 1 ? 3 : 1, GCAP_SIM_ORDER_CAPTURE);
    struct changer c = {.r = &r, .change = (enum exec_change)(run / 2)};
    atomic_init(&c.a_returned, false);
    atomic_init(&c.calling, false);
    pthread_t b, ender;
    assert_int_equal(pthread_create(&b, NULL, change_running_exec, &c), 0);
    assert_int_equal(pthread_create(&ender, NULL, end_kernel_after_call, &c), 0);
    gcap_status launched = gcap_exec_launch(r.x, r.sp.s); /* queued: the wait runs it */
    gcap_status st = gcap_stream_synchronize(r.sp.s);
    atomic_store(&c.a_returned, true);
    pthread_join(b, NULL);
    pthread_join(ender, NULL);
    assert_ok(launched);
    assert_ok(st);
    assert_ok(c.st);
    if (c.change != CHANGE_LAUNCH) assert_true(c.done_at_return >= 1);
    if (c.change == CHANGE_DESTROY) r.x = NULL;
    if (c.change == CHANGE_LAUNCH) assert_ok(gcap_stream_synchronize(r.sp.s));
    assert_graph_ran(&r, c.change == CHANGE_LAUNCH ? 2 : 1); /* `after` is 4: A's launch kept its values */
    assert_int_equal(read_u32(&r, r.started2), 0);
    if (c.change != CHANGE_DESTROY && c.change != CHANGE_LAUNCH) {
      relaunch(&r);
      assert_int_equal(read_u32(&r, r.after), after_next_launch(c.change));
      assert_int_equal(read_u32(&r, r.started2), c.change == CHANGE_SET_KERNEL ? 1 : 0);
    }
    graph_run_close(&r);
  }
}

/*
 * As above with two changers waiting for the same wait: B sets a node while C updates the whole
 * executable from its graph, whose fill_after now stores 11. Either may go first once A's launch
 * has ended; each finds its entry as the other left it (a disabled node stays disabled through
 * an update), and A's launch keeps its values.
 */
static void a_setter_and_an_update_wait_for_one_wait(void **state) {
  (void)state;
  static const enum exec_change setters[] = {CHANGE_SET, CHANGE_SET_KERNEL, CHANGE_DISABLE};
  for (unsigned run = 0; run < 2 * 3; run++) {
    struct graph_run r;
    graph_run_open(&r, GCAP_SIM_EXEC_DEFERRED, run & 1 ? 3 : 1, GCAP_SIM_ORDER_CAPTURE);
    gcap_memset_node_params f = {.dst = r.after, .value = 11, .element_size = 4, .width = 4, .height = 1};
    assert_ok(gcap_node_set_memset_params(r.fill_after, &f)); /* the graph's: x stores 4 until updated */
    struct changer c = {.r = &r, .change = setters[run / 2]}, u = {.r = &r, .change = CHANGE_UPDATE};
    atomic_init(&c.a_returned, false);
    atomic_init(&c.calling, false);
    atomic_init(&u.a_returned, false);
    atomic_init(&u.calling, false);
    pthread_t b, updater, ender;
    assert_int_equal(pthread_create(&b, NULL, change_running_exec, &c), 0);
    assert_int_equal(pthread_create(&updater, NULL, change_running_exec, &u), 0);
    assert_int_equal(pthread_create(&ender, NULL, end_kernel_after_call, &c), 0);
    gcap_status launched = gcap_exec_launch(r.x, r.sp.s);
    gcap_status st = gcap_stream_synchronize(r.sp.s);
    atomic_store(&c.a_returned, true);
    atomic_store(&u.a_returned, true);
    pthread_join(b, NULL);
    pthread_join(updater, NULL);
    pthread_join(ender, NULL);
    assert_ok(launched);
    assert_ok(st);
    assert_ok(c.st);
    assert_ok(u.st);
    assert_true(c.done_at_return >= 1);
    assert_true(u.done_at_return >= 1);
    assert_graph_ran(&r, 1);
    relaunch(&r);
    uint32_t after = read_u32(&r, r.after), started2 = read_u32(&r, r.started2);
    if (c.change == CHANGE_SET) assert_true(after == 9 || after == 11);
    else assert_int_equal(after, c.change == CHANGE_DISABLE ? 0 : 11);
    /* The update takes the graph's kernel arguments (`started`) if it came after the setter. */
    assert_true(started2 == 0 || (c.change == CHANGE_SET_KERNEL && started2 == 1));
    graph_run_close(&r);
  }
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(watchdog_ends_immediate_launch),
      cmocka_unit_test(watchdog_ends_deferred_wait),
      cmocka_unit_test(watchdog_stops_every_worker),
      cmocka_unit_test(zero_means_no_watchdog),
      cmocka_unit_test(default_and_environment),
      cmocka_unit_test(interrupt_stops_a_running_kernel),
      cmocka_unit_test(watchdog_stops_cpu_kernels_between_blocks),
      cmocka_unit_test(others_go_on_while_a_kernel_runs),
      cmocka_unit_test(others_go_on_while_a_graph_kernel_runs),
      cmocka_unit_test(changes_of_a_running_exec_wait_for_its_launch),
      cmocka_unit_test(changes_wait_for_the_wait_that_runs_their_exec),
      cmocka_unit_test(a_setter_and_an_update_wait_for_one_wait),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
