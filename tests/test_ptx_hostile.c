/*
 * Hostile PTX kernels on the simulator: whatever a kernel does, it cannot touch the host's
 * memory. Memory the simulator owns (shared, local, parameters, module variables) is checked
 * whatever the checks, layouts cannot wrap, module variables cost no memory until written,
 * constant memory is read-only, and device printf stays bounded.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

#define ARGS(...) ((void *[]){__VA_ARGS__})
#define DIM1(x) GCAP_DIM3((x), 1, 1)
#define CHECKS_ALL (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT)

#define PTX_HEAD ".version 7.0\n.target sm_70\n.address_size 64\n"

/* A simulator context that runs PTX with these checks, IMMEDIATE, on the calling thread. */
static gcap_context *ctx_with(unsigned checks, bool strict) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.kernels = GCAP_SIM_KERNELS_PTX;
  so.checks = checks;
  so.exec = GCAP_SIM_EXEC_IMMEDIATE;
  so.threads = 1;
  so.strict_memory = strict;
  return test_sim_context_create(&so);
}

static gcap_status load(gcap_context *ctx, const char *text, gcap_module **m) {
  gcap_module_desc d = {.image = text, .image_size = strlen(text) + 1};
  *m = NULL;
  return gcap_module_load(ctx, &d, m);
}

static gcap_module *load_ok(gcap_context *ctx, const char *text) {
  gcap_module *m = NULL;
  assert_ok(load(ctx, text, &m));
  return m;
}

static gcap_status launch(gcap_context *ctx, gcap_module *m, const char *kernel, gcap_dim3 grid, gcap_dim3 block,
                          uint32_t shared, void **args) {
  gcap_stream *s = test_stream_create(ctx);
  gcap_status st = gcap_launch_kernel(s, test_kernel_of(m, kernel), grid, block, shared, args);
  /* The stream goes with the context. */
  return st;
}

static void *dev_zero(gcap_context *ctx, size_t bytes) {
  void *d = test_dev_alloc(ctx, bytes), *zero = calloc(1, bytes);
  assert_non_null(zero);
  assert_ok(gcap_memcpy(ctx, d, zero, bytes, GCAP_MEMCPY_HOST_TO_DEVICE));
  free(zero);
  return d;
}

static void get(gcap_context *ctx, void *host, const void *dev, size_t bytes) {
  assert_ok(gcap_memcpy(ctx, host, dev, bytes, GCAP_MEMCPY_DEVICE_TO_HOST));
}

/* ------------------------------------------------------------- shared memory, whatever the checks */

/* Each kernel touches dsm + off (the byte offset its parameter gives) with one kind of access. */
#define SHARED_KERNEL(name, params, body)                                                                              \
  ".visible .entry " name "(.param .u64 p_off" params ")\n{\n"                                                         \
  "  .reg .b64 %rd<6>;\n  .reg .b32 %r<4>;\n"                                                                          \
  "  ld.param.u64 %rd1, [p_off];\n  mov.u64 %rd2, dsm;\n  add.u64 %rd2, %rd2, %rd1;\n"                                 \
  "  mov.u32 %r1, 1094795585;\n" body "  ret;\n}\n"

static const char shared_ptx[] = PTX_HEAD ".extern .shared .align 16 .b8 dsm[];\n"         /* */
    SHARED_KERNEL("st32", "", "  st.shared.u32 [%rd2], %r1;\n")                            /* */
    SHARED_KERNEL("st8", "", "  st.shared.u8 [%rd2], %r1;\n")                              /* */
    SHARED_KERNEL("st64", "", "  cvt.u64.u32 %rd3, %r1;\n  st.shared.u64 [%rd2], %rd3;\n") /* */
    SHARED_KERNEL("stv4", "", "  st.shared.v4.u32 [%rd2], {%r1, %r1, %r1, %r1};\n")        /* */
    SHARED_KERNEL("stimm", "", "  st.shared.u32 [%rd2+4096], %r1;\n")                      /* */
    SHARED_KERNEL("ld32", ", .param .u64 p_out",
                  "  ld.param.u64 %rd4, [p_out];\n  ld.shared.u32 %r2, [%rd2];\n  st.global.u32 [%rd4], %r2;\n") /* */
    SHARED_KERNEL("ldv2", ", .param .u64 p_out",
                  "  ld.param.u64 %rd4, [p_out];\n  ld.shared.v2.u32 {%r2, %r3}, [%rd2];\n"
                  "  st.global.u32 [%rd4], %r2;\n")                                                       /* */
    SHARED_KERNEL("atom", "", "  atom.shared.add.u32 %r2, [%rd2], %r1;\n")                                /* */
    SHARED_KERNEL("atom64", "", "  cvt.u64.u32 %rd3, %r1;\n  atom.shared.exch.b64 %rd4, [%rd2], %rd3;\n") /* */
    SHARED_KERNEL("red", "", "  red.shared.add.u32 [%rd2], %r1;\n")                                       /* */
    SHARED_KERNEL("generic", "", "  cvta.shared.u64 %rd3, %rd2;\n  st.u32 [%rd3], %r1;\n")                /* */
    SHARED_KERNEL("generic_ld", ", .param .u64 p_out",
                  "  ld.param.u64 %rd4, [p_out];\n  cvta.shared.u64 %rd3, %rd2;\n  ld.u32 %r2, [%rd3];\n"
                  "  st.global.u32 [%rd4], %r2;\n");

