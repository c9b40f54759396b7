/*
 * Strict memory (gcap_sim_options.strict_memory, GCAP_SIM_STRICT_MEMORY): host code that touches
 * device memory faults, as on a GPU, while simulated copies, fills, kernels and graph launches
 * still work on it. A fault is observed in a forked child: it dies of SIGSEGV, or, under a
 * sanitizer, reports the fault and exits non-zero; either way it never reaches the code after
 * the access. Simulator only.
 */
#define _DEFAULT_SOURCE /* mincore, alongside POSIX */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define ENV "GCAP_SIM_STRICT_MEMORY"
#define N 256u /* words of the test buffers */

/* ------------------------------------------------------------------ helpers */

static gcap_context *sim_context(bool strict) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.strict_memory = strict;
  return test_sim_context_create(&so);
}

static gcap_stream *stream_of(gcap_context *ctx) {
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  return s;
}

struct touch {
  volatile unsigned char *p;
  bool write;
};

static void touch(const struct touch *t) {
  if (t->write) t->p[0] = 0x5a;
  else (void)t->p[0];
}

/* Runs fn(arg) in a forked child; true when the child faulted before fn returned. */
static bool faults_in_child(void (*fn)(void *), void *arg) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none); /* the fault is expected: no core file */
    signal(SIGSEGV, SIG_DFL);      /* not cmocka's handler, which would go on running tests in the child */
    fn(arg);
    _exit(0); /* reached only when nothing faulted */
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (WIFSIGNALED(status)) return WTERMSIG(status) == SIGSEGV;
  return WIFEXITED(status) && WEXITSTATUS(status) != 0; /* a sanitizer's report of the SEGV */
}

static void touch_fn(void *arg) { touch(arg); }

static bool access_faults(void *p, bool write) {
  struct touch t = {p, write};
  return faults_in_child(touch_fn, &t);
}

static void *dev_alloc(gcap_context *ctx, size_t bytes) { return test_dev_alloc(ctx, bytes); }

static void put(gcap_context *ctx, void *dst, const void *src, size_t bytes) {
  assert_ok(gcap_memcpy(ctx, dst, src, bytes, GCAP_MEMCPY_HOST_TO_DEVICE));
}

static void get(gcap_context *ctx, void *dst, const void *src, size_t bytes) {
  assert_ok(gcap_memcpy(ctx, dst, src, bytes, GCAP_MEMCPY_DEVICE_TO_HOST));
}

/* p[i] = v + i for i < n. Params: uint32_t *p, uint32_t v, uint32_t n. */
static void iota_sim(const gcap_sim_thread *t, void *const *args) {
  uint32_t *p, v, n;
  memcpy(&p, args[0], sizeof p);
  memcpy(&v, args[1], sizeof v);
  memcpy(&n, args[2], sizeof n);
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < n) p[i] = v + i;
}

static const size_t iota_sizes[] = {sizeof(void *), sizeof(uint32_t), sizeof(uint32_t)};
static const gcap_kernel_def iota_def = {
    .name = "iota", .sim_fn = iota_sim, .num_params = 3, .param_sizes = iota_sizes};

