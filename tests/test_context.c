/* Contexts: options, backend choice (GCAP_BACKEND), availability, synchronize and destroy. */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <gcap/config.h> /* GCAP_HAS_CUDA */

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------ GCAP_BACKEND save/restore */

static char *saved_backend_env;
static bool saved_backend_set;

static int save_env(void **state) {
  (void)state;
  const char *v = getenv("GCAP_BACKEND");
  saved_backend_set = v != NULL;
  if (v != NULL) {
    saved_backend_env = malloc(strlen(v) + 1);
    if (saved_backend_env == NULL) return -1;
    strcpy(saved_backend_env, v);
  }
  return 0;
}

static int restore_env_group(void **state) {
  (void)state;
  free(saved_backend_env);
  saved_backend_env = NULL;
  return 0;
}

/* Puts GCAP_BACKEND back as the test run found it. */
static int restore_env(void **state) {
  (void)state;
  if (saved_backend_set) setenv("GCAP_BACKEND", saved_backend_env, 1);
  else unsetenv("GCAP_BACKEND");
  return 0;
}

static gcap_context *create_sim(void) {
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  gcap_context *ctx = NULL;
  assert_ok(gcap_context_create(&o, &ctx));
  assert_non_null(ctx);
  return ctx;
}

/* A distinct non-NULL value that failing creates must overwrite with NULL. */
static int sentinel_storage;
#define SENTINEL_CTX ((gcap_context *)(void *)&sentinel_storage)

/* ------------------------------------------------------------------ tests */

static void test_options_init_defaults(void **state) {
  (void)state;
  gcap_context_options o;
  memset(&o, 0xA5, sizeof o);
  gcap_context_options_init(&o);
  assert_int_equal(o.backend, GCAP_BACKEND_AUTO);
  assert_int_equal(o.device, 0);
  assert_null(o.sim);
}

static void test_create_null_options(void **state) {
  (void)state;
  unsetenv("GCAP_BACKEND");
  gcap_context *ctx = SENTINEL_CTX;
#if GCAP_HAS_CUDA == 0
  /* AUTO without CUDA compiled in is the simulator. */
  assert_ok(gcap_context_create(NULL, &ctx));
  assert_non_null(ctx);
  assert_true(ctx != SENTINEL_CTX);
  assert_string_equal(gcap_last_error_message(), "");
  assert_int_equal(gcap_context_backend(ctx), GCAP_BACKEND_SIM);
  gcap_context_destroy(ctx);
#else
  gcap_status st = gcap_context_create(NULL, &ctx);
  if (st == GCAP_SUCCESS) {
    assert_int_equal(gcap_context_backend(ctx), GCAP_BACKEND_CUDA);
    gcap_context_destroy(ctx);
  } else {
    assert_int_equal(st, GCAP_ERROR_NOT_INITIALIZED);
    assert_null(ctx);
    test_assert_message_contains("GCAP_BACKEND=sim");
  }
#endif
}

static void test_create_explicit_sim(void **state) {
  (void)state;
  gcap_context *ctx = create_sim();
  assert_string_equal(gcap_last_error_message(), "");
  assert_int_equal(gcap_context_backend(ctx), GCAP_BACKEND_SIM);
  gcap_context *other = create_sim();
  assert_true(other != ctx);
  gcap_context_destroy(other);
  gcap_context_destroy(ctx);
}

static void test_create_sim_ignores_device(void **state) {
  (void)state;
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  o.device = 5;
  gcap_context *ctx = NULL;
  assert_ok(gcap_context_create(&o, &ctx));
  assert_int_equal(gcap_context_backend(ctx), GCAP_BACKEND_SIM);
  gcap_context_destroy(ctx);
}

static void test_env_sim_with_auto(void **state) {
  (void)state;
  assert_int_equal(setenv("GCAP_BACKEND", "sim", 1), 0);
  gcap_context_options o;
  gcap_context_options_init(&o);
  assert_int_equal(o.backend, GCAP_BACKEND_AUTO);
  gcap_context *ctx = SENTINEL_CTX;
  assert_ok(gcap_context_create(&o, &ctx));
  assert_int_equal(gcap_context_backend(ctx), GCAP_BACKEND_SIM);
  gcap_context_destroy(ctx);

  /* NULL options mean AUTO too. */
  ctx = SENTINEL_CTX;
  assert_ok(gcap_context_create(NULL, &ctx));
  assert_int_equal(gcap_context_backend(ctx), GCAP_BACKEND_SIM);
  gcap_context_destroy(ctx);
}

