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
#include <fcntl.h>
#include <unistd.h>

#include "common.h"
#include "ptx_util.h"

#define ARGS(...) ((void *[]){__VA_ARGS__})
#define DIM1(x) GCAP_DIM3((x), 1, 1)
#define CHECKS_ALL (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT)

#define PTX_HEAD ".version 7.0\n.target sm_70\n.address_size 64\n"

/* A simulator context that runs PTX with these checks, IMMEDIATE, on the calling thread. */
static gcap_context *ctx_with(unsigned checks, bool strict) {
  gcap_sim_options so;
  ptx_sim_options(&so, checks);
  so.strict_memory = strict;
  return test_sim_context_create(&so);
}

static gcap_status load(gcap_context *ctx, const char *text, gcap_module **m) {
  gcap_module_desc d = {.image = text, .image_size = strlen(text) + 1};
  *m = NULL;
  return gcap_module_load(ctx, &d, m);
}

static gcap_status launch(gcap_context *ctx, gcap_module *m, const char *kernel, gcap_dim3 grid, gcap_dim3 block,
                          uint32_t shared, void **args) {
  return ptx_launch_on(ctx, m, kernel, grid, block, shared, args);
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
    gcap_module *m = ptx_load_text(ctx, shared_ptx);
    void *out = ptx_dev(ctx, NULL, 16);
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
        m = ptx_load_text(ctx, shared_ptx);
        out = ptx_dev(ctx, NULL, 16);
      }
    gcap_context_destroy(ctx);
  }
}