static gcap_kernel *iota_kernel(gcap_context *ctx) {
  gcap_module_desc d = {.kernels = &iota_def, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  return test_kernel_of(m, "iota");
}

static void assert_iota(gcap_context *ctx, const void *dev, uint32_t v, uint32_t n) {
  uint32_t *back = calloc(n, sizeof *back);
  assert_non_null(back);
  get(ctx, back, dev, n * sizeof *back);
  for (uint32_t i = 0; i < n; i++) assert_int_equal(back[i], v + i);
  free(back);
}

static void sync_stream(gcap_stream *s) { assert_ok(gcap_stream_synchronize(s)); }

/* ------------------------------------------------------------- what faults */

static void test_read_and_write_fault(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(true);
  unsigned char *p = dev_alloc(ctx, 100);
  assert_true(access_faults(p, false));
  assert_true(access_faults(p, true));
  assert_true(access_faults(p + 99, false)); /* anywhere in it, not only its first byte */
  gcap_context_destroy(ctx);
}

static void test_stream_ordered_allocation_faults(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(true);
  gcap_stream *s = stream_of(ctx);
  void *p = NULL;
  assert_ok(gcap_mem_alloc_async(s, 4096, &p));
  sync_stream(s);
  assert_true(access_faults(p, false));
  assert_true(access_faults(p, true));
  assert_ok(gcap_mem_free_async(s, p));
  gcap_context_destroy(ctx);
}

/* A captured allocation, with and without a pool: its address faults once a launch allocated it. */
static void check_graph_allocation(gcap_context *ctx, gcap_stream *s, gcap_pool *pool) {
  gcap_capture_options o;
  gcap_capture_options_init(&o);
  o.pool = pool;
  gcap_capture *c = NULL;
  void *p = NULL;
  assert_ok(gcap_capture_begin(s, &o, &c));
  assert_ok(gcap_mem_alloc_async(s, 1000, &p));
  assert_ok(gcap_memset_async(s, p, 0x11, 1000));
  gcap_graph *g = NULL;
  assert_ok(gcap_capture_end(c, &g));
  gcap_capture_destroy(c);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, s));
  sync_stream(s);
  unsigned char back[1000];
  get(ctx, back, p, sizeof back);
  for (size_t i = 0; i < sizeof back; i++) assert_int_equal(back[i], 0x11);
  assert_true(access_faults(p, false));
  assert_true(access_faults(p, true));
  assert_ok(gcap_mem_free(ctx, p));
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

static void test_graph_allocation_faults(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(true);
  gcap_stream *s = stream_of(ctx);
  check_graph_allocation(ctx, s, NULL);
  gcap_pool *pool = NULL;
  assert_ok(gcap_pool_create(ctx, &pool));
  check_graph_allocation(ctx, s, pool);
  gcap_pool_release(pool);
  gcap_context_destroy(ctx);
}

static void test_page_locked_memory_does_not_fault(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(true);
  unsigned char *h = NULL, *dev = dev_alloc(ctx, 64);
  assert_ok(gcap_host_alloc(ctx, 64, (void **)&h));
  memset(h, 0x33, 64); /* would crash the test if it faulted */
  put(ctx, dev, h, 64);
  memset(h, 0, 64);
  get(ctx, h, dev, 64);
  for (size_t i = 0; i < 64; i++) assert_int_equal(h[i], 0x33);
  assert_ok(gcap_host_free(ctx, h));
  gcap_context_destroy(ctx);
}

static void test_without_strict_memory_host_access_works(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(false);
  unsigned char *p = dev_alloc(ctx, 64);
  p[0] = 7; /* the simulator's device memory is host memory then */
  unsigned char back = 0;
  get(ctx, &back, p, 1);
  assert_int_equal(back, 7);
  gcap_context_destroy(ctx);
}

/* --------------------------------------------------------- what still works */

static void test_copies_fills_and_kernels_work(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(true);
  gcap_stream *s = stream_of(ctx);
  uint32_t *a = dev_alloc(ctx, N * sizeof *a), *b = dev_alloc(ctx, N * sizeof *b);
  uint32_t host[N];
  for (uint32_t i = 0; i < N; i++) host[i] = 3 * i;
  put(ctx, a, host, sizeof host);                                               /* H2D */
  assert_ok(gcap_memcpy(ctx, b, a, sizeof host, GCAP_MEMCPY_DEVICE_TO_DEVICE)); /* D2D */
  memset(host, 0, sizeof host);
  get(ctx, host, b, sizeof host); /* D2H */
  for (uint32_t i = 0; i < N; i++) assert_int_equal(host[i], 3 * i);

  assert_ok(gcap_memset_d32_async(s, a, 0xdeadbeefu, N));
  assert_ok(gcap_memset_d16_async(s, b, 0xbeefu, 2 * N));
  assert_ok(gcap_memcpy_async(s, host, a, sizeof host, GCAP_MEMCPY_DEVICE_TO_HOST));
  sync_stream(s);
  for (uint32_t i = 0; i < N; i++) assert_int_equal(host[i], 0xdeadbeefu);
  get(ctx, host, b, sizeof host);
  for (uint32_t i = 0; i < N; i++) assert_int_equal(host[i], 0xbeefbeefu);

  gcap_kernel *k = iota_kernel(ctx);
  uint32_t v = 100, n = N;
  void *args[] = {&a, &v, &n};
  assert_ok(gcap_launch_kernel(s, k, GCAP_DIM3(N / 64, 1, 1), GCAP_DIM3(64, 1, 1), 0, args));
  sync_stream(s);
  assert_iota(ctx, a, 100, N);
  assert_true(access_faults(a, false)); /* and closed again after the work */
  gcap_context_destroy(ctx);
}