static void test_env_bogus_with_auto(void **state) {
  (void)state;
  assert_int_equal(setenv("GCAP_BACKEND", "bogus", 1), 0);
  gcap_context_options o;
  gcap_context_options_init(&o);
  gcap_context *ctx = SENTINEL_CTX;
  assert_status(gcap_context_create(&o, &ctx), GCAP_ERROR_INVALID_VALUE);
  assert_null(ctx);
  assert_true(strlen(gcap_last_error_message()) > 0);
  test_assert_message_contains("gcap_context_create");

  ctx = SENTINEL_CTX;
  assert_status(gcap_context_create(NULL, &ctx), GCAP_ERROR_INVALID_VALUE);
  assert_null(ctx);

  /* Values are exact: case and surrounding text matter. */
  assert_int_equal(setenv("GCAP_BACKEND", "SIMX", 1), 0);
  ctx = SENTINEL_CTX;
  assert_status(gcap_context_create(&o, &ctx), GCAP_ERROR_INVALID_VALUE);
  assert_null(ctx);
}

static void test_env_auto_and_cuda_values(void **state) {
  (void)state;
  gcap_context_options o;
  gcap_context_options_init(&o);
  gcap_context *ctx = SENTINEL_CTX;
#if GCAP_HAS_CUDA == 0
  /* "auto" resolves as if unset: the simulator in a build without CUDA. */
  assert_int_equal(setenv("GCAP_BACKEND", "auto", 1), 0);
  assert_ok(gcap_context_create(&o, &ctx));
  assert_int_equal(gcap_context_backend(ctx), GCAP_BACKEND_SIM);
  gcap_context_destroy(ctx);

  /* "cuda" selects CUDA, which is not compiled in: no fallback to the simulator. */
  assert_int_equal(setenv("GCAP_BACKEND", "cuda", 1), 0);
  ctx = SENTINEL_CTX;
  assert_status(gcap_context_create(&o, &ctx), GCAP_ERROR_NOT_SUPPORTED);
  assert_null(ctx);
#else
  /* With CUDA compiled in, "auto" and "cuda" both mean CUDA, and neither falls back. */
  bool usable = gcap_backend_available(GCAP_BACKEND_CUDA) == GCAP_SUCCESS;
  const char *values[] = {"auto", "cuda"};
  for (size_t i = 0; i < 2; i++) {
    assert_int_equal(setenv("GCAP_BACKEND", values[i], 1), 0);
    ctx = SENTINEL_CTX;
    gcap_status st = gcap_context_create(&o, &ctx);
    if (usable) {
      assert_int_equal(st, GCAP_SUCCESS);
      assert_int_equal(gcap_context_backend(ctx), GCAP_BACKEND_CUDA);
      gcap_context_destroy(ctx);
    } else {
      assert_int_equal(st, GCAP_ERROR_NOT_INITIALIZED);
      assert_null(ctx);
    }
  }
#endif
}

static void test_explicit_sim_ignores_env(void **state) {
  (void)state;
  assert_int_equal(setenv("GCAP_BACKEND", "bogus", 1), 0);
  gcap_context *ctx = create_sim();
  assert_int_equal(gcap_context_backend(ctx), GCAP_BACKEND_SIM);
  gcap_context_destroy(ctx);

  assert_int_equal(setenv("GCAP_BACKEND", "cuda", 1), 0);
  ctx = create_sim();
  assert_int_equal(gcap_context_backend(ctx), GCAP_BACKEND_SIM);
  gcap_context_destroy(ctx);
}