/* The bytes a block does have are usable, with every check set or none. */
static void test_shared_small_block_in_bounds(void **state) {
  (void)state;
  static const unsigned checks_of[] = {0, GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC};
  for (size_t c = 0; c < 2; c++) {
    gcap_sim_options so;
    gcap_sim_options_init(&so);
    so.kernels = GCAP_SIM_KERNELS_PTX;
    so.checks = checks_of[c];
    so.exec = GCAP_SIM_EXEC_IMMEDIATE;
    so.threads = 1;
    so.zero_block_memory = true; /* the zeros read below are the option's */
    gcap_context *ctx = test_sim_context_create(&so);
    gcap_module *m = ptx_load_text(ctx, shared_ptx);
    uint32_t *out = ptx_dev(ctx, NULL, 16), got[4];
    for (uint64_t off = 0; off < 3; off++) assert_ok(launch(ctx, m, "st8", DIM1(1), DIM1(1), 3, ARGS(&off, &out)));
    uint64_t zero = 0;
    assert_ok(launch(ctx, m, "ld32", DIM1(1), DIM1(1), 4, ARGS(&zero, &out)));
    ptx_get(ctx, got, out, 4);
    assert_int_equal(got[0], 0); /* each block's shared memory starts zeroed, as asked */
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
        gcap_module *m = ptx_load_text(ctx, local_ptx);
        void *out = ptx_dev(ctx, NULL, 16);
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

/* ------------------------------------------------------------- layouts that cannot wrap */

/* The PTX loads (on a fresh context) with this status, and the message holds `words`. */
static void expect_load(const char *text, gcap_status want, const char *const *words) {
  gcap_context *ctx = ctx_with(GCAP_SIM_CHECK_MEMORY, false);
  gcap_module *m = NULL;
  gcap_status st = load(ctx, text, &m);
  if (st != want)
    fail_msg("load: %s, wanted %s (%s)", gcap_status_name(st), gcap_status_name(want), gcap_last_error_message());
  for (size_t i = 0; words && words[i]; i++) test_assert_message_contains(words[i]);
  gcap_context_destroy(ctx);
}

/* Module .shared variables of 4 GiB and a little: the 32-bit layout wrapped to a few bytes, and the kernel ran. */
static void test_shared_past_4gib_refused(void **state) {
  (void)state;
  static const char text[] =
      PTX_HEAD ".shared .align 16 .b8 s0[1073741824];\n.shared .align 16 .b8 s1[1073741824];\n"
               ".shared .align 16 .b8 s2[1073741824];\n.shared .align 16 .b8 s3[1073741824];\n"
               ".shared .align 16 .b8 s4[16];\n"
               ".visible .entry big_shared(.param .u32 v)\n{\n  .reg .b32 %r<2>;\n  ld.param.u32 %r1, [v];\n"
               "  st.shared.u32 [s4], %r1;\n  ret;\n}\n";
  expect_load(text, GCAP_ERROR_INVALID_PTX, (const char *const[]){"shared", NULL});
}

/* More static shared memory than a block may have is ptxas' "uses too much shared data": INVALID_PTX at load. */
static void test_static_shared_over_limit_refused(void **state) {
  (void)state;
  static const char module_scope[] = PTX_HEAD ".shared .align 4 .b8 tile[49156];\n"
                                              ".visible .entry tile_kernel()\n{\n  .reg .b32 %r<2>;\n"
                                              "  mov.u32 %r1, 1;\n  st.shared.u32 [tile], %r1;\n  ret;\n}\n";
  expect_load(module_scope, GCAP_ERROR_INVALID_PTX, (const char *const[]){"tile_kernel", "49156", "49152", NULL});
  static const char entry_scope[] = PTX_HEAD ".visible .entry body_shared()\n{\n"
                                             "  .shared .align 4 .b8 huge[1073741824];\n  .reg .b32 %r<2>;\n"
                                             "  mov.u32 %r1, 1;\n  st.shared.u32 [huge], %r1;\n  ret;\n}\n";
  expect_load(entry_scope, GCAP_ERROR_INVALID_PTX, (const char *const[]){"body_shared", "shared data", NULL});
  /* 48 KiB exactly loads; with dynamic shared memory on top the launch is INVALID_VALUE, as on CUDA. */
  static const char full[] = PTX_HEAD ".shared .align 4 .b8 tile[49152];\n"
                                      ".visible .entry full_kernel()\n{\n  .reg .b32 %r<2>;\n"
                                      "  mov.u32 %r1, 1;\n  st.shared.u32 [tile+49148], %r1;\n  ret;\n}\n";
  gcap_context *ctx = ctx_with(GCAP_SIM_CHECK_MEMORY, false);
  gcap_module *m = ptx_load_text(ctx, full);
  assert_ok(launch(ctx, m, "full_kernel", DIM1(1), DIM1(32), 0, NULL));
  assert_int_equal(launch(ctx, m, "full_kernel", DIM1(1), DIM1(32), 16, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("full_kernel");
  gcap_context_destroy(ctx);
}

/* A thread's .local variables of 4 GiB: refused at load, naming the function. */
static void test_local_4gib_refused(void **state) {
  (void)state;
  static const char text[] = PTX_HEAD ".visible .entry big_local(.param .u64 out)\n{\n"
                                      "  .local .align 8 .b8 a[1073741824];\n  .local .align 8 .b8 b[1073741824];\n"
                                      "  .local .align 8 .b8 c[1073741824];\n  .local .align 8 .b8 d[1073741824];\n"
                                      "  .local .align 8 .b8 e[64];\n  .reg .b32 %r<2>;\n"
                                      "  mov.u32 %r1, 1;\n  st.local.u32 [e], %r1;\n  ret;\n}\n";
  expect_load(text, GCAP_ERROR_INVALID_PTX, (const char *const[]){"big_local", NULL});
}

/* Parameters beyond CUDA's 32,764 bytes: INVALID_PTX, naming the kernel. */
static void test_params_over_limit_refused(void **state) {
  (void)state;
  static const char text[] = PTX_HEAD ".visible .entry fat_params(.param .align 8 .b8 a[32760], .param .u64 b)\n{\n"
                                      "  ret;\n}\n";
  expect_load(text, GCAP_ERROR_INVALID_PTX, (const char *const[]){"fat_params", NULL});
}

/* A callee's parameter or result larger than what the caller passes, or storage that is not the caller's .param. */
static void test_call_arguments_fit(void **state) {
  (void)state;
#define CALLEE                                                                                                         \
  ".func (.param .align 8 .b8 r[4096]) big_ret(.param .align 8 .b8 p[4096])\n{\n"                                      \
  "  .reg .b64 %rd<2>;\n  ld.param.u64 %rd1, [p];\n  st.param.u64 [r+4088], %rd1;\n  ret;\n}\n"
  static const char ret_in_register[] =
      PTX_HEAD CALLEE ".visible .entry reg_ret()\n{\n  .reg .b64 %rd<3>;\n"
                      "  mov.u64 %rd1, 5;\n  call (%rd2), big_ret, (%rd1);\n  ret;\n}\n";
  expect_load(ret_in_register, GCAP_ERROR_INVALID_PTX, (const char *const[]){"big_ret", "4096", NULL});
  static const char small_param[] = PTX_HEAD CALLEE ".visible .entry small_arg()\n{\n"
                                                    "  .param .align 8 .b8 a[8];\n  .param .align 8 .b8 r[4096];\n"
                                                    "  call (r), big_ret, (a);\n  ret;\n}\n";
  expect_load(small_param, GCAP_ERROR_INVALID_PTX, (const char *const[]){"big_ret", "4096", NULL});
  static const char global_arg[] = PTX_HEAD ".global .align 8 .b8 g[8192];\n" CALLEE
                                            ".visible .entry global_arg()\n{\n  .param .align 8 .b8 a[4096];\n"
                                            "  call (g), big_ret, (a);\n  ret;\n}\n";
  expect_load(global_arg, GCAP_ERROR_INVALID_PTX, (const char *const[]){"\"g\"", NULL});
  static const char shared_arg[] = PTX_HEAD CALLEE ".visible .entry shared_arg()\n{\n"
                                                   "  .shared .align 8 .b8 s[4096];\n  .param .align 8 .b8 r[4096];\n"
                                                   "  call (r), big_ret, (s);\n  ret;\n}\n";
  expect_load(shared_arg, GCAP_ERROR_INVALID_PTX, (const char *const[]){"\"s\"", NULL});
  static const char kernel_param_arg[] = PTX_HEAD CALLEE ".visible .entry kparam_arg(.param .align 8 .b8 k[4096])\n{\n"
                                                         "  .param .align 8 .b8 r[4096];\n"
                                                         "  call (r), big_ret, (k);\n  ret;\n}\n";
  expect_load(kernel_param_arg, GCAP_ERROR_INVALID_PTX, (const char *const[]){"\"k\"", NULL});
  static const char pred_arg[] = PTX_HEAD ".func small(.param .b32 p)\n{\n  ret;\n}\n"
                                          ".visible .entry pred_arg()\n{\n  .reg .pred %p<2>;\n"
                                          "  setp.eq.u32 %p1, 1, 1;\n  call small, (%p1);\n  ret;\n}\n";
  expect_load(pred_arg, GCAP_ERROR_INVALID_PTX, (const char *const[]){"predicate", NULL});
  static const char short_assert[] = PTX_HEAD ".extern .func __assertfail(.param .b64 m);\n"
                                              ".visible .entry short_assert()\n{\n  .reg .b64 %rd<2>;\n"
                                              "  mov.u64 %rd1, 0;\n  call __assertfail, (%rd1);\n  ret;\n}\n";
  expect_load(short_assert, GCAP_ERROR_INVALID_PTX, (const char *const[]){"__assertfail", NULL});
  /* Matching storage runs, and the value goes through. */
  static const char good[] = PTX_HEAD CALLEE ".visible .entry good_call(.param .u64 out)\n{\n"
                                             "  .param .align 8 .b8 a[4096];\n  .param .align 8 .b8 r[4096];\n"
                                             "  .reg .b64 %rd<4>;\n  mov.u64 %rd1, 77;\n  st.param.u64 [a], %rd1;\n"
                                             "  call (r), big_ret, (a);\n  ld.param.u64 %rd2, [r+4088];\n"
                                             "  ld.param.u64 %rd3, [out];\n  st.global.u64 [%rd3], %rd2;\n  ret;\n}\n";
  gcap_context *ctx = ctx_with(CHECKS_ALL, false);
  gcap_module *m = ptx_load_text(ctx, good);
  uint64_t *out = ptx_dev(ctx, NULL, 8), got = 0;
  assert_ok(launch(ctx, m, "good_call", DIM1(1), DIM1(2), 0, ARGS(&out)));
  ptx_get(ctx, &got, out, 8);
  assert_int_equal(got, 77);
  gcap_context_destroy(ctx);
#undef CALLEE
}

/* ------------------------------------------------------------- module variables cost nothing until written */

/* Resident bytes of this process (/proc/self/statm), or 0 where it cannot be read. */
static uint64_t resident_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long long size = 0, resident = 0;
  if (!f) return 0;
  int n = fscanf(f, "%llu %llu", &size, &resident);
  fclose(f);
  return n == 2 ? resident * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

#define GIB 1073741824ull

/* Two zero .global variables of 1 GiB each, and a kernel that reads one byte of each and writes one. */
static const char zero_globals_ptx[] =
    PTX_HEAD ".visible .global .align 8 .b8 g0[1073741824];\n.visible .global .align 8 .b8 g1[1073741824];\n"
             ".visible .entry touch(.param .u64 out)\n{\n  .reg .b64 %rd<8>;\n  .reg .b32 %r<4>;\n"
             "  ld.param.u64 %rd1, [out];\n  mov.u64 %rd2, g0;\n  mov.u64 %rd3, g1;\n"
             "  ld.global.u32 %r1, [%rd2+536870912];\n  ld.global.u32 %r2, [%rd3+1073741820];\n"
             "  st.global.u32 [%rd1], %r1;\n  st.global.u32 [%rd1+4], %r2;\n"
             "  mov.u32 %r3, 99;\n  st.global.u32 [%rd3+1073741820], %r3;\n  ret;\n}\n";

/* Under valgrind, whose shadow memory follows every byte of the 2 GiB, resident sizes measure valgrind. */
static bool under_valgrind(void) {
  const char *preload = getenv("LD_PRELOAD");
  return preload && strstr(preload, "vgpreload");
}

static void check_zero_globals(bool strict) {
  if (under_valgrind()) skip();
  gcap_context *ctx = ctx_with(GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC, strict);
  uint64_t before = resident_bytes();
  gcap_module *m = ptx_load_text(ctx, zero_globals_ptx);
  uint64_t after = resident_bytes();
  if (before && after > before + (64u << 20))
    fail_msg("loading 2 GiB of zero variables made %llu bytes resident", (unsigned long long)(after - before));
  void *g0 = NULL, *g1 = NULL;
  size_t bytes = 0;
  assert_ok(gcap_module_get_global(m, "g0", &g0, &bytes));
  assert_int_equal(bytes, GIB);
  assert_ok(gcap_module_get_global(m, "g1", &g1, &bytes));
  assert_int_equal(bytes, GIB);
  uint32_t *out = ptx_dev(ctx, NULL, 8), got[2] = {1, 1}, word = 1;
  memcpy(got, (uint32_t[]){5, 5}, sizeof got);
  gcap_memcpy_kind to_dev = GCAP_MEMCPY_HOST_TO_DEVICE;
  assert_ok(gcap_memcpy(ctx, out, got, sizeof got, to_dev));
  assert_ok(launch(ctx, m, "touch", DIM1(1), DIM1(1), 0, ARGS(&out)));
  ptx_get(ctx, got, out, sizeof got);
  assert_int_equal(got[0], 0);
  assert_int_equal(got[1], 0);
  ptx_get(ctx, &word, (char *)g1 + GIB - 4, 4); /* the kernel's store is there */
  assert_int_equal(word, 99);
  ptx_get(ctx, &word, (char *)g0 + 12345 * 4, 4); /* copies see zeros too */
  assert_int_equal(word, 0);
  if (before && resident_bytes() > before + (64u << 20)) fail_msg("running the kernel made the variables resident");
  assert_ok(gcap_module_unload(m));
  gcap_context_destroy(ctx);
}

static void test_zero_globals_lazy(void **state) {
  (void)state;
  check_zero_globals(false);
}

static void test_zero_globals_lazy_strict(void **state) {
  (void)state;
  check_zero_globals(true);
}

/* Variables that the simulated device cannot hold: OUT_OF_MEMORY at load, and nothing reserved. */
static void test_globals_past_device_memory(void **state) {
  (void)state;
  size_t cap = 81 * 64 + 256, n = 0;
  char *text = malloc(cap);
  assert_non_null(text);
  n += (size_t)snprintf(text + n, cap - n, "%s", PTX_HEAD);
  for (int i = 0; i < 81; i++) n += (size_t)snprintf(text + n, cap - n, ".global .b8 big%d[1073741824];\n", i);
  assert_true(n < cap);
  gcap_context *ctx = ctx_with(GCAP_SIM_CHECK_MEMORY, false);
  gcap_module *m = NULL;
  assert_int_equal(load(ctx, text, &m), GCAP_ERROR_OUT_OF_MEMORY);
  assert_null(m);
  test_assert_message_contains("simulated device");
  free(text);
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------------- constant memory is read-only */

#define CONST_KERNEL(name, body)                                                                                       \
  ".visible .entry " name "(.param .u64 p_ptr)\n{\n  .reg .b64 %rd<6>;\n  .reg .b32 %r<4>;\n"                          \
  "  mov.u64 %rd1, c;\n  cvta.const.u64 %rd2, %rd1;\n  mov.u32 %r1, 42;\n" body "  ret;\n}\n"

static const char const_ptx[] =
    PTX_HEAD ".visible .const .align 4 .b32 c = 7;\n.visible .const .align 8 .b32 c2[4] = {1, 2, 3, 4};\n" CONST_KERNEL(
        "generic_store", "  st.u32 [%rd2], %r1;\n") CONST_KERNEL("global_store", "  st.global.u32 [%rd1], %r1;\n")
        CONST_KERNEL("vector_store", "  mov.u64 %rd3, c2;\n  st.global.v2.u32 [%rd3+8], {%r1, %r1};\n")
            CONST_KERNEL("byte_store", "  st.global.u8 [%rd1+3], %r1;\n")
                CONST_KERNEL("atomic_add", "  atom.global.add.u32 %r2, [%rd1], %r1;\n")
                    CONST_KERNEL("generic_red", "  red.add.u32 [%rd2], %r1;\n") CONST_KERNEL(
                        "pointer_store", "  ld.param.u64 %rd3, [p_ptr];\n  st.global.u32 [%rd3], %r1;\n")
                        CONST_KERNEL(
                            "reads",
                            "  ld.param.u64 %rd3, [p_ptr];\n  ld.const.u32 %r2, [c];\n  ld.global.u32 %r3, [%rd2];\n"
                            "  add.u32 %r2, %r2, %r3;\n  st.global.u32 [%rd3], %r2;\n");

/*
 * Stores into a __constant__ variable, through cvta.const, a global or generic pointer, vectors,
 * bytes and atomics: ILLEGAL_ADDRESS whatever the checks, and the value stays.
 */
static void test_constant_memory_read_only(void **state) {
  (void)state;
  static const char *const kernels[] = {"generic_store", "global_store", "vector_store",
                                        "byte_store",    "atomic_add",   "generic_red"};
  static const unsigned checks[] = {0, GCAP_SIM_CHECK_MEMORY, GCAP_SIM_CHECK_INIT, GCAP_SIM_CHECK_SHARED_RACES,
                                    CHECKS_ALL};
  for (size_t c = 0; c < sizeof checks / sizeof checks[0]; c++)
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++)
      for (unsigned threads = 1; threads <= 32; threads += 31) {
        gcap_context *ctx = ctx_with(checks[c], false);
        gcap_module *m = ptx_load_text(ctx, const_ptx);
        uint32_t *cv = NULL, *c2 = NULL;
        assert_ok(gcap_module_get_global(m, "c", (void **)&cv, NULL));
        assert_ok(gcap_module_get_global(m, "c2", (void **)&c2, NULL));
        void *none = NULL;
        gcap_status st = launch(ctx, m, kernels[k], DIM1(1), DIM1(threads), 0, ARGS(&none));
        if (st != GCAP_ERROR_ILLEGAL_ADDRESS)
          fail_msg("kernel %s with checks 0x%x: %s (%s)", kernels[k], checks[c], gcap_status_name(st),
                   gcap_last_error_message());
        test_assert_message_contains("constant memory");
        /* Device memory is host memory on the simulator without strict memory: read it as it is (the context has
         * failed). */
        assert_int_equal(*cv, 7);
        assert_int_equal(c2[2], 3);
        gcap_context_destroy(ctx);
      }
}

/* A kernel of one module storing through a pointer into another module's constants: ILLEGAL_ADDRESS under MEMORY. */
static void test_other_module_constants_read_only(void **state) {
  (void)state;
  gcap_context *ctx = ctx_with(GCAP_SIM_CHECK_MEMORY, false);
  gcap_module *a = ptx_load_text(ctx, const_ptx), *b = ptx_load_text(ctx, const_ptx);
  uint32_t *cv = NULL;
  assert_ok(gcap_module_get_global(b, "c", (void **)&cv, NULL));
  assert_int_equal(launch(ctx, a, "pointer_store", DIM1(1), DIM1(1), 0, ARGS(&cv)), GCAP_ERROR_ILLEGAL_ADDRESS);
  test_assert_message_contains("another module");
  assert_int_equal(*cv, 7);
  gcap_context_destroy(ctx);
  /* Reads are fine, and host copies may still set constants (cudaMemcpyToSymbol). */
  ctx = ctx_with(CHECKS_ALL, false);
  a = ptx_load_text(ctx, const_ptx);
  assert_ok(gcap_module_get_global(a, "c", (void **)&cv, NULL));
  uint32_t v = 11, got = 0, *out = ptx_dev(ctx, NULL, 4);
  assert_ok(gcap_memcpy(ctx, cv, &v, 4, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(launch(ctx, a, "reads", DIM1(1), DIM1(1), 0, ARGS(&out)));
  ptx_get(ctx, &got, out, 4);
  assert_int_equal(got, 22);
  gcap_context_destroy(ctx);
}

/* st.const and atom.const name constant memory: refused at load. */
static void test_store_to_const_refused_at_load(void **state) {
  (void)state;
  static const char st_const[] = PTX_HEAD ".const .align 4 .b32 c = 7;\n"
                                          ".visible .entry st_const()\n{\n  .reg .b32 %r<2>;\n  mov.u32 %r1, 1;\n"
                                          "  st.const.u32 [c], %r1;\n  ret;\n}\n";
  expect_load(st_const, GCAP_ERROR_INVALID_PTX, (const char *const[]){"st.const", NULL});
}

/* ------------------------------------------------------------- device printf stays bounded */

/* A kernel `pr(u64 arg)` calling printf(format, arg), its argument packed as nvcc does. */
static char *printf_ptx(const char *format) {
  size_t len = strlen(format) + 1, cap = 2048 + len * 5, n = 0;
  char *text = malloc(cap);
  assert_non_null(text);
  n += (size_t)snprintf(text + n, cap - n,
                        PTX_HEAD ".extern .func (.param .b32 func_retval0) vprintf(.param .b64 a, .param .b64 b);\n"
                                 ".global .align 1 .b8 fmt[%zu] = {",
                        len);
  for (size_t i = 0; i < len; i++)
    n += (size_t)snprintf(text + n, cap - n, "%s%u", i ? ", " : "", (unsigned char)format[i]);
  snprintf(
      text + n, cap - n,
      "};\n.visible .entry pr(.param .u64 p_arg)\n{\n  .local .align 8 .b8 depot[8];\n"
      "  .reg .b64 %%rd<6>;\n  .reg .b32 %%r<2>;\n  ld.param.u64 %%rd1, [p_arg];\n  st.local.u64 [depot], %%rd1;\n"
      "  mov.u64 %%rd2, depot;\n  cvta.local.u64 %%rd3, %%rd2;\n  mov.u64 %%rd4, fmt;\n  cvta.global.u64 %%rd5, %%rd4;\n"
      "  {\n  .param .b64 param0;\n  st.param.b64 [param0], %%rd5;\n  .param .b64 param1;\n"
      "  st.param.b64 [param1], %%rd3;\n  .param .b32 retval0;\n"
      "  call.uni (retval0), vprintf, (param0, param1);\n  }\n  ret;\n}\n");
  return text;
}

/* Runs pr(arg) of printf_ptx(format) with stdout in a file: the launch's status, and *printed (free it). */
static gcap_status run_printf(gcap_context *ctx, const char *format, uint64_t arg, char **printed) {
  char *text = printf_ptx(format);
  gcap_module *m = ptx_load_text(ctx, text);
  free(text);
  char path[] = "/tmp/gcap-ptx-hostile-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  fflush(stdout);
  int saved = dup(STDOUT_FILENO);
  assert_true(saved >= 0);
  assert_true(dup2(fd, STDOUT_FILENO) >= 0);
  gcap_status st = launch(ctx, m, "pr", DIM1(1), DIM1(1), 0, ARGS(&arg));
  fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  off_t size = lseek(fd, 0, SEEK_END);
  assert_true(size >= 0);
  *printed = calloc(1, (size_t)size + 1);
  assert_non_null(*printed);
  assert_int_equal(pread(fd, *printed, (size_t)size, 0), size);
  close(fd);
  unlink(path);
  return st;
}

/* Widths and precisions are clamped to the room left on the line (4095 bytes): the text is what the clamp gives. */
static void test_printf_width_bounded(void **state) {
  (void)state;
  gcap_context *ctx = ctx_with(GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC, false);
  char *out = NULL;
  assert_ok(run_printf(ctx, "%2147483646d|", 7, &out));
  assert_int_equal(strlen(out), 4095);
  assert_int_equal(out[4094], '7');
  assert_int_equal(strspn(out, " "), 4094);
  free(out);
  assert_ok(run_printf(ctx, "ab%-99999999999999999999999999u|", 7, &out)); /* a width past size_t too */
  assert_int_equal(strlen(out), 4095);
  assert_memory_equal(out, "ab7 ", 4);
  free(out);
  assert_ok(run_printf(ctx, "%.2147483646d|", 5, &out));
  assert_int_equal(strlen(out), 4095);
  assert_int_equal(out[4094], '5');
  assert_int_equal(strspn(out, "0"), 4094);
  free(out);
  assert_ok(run_printf(ctx, "%*d|", 5, &out)); /* `*` is not supported: the conversion prints as written */
  assert_string_equal(out, "%*d|");
  free(out);
  assert_ok(run_printf(ctx, "[%5.2d]", 3, &out));
  assert_string_equal(out, "[   03]");
  free(out);
  gcap_context_destroy(ctx);
}

/* %s reads no further than its precision; a pointer outside memory is ILLEGAL_ADDRESS under MEMORY; NULL is "(null)".
 */
static void test_printf_string_checked(void **state) {
  (void)state;
  gcap_context *ctx = ctx_with(GCAP_SIM_CHECK_MEMORY, false);
  char *out = NULL, *abc = test_dev_alloc(ctx, 256);
  assert_ok(gcap_memcpy(ctx, abc + 253, "abc", 3, GCAP_MEMCPY_HOST_TO_DEVICE)); /* no NUL before the end */
  uint64_t at = (uint64_t)(uintptr_t)(abc + 253);
  assert_ok(run_printf(ctx, "<%.3s>", at, &out));
  assert_string_equal(out, "<abc>");
  free(out);
  assert_ok(run_printf(ctx, "<%s>", 0, &out));
  assert_string_equal(out, "<(null)>");
  free(out);
  assert_int_equal(run_printf(ctx, "<%s>", at, &out), GCAP_ERROR_ILLEGAL_ADDRESS); /* runs off the end */
  test_assert_message_contains("pr");
  free(out);
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------------- kernels without registers */

/* A kernel with no registers or predicates runs (its frames point into real arrays: clang's UBSan checks). */
static void test_kernel_without_registers(void **state) {
  (void)state;
  static const char text[] = PTX_HEAD ".visible .entry empty()\n{\n  ret;\n}\n"
                                      ".func nothing()\n{\n  ret;\n}\n"
                                      ".visible .entry calls_nothing()\n{\n  call nothing, ();\n  ret;\n}\n";
  for (unsigned checks = 0; checks <= CHECKS_ALL; checks += CHECKS_ALL) {
    gcap_context *ctx = ctx_with(checks, false);
    gcap_module *m = ptx_load_text(ctx, text);
    assert_ok(launch(ctx, m, "empty", DIM1(2), DIM1(33), 0, NULL));
    assert_ok(launch(ctx, m, "calls_nothing", DIM1(2), DIM1(33), 0, NULL));
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
      cmocka_unit_test(test_shared_past_4gib_refused),
      cmocka_unit_test(test_static_shared_over_limit_refused),
      cmocka_unit_test(test_local_4gib_refused),
      cmocka_unit_test(test_params_over_limit_refused),
      cmocka_unit_test(test_call_arguments_fit),
      cmocka_unit_test(test_zero_globals_lazy),
      cmocka_unit_test(test_zero_globals_lazy_strict),
      cmocka_unit_test(test_globals_past_device_memory),
      cmocka_unit_test(test_constant_memory_read_only),
      cmocka_unit_test(test_other_module_constants_read_only),
      cmocka_unit_test(test_store_to_const_refused_at_load),
      cmocka_unit_test(test_printf_width_bounded),
      cmocka_unit_test(test_printf_string_checked),
      cmocka_unit_test(test_kernel_without_registers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