static void note_call(void *user_data) { (*(int *)user_data)++; }

/* A kernel, a host node, a kernel: the memory is closed for the host node and opened again after it. */
static void test_graph_work_around_host_node(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(true);
  gcap_stream *s = stream_of(ctx);
  gcap_kernel *k = iota_kernel(ctx);
  uint32_t *a = dev_alloc(ctx, N * sizeof *a), *b = dev_alloc(ctx, N * sizeof *b);
  uint32_t va = 1, vb = 5000, n = N;
  void *args_a[] = {&a, &va, &n}, *args_b[] = {&b, &vb, &n};
  int calls = 0;
  gcap_kernel_node_params ka = {k, GCAP_DIM3(N / 32, 1, 1), GCAP_DIM3(32, 1, 1), 0, args_a};
  gcap_kernel_node_params kb = {k, GCAP_DIM3(N / 32, 1, 1), GCAP_DIM3(32, 1, 1), 0, args_b};
  gcap_host_node_params hp = {note_call, &calls};
  gcap_memcpy_node_params cp = {b + N / 2, a, N / 2 * sizeof *a, GCAP_MEMCPY_DEVICE_TO_DEVICE};
  gcap_graph *g = NULL;
  gcap_node *n1 = NULL, *n2 = NULL, *n3 = NULL, *n4 = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &ka, &n1));
  assert_ok(gcap_graph_add_host_node(g, &n1, 1, &hp, &n2));
  assert_ok(gcap_graph_add_kernel_node(g, &n2, 1, &kb, &n3));
  assert_ok(gcap_graph_add_memcpy_node(g, &n3, 1, &cp, &n4));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  for (int i = 0; i < 3; i++) assert_ok(gcap_exec_launch(x, s));
  sync_stream(s);
  assert_int_equal(calls, 3);
  assert_iota(ctx, a, 1, N);
  assert_iota(ctx, b, 5000, N / 2);
  assert_iota(ctx, b + N / 2, 1, N / 2);
  /* Eager host functions between eager work as well. */
  vb = 7;
  assert_ok(gcap_launch_host_func(s, note_call, &calls));
  assert_ok(gcap_launch_kernel(s, k, GCAP_DIM3(N / 32, 1, 1), GCAP_DIM3(32, 1, 1), 0, args_b));
  assert_ok(gcap_launch_host_func(s, note_call, &calls));
  sync_stream(s);
  assert_int_equal(calls, 5);
  assert_iota(ctx, b, 7, N);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  gcap_context_destroy(ctx);
}

struct host_touch {
  gcap_context *ctx;
  gcap_stream *s;
  struct touch t;
  bool in_graph;
};

static void touch_from_callback(void *user_data) { touch(user_data); }

