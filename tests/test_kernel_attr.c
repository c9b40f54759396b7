/*
 * gcap_kernel_get_attribute: what a kernel's PTX says of it (threads a block, static shared,
 * constant and local memory, registers, versions, the dynamic shared memory a launch may ask
 * for), for a kernel defined by a CPU function only, and its refusals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <string.h>

/* As nvcc -arch=compute_80 lays out a kernel with a __shared__ tile, a local array and
 * __launch_bounds__, plus two __constant__ arrays (16 + 64 bytes). */
static const char attr_ptx[] = ".version 8.0\n"
                               ".target sm_80\n"
                               ".address_size 64\n"
                               ".const .align 4 .b8 coef[16];\n"
                               ".const .align 8 .b8 table[64];\n"
                               ".visible .entry tile(\n"
                               ".param .u64 tile_param_0\n"
                               ")\n"
                               ".maxntid 256, 1, 1\n"
                               ".maxnreg 64\n"
                               "{\n"
                               ".local .align 4 .b8 __local_depot0[40];\n"
                               ".shared .align 4 .b8 tile_buf[1024];\n"
                               ".reg .b32 %r<3>;\n"
                               "mov.u32 %r1, %tid.x;\n"
                               "ret;\n"
                               "}\n"
                               ".visible .entry plain(\n"
                               ".param .u32 plain_param_0\n"
                               ")\n"
                               ".reqntid 32, 2, 1\n"
                               "{\n"
                               "ret;\n"
                               "}\n";

static int attr(gcap_kernel *k, gcap_kernel_attr a) {
  int v = -12345;
  assert_ok(gcap_kernel_get_attribute(k, a, &v));
  return v;
}

static gcap_module *load_ptx(gcap_context *ctx) {
  gcap_module_desc d = {.image = attr_ptx, .image_size = sizeof attr_ptx};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  return m;
}

static void test_from_ptx(void **state) {
  struct test_fixture *f = *state;
  gcap_module *m = load_ptx(f->ctx);
  gcap_kernel *tile = test_kernel_of(m, "tile"), *plain = test_kernel_of(m, "plain");
  assert_int_equal(attr(tile, GCAP_KERNEL_ATTR_MAX_THREADS_PER_BLOCK), 256);
  assert_int_equal(attr(plain, GCAP_KERNEL_ATTR_MAX_THREADS_PER_BLOCK), 64);
  assert_int_equal(attr(tile, GCAP_KERNEL_ATTR_PTX_VERSION), 80);
  if (test_on_sim()) { /* the driver's own figures otherwise */
    assert_int_equal(attr(tile, GCAP_KERNEL_ATTR_SHARED_SIZE_BYTES), 1024);
    assert_int_equal(attr(plain, GCAP_KERNEL_ATTR_SHARED_SIZE_BYTES), 0);
    assert_int_equal(attr(tile, GCAP_KERNEL_ATTR_CONST_SIZE_BYTES), 80);
    assert_int_equal(attr(tile, GCAP_KERNEL_ATTR_LOCAL_SIZE_BYTES), 48); /* 40, in 16-byte steps */
    assert_int_equal(attr(plain, GCAP_KERNEL_ATTR_LOCAL_SIZE_BYTES), 0);
    assert_int_equal(attr(tile, GCAP_KERNEL_ATTR_NUM_REGS), 64);
    assert_int_equal(attr(plain, GCAP_KERNEL_ATTR_NUM_REGS), 32);
    assert_int_equal(attr(tile, GCAP_KERNEL_ATTR_BINARY_VERSION), 80);
  }
  /* CUDA's default: 48 KiB without opting in, less the static shared memory */
  assert_int_equal(attr(tile, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE), 48 * 1024 - 1024);
  assert_int_equal(attr(plain, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE), 48 * 1024);
  assert_ok(gcap_module_unload(m));
}

static void nothing(const gcap_sim_thread *t, void *const *args) {
  (void)t;
  (void)args;
}

/* A kernel the simulator runs from its CPU function: no PTX to tell more. */
static void test_cpu_kernel(void **state) {
  struct test_fixture *f = *state;
  test_require_sim();
  static const size_t sizes[] = {8};
  gcap_kernel_def def = {.name = "cpu_only", .sim_fn = nothing, .num_params = 1, .param_sizes = sizes};
  gcap_module_desc d = {.kernels = &def, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(f->ctx, &d, &m));
  gcap_kernel *k = test_kernel_of(m, "cpu_only");
  assert_int_equal(attr(k, GCAP_KERNEL_ATTR_MAX_THREADS_PER_BLOCK), 1024);
  assert_int_equal(attr(k, GCAP_KERNEL_ATTR_SHARED_SIZE_BYTES), 0);
  assert_int_equal(attr(k, GCAP_KERNEL_ATTR_CONST_SIZE_BYTES), 0);
  assert_int_equal(attr(k, GCAP_KERNEL_ATTR_LOCAL_SIZE_BYTES), 0);
  assert_int_equal(attr(k, GCAP_KERNEL_ATTR_NUM_REGS), 32);
  assert_int_equal(attr(k, GCAP_KERNEL_ATTR_PTX_VERSION), 0);
  assert_int_equal(attr(k, GCAP_KERNEL_ATTR_BINARY_VERSION), 0);
  assert_int_equal(attr(k, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE), 48 * 1024);
  assert_ok(gcap_module_unload(m));
}

static void test_refusals(void **state) {
  struct test_fixture *f = *state;
  gcap_module *m = load_ptx(f->ctx);
  gcap_kernel *k = test_kernel_of(m, "tile");
  int v = 7;
  assert_status(gcap_kernel_get_attribute(NULL, GCAP_KERNEL_ATTR_NUM_REGS, &v), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_kernel_get_attribute");
  assert_status(gcap_kernel_get_attribute(k, GCAP_KERNEL_ATTR_NUM_REGS, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("value is NULL");
  assert_status(gcap_kernel_get_attribute(k, (gcap_kernel_attr)7, &v), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("attr 7");
  assert_status(gcap_kernel_get_attribute(k, (gcap_kernel_attr)-1, &v), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_kernel_get_attribute(k, (gcap_kernel_attr)9, &v), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(v, 7); /* untouched by a failure */
  assert_ok(gcap_module_unload(m));
  assert_status(gcap_kernel_get_attribute(k, GCAP_KERNEL_ATTR_NUM_REGS, &v), GCAP_ERROR_INVALID_HANDLE);
  assert_int_equal(v, 7);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_from_ptx, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_cpu_kernel, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_refusals, test_setup, test_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