static void test_explicit_cuda(void **state) {
  (void)state;
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_CUDA;
  gcap_context *ctx = SENTINEL_CTX;
#if GCAP_HAS_CUDA == 0
  assert_status(gcap_context_create(&o, &ctx), GCAP_ERROR_NOT_SUPPORTED);
  assert_null(ctx);
  test_assert_message_contains("gcap_context_create");
  /* Not even GCAP_BACKEND=sim makes an explicit CUDA request fall back. */
  assert_int_equal(setenv("GCAP_BACKEND", "sim", 1), 0);
  ctx = SENTINEL_CTX;
  assert_status(gcap_context_create(&o, &ctx), GCAP_ERROR_NOT_SUPPORTED);
  assert_null(ctx);
#else
  gcap_status st = gcap_context_create(&o, &ctx);
  if (st == GCAP_SUCCESS) {
    assert_int_equal(gcap_context_backend(ctx), GCAP_BACKEND_CUDA);
    gcap_context_destroy(ctx);
  } else {
    assert_int_equal(st, GCAP_ERROR_NOT_INITIALIZED);
    assert_null(ctx);
  }
#endif
}

static void test_invalid_backend_enum(void **state) {
  (void)state;
  gcap_context_options o;
  gcap_context_options_init(&o);
  const int bad[] = {3, 7, -1, 1000};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    o.backend = (gcap_backend_kind)bad[i];
    gcap_context *ctx = SENTINEL_CTX;
    assert_status(gcap_context_create(&o, &ctx), GCAP_ERROR_INVALID_VALUE);
    assert_null(ctx);
    test_assert_message_contains("gcap_context_create");
  }
}