/* In the child: a host function (eager or a graph's host node) that touches device memory. */
static void run_touching_host_fn(void *arg) {
  struct host_touch *h = arg;
  if (!h->in_graph) {
    gcap_launch_host_func(h->s, touch_from_callback, &h->t);
  } else {
    gcap_graph *g = NULL;
    gcap_node *node = NULL;
    gcap_host_node_params hp = {touch_from_callback, &h->t};
    gcap_exec *x = NULL;
    gcap_status st = gcap_graph_create(h->ctx, &g);
    if (st == GCAP_SUCCESS) st = gcap_graph_add_host_node(g, NULL, 0, &hp, &node);
    if (st == GCAP_SUCCESS) st = gcap_graph_instantiate(g, 0, &x);
    if (st != GCAP_SUCCESS) return; /* no fault: the test fails */
    gcap_exec_launch(x, h->s);
  }
  gcap_stream_synchronize(h->s);
}

static void test_host_function_touching_device_memory_faults(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(true);
  struct host_touch h = {ctx, stream_of(ctx), {dev_alloc(ctx, 64), false}, false};
  assert_true(faults_in_child(run_touching_host_fn, &h));
  h.t.write = true;
  assert_true(faults_in_child(run_touching_host_fn, &h));
  h.in_graph = true;
  assert_true(faults_in_child(run_touching_host_fn, &h));
  /* The same callback on page-locked memory runs. */
  unsigned char *pinned = NULL;
  assert_ok(gcap_host_alloc(ctx, 64, (void **)&pinned));
  h.t.p = pinned;
  h.in_graph = false;
  run_touching_host_fn(&h);
  h.in_graph = true;
  run_touching_host_fn(&h);
  assert_int_equal(pinned[0], 0x5a);
  gcap_context_destroy(ctx);
}

/* Each context has its own regions: one's work neither closes nor opens another's memory. */
static void test_contexts_are_separate(void **state) {
  (void)state;
  gcap_context *c1 = sim_context(true), *c2 = sim_context(true), *plain = sim_context(false);
  gcap_kernel *k1 = iota_kernel(c1), *k2 = iota_kernel(c2);
  uint32_t *a = dev_alloc(c1, N * sizeof *a), *b = dev_alloc(c2, N * sizeof *b);
  unsigned char *q = dev_alloc(plain, 16);
  gcap_stream *s1 = stream_of(c1), *s2 = stream_of(c2);
  uint32_t v1 = 10, v2 = 20, n = N;
  void *args1[] = {&a, &v1, &n}, *args2[] = {&b, &v2, &n};
  assert_ok(gcap_launch_kernel(s1, k1, GCAP_DIM3(N / 64, 1, 1), GCAP_DIM3(64, 1, 1), 0, args1));
  assert_ok(gcap_launch_kernel(s2, k2, GCAP_DIM3(N / 64, 1, 1), GCAP_DIM3(64, 1, 1), 0, args2));
  sync_stream(s1);
  sync_stream(s2);
  assert_iota(c1, a, 10, N);
  assert_iota(c2, b, 20, N);
  assert_true(access_faults(a, false));
  assert_true(access_faults(b, false));
  q[0] = 1; /* a context without strict memory is unaffected */
  /* A host function of one context touching another context's device memory faults too. */
  struct host_touch h = {c1, s1, {(volatile unsigned char *)b, false}, false};
  assert_true(faults_in_child(run_touching_host_fn, &h));
  gcap_context_destroy(c2);
  assert_iota(c1, a, 10, N); /* c2's regions went with it; c1's stayed */
  gcap_context_destroy(c1);
  gcap_context_destroy(plain);
}

/* ----------------------------------------------------------- the allocator */

static void test_alignment_and_reuse(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(true);
  void *p[8];
  for (size_t i = 0; i < 8; i++) {
    p[i] = dev_alloc(ctx, 1 + 300 * i);
    assert_int_equal((uintptr_t)p[i] % 256, 0); /* as cuMemAlloc */
  }
  void *third = p[3];
  assert_ok(gcap_mem_free(ctx, third));
  p[3] = dev_alloc(ctx, 1 + 300 * 3);
  assert_ptr_equal(p[3], third); /* a freed block is found again */
  for (size_t i = 0; i < 8; i++) assert_ok(gcap_mem_free(ctx, p[i]));
  /* Everything freed: the same sizes again land on the same addresses. */
  for (size_t i = 0; i < 8; i++) {
    void *again = dev_alloc(ctx, 1 + 300 * i);
    assert_ptr_equal(again, p[i]);
  }
  gcap_context_destroy(ctx);
}

