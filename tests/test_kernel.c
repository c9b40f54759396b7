/* Modules, kernels and launches; what a kernel computes is checked on the simulator (sim_fn runs per thread). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* struct test_fixture, test_setup() and test_teardown() come from common.h: a context and one stream. */

static int sentinel_storage;
#define SENTINEL_MODULE ((gcap_module *)(void *)&sentinel_storage)
#define SENTINEL_KERNEL ((gcap_kernel *)(void *)&sentinel_storage)

/* Argument values are read with memcpy: the kernels make no assumption on alignment. */
#define ARG(type, args, i) arg_##type((args)[i])
static float arg_float(const void *p) {
  float v;
  memcpy(&v, p, sizeof v);
  return v;
}
static uint32_t arg_u32(const void *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
static void *arg_ptr(const void *p) {
  void *v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* ------------------------------------------------------------------ kernels */

/* y[i] = a * x[i] + y[i] for i < n. */
static void saxpy_fn(const gcap_sim_thread *t, void *const *args) {
  float a = ARG(float, args, 0);
  const float *x = ARG(ptr, args, 1);
  float *y = ARG(ptr, args, 2);
  uint32_t n = ARG(u32, args, 3);
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
static const size_t saxpy_sizes[] = {sizeof(float), sizeof(void *), sizeof(void *), sizeof(uint32_t)};
static const gcap_param_access saxpy_access[] = {GCAP_ACCESS_NONE, GCAP_ACCESS_READ, GCAP_ACCESS_READ_WRITE,
                                                 GCAP_ACCESS_NONE};

struct thread_rec {
  uint32_t hits;
  uint32_t bx, by, bz, tx, ty, tz;
  uint32_t gx, gy, gz, dx, dy, dz;
};

/* Each thread records what it saw in the slot its indices name. */
static void record_indices_fn(const gcap_sim_thread *t, void *const *args) {
  struct thread_rec *recs = ARG(ptr, args, 0);
  uint32_t total = ARG(u32, args, 1);
  uint32_t *overflow = ARG(ptr, args, 2);
  const gcap_dim3 g = t->grid_dim, b = t->block_dim, bi = t->block_idx, ti = t->thread_idx;
  if (bi.x >= g.x || bi.y >= g.y || bi.z >= g.z || ti.x >= b.x || ti.y >= b.y || ti.z >= b.z) {
    (*overflow)++;
    return;
  }
  uint32_t block = (bi.z * g.y + bi.y) * g.x + bi.x;
  uint32_t thread = (ti.z * b.y + ti.y) * b.x + ti.x;
  uint32_t id = block * (b.x * b.y * b.z) + thread;
  if (id >= total) {
    (*overflow)++;
    return;
  }
  struct thread_rec *r = &recs[id];
  r->hits++;
  r->bx = bi.x;
  r->by = bi.y;
  r->bz = bi.z;
  r->tx = ti.x;
  r->ty = ti.y;
  r->tz = ti.z;
  r->gx = g.x;
  r->gy = g.y;
  r->gz = g.z;
  r->dx = b.x;
  r->dy = b.y;
  r->dz = b.z;
}
static const size_t record_sizes[] = {sizeof(void *), sizeof(uint32_t), sizeof(void *)};

/* Each thread writes its slot of the block's shared memory and reads it back. */
static void shared_fn(const gcap_sim_thread *t, void *const *args) {
  uint32_t *out = ARG(ptr, args, 0);
  uint32_t *was_null = ARG(ptr, args, 1);
  uint32_t tid = t->thread_idx.x;
  uint32_t gid = t->block_idx.x * t->block_dim.x + tid;
  if (t->shared_mem == NULL) {
    was_null[gid] = 1;
    out[gid] = 0;
    return;
  }
  was_null[gid] = 0;
  unsigned char *sh = t->shared_mem;
  uint32_t v = tid * 7u + t->block_idx.x * 1000u + 1u;
  memcpy(sh + 4 * (size_t)tid, &v, sizeof v);
  uint32_t back;
  memcpy(&back, sh + 4 * (size_t)tid, sizeof back);
  out[gid] = back;
}
static const size_t two_ptr_sizes[] = {sizeof(void *), sizeof(void *)};

struct big_arg {
  uint64_t v[3];
};
/* Thread 0 writes the by-value struct argument to out. */
static void big_arg_fn(const gcap_sim_thread *t, void *const *args) {
  if (t->block_idx.x != 0 || t->thread_idx.x != 0) return;
  struct big_arg a;
  memcpy(&a, args[0], sizeof a);
  uint64_t *out = ARG(ptr, args, 1);
  for (int i = 0; i < 3; i++) out[i] = a.v[i];
}
static const size_t big_arg_sizes[] = {sizeof(struct big_arg), sizeof(void *)};

static void write_one_fn(const gcap_sim_thread *t, void *const *args) {
  (void)t;
  uint32_t *out = ARG(ptr, args, 0);
  *out = 1;
}
static void write_two_fn(const gcap_sim_thread *t, void *const *args) {
  (void)t;
  uint32_t *out = ARG(ptr, args, 0);
  *out = 2;
}
static const size_t one_ptr_size[] = {sizeof(void *)};

static atomic_int no_param_calls;
static void no_param_fn(const gcap_sim_thread *t, void *const *args) {
  (void)t;
  (void)args;
  atomic_fetch_add(&no_param_calls, 1);
}

static gcap_module *load(gcap_context *ctx, const gcap_kernel_def *defs, size_t n) {
  gcap_module_desc d = {NULL, 0, defs, n};
  gcap_module *m = NULL;
  assert_ok(test_module_load(ctx, &d, &m));
  assert_non_null(m);
  return m;
}

static gcap_kernel *get(gcap_module *m, const char *name) {
  gcap_kernel *k = NULL;
  assert_ok(gcap_module_get_kernel(m, name, &k));
  assert_non_null(k);
  return k;
}

/* -------------------------------------------------------------- module load */

static void expect_load_fails(gcap_context *ctx, const gcap_kernel_def *defs, size_t n) {
  gcap_module_desc d = {NULL, 0, defs, n};
  gcap_module *m = SENTINEL_MODULE;
  assert_status(gcap_module_load(ctx, &d, &m), GCAP_ERROR_INVALID_VALUE);
  assert_null(m);
  test_assert_message_contains("gcap_module_load");
}

/*
 * Refused on every backend: the core checks the defs before a backend sees them, and a desc with
 * neither kernels nor an image gives no backend anything to load.
 */
static void test_module_load_bad_desc(void **state) {
  struct test_fixture *f = *state;
  const gcap_kernel_def good = {"good", no_param_fn, 0, NULL, NULL};

  /* No kernels. */
  expect_load_fails(f->ctx, NULL, 1);
  expect_load_fails(f->ctx, NULL, 0);
  expect_load_fails(f->ctx, &good, 0);
  /* Names: NULL, empty, duplicate within one module. */
  const gcap_kernel_def null_name[] = {good, {NULL, no_param_fn, 0, NULL, NULL}};
  expect_load_fails(f->ctx, null_name, 2);
  const gcap_kernel_def empty_name[] = {good, {"", no_param_fn, 0, NULL, NULL}};
  expect_load_fails(f->ctx, empty_name, 2);
  const gcap_kernel_def dup_name[] = {good, {"other", NULL, 0, NULL, NULL}, {"good", NULL, 0, NULL, NULL}};
  expect_load_fails(f->ctx, dup_name, 3);
  /* Parameters: sizes missing, a zero size. */
  const gcap_kernel_def no_sizes[] = {good, {"k", NULL, 2, NULL, NULL}};
  expect_load_fails(f->ctx, no_sizes, 2);
  static const size_t zero_size[] = {4, 0, 8};
  const gcap_kernel_def zero[] = {good, {"k", NULL, 3, zero_size, NULL}};
  expect_load_fails(f->ctx, zero, 2);
  /* Access entries must be valid enum values. */
  static const size_t sizes2[] = {8, 8};
  static const gcap_param_access bad_access[] = {GCAP_ACCESS_READ, (gcap_param_access)5};
  const gcap_kernel_def bad_acc[] = {good, {"k", NULL, 2, sizes2, bad_access}};
  expect_load_fails(f->ctx, bad_acc, 2);
  static const gcap_param_access neg_access[] = {(gcap_param_access)-1, GCAP_ACCESS_READ};
  const gcap_kernel_def neg_acc[] = {good, {"k", NULL, 2, sizes2, neg_access}};
  expect_load_fails(f->ctx, neg_acc, 2);

  /* None of the failed loads left a kernel behind. */
  gcap_kernel *k = SENTINEL_KERNEL;
  assert_status(gcap_context_find_kernel(f->ctx, "good", &k), GCAP_ERROR_NOT_FOUND);
  assert_null(k);

  /* NULL desc, ctx, out; destroyed ctx. */
  gcap_module_desc d = {NULL, 0, &good, 1};
  gcap_module *m = SENTINEL_MODULE;
  assert_status(gcap_module_load(f->ctx, NULL, &m), GCAP_ERROR_INVALID_VALUE);
  assert_null(m);
  test_assert_message_contains("gcap_module_load");
  m = SENTINEL_MODULE;
  assert_status(gcap_module_load(NULL, &d, &m), GCAP_ERROR_INVALID_HANDLE);
  assert_null(m);
  assert_status(gcap_module_load(f->ctx, &d, NULL), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_module_load(NULL, NULL, NULL), GCAP_ERROR_INVALID_HANDLE);
  gcap_context *dead = test_context_create();
  gcap_context_destroy(dead);
  m = SENTINEL_MODULE;
  assert_status(gcap_module_load(dead, &d, &m), GCAP_ERROR_INVALID_HANDLE);
  assert_null(m);
}

static void test_module_load_good_variants(void **state) {
  struct test_fixture *f = *state;
  static const size_t sizes5[] = {1, 2, 4, 8, 16};
  static const gcap_param_access all_access[] = {GCAP_ACCESS_UNKNOWN, GCAP_ACCESS_NONE, GCAP_ACCESS_READ,
                                                 GCAP_ACCESS_WRITE, GCAP_ACCESS_READ_WRITE};
  const gcap_kernel_def defs[] = {
      {"no_params", no_param_fn, 0, NULL, NULL},
      {"five", NULL, 5, sizes5, all_access},
      {"five_unknown", NULL, 5, sizes5, NULL},
      {"saxpy", saxpy_fn, 4, saxpy_sizes, saxpy_access},
  };
  gcap_module_desc d = {NULL, 0, defs, 4};
  if (test_on_sim()) { /* the simulator ignores an image; CUDA would try to load it */
    d.image = "ignored image on the simulator";
    d.image_size = 30;
  }
  gcap_module *m = SENTINEL_MODULE;
  assert_ok(test_module_load(f->ctx, &d, &m));
  assert_non_null(m);
  assert_true(m != SENTINEL_MODULE);
  assert_string_equal(gcap_last_error_message(), "");
  for (size_t i = 0; i < 4; i++) assert_string_equal(gcap_kernel_name(get(m, defs[i].name)), defs[i].name);
  /* The same names in a second module are fine. */
  gcap_module *m2 = load(f->ctx, defs, 4);
  assert_true(m2 != m);
  assert_true(get(m2, "saxpy") != get(m, "saxpy"));
  assert_ok(gcap_module_unload(m2));
  assert_ok(gcap_module_unload(m));
  assert_string_equal(gcap_last_error_message(), "");
}

/* ------------------------------------------------------------ lookups */

static void test_get_kernel(void **state) {
  struct test_fixture *f = *state;
  const gcap_kernel_def defs[] = {
      {"alpha", no_param_fn, 0, NULL, NULL},
      {"beta", NULL, 0, NULL, NULL},
  };
  gcap_module *m = load(f->ctx, defs, 2);
  gcap_kernel *a = get(m, "alpha");
  gcap_kernel *b = get(m, "beta");
  assert_true(a != b);
  assert_string_equal(gcap_last_error_message(), "");
  assert_string_equal(gcap_kernel_name(a), "alpha");
  assert_string_equal(gcap_kernel_name(b), "beta");
  /* The same handle each time. */
  assert_ptr_equal(get(m, "alpha"), a);

  gcap_kernel *k = SENTINEL_KERNEL;
  assert_status(gcap_module_get_kernel(m, "gamma", &k), GCAP_ERROR_NOT_FOUND);
  assert_null(k);
  test_assert_message_contains("gcap_module_get_kernel");
  k = SENTINEL_KERNEL;
  assert_status(gcap_module_get_kernel(m, "alph", &k), GCAP_ERROR_NOT_FOUND);
  assert_status(gcap_module_get_kernel(m, "alphaa", &k), GCAP_ERROR_NOT_FOUND);
  assert_status(gcap_module_get_kernel(m, "", &k), GCAP_ERROR_NOT_FOUND);
  k = SENTINEL_KERNEL;
  assert_status(gcap_module_get_kernel(m, NULL, &k), GCAP_ERROR_INVALID_VALUE);
  assert_null(k);
  assert_status(gcap_module_get_kernel(m, "alpha", NULL), GCAP_ERROR_INVALID_VALUE);
  k = SENTINEL_KERNEL;
  assert_status(gcap_module_get_kernel(NULL, "alpha", &k), GCAP_ERROR_INVALID_HANDLE);
  assert_null(k);

  assert_null(gcap_kernel_name(NULL));
  assert_ok(gcap_module_unload(m));
  k = SENTINEL_KERNEL;
  assert_status(gcap_module_get_kernel(m, "alpha", &k), GCAP_ERROR_INVALID_HANDLE);
  assert_null(k);
  assert_null(gcap_kernel_name(a));
  assert_null(gcap_kernel_name(b));
}

static uint32_t run_out_kernel(struct test_fixture *f, gcap_kernel *k, uint32_t *d) {
  assert_ok(gcap_memset_d32_async(f->s, d, 0, 1));
  void *arg = d;
  void *args[] = {&arg};
  assert_ok(gcap_launch_kernel(f->s, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, args));
  uint32_t v = 99;
  assert_ok(gcap_memcpy_async(f->s, &v, d, sizeof v, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_stream_synchronize(f->s));
  return v;
}

static void test_find_kernel_across_modules(void **state) {
  struct test_fixture *f = *state;
  const gcap_kernel_def first[] = {
      {"only_first", write_one_fn, 1, one_ptr_size, NULL},
      {"dup", write_one_fn, 1, one_ptr_size, NULL},
  };
  const gcap_kernel_def second[] = {
      {"dup", write_two_fn, 1, one_ptr_size, NULL},
      {"only_second", write_two_fn, 1, one_ptr_size, NULL},
  };
  gcap_module *m1 = load(f->ctx, first, 2);
  gcap_module *m2 = load(f->ctx, second, 2);
  uint32_t *d = test_dev_alloc(f->ctx, sizeof(uint32_t));

  gcap_kernel *k = NULL;
  assert_ok(gcap_context_find_kernel(f->ctx, "dup", &k));
  assert_string_equal(gcap_last_error_message(), "");
  assert_ptr_equal(k, get(m1, "dup")); /* earliest loaded wins */
  assert_true(k != get(m2, "dup"));
  if (test_on_sim()) assert_int_equal(run_out_kernel(f, k, d), 1); /* the sim_fn of the first module ran */
  assert_ok(gcap_context_find_kernel(f->ctx, "only_second", &k));
  assert_ptr_equal(k, get(m2, "only_second"));
  assert_ok(gcap_context_find_kernel(f->ctx, "only_first", &k));
  assert_ptr_equal(k, get(m1, "only_first"));
  k = SENTINEL_KERNEL;
  assert_status(gcap_context_find_kernel(f->ctx, "nowhere", &k), GCAP_ERROR_NOT_FOUND);
  assert_null(k);
  test_assert_message_contains("gcap_context_find_kernel");

  /* Another context sees none of them. */
  gcap_context *other = test_context_create();
  k = SENTINEL_KERNEL;
  assert_status(gcap_context_find_kernel(other, "dup", &k), GCAP_ERROR_NOT_FOUND);
  assert_null(k);
  gcap_context_destroy(other);

  assert_ok(gcap_module_unload(m1));
  assert_ok(gcap_context_find_kernel(f->ctx, "dup", &k));
  assert_ptr_equal(k, get(m2, "dup"));
  if (test_on_sim()) assert_int_equal(run_out_kernel(f, k, d), 2);
  k = SENTINEL_KERNEL;
  assert_status(gcap_context_find_kernel(f->ctx, "only_first", &k), GCAP_ERROR_NOT_FOUND);
  assert_null(k);

  /* A module loaded later comes after m2. */
  gcap_module *m3 = load(f->ctx, first, 2);
  assert_ok(gcap_context_find_kernel(f->ctx, "dup", &k));
  assert_ptr_equal(k, get(m2, "dup"));
  assert_ok(gcap_context_find_kernel(f->ctx, "only_first", &k));
  assert_ptr_equal(k, get(m3, "only_first"));

  /* Bad arguments. */
  k = SENTINEL_KERNEL;
  assert_status(gcap_context_find_kernel(NULL, "dup", &k), GCAP_ERROR_INVALID_HANDLE);
  assert_null(k);
  k = SENTINEL_KERNEL;
  assert_status(gcap_context_find_kernel(f->ctx, NULL, &k), GCAP_ERROR_INVALID_VALUE);
  assert_null(k);
  assert_status(gcap_context_find_kernel(f->ctx, "dup", NULL), GCAP_ERROR_INVALID_VALUE);

  assert_ok(gcap_module_unload(m2));
  assert_ok(gcap_module_unload(m3));
  k = SENTINEL_KERNEL;
  assert_status(gcap_context_find_kernel(f->ctx, "dup", &k), GCAP_ERROR_NOT_FOUND);
  assert_null(k);
  assert_ok(gcap_mem_free(f->ctx, d));
}

static char *heap_string(const char *s) {
  char *p = malloc(strlen(s) + 1);
  assert_non_null(p);
  strcpy(p, s);
  return p;
}

static void test_def_arrays_are_copied(void **state) {
  struct test_fixture *f = *state;
  char *name0 = heap_string("copied_saxpy");
  char *name1 = heap_string("copied_stub");
  size_t *sizes = malloc(sizeof saxpy_sizes);
  gcap_param_access *access = malloc(sizeof saxpy_access);
  gcap_kernel_def *defs = malloc(2 * sizeof *defs);
  gcap_module_desc *desc = malloc(sizeof *desc);
  assert_non_null(sizes);
  assert_non_null(access);
  assert_non_null(defs);
  assert_non_null(desc);
  memcpy(sizes, saxpy_sizes, sizeof saxpy_sizes);
  memcpy(access, saxpy_access, sizeof saxpy_access);
  defs[0] = (gcap_kernel_def){name0, saxpy_fn, 4, sizes, access};
  defs[1] = (gcap_kernel_def){name1, NULL, 4, sizes, NULL};
  *desc = (gcap_module_desc){NULL, 0, defs, 2};
  gcap_module *m = NULL;
  assert_ok(test_module_load(f->ctx, desc, &m));

  /* Scribble over everything, then free it. */
  memset(name0, 'x', strlen(name0));
  memset(name1, 'y', strlen(name1));
  memset(sizes, 0, sizeof saxpy_sizes);
  memset(access, 0x7F, sizeof saxpy_access);
  memset(defs, 0, 2 * sizeof *defs);
  memset(desc, 0, sizeof *desc);
  free(name0);
  free(name1);
  free(sizes);
  free(access);
  free(defs);
  free(desc);

  gcap_kernel *k = get(m, "copied_saxpy");
  assert_string_equal(gcap_kernel_name(k), "copied_saxpy");
  gcap_kernel *k2 = NULL;
  assert_ok(gcap_context_find_kernel(f->ctx, "copied_stub", &k2));
  assert_string_equal(gcap_kernel_name(k2), "copied_stub");

  enum { N = 40 };
  float x[N], y[N], r[N];
  for (int i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = 1.0f;
  }
  float *dx = test_dev_alloc(f->ctx, sizeof x), *dy = test_dev_alloc(f->ctx, sizeof y);
  assert_ok(gcap_memcpy(f->ctx, dx, x, sizeof x, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memcpy(f->ctx, dy, y, sizeof y, GCAP_MEMCPY_HOST_TO_DEVICE));
  float a = 2.0f;
  uint32_t n = N;
  void *args[] = {&a, &dx, &dy, &n};
  assert_ok(gcap_launch_kernel(f->s, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(64, 1, 1), 0, args));
  assert_ok(gcap_launch_kernel(f->s, k2, GCAP_DIM3(1, 1, 1), GCAP_DIM3(64, 1, 1), 0, args));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_memcpy(f->ctx, r, dy, sizeof r, GCAP_MEMCPY_DEVICE_TO_HOST));
  if (test_on_sim()) /* saxpy_fn ran; the stub did nothing */
    for (int i = 0; i < N; i++) assert_true(r[i] == 2.0f * (float)i + 1.0f);
  assert_ok(gcap_module_unload(m));
}

/* ------------------------------------------------------------ launches */

static void test_launch_saxpy(void **state) {
  struct test_fixture *f = *state;
  test_require_sim(); /* checks what saxpy_fn computed */
  const gcap_kernel_def defs[] = {{"saxpy", saxpy_fn, 4, saxpy_sizes, saxpy_access}};
  gcap_module *m = load(f->ctx, defs, 1);
  gcap_kernel *k = get(m, "saxpy");

  enum { N = 1000, PAD = 24 }; /* 8 blocks of 128 = 1024 threads: the last 24 are out of range */
  float *x = malloc(N * sizeof *x), *y = malloc((N + PAD) * sizeof *y), *r = malloc((N + PAD) * sizeof *r);
  assert_non_null(x);
  assert_non_null(y);
  assert_non_null(r);
  for (int i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = 2.0f * (float)i;
  }
  for (int i = N; i < N + PAD; i++) y[i] = -7.0f;
  float *dx = test_dev_alloc(f->ctx, N * sizeof *x);
  float *dy = test_dev_alloc(f->ctx, (N + PAD) * sizeof *y);
  assert_ok(gcap_memcpy(f->ctx, dx, x, N * sizeof *x, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memcpy(f->ctx, dy, y, (N + PAD) * sizeof *y, GCAP_MEMCPY_HOST_TO_DEVICE));
  float a = 0.5f;
  uint32_t n = N;
  void *args[] = {&a, &dx, &dy, &n};
  assert_ok(gcap_launch_kernel(f->s, k, GCAP_DIM3((N + 127) / 128, 1, 1), GCAP_DIM3(128, 1, 1), 0, args));
  assert_string_equal(gcap_last_error_message(), "");
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_memcpy(f->ctx, r, dy, (N + PAD) * sizeof *r, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (int i = 0; i < N; i++) {
    if (r[i] != 2.5f * (float)i) fail_msg("y[%d] = %g, expected %g", i, (double)r[i], 2.5 * i);
  }
  for (int i = N; i < N + PAD; i++) assert_true(r[i] == -7.0f);

  /* A second launch applies again (each element once more). */
  a = 1.0f;
  assert_ok(gcap_launch_kernel(f->s, k, GCAP_DIM3(16, 1, 1), GCAP_DIM3(64, 1, 1), 0, args));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_memcpy(f->ctx, r, dy, N * sizeof *r, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (int i = 0; i < N; i++) assert_true(r[i] == 3.5f * (float)i);

  free(x);
  free(y);
  free(r);
  assert_ok(gcap_mem_free(f->ctx, dx));
  assert_ok(gcap_mem_free(f->ctx, dy));
  assert_ok(gcap_module_unload(m));
}

static void check_indices(struct test_fixture *f, gcap_kernel *k, gcap_dim3 grid, gcap_dim3 block) {
  const uint32_t per_block = block.x * block.y * block.z;
  const uint32_t total = grid.x * grid.y * grid.z * per_block;
  struct thread_rec *d = test_dev_alloc(f->ctx, total * sizeof *d);
  uint32_t *dov = test_dev_alloc(f->ctx, sizeof(uint32_t));
  assert_ok(gcap_memset_async(f->s, d, 0, total * sizeof *d));
  assert_ok(gcap_memset_async(f->s, dov, 0, sizeof(uint32_t)));
  uint32_t t = total;
  void *args[] = {&d, &t, &dov};
  assert_ok(gcap_launch_kernel(f->s, k, grid, block, 0, args));
  assert_ok(gcap_stream_synchronize(f->s));
  struct thread_rec *recs = malloc(total * sizeof *recs);
  assert_non_null(recs);
  uint32_t overflow = 99;
  assert_ok(gcap_memcpy(f->ctx, recs, d, total * sizeof *recs, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_memcpy(f->ctx, &overflow, dov, sizeof overflow, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_int_equal(overflow, 0);
  uint32_t id = 0;
  for (uint32_t bz = 0; bz < grid.z; bz++)
    for (uint32_t by = 0; by < grid.y; by++)
      for (uint32_t bx = 0; bx < grid.x; bx++)
        for (uint32_t tz = 0; tz < block.z; tz++)
          for (uint32_t ty = 0; ty < block.y; ty++)
            for (uint32_t tx = 0; tx < block.x; tx++, id++) {
              const struct thread_rec *r = &recs[id];
              if (r->hits != 1) fail_msg("thread %u ran %u times", id, r->hits);
              assert_int_equal(r->bx, bx);
              assert_int_equal(r->by, by);
              assert_int_equal(r->bz, bz);
              assert_int_equal(r->tx, tx);
              assert_int_equal(r->ty, ty);
              assert_int_equal(r->tz, tz);
              assert_int_equal(r->gx, grid.x);
              assert_int_equal(r->gy, grid.y);
              assert_int_equal(r->gz, grid.z);
              assert_int_equal(r->dx, block.x);
              assert_int_equal(r->dy, block.y);
              assert_int_equal(r->dz, block.z);
            }
  assert_int_equal(id, total);
  free(recs);
  assert_ok(gcap_mem_free(f->ctx, d));
  assert_ok(gcap_mem_free(f->ctx, dov));
}

static void test_every_thread_once_3d(void **state) {
  struct test_fixture *f = *state;
  test_require_sim(); /* checks the indices each sim_fn thread saw */
  const gcap_kernel_def defs[] = {{"record", record_indices_fn, 3, record_sizes, NULL}};
  gcap_module *m = load(f->ctx, defs, 1);
  gcap_kernel *k = get(m, "record");
  check_indices(f, k, GCAP_DIM3(2, 3, 2), GCAP_DIM3(4, 2, 3));
  check_indices(f, k, GCAP_DIM3(3, 1, 1), GCAP_DIM3(1, 5, 1));
  check_indices(f, k, GCAP_DIM3(1, 1, 4), GCAP_DIM3(2, 1, 7));
  check_indices(f, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1));
  assert_ok(gcap_module_unload(m));
}

static void test_shared_memory(void **state) {
  struct test_fixture *f = *state;
  test_require_sim(); /* checks the shared memory the sim_fn threads saw */
  const gcap_kernel_def defs[] = {{"shared", shared_fn, 2, two_ptr_sizes, NULL}};
  gcap_module *m = load(f->ctx, defs, 1);
  gcap_kernel *k = get(m, "shared");
  enum { BLOCKS = 3, THREADS = 64, TOTAL = BLOCKS * THREADS };
  uint32_t *dout = test_dev_alloc(f->ctx, TOTAL * sizeof(uint32_t));
  uint32_t *dnull = test_dev_alloc(f->ctx, TOTAL * sizeof(uint32_t));
  void *args[] = {&dout, &dnull};
  uint32_t out[TOTAL], was_null[TOTAL];

  /* Exactly the bytes the threads use: each thread owns 4 of them. */
  assert_ok(gcap_memset_d32_async(f->s, dnull, 7, TOTAL));
  assert_ok(gcap_launch_kernel(f->s, k, GCAP_DIM3(BLOCKS, 1, 1), GCAP_DIM3(THREADS, 1, 1), THREADS * 4, args));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_memcpy(f->ctx, out, dout, sizeof out, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_memcpy(f->ctx, was_null, dnull, sizeof was_null, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (uint32_t b = 0; b < BLOCKS; b++)
    for (uint32_t t = 0; t < THREADS; t++) {
      assert_int_equal(was_null[b * THREADS + t], 0);
      assert_int_equal(out[b * THREADS + t], t * 7u + b * 1000u + 1u);
    }

  /* The largest amount allowed. */
  assert_ok(gcap_launch_kernel(f->s, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(THREADS, 1, 1), 49152, args));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_memcpy(f->ctx, was_null, dnull, sizeof was_null, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (uint32_t t = 0; t < THREADS; t++) assert_int_equal(was_null[t], 0);

  /* None: shared_mem is NULL. */
  assert_ok(gcap_memset_d32_async(f->s, dnull, 7, TOTAL));
  assert_ok(gcap_launch_kernel(f->s, k, GCAP_DIM3(BLOCKS, 1, 1), GCAP_DIM3(THREADS, 1, 1), 0, args));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_memcpy(f->ctx, was_null, dnull, sizeof was_null, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (uint32_t i = 0; i < TOTAL; i++) assert_int_equal(was_null[i], 1);

  assert_ok(gcap_mem_free(f->ctx, dout));
  assert_ok(gcap_mem_free(f->ctx, dnull));
  assert_ok(gcap_module_unload(m));
}

static void test_args_by_value(void **state) {
  struct test_fixture *f = *state;
  test_require_sim(); /* checks what big_arg_fn wrote */
  const gcap_kernel_def defs[] = {{"big", big_arg_fn, 2, big_arg_sizes, NULL}};
  gcap_module *m = load(f->ctx, defs, 1);
  gcap_kernel *k = get(m, "big");
  uint64_t *d1 = test_dev_alloc(f->ctx, 3 * sizeof(uint64_t));
  uint64_t *d2 = test_dev_alloc(f->ctx, 3 * sizeof(uint64_t));
  struct big_arg a = {{0x1111111111111111u, 0x2222222222222222u, 0x3333333333333333u}};
  void *out = d1;
  void *args[] = {&a, &out};
  assert_ok(gcap_launch_kernel(f->s, k, GCAP_DIM3(2, 1, 1), GCAP_DIM3(2, 1, 1), 0, args));
  /* Changing the caller's values after the launch does not change that launch. */
  a.v[0] = 0xAAAAAAAAAAAAAAAAu;
  a.v[1] = 0xBBBBBBBBBBBBBBBBu;
  a.v[2] = 0xCCCCCCCCCCCCCCCCu;
  out = d2;
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_launch_kernel(f->s, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, args));
  a.v[0] = 0;
  assert_ok(gcap_stream_synchronize(f->s));
  uint64_t r1[3], r2[3];
  assert_ok(gcap_memcpy(f->ctx, r1, d1, sizeof r1, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_memcpy(f->ctx, r2, d2, sizeof r2, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_true(r1[0] == 0x1111111111111111u);
  assert_true(r1[1] == 0x2222222222222222u);
  assert_true(r1[2] == 0x3333333333333333u);
  assert_true(r2[0] == 0xAAAAAAAAAAAAAAAAu);
  assert_true(r2[1] == 0xBBBBBBBBBBBBBBBBu);
  assert_true(r2[2] == 0xCCCCCCCCCCCCCCCCu);
  assert_ok(gcap_mem_free(f->ctx, d1));
  assert_ok(gcap_mem_free(f->ctx, d2));
  assert_ok(gcap_module_unload(m));
}

static void test_stub_runs_nothing(void **state) {
  struct test_fixture *f = *state;
  /* Same signature as write_one, no sim_fn. */
  const gcap_kernel_def defs[] = {{"stub", NULL, 1, one_ptr_size, NULL}};
  gcap_module *m = load(f->ctx, defs, 1);
  gcap_kernel *k = get(m, "stub");
  uint32_t *d = test_dev_alloc(f->ctx, sizeof(uint32_t));
  assert_ok(gcap_memset_d32_async(f->s, d, 0x5A5A5A5Au, 1));
  void *arg = d;
  void *args[] = {&arg};
  assert_ok(gcap_launch_kernel(f->s, k, GCAP_DIM3(4, 2, 1), GCAP_DIM3(32, 2, 1), 128, args));
  assert_string_equal(gcap_last_error_message(), "");
  assert_ok(gcap_stream_synchronize(f->s));
  uint32_t v = 0;
  assert_ok(gcap_memcpy(f->ctx, &v, d, sizeof v, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_int_equal(v, 0x5A5A5A5Au);
  /* A stub still checks its arguments. */
  assert_status(gcap_launch_kernel(f->s, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, NULL), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_launch_kernel(f->s, k, GCAP_DIM3(0, 1, 1), GCAP_DIM3(1, 1, 1), 0, args), GCAP_ERROR_INVALID_VALUE);
  assert_ok(gcap_mem_free(f->ctx, d));
  assert_ok(gcap_module_unload(m));
}

static void test_no_params_null_args(void **state) {
  struct test_fixture *f = *state;
  const gcap_kernel_def defs[] = {{"count", no_param_fn, 0, NULL, NULL}};
  gcap_module *m = load(f->ctx, defs, 1);
  gcap_kernel *k = get(m, "count");
  atomic_store(&no_param_calls, 0);
  assert_ok(gcap_launch_kernel(f->s, k, GCAP_DIM3(2, 3, 1), GCAP_DIM3(5, 1, 2), 0, NULL));
  assert_ok(gcap_stream_synchronize(f->s));
  if (test_on_sim()) assert_int_equal(atomic_load(&no_param_calls), 2 * 3 * 5 * 2); /* once per thread */
  assert_ok(gcap_module_unload(m));
}

struct config {
  gcap_dim3 grid, block;
  uint32_t shared;
};

static void test_bad_launch_configs(void **state) {
  struct test_fixture *f = *state;
  const gcap_kernel_def defs[] = {{"stub", NULL, 0, NULL, NULL}, {"count", no_param_fn, 0, NULL, NULL}};
  gcap_module *m = load(f->ctx, defs, 2);
  gcap_kernel *stub = get(m, "stub");
  gcap_kernel *count = get(m, "count");
  const struct config bad[] = {
      {{0, 1, 1}, {1, 1, 1}, 0},          {{1, 0, 1}, {1, 1, 1}, 0},     {{1, 1, 0}, {1, 1, 1}, 0},
      {{1, 1, 1}, {0, 1, 1}, 0},          {{1, 1, 1}, {1, 0, 1}, 0},     {{1, 1, 1}, {1, 1, 0}, 0},
      {{1, 1, 1}, {1025, 1, 1}, 0},       {{1, 1, 1}, {1, 1025, 1}, 0},  {{1, 1, 1}, {1, 1, 65}, 0},
      {{1, 1, 1}, {32, 32, 2}, 0},        {{1, 1, 1}, {64, 16, 2}, 0},   {{1, 1, 1}, {2, 2, 257}, 0},
      {{1, 65536, 1}, {1, 1, 1}, 0},      {{1, 1, 65536}, {1, 1, 1}, 0}, {{1, 1, 1}, {1, 1, 1}, 49153},
      {{1, 1, 1}, {1, 1, 1}, UINT32_MAX}, {{0, 0, 0}, {0, 0, 0}, 0},
  };
  atomic_store(&no_param_calls, 0);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_status(gcap_launch_kernel(f->s, stub, bad[i].grid, bad[i].block, bad[i].shared, NULL),
                  GCAP_ERROR_INVALID_VALUE);
    test_assert_message_contains("gcap_launch_kernel");
    assert_status(gcap_launch_kernel(f->s, count, bad[i].grid, bad[i].block, bad[i].shared, NULL),
                  GCAP_ERROR_INVALID_VALUE);
  }
  assert_ok(gcap_stream_synchronize(f->s));
  assert_int_equal(atomic_load(&no_param_calls), 0); /* no sim_fn ran; off the simulator none ever does */

  /* The limits themselves are fine. */
  const struct config good[] = {
      {{1, 1, 1}, {1024, 1, 1}, 0},  {{1, 1, 1}, {1, 1024, 1}, 0},  {{1, 1, 1}, {1, 1, 64}, 0},
      {{1, 1, 1}, {32, 32, 1}, 0},   {{1, 1, 1}, {16, 1, 64}, 0},   {{1, 65535, 1}, {1, 1, 1}, 0},
      {{1, 1, 65535}, {1, 1, 1}, 0}, {{70000, 1, 1}, {1, 1, 1}, 0}, {{1, 1, 1}, {1, 1, 1}, 49152},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    assert_ok(gcap_launch_kernel(f->s, stub, good[i].grid, good[i].block, good[i].shared, NULL));
  atomic_store(&no_param_calls, 0);
  assert_ok(gcap_launch_kernel(f->s, count, GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 32, 1), 0, NULL));
  assert_ok(gcap_stream_synchronize(f->s));
  if (test_on_sim()) assert_int_equal(atomic_load(&no_param_calls), 1024);
  assert_ok(gcap_module_unload(m));
}

static void test_bad_args_and_handles(void **state) {
  struct test_fixture *f = *state;
  const gcap_kernel_def defs[] = {{"one", write_one_fn, 1, one_ptr_size, NULL}};
  gcap_module *m = load(f->ctx, defs, 1);
  gcap_kernel *k = get(m, "one");
  uint32_t *d = test_dev_alloc(f->ctx, sizeof(uint32_t));
  assert_ok(gcap_memset_d32_async(f->s, d, 0, 1));
  void *arg = d;
  void *args[] = {&arg};
  void *null_args[] = {NULL};
  const gcap_dim3 one = GCAP_DIM3(1, 1, 1);

  assert_status(gcap_launch_kernel(f->s, k, one, one, 0, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_launch_kernel");
  assert_status(gcap_launch_kernel(f->s, k, one, one, 0, null_args), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_launch_kernel(NULL, k, one, one, 0, args), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_launch_kernel");
  assert_status(gcap_launch_kernel(f->s, NULL, one, one, 0, args), GCAP_ERROR_INVALID_HANDLE);
  /* Handles before the other arguments. */
  assert_status(gcap_launch_kernel(f->s, NULL, GCAP_DIM3(0, 0, 0), one, 0, NULL), GCAP_ERROR_INVALID_HANDLE);
  gcap_stream *ds = NULL;
  assert_ok(gcap_stream_create(f->ctx, &ds));
  assert_ok(gcap_stream_destroy(ds));
  assert_status(gcap_launch_kernel(ds, k, one, one, 0, args), GCAP_ERROR_INVALID_HANDLE);

  /* A kernel of another context. */
  gcap_context *other = test_context_create();
  gcap_module *om = load(other, defs, 1);
  gcap_kernel *ok = get(om, "one");
  assert_status(gcap_launch_kernel(f->s, ok, one, one, 0, args), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_launch_kernel");
  assert_ok(gcap_module_unload(om));
  gcap_context_destroy(other);

  /* Nothing of the failed launches ran. */
  assert_ok(gcap_stream_synchronize(f->s));
  uint32_t v = 99;
  assert_ok(gcap_memcpy(f->ctx, &v, d, sizeof v, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_int_equal(v, 0);
  assert_ok(gcap_launch_kernel(f->s, k, one, one, 0, args));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_memcpy(f->ctx, &v, d, sizeof v, GCAP_MEMCPY_DEVICE_TO_HOST));
  if (test_on_sim()) assert_int_equal(v, 1); /* write_one_fn ran */

  /* An unloaded module's kernels are invalid handles. */
  assert_ok(gcap_module_unload(m));
  assert_status(gcap_launch_kernel(f->s, k, one, one, 0, args), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_launch_kernel");
  assert_null(gcap_kernel_name(k));
  assert_ok(gcap_mem_free(f->ctx, d));
}

static void test_module_unload_errors(void **state) {
  struct test_fixture *f = *state;
  assert_status(gcap_module_unload(NULL), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_module_unload");
  const gcap_kernel_def defs[] = {{"stub", NULL, 0, NULL, NULL}};
  gcap_module *m = load(f->ctx, defs, 1);
  assert_ok(gcap_module_unload(m));
  assert_string_equal(gcap_last_error_message(), "");
  assert_status(gcap_module_unload(m), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_module_unload");
  /* Modules left loaded are freed with their context (teardown). */
  (void)load(f->ctx, defs, 1);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_module_load_bad_desc, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_module_load_good_variants, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_get_kernel, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_find_kernel_across_modules, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_def_arrays_are_copied, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_launch_saxpy, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_every_thread_once_3d, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_shared_memory, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_args_by_value, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_stub_runs_nothing, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_no_params_null_args, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_bad_launch_configs, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_bad_args_and_handles, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_module_unload_errors, test_setup, test_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