static void test_create_null_out(void **state) {
  (void)state;
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  assert_status(gcap_context_create(&o, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_context_create");
  assert_status(gcap_context_create(NULL, NULL), GCAP_ERROR_INVALID_VALUE);
}

static void test_backend_available(void **state) {
  (void)state;
  assert_ok(gcap_backend_available(GCAP_BACKEND_SIM));
  assert_string_equal(gcap_last_error_message(), "");
#if GCAP_HAS_CUDA == 0
  assert_status(gcap_backend_available(GCAP_BACKEND_CUDA), GCAP_ERROR_NOT_SUPPORTED);
  assert_true(strlen(gcap_last_error_message()) > 0);
#else
  gcap_status st = gcap_backend_available(GCAP_BACKEND_CUDA);
  assert_true(st == GCAP_SUCCESS || st == GCAP_ERROR_NOT_INITIALIZED);
#endif
  assert_status(gcap_backend_available((gcap_backend_kind)7), GCAP_ERROR_INVALID_VALUE);
  assert_true(strlen(gcap_last_error_message()) > 0);
  assert_status(gcap_backend_available((gcap_backend_kind)-1), GCAP_ERROR_INVALID_VALUE);
}

static void test_context_backend_query(void **state) {
  (void)state;
  gcap_context *ctx = create_sim();
  assert_int_equal(gcap_context_backend(ctx), GCAP_BACKEND_SIM);
  assert_int_equal(gcap_context_backend(NULL), GCAP_BACKEND_AUTO);
  gcap_context_destroy(ctx);
  assert_int_equal(gcap_context_backend(ctx), GCAP_BACKEND_AUTO);

  gcap_context *t = test_context_create();
  assert_true(gcap_context_backend(t) == GCAP_BACKEND_SIM || gcap_context_backend(t) == GCAP_BACKEND_CUDA);
  assert_int_equal(gcap_context_backend(t) == GCAP_BACKEND_SIM, test_on_sim());
  gcap_context_destroy(t);
}

static void test_context_synchronize(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  assert_ok(gcap_context_synchronize(ctx));
  assert_string_equal(gcap_last_error_message(), "");

  /* With work issued. */
  gcap_stream *s = NULL;
  void *d = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_mem_alloc(ctx, 64, &d));
  assert_ok(gcap_memset_async(s, d, 7, 64));
  assert_ok(gcap_context_synchronize(ctx));
  unsigned char h[64];
  assert_ok(gcap_memcpy(ctx, h, d, sizeof h, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < sizeof h; i++) assert_int_equal(h[i], 7);

  assert_status(gcap_context_synchronize(NULL), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_context_synchronize");
  assert_ok(gcap_stream_destroy(s));
  assert_ok(gcap_mem_free(ctx, d));
  gcap_context_destroy(ctx);
  assert_status(gcap_context_synchronize(ctx), GCAP_ERROR_INVALID_HANDLE);
}

static void test_destroy_null(void **state) {
  (void)state;
  /* A failing call leaves a message; a destroy of NULL does nothing but clear it, as every call does. */
  assert_status(gcap_context_synchronize(NULL), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_set();
  gcap_context_destroy(NULL);
  test_assert_message_empty();
  gcap_graph_destroy(NULL);
  gcap_exec_destroy(NULL);
  gcap_capture_destroy(NULL);
  gcap_pool_release(NULL);
  test_assert_message_empty();
  /* The library is still usable. */
  gcap_context *ctx = create_sim();
  assert_int_equal(gcap_context_backend(ctx), GCAP_BACKEND_SIM);
  assert_ok(gcap_context_synchronize(ctx));
  gcap_context_destroy(ctx);
  assert_status(gcap_context_synchronize(ctx), GCAP_ERROR_INVALID_HANDLE);
}

static void host_noop(void *user_data) { (void)user_data; }

static void sim_noop(const gcap_sim_thread *t, void *const *args) {
  (void)t;
  (void)args;
}

static void test_destroy_frees_everything(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();

  gcap_stream *s[3];
  for (int i = 0; i < 3; i++) assert_ok(gcap_stream_create(ctx, &s[i]));
  gcap_event *e[3];
  for (int i = 0; i < 3; i++) assert_ok(gcap_event_create(ctx, &e[i]));
  assert_ok(gcap_event_record(e[0], s[0]));
  assert_ok(gcap_stream_wait_event(s[1], e[0]));

  void *d[4];
  for (int i = 0; i < 4; i++) assert_ok(gcap_mem_alloc(ctx, 1000 + (size_t)i * 100, &d[i]));
  void *h[2];
  for (int i = 0; i < 2; i++) assert_ok(gcap_host_alloc(ctx, 512, &h[i]));
  assert_ok(gcap_memset_async(s[0], d[0], 1, 1000));
  assert_ok(gcap_launch_host_func(s[2], host_noop, NULL));

  gcap_module *m = NULL;
  gcap_kernel *k = NULL;
  if (test_on_sim()) {
    static const size_t sizes[] = {sizeof(void *)};
    const gcap_kernel_def defs[] = {
        {"noop", sim_noop, 1, sizes, NULL},
        {"stub", NULL, 0, NULL, NULL},
    };
    gcap_module_desc md = {NULL, 0, defs, 2};
    assert_ok(gcap_module_load(ctx, &md, &m));
    assert_ok(gcap_module_get_kernel(m, "noop", &k));
    gcap_module *m2 = NULL;
    assert_ok(gcap_module_load(ctx, &md, &m2));
  }

  gcap_graph *g = NULL, *child = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_create(ctx, &child));
  gcap_node *a = NULL, *b = NULL, *c = NULL;
  assert_ok(gcap_graph_add_empty_node(child, NULL, 0, &a));
  assert_ok(gcap_graph_add_empty_node(g, NULL, 0, &a));
  assert_ok(gcap_graph_add_empty_node(g, &a, 1, &b));
  assert_ok(gcap_graph_add_child_graph_node(g, &b, 1, child, &c));
  gcap_memset_node_params mp = {d[1], 3, 1, 100, 1, 0};
  gcap_node *mn = NULL;
  assert_ok(gcap_graph_add_memset_node(g, &c, 1, &mp, &mn));
  gcap_host_node_params hp = {host_noop, NULL};
  gcap_node *hn = NULL;
  assert_ok(gcap_graph_add_host_node(g, &mn, 1, &hp, &hn));
  gcap_node *er = NULL;
  assert_ok(gcap_graph_add_event_record_node(g, &hn, 1, e[1], &er));
  if (k != NULL) {
    void *arg = d[2];
    void *args[] = {&arg};
    gcap_kernel_node_params kp = {k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, args};
    gcap_node *kn = NULL;
    assert_ok(gcap_graph_add_kernel_node(g, &er, 1, &kp, &kn));
  }
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, s[0]));
  gcap_exec *x2 = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x2));

  /* Only the context is destroyed: valgrind and ASan see no leak. */
  gcap_context_destroy(ctx);

  /* Everything it owned is gone. */
  assert_status(gcap_stream_synchronize(s[1]), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_event_query(e[2]), GCAP_ERROR_INVALID_HANDLE);
  assert_int_equal(gcap_graph_node_count(g), 0);
  assert_int_equal(gcap_exec_node_count(x2), 0);
  if (m != NULL) {
    gcap_kernel *k2 = NULL;
    assert_status(gcap_module_get_kernel(m, "noop", &k2), GCAP_ERROR_INVALID_HANDLE);
    assert_null(gcap_kernel_name(k));
  }
}