/* One large allocation (its own mapping): copies at both of its ends work, and its pages fault. */
static void test_large_allocation(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(true);
  size_t bytes = (size_t)80 << 20; /* more than a first chunk */
  unsigned char *p = dev_alloc(ctx, bytes);
  unsigned char small[64], back[64];
  memset(small, 0x77, sizeof small);
  put(ctx, p, small, sizeof small);
  put(ctx, p + bytes - sizeof small, small, sizeof small);
  get(ctx, back, p + bytes - sizeof small, sizeof back);
  assert_memory_equal(back, small, sizeof small);
  assert_true(access_faults(p + bytes - 1, false));
  assert_ok(gcap_mem_free(ctx, p));
  gcap_context_destroy(ctx);
}

/* The mapped size of this process, in bytes (/proc/self/statm). */
static size_t mapped_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  assert_non_null(f);
  unsigned long size = 0;
  assert_int_equal(fscanf(f, "%lu", &size), 1);
  fclose(f);
  return size * (size_t)sysconf(_SC_PAGESIZE);
}

/* How many of the pages holding these addresses are resident (mincore: unmapped ones are not). */
static size_t resident_pages(void *const *addrs, size_t count) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), resident = 0;
  for (size_t i = 0; i < count; i++) {
    unsigned char in_core = 0;
    void *start = (void *)((uintptr_t)addrs[i] & ~(uintptr_t)(page - 1));
    if (mincore(start, page, &in_core) == 0 && (in_core & 1)) resident++;
  }
  return resident;
}

#define SLOTS 64
#define CHURN 10000

struct slot {
  unsigned char *p;
  size_t bytes;
  unsigned char tag;
};

