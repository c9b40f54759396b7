/* Shared helpers of the cmocka tests. Include after <setjmp.h>, <stdarg.h>, <stddef.h> and <cmocka.h>. */
#ifndef GCAP_TESTS_COMMON_H
#define GCAP_TESTS_COMMON_H

#include <gcap/gcap.h>
#include <gcap/sim.h>
#include <stdbool.h>

/* Fails the test with the library's message when `expr` does not return `expected`. */
#define assert_status(expr, expected) test_check_status_((expr), (expected), #expr, __FILE__, __LINE__)
#define assert_ok(expr) assert_status((expr), GCAP_SUCCESS)

void test_check_status_(gcap_status got, gcap_status expected, const char *expr, const char *file, int line);

/*
 * Call first in main(): exits 77 (Meson's "skipped") when GCAP_BACKEND selects a backend
 * that cannot start here, so the suite never fails for a missing GPU.
 */
void test_require_backend(void);

/* A context on the backend GCAP_BACKEND selects, the simulator when it is unset. */
gcap_context *test_context_create(void);
/* A simulator context with these options (asserted to be created). */
gcap_context *test_sim_context_create(const gcap_sim_options *so);
/* True when tests run on the simulator (simulator-only checks skip themselves otherwise). */
bool test_on_sim(void);
/* Skips the running test (cmocka skip()) unless it runs on the simulator; first line of a simulator-only test. */
void test_require_sim(void);

/*
 * gcap_module_load on any backend. The simulator runs d's sim_fn and needs no image. Elsewhere a
 * desc without an image gets one: PTX text with a stub of each kernel of d (same name, parameters
 * of the same sizes, a body that returns at once), so the kernels exist but compute nothing.
 */
gcap_status test_module_load(gcap_context *ctx, const gcap_module_desc *d, gcap_module **out);

/* Fails the test unless the thread's last error message contains `needle`. */
void test_assert_message_contains(const char *needle);
void test_assert_message_empty(void);
void test_assert_message_set(void);

/* The kernel the module names (asserted to exist) and a device allocation (asserted to succeed). */
gcap_kernel *test_kernel_of(gcap_module *m, const char *name);
void *test_dev_alloc(gcap_context *ctx, size_t bytes);
/* A new stream and a new graph of ctx; a failure fails the test. */
gcap_stream *test_stream_create(gcap_context *ctx);
gcap_graph *test_graph_create(gcap_context *ctx);

/*
 * A kernel for conditional loops (simulator): countdown(uint32_t *counter, gcap_conditional_handle h)
 * decrements *counter and sets h to whether it is still above 0. TEST_COUNTDOWN_KERNEL defines it.
 */
void test_countdown_sim(const gcap_sim_thread *t, void *const *args);
extern const size_t test_countdown_sizes[2];
#define TEST_COUNTDOWN_KERNEL                                                                                          \
  { .name = "countdown", .sim_fn = test_countdown_sim, .num_params = 2, .param_sizes = test_countdown_sizes }

/* The usual fixture: a context (test_context_create) and one stream on it. */
struct test_fixture {
  gcap_context *ctx;
  gcap_stream *s;
};
/* cmocka setup and teardown making and freeing a struct test_fixture in *state. */
int test_setup(void **state);
int test_teardown(void **state);

#endif