/*
 * A block with 3 bytes of dynamic shared memory accesses 4 or more bytes past them, or at an
 * offset that wraps: ILLEGAL_ADDRESS with every check set (none too; MISALIGNED_ADDRESS may come first under MEMORY).
 */
static void test_shared_out_of_bounds_always_checked(void **state) {
  (void)state;
  static const char *const kernels[] = {"st32", "st8",  "st64",   "stv4", "stimm",   "ld32",
                                        "ldv2", "atom", "atom64", "red",  "generic", "generic_ld"};
  static const unsigned checks[] = {0, GCAP_SIM_CHECK_MEMORY, CHECKS_ALL, GCAP_SIM_CHECK_SHARED_RACES,
                                    GCAP_SIM_CHECK_INIT};
  static const uint64_t offsets[] = {4096,           3, 49152, 1u << 20, (uint64_t)-4, (uint64_t)-8, (uint64_t)-16,
                                     (uint64_t)-4096};
  for (size_t c = 0; c < sizeof checks / sizeof checks[0]; c++) {
    gcap_context *ctx = ctx_with(checks[c], false);
    gcap_module *m = load_ok(ctx, shared_ptx);
    void *out = dev_zero(ctx, 16);
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++)
      for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++) {
        uint64_t off = offsets[o];
        gcap_status st = launch(ctx, m, kernels[k], DIM1(1), DIM1(1), 3, ARGS(&off, &out));
        if (st != GCAP_ERROR_ILLEGAL_ADDRESS && st != GCAP_ERROR_MISALIGNED_ADDRESS)
          fail_msg("kernel %s at shared offset 0x%llx with checks 0x%x: %s (%s)", kernels[k], (unsigned long long)off,
                   checks[c], gcap_status_name(st), gcap_last_error_message());
        if (checks[c] == 0) assert_int_equal(st, GCAP_ERROR_ILLEGAL_ADDRESS); /* no alignment check without MEMORY */
        test_assert_message_contains(kernels[k]);
        test_assert_message_contains("address");
        gcap_context_destroy(ctx); /* the fault is sticky: a fresh context for the next case */
        ctx = ctx_with(checks[c], false);
        m = load_ok(ctx, shared_ptx);
        out = dev_zero(ctx, 16);
      }
    gcap_context_destroy(ctx);
  }
}

/* The bytes a block does have are usable, with every check set or none. */
static void test_shared_small_block_in_bounds(void **state) {
  (void)state;
  static const unsigned checks_of[] = {0, GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC};
  for (size_t c = 0; c < 2; c++) {
    unsigned checks = checks_of[c];
    gcap_context *ctx = ctx_with(checks, false);
    gcap_module *m = load_ok(ctx, shared_ptx);
    uint32_t *out = dev_zero(ctx, 16), got[4];
    for (uint64_t off = 0; off < 3; off++) assert_ok(launch(ctx, m, "st8", DIM1(1), DIM1(1), 3, ARGS(&off, &out)));
    uint64_t zero = 0;
    assert_ok(launch(ctx, m, "ld32", DIM1(1), DIM1(1), 4, ARGS(&zero, &out)));
    get(ctx, got, out, 4);
    assert_int_equal(got[0], 0); /* each block's shared memory starts zeroed */
    assert_ok(launch(ctx, m, "st32", DIM1(1), DIM1(1), 4, ARGS(&zero, &out)));
    gcap_context_destroy(ctx);
  }
}

/* ------------------------------------------------------------- local and parameter memory */