static uint64_t next_random(uint64_t *state) { /* splitmix64 */
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Mostly small, some up to 4 MiB, now and then one larger than a first chunk. */
static size_t churn_size(uint64_t *rng, int i) {
  uint64_t r = next_random(rng);
  if (i % 1000 == 999) return ((size_t)65 << 20) + r % 4096;
  if (r % 100 < 70) return 1 + r % 4096;
  if (r % 100 < 95) return 1 + r % (256u << 10);
  return 1 + r % (4u << 20);
}

/* All of a block up to 4 MiB carries the tag; of a larger one, its first and last 4 KiB. */
static void churn_write(gcap_stream *s, const struct slot *sl) {
  if (sl->bytes <= (4u << 20)) {
    assert_ok(gcap_memset_async(s, sl->p, sl->tag, sl->bytes));
    return;
  }
  assert_ok(gcap_memset_async(s, sl->p, sl->tag, 4096));
  assert_ok(gcap_memset_async(s, sl->p + sl->bytes - 4096, sl->tag, 4096));
}

static void churn_check(gcap_context *ctx, const struct slot *sl) {
  unsigned char back[4096];
  size_t n = sl->bytes < sizeof back ? sl->bytes : sizeof back;
  get(ctx, back, sl->p, n);
  for (size_t i = 0; i < n; i++) assert_int_equal(back[i], sl->tag);
  get(ctx, back, sl->p + sl->bytes - n, n);
  for (size_t i = 0; i < n; i++) assert_int_equal(back[i], sl->tag);
}

/*
 * 10,000 allocations and frees of mixed sizes: contents stay right, and memory does not grow with
 * them: what stays mapped afterwards is a chunk or two (larger blocks had mappings of their own,
 * gone with them), and no page that held a block is still resident (freed pages went back).
 */
static void test_churn_reuses_memory(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(true);
  gcap_stream *s = stream_of(ctx);
  struct slot slots[SLOTS] = {{0}};
  void **seen = calloc(CHURN, sizeof *seen);
  assert_non_null(seen);
  size_t count = 0, total = 0, mapped0 = mapped_bytes();
  uint64_t rng = 7;
  for (int i = 0; i < CHURN; i++) {
    struct slot *sl = &slots[next_random(&rng) % SLOTS];
    if (sl->p) {
      sync_stream(s);
      churn_check(ctx, sl);
      assert_ok(gcap_mem_free(ctx, sl->p));
      sl->p = NULL;
      continue;
    }
    sl->bytes = churn_size(&rng, i);
    sl->tag = (unsigned char)(i * 37 + 1);
    sl->p = seen[count++] = dev_alloc(ctx, sl->bytes);
    total += sl->bytes;
    churn_write(s, sl);
  }
  sync_stream(s);
  for (size_t i = 0; i < SLOTS; i++) {
    if (!slots[i].p) continue;
    churn_check(ctx, &slots[i]);
    assert_ok(gcap_mem_free(ctx, slots[i].p));
  }
  assert_true(total > ((size_t)1 << 30)); /* over a gigabyte went through */
  assert_true(mapped_bytes() < mapped0 + ((size_t)256 << 20));
  assert_int_equal(resident_pages(seen, count), 0);
  free(seen);
  gcap_context_destroy(ctx);
}

/* ---------------------------------------------------------- the environment */

/* Sets ENV to value (NULL: unset) and returns the previous value, to restore with restore_env. */
static char *set_env(const char *value) {
  const char *old = getenv(ENV);
  char *saved = old ? strdup(old) : NULL;
  if (value) assert_int_equal(setenv(ENV, value, 1), 0);
  else assert_int_equal(unsetenv(ENV), 0);
  return saved;
}

static void restore_env(char *saved) {
  if (saved) setenv(ENV, saved, 1);
  else unsetenv(ENV);
  free(saved);
}

static gcap_status create_with_env(const char *value, gcap_context **ctx) {
  char *saved = set_env(value);
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  gcap_status st = gcap_context_create(&o, ctx);
  restore_env(saved);
  return st;
}

static void test_environment_turns_it_on(void **state) {
  (void)state;
  gcap_context *ctx = NULL;
  assert_ok(create_with_env("1", &ctx));
  unsigned char *p = dev_alloc(ctx, 64);
  assert_true(access_faults(p, false));
  gcap_context_destroy(ctx);

  assert_ok(create_with_env("0", &ctx));
  p = dev_alloc(ctx, 64);
  p[0] = 1;
  gcap_context_destroy(ctx);

  /* Explicit options ignore the environment. */
  char *saved = set_env("1");
  ctx = sim_context(false);
  restore_env(saved);
  p = dev_alloc(ctx, 64);
  p[0] = 1;
  gcap_context_destroy(ctx);
}

static void test_environment_bad_values(void **state) {
  (void)state;
  static const char *const bad[] = {"2", "yes", "true", " 1", "10"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    gcap_context *ctx = (gcap_context *)(void *)&ctx;
    assert_status(create_with_env(bad[i], &ctx), GCAP_ERROR_INVALID_VALUE);
    assert_null(ctx);
    test_assert_message_contains(ENV);
    test_assert_message_contains(bad[i]);
  }
}

int main(void) {
  test_require_backend();
  if (!test_on_sim()) return 77; /* the simulator's option: nothing to test elsewhere */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_read_and_write_fault),
      cmocka_unit_test(test_stream_ordered_allocation_faults),
      cmocka_unit_test(test_graph_allocation_faults),
      cmocka_unit_test(test_page_locked_memory_does_not_fault),
      cmocka_unit_test(test_without_strict_memory_host_access_works),
      cmocka_unit_test(test_copies_fills_and_kernels_work),
      cmocka_unit_test(test_graph_work_around_host_node),
      cmocka_unit_test(test_host_function_touching_device_memory_faults),
      cmocka_unit_test(test_contexts_are_separate),
      cmocka_unit_test(test_alignment_and_reuse),
      cmocka_unit_test(test_large_allocation),
      cmocka_unit_test(test_churn_reuses_memory),
      cmocka_unit_test(test_environment_turns_it_on),
      cmocka_unit_test(test_environment_bad_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