static void test_sim_options_accepted(void **state) {
  (void)state;
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.order = GCAP_SIM_ORDER_SHUFFLE;
  so.seed = 12345;
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  o.sim = &so;
  gcap_context *ctx = NULL;
  assert_ok(gcap_context_create(&o, &ctx));
  assert_int_equal(gcap_context_backend(ctx), GCAP_BACKEND_SIM);

  /* The context works as usual. */
  void *d = NULL;
  unsigned char in[32], out[32];
  for (size_t i = 0; i < sizeof in; i++) in[i] = (unsigned char)(i * 3 + 1);
  assert_ok(gcap_mem_alloc(ctx, sizeof in, &d));
  assert_ok(gcap_memcpy(ctx, d, in, sizeof in, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memcpy(ctx, out, d, sizeof out, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_memory_equal(in, out, sizeof in);
  assert_ok(gcap_mem_free(ctx, d));
  gcap_context_destroy(ctx);

  /* The caller's options may go away right after create. */
  gcap_sim_options *heap = malloc(sizeof *heap);
  assert_non_null(heap);
  gcap_sim_options_init(heap);
  o.sim = heap;
  ctx = NULL;
  assert_ok(gcap_context_create(&o, &ctx));
  free(heap);
  assert_ok(gcap_context_synchronize(ctx));
  gcap_context_destroy(ctx);
}

static void test_handles_after_context_destroy(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_context_destroy(ctx);

  gcap_stream *s = (gcap_stream *)(void *)&sentinel_storage;
  assert_status(gcap_stream_create(ctx, &s), GCAP_ERROR_INVALID_HANDLE);
  assert_null(s);
  test_assert_message_contains("gcap_stream_create");
  gcap_event *e = (gcap_event *)(void *)&sentinel_storage;
  assert_status(gcap_event_create(ctx, &e), GCAP_ERROR_INVALID_HANDLE);
  assert_null(e);
  void *d = &sentinel_storage;
  assert_status(gcap_mem_alloc(ctx, 16, &d), GCAP_ERROR_INVALID_HANDLE);
  assert_null(d);
  gcap_graph *g = (gcap_graph *)(void *)&sentinel_storage;
  assert_status(gcap_graph_create(ctx, &g), GCAP_ERROR_INVALID_HANDLE);
  assert_null(g);
  assert_status(gcap_context_synchronize(ctx), GCAP_ERROR_INVALID_HANDLE);

  /* A new context works, and the old handle stays invalid. */
  gcap_context *ctx2 = test_context_create();
  assert_ok(gcap_stream_create(ctx2, &s));
  assert_ok(gcap_stream_destroy(s));
  if (ctx2 != ctx) assert_status(gcap_stream_create(ctx, &s), GCAP_ERROR_INVALID_HANDLE);
  gcap_context_destroy(ctx2);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_init_defaults),
      cmocka_unit_test_teardown(test_create_null_options, restore_env),
      cmocka_unit_test(test_create_explicit_sim),
      cmocka_unit_test(test_create_sim_ignores_device),
      cmocka_unit_test_teardown(test_env_sim_with_auto, restore_env),
      cmocka_unit_test_teardown(test_env_bogus_with_auto, restore_env),
      cmocka_unit_test_teardown(test_env_auto_and_cuda_values, restore_env),
      cmocka_unit_test_teardown(test_explicit_sim_ignores_env, restore_env),
      cmocka_unit_test_teardown(test_explicit_cuda, restore_env),
      cmocka_unit_test(test_invalid_backend_enum),
      cmocka_unit_test(test_create_null_out),
      cmocka_unit_test(test_backend_available),
      cmocka_unit_test(test_context_backend_query),
      cmocka_unit_test(test_context_synchronize),
      cmocka_unit_test(test_destroy_null),
      cmocka_unit_test(test_destroy_frees_everything),
      cmocka_unit_test(test_sim_options_accepted),
      cmocka_unit_test(test_handles_after_context_destroy),
  };
  return cmocka_run_group_tests(tests, save_env, restore_env_group);
}