static const char local_ptx[] = PTX_HEAD
    ".visible .entry local_st(.param .u64 p_off)\n{\n"
    "  .local .align 8 .b8 buf[64];\n  .reg .b64 %rd<6>;\n  .reg .b32 %r<4>;\n"
    "  ld.param.u64 %rd1, [p_off];\n  mov.u64 %rd2, buf;\n  add.u64 %rd2, %rd2, %rd1;\n"
    "  mov.u32 %r1, 7;\n  st.local.u32 [%rd2], %r1;\n  ret;\n}\n"
    ".visible .entry local_generic(.param .u64 p_off)\n{\n"
    "  .local .align 8 .b8 buf[64];\n  .reg .b64 %rd<6>;\n  .reg .b32 %r<4>;\n"
    "  ld.param.u64 %rd1, [p_off];\n  mov.u64 %rd2, buf;\n  cvta.local.u64 %rd3, %rd2;\n  add.u64 %rd3, %rd3, %rd1;\n"
    "  mov.u32 %r1, 7;\n  st.u32 [%rd3], %r1;\n  ret;\n}\n"
    ".visible .entry local_atom(.param .u64 p_off)\n{\n"
    "  .local .align 8 .b8 buf[64];\n  .reg .b64 %rd<6>;\n  .reg .b32 %r<4>;\n"
    "  ld.param.u64 %rd1, [p_off];\n  mov.u64 %rd2, buf;\n  cvta.local.u64 %rd3, %rd2;\n  add.u64 %rd3, %rd3, %rd1;\n"
    "  mov.u32 %r1, 7;\n  atom.add.u32 %r2, [%rd3], %r1;\n  ret;\n}\n"
    ".visible .entry param_ld(.param .u64 p_off, .param .u64 p_out)\n{\n"
    "  .reg .b64 %rd<6>;\n  .reg .b32 %r<4>;\n"
    "  ld.param.u64 %rd1, [p_off];\n  ld.param.u64 %rd4, [p_out];\n  mov.u64 %rd2, p_off;\n  add.u64 %rd2, %rd2, %rd1;\n"
    "  ld.param.u32 %r1, [%rd2];\n  st.global.u32 [%rd4], %r1;\n  ret;\n}\n"
    ".visible .entry param_generic(.param .u64 p_off, .param .u64 p_out)\n{\n"
    "  .reg .b64 %rd<6>;\n  .reg .b32 %r<4>;\n"
    "  ld.param.u64 %rd1, [p_off];\n  ld.param.u64 %rd4, [p_out];\n  mov.u64 %rd2, p_off;\n  cvta.param.u64 %rd3, %rd2;\n"
    "  add.u64 %rd3, %rd3, %rd1;\n  ld.u32 %r1, [%rd3];\n  st.global.u32 [%rd4], %r1;\n  ret;\n}\n";

/* Local and parameter accesses outside the thread's stack or the parameters: ILLEGAL_ADDRESS, whatever the checks. */
static void test_local_and_param_always_checked(void **state) {
  (void)state;
  static const char *const kernels[] = {"local_st", "local_generic", "local_atom", "param_ld", "param_generic"};
  static const uint64_t offsets[] = {1u << 14, 1u << 20, (uint64_t)-64, (uint64_t)-4096, 1ull << 40};
  for (unsigned checks = 0; checks <= GCAP_SIM_CHECK_MEMORY; checks += GCAP_SIM_CHECK_MEMORY)
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++)
      for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++) {
        gcap_context *ctx = ctx_with(checks, false);
        gcap_module *m = load_ok(ctx, local_ptx);
        void *out = dev_zero(ctx, 16);
        uint64_t off = offsets[o];
        /* Below the lowest window a generic address is a global one: wild, used as it is without MEMORY. */
        if (checks == 0 && strcmp(kernels[k], "param_generic") == 0 && off > (1ull << 56)) {
          gcap_context_destroy(ctx);
          continue;
        }
        gcap_status st = launch(ctx, m, kernels[k], DIM1(1), DIM1(64), 0, ARGS(&off, &out));
        if (st != GCAP_ERROR_ILLEGAL_ADDRESS)
          fail_msg("kernel %s at offset 0x%llx with checks 0x%x: %s (%s)", kernels[k], (unsigned long long)off, checks,
                   gcap_status_name(st), gcap_last_error_message());
        test_assert_message_contains(kernels[k]);
        gcap_context_destroy(ctx);
      }
}

int main(void) {
  test_require_backend();
  if (!test_on_sim()) return 77;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shared_out_of_bounds_always_checked),
      cmocka_unit_test(test_shared_small_block_in_bounds),
      cmocka_unit_test(test_local_and_param_always_checked),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
