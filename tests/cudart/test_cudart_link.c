/* The -rdc link (src/cudart/link.c): the PTX of several translation units linked by name into one
 * module, which the simulator loads and runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cudart.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEAD(version, target) ".version " version "\n.target " target "\n.address_size 64\n"

/* out[tid] = value: the shape of every test kernel's end. */
#define STORE_R(reg)                                                                                                   \
  "ld.param.u64 %rd1, [p];\n"                                                                                          \
  "cvta.to.global.u64 %rd2, %rd1;\n"                                                                                   \
  "mul.wide.u32 %rd3, %r1, 4;\n"                                                                                       \
  "add.s64 %rd4, %rd2, %rd3;\n"                                                                                        \
  "st.global.u32 [%rd4], " reg ";\n"                                                                                   \
  "ret;\n"

/* A call of a one-argument function: r = fn(a). */
#define CALL(fn, r, a)                                                                                                 \
  "{\n.param .b32 param0;\nst.param.b32 [param0+0], " a ";\n.param .b32 retval0;\n"                                    \
  "call.uni (retval0), " fn ", (param0);\nld.param.b32 " r ", [retval0+0];\n}\n"

#define REGS ".reg .b32 %r<8>;\n.reg .b64 %rd<8>;\n"

static char err[512];

static char *link_units(const char *const *texts, size_t n) {
  size_t lens[8];
  for (size_t i = 0; i < n; i++) lens[i] = strlen(texts[i]);
  size_t len = 0;
  err[0] = '\0';
  char *out = gcap__cudart_link_ptx(texts, lens, n, &len, err, sizeof err);
  if (out) assert_int_equal(len, strlen(out));
  return out;
}

static size_t count(const char *text, const char *what) {
  size_t n = 0;
  for (const char *p = strstr(text, what); p; p = strstr(p + 1, what)) n++;
  return n;
}

struct loaded {
  gcap_context *ctx;
  gcap_module *m;
};

static void load(const char *text, struct loaded *l) {
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  assert_int_equal(gcap_context_create(&o, &l->ctx), GCAP_SUCCESS);
  gcap_module_desc d;
  memset(&d, 0, sizeof d);
  d.image = text;
  d.image_size = strlen(text) + 1;
  gcap_status st = gcap_module_load(l->ctx, &d, &l->m);
  if (st != GCAP_SUCCESS) fail_msg("the linked module does not load: %s\n%s", gcap_last_error_message(), text);
}

/* Runs kernel(out) on 32 threads and returns out[i]. */
static void run(const struct loaded *l, const char *kernel, uint32_t out[32]) {
  gcap_kernel *k = NULL;
  assert_int_equal(gcap_module_get_kernel(l->m, kernel, &k), GCAP_SUCCESS);
  void *d = NULL;
  assert_int_equal(gcap_mem_alloc(l->ctx, 32 * sizeof(uint32_t), &d), GCAP_SUCCESS);
  gcap_stream *s = NULL;
  assert_int_equal(gcap_stream_create(l->ctx, &s), GCAP_SUCCESS);
  void *args[] = {&d};
  assert_int_equal(gcap_launch_kernel(s, k, (gcap_dim3){1, 1, 1}, (gcap_dim3){32, 1, 1}, 0, args), GCAP_SUCCESS);
  assert_int_equal(gcap_stream_synchronize(s), GCAP_SUCCESS);
  assert_int_equal(gcap_memcpy(l->ctx, out, d, 32 * sizeof(uint32_t), GCAP_MEMCPY_DEVICE_TO_HOST), GCAP_SUCCESS);
  assert_int_equal(gcap_stream_destroy(s), GCAP_SUCCESS);
  assert_int_equal(gcap_mem_free(l->ctx, d), GCAP_SUCCESS);
}

static void unload(struct loaded *l) {
  assert_int_equal(gcap_module_unload(l->m), GCAP_SUCCESS);
  gcap_context_destroy(l->ctx);
}

/* Unit 1 calls a function and reads a variable unit 2 defines; unit 2's PTX is newer. */
static const char call_a[] =
    HEAD("8.0", "sm_80") ".extern .func (.param .b32 func_retval0) twice(\n"
                         ".param .b32 twice_param_0\n);\n"
                         ".extern .global .align 4 .u32 factor;\n"
                         ".visible .entry ka(.param .u64 p)\n{\n" REGS "mov.u32 %r1, %tid.x;\n" CALL(
                             "twice", "%r2", "%r1") "ld.global.u32 %r3, [factor];\n"
                                                    "mul.lo.s32 %r4, %r2, %r3;\n" STORE_R("%r4") "}\n";
static const char call_b[] =
    HEAD("8.3", "sm_80") "// .globl twice\n"
                         ".visible .global .align 4 .u32 factor = 3;\n"
                         ".visible .func (.param .b32 func_retval0) twice(\n"
                         ".param .b32 twice_param_0\n)\n{\n" REGS "ld.param.u32 %r1, [twice_param_0];\n"
                         "shl.b32 %r2, %r1, 1;\n"
                         "st.param.b32 [func_retval0+0], %r2;\nret;\n}\n";

static void test_cross_unit_call_and_variable(void **state) {
  (void)state;
  const char *units[] = {call_a, call_b};
  char *text = link_units(units, 2);
  if (!text) fail_msg("%s", err);
  assert_true(strncmp(text, ".version 8.3\n.target sm_80\n.address_size 64\n", 44) == 0);
  assert_int_equal(count(text, ".version"), 1);
  assert_int_equal(count(text, ".target"), 1);
  struct loaded l;
  load(text, &l);
  uint32_t out[32];
  run(&l, "ka", out);
  for (uint32_t i = 0; i < 32; i++) assert_int_equal(out[i], 6 * i);
  void *factor = NULL;
  size_t bytes = 0;
  assert_int_equal(gcap_module_get_global(l.m, "factor", &factor, &bytes), GCAP_SUCCESS);
  assert_int_equal(bytes, 4);
  unload(&l);
  free(text);

  /* The other order: the definitions come first, the declarations after them. */
  const char *reversed[] = {call_b, call_a};
  text = link_units(reversed, 2);
  if (!text) fail_msg("%s", err);
  load(text, &l);
  run(&l, "ka", out);
  for (uint32_t i = 0; i < 32; i++) assert_int_equal(out[i], 6 * i);
  unload(&l);
  free(text);
}

/* Each unit has its own static helper and string constant of the same name; a name that contains
 * them, a comment and a visible name stay as they are. */
#define STATIC_UNIT(kernel, op, ch)                                                                                    \
  HEAD("8.0", "sm_80")                                                                                                 \
  ".global .align 1 .b8 $str[2] = {" ch ", 0};\n"                                                                      \
  ".func (.param .b32 func_retval0) helper(\n.param .b32 helper_param_0\n)\n{\n" REGS                                  \
  "ld.param.u32 %r1, [helper_param_0];\n" op "st.param.b32 [func_retval0+0], %r2;\nret;\n}\n"                          \
  ".visible .entry " kernel "(.param .u64 p)\n{\n" REGS "mov.u32 %r1, %tid.x;\n"                                       \
  "// helper and $str are this unit's\n" CALL("helper", "%r2", "%r1") "mov.u64 %rd5, $str;\n"                          \
                                                                      "ld.global.u8 %r3, [%rd5];\n"                    \
                                                                      "add.s32 %r4, %r2, %r3;\n" STORE_R("%r4") "}\n"

static void test_static_names_are_renamed(void **state) {
  (void)state;
  const char *units[] = {
      STATIC_UNIT("ka", "add.s32 %r2, %r1, 1;\n", "97"),
      STATIC_UNIT(
          "kb", "mul.lo.s32 %r2, %r1, 10;\n",
          "98") ".visible .global .align 4 .u32 helper_count = 4;\n.visible .global .align 4 .u32 $str_x = 1;\n",
  };
  char *text = link_units(units, 2);
  if (!text) fail_msg("%s", err);
  assert_int_equal(count(text, "helper_gcap_u0"), 2);
  assert_int_equal(count(text, "helper_gcap_u1"), 2);
  assert_int_equal(count(text, "$str_gcap_u0"), 2);
  assert_int_equal(count(text, "$str_gcap_u1"), 2);
  assert_int_equal(count(text, "// helper and $str are this unit's\n"), 2);
  assert_int_equal(count(text, "helper_param_0"), 4);
  assert_int_equal(count(text, " helper_count = 4"), 1);
  assert_int_equal(count(text, " $str_x = 1"), 1);
  struct loaded l;
  load(text, &l);
  uint32_t out[32];
  run(&l, "ka", out);
  for (uint32_t i = 0; i < 32; i++) assert_int_equal(out[i], i + 1 + 97);
  run(&l, "kb", out);
  for (uint32_t i = 0; i < 32; i++) assert_int_equal(out[i], i * 10 + 98);
  unload(&l);
  free(text);
}

/* Template instantiations: the same .weak function, kernel and variable in each unit; one is kept
 * and it is visible. A .weak function that a .visible one of a later unit overrides. */
#define WEAK_DEFS                                                                                                      \
  ".weak .global .align 4 .u32 bias = 5;\n"                                                                            \
  ".weak .func (.param .b32 func_retval0) sq(\n.param .b32 sq_param_0\n)\n{\n" REGS                                    \
  "ld.param.u32 %r1, [sq_param_0];\nmul.lo.s32 %r2, %r1, %r1;\n"                                                       \
  "st.param.b32 [func_retval0+0], %r2;\nret;\n}\n"                                                                     \
  ".weak .entry kw(.param .u64 p)\n{\n" REGS "mov.u32 %r1, %tid.x;\n" CALL(                                            \
      "sq", "%r2", "%r1") "ld.global.u32 %r3, [bias];\nadd.s32 %r4, %r2, %r3;\n" STORE_R("%r4") "}\n"

static const char weak_a[] = HEAD("8.0", "sm_80") WEAK_DEFS
    ".weak .func (.param .b32 func_retval0) pick(\n.param .b32 pick_param_0\n)\n{\n" REGS
    "mov.u32 %r2, 1;\nst.param.b32 [func_retval0+0], %r2;\nret;\n}\n"
    ".visible .entry ka(.param .u64 p)\n{\n" REGS "mov.u32 %r1, %tid.x;\n" CALL("pick", "%r2", "%r1")
        CALL("sq", "%r3", "%r1") "add.s32 %r4, %r2, %r3;\n" STORE_R("%r4") "}\n";
static const char weak_b[] = HEAD("8.0", "sm_80") WEAK_DEFS
    ".visible .func (.param .b32 func_retval0) pick(\n.param .b32 pick_param_0\n)\n{\n" REGS
    "mov.u32 %r2, 1000;\nst.param.b32 [func_retval0+0], %r2;\nret;\n}\n";

static void test_weak_definitions(void **state) {
  (void)state;
  const char *units[] = {weak_a, weak_b};
  char *text = link_units(units, 2);
  if (!text) fail_msg("%s", err);
  assert_int_equal(count(text, ".weak"), 0);
  assert_int_equal(count(text, ".visible .func (.param .b32 func_retval0) sq("), 1);
  assert_int_equal(count(text, ".extern .func (.param .b32 func_retval0) sq("), 1);
  assert_int_equal(count(text, ".visible .entry kw("), 1);
  assert_int_equal(count(text, ".visible .global .align 4 .u32 bias = 5;"), 1);
  assert_int_equal(count(text, ".extern .func (.param .b32 func_retval0) pick("), 1);
  assert_int_equal(count(text, ".visible .func (.param .b32 func_retval0) pick("), 1);
  struct loaded l;
  load(text, &l);
  uint32_t out[32];
  run(&l, "kw", out);
  for (uint32_t i = 0; i < 32; i++) assert_int_equal(out[i], i * i + 5);
  run(&l, "ka", out);
  for (uint32_t i = 0; i < 32; i++) assert_int_equal(out[i], 1000 + i * i);
  unload(&l);
  free(text);
}

/* Dynamic shared memory declared in each unit under one name; device-runtime functions left
 * declared; .file numbers kept apart. */
#define SHARED_UNIT(kernel, file)                                                                                      \
  HEAD("8.0", "sm_80")                                                                                                 \
  ".file 1 \"" file "\"\n"                                                                                             \
  ".extern .func (.param .b32 func_retval0) vprintf(\n.param .b64 a,\n.param .b64 b\n);\n"                             \
  ".extern .shared .align 16 .b8 smem[];\n"                                                                            \
  ".visible .entry " kernel "(.param .u64 p)\n{\n" REGS ".loc 1 7 2\n"                                                 \
  "mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd5, %r1, 4;\nmov.u64 %rd6, smem;\n"                                            \
  "add.s64 %rd7, %rd6, %rd5;\nst.shared.u32 [%rd7], %r1;\nbar.sync 0;\n"                                               \
  "ld.shared.u32 %r2, [smem];\nadd.s32 %r3, %r2, 7;\n" STORE_R("%r3") "}\n"

static void test_shared_memory_and_files(void **state) {
  (void)state;
  const char *units[] = {SHARED_UNIT("ka", "a.cu"), SHARED_UNIT("kb", "b.cu")};
  char *text = link_units(units, 2);
  if (!text) fail_msg("%s", err);
  assert_int_equal(count(text, ".file 1 \"a.cu\""), 1);
  assert_int_equal(count(text, ".file 2 \"b.cu\""), 1);
  assert_int_equal(count(text, ".loc 1 7 2"), 1);
  assert_int_equal(count(text, ".loc 2 7 2"), 1);
  struct loaded l;
  load(text, &l);
  gcap_kernel *k = NULL;
  assert_int_equal(gcap_module_get_kernel(l.m, "kb", &k), GCAP_SUCCESS);
  void *d = NULL;
  assert_int_equal(gcap_mem_alloc(l.ctx, 128, &d), GCAP_SUCCESS);
  void *args[] = {&d};
  gcap_stream *s = NULL;
  assert_int_equal(gcap_stream_create(l.ctx, &s), GCAP_SUCCESS);
  assert_int_equal(gcap_launch_kernel(s, k, (gcap_dim3){1, 1, 1}, (gcap_dim3){32, 1, 1}, 128, args), GCAP_SUCCESS);
  assert_int_equal(gcap_stream_synchronize(s), GCAP_SUCCESS);
  uint32_t out[32];
  assert_int_equal(gcap_memcpy(l.ctx, out, d, sizeof out, GCAP_MEMCPY_DEVICE_TO_HOST), GCAP_SUCCESS);
  for (uint32_t i = 0; i < 32; i++) assert_int_equal(out[i], 7);
  assert_int_equal(gcap_stream_destroy(s), GCAP_SUCCESS);
  assert_int_equal(gcap_mem_free(l.ctx, d), GCAP_SUCCESS);
  unload(&l);
  free(text);
}

static void expect_error(const char *const *units, size_t n, const char *message) {
  char *text = link_units(units, n);
  if (text) fail_msg("linked, expected \"%s\":\n%s", message, text);
  if (strcmp(err, message) != 0) fail_msg("expected \"%s\", got \"%s\"", message, err);
}

#define FUNC(linkage, name, value)                                                                                     \
  linkage " .func (.param .b32 func_retval0) " name "(\n.param .b32 x\n)\n{\n" REGS "mov.u32 %r2, " value ";\n"        \
          "st.param.b32 [func_retval0+0], %r2;\nret;\n}\n"

static void test_errors(void **state) {
  (void)state;
  const char *missing[] = {call_a, HEAD("8.0", "sm_80") ".visible .global .align 4 .u32 factor = 3;\n"};
  expect_error(missing, 2,
               "unresolved symbol \"twice\": unit 1 of 2 declares it .extern and no unit defines it (nor does the "
               "device runtime)");
  const char *no_var[] = {HEAD("8.0", "sm_80") ".extern .global .align 4 .u32 factor;\n", call_b};
  const char *twice_only[] = {call_a, HEAD("8.0", "sm_80") FUNC(".visible", "twice", "1")};
  expect_error(twice_only, 2,
               "unresolved symbol \"factor\": unit 1 of 2 declares it .extern and no unit defines it (nor does the "
               "device runtime)");
  char *ok = link_units(no_var, 2);
  if (!ok) fail_msg("%s", err);
  free(ok);
  const char *defined_twice[] = {HEAD("8.0", "sm_80") FUNC(".visible", "f", "1"),
                                 HEAD("8.0", "sm_80") FUNC(".weak", "f", "2"),
                                 HEAD("8.0", "sm_80") FUNC(".visible", "f", "3")};
  expect_error(defined_twice, 3, "\"f\" is defined in unit 1 and again in unit 3 of 3");
  const char *kinds[] = {HEAD("8.0", "sm_80") FUNC(".visible", "f", "1"),
                         HEAD("8.0", "sm_80") ".visible .global .u32 f;\n"};
  expect_error(kinds, 2, "\"f\" is a function in unit 1 and a variable in unit 2");
  const char *targets[] = {HEAD("8.0", "sm_80"), HEAD("8.0", "sm_80"), HEAD("8.0", "sm_90")};
  expect_error(targets, 3,
               "unit 2 targets sm_80 and unit 3 targets sm_90: the units of a program must be built for one "
               "architecture");
  const char *sizes[] = {HEAD("8.0", "sm_80"), ".version 8.0\n.target sm_80\n.address_size 32\n"};
  expect_error(sizes, 2, "unit 1 has .address_size 64 and unit 2 .address_size 32");
  const char *kernels[] = {HEAD("8.0", "sm_80") ".entry k()\n{\nret;\n}\n", HEAD("8.0", "sm_80") ".global .u32 k;\n"};
  expect_error(kernels, 2, "kernel \"k\" of unit 1 has the name of a symbol of unit 2");
  const char *unbalanced[] = {HEAD("8.0", "sm_80") ".visible .entry k()\n{\nret;\n"};
  expect_error(unbalanced, 1, "unit 1 of 1: unbalanced or unterminated declaration at module scope");
  const char *comment[] = {HEAD("8.0", "sm_80") "/* never closed\n"};
  expect_error(comment, 1, "unit 1 of 1: unterminated comment");
  const char *no_target[] = {".version 8.0\n"};
  expect_error(no_target, 1, "no unit has a .target");
  const char *no_version[] = {".target sm_80\n"};
  expect_error(no_version, 1, "no unit has a .version");
  size_t len = 0;
  assert_null(gcap__cudart_link_ptx(NULL, NULL, 0, &len, err, sizeof err));
  assert_string_equal(err, "linking the PTX of -rdc units: there are none");
}

/* What the device runtime provides stays declared; a new name that is taken gets another suffix. */
static void test_runtime_functions_and_taken_names(void **state) {
  (void)state;
  const char *units[] = {
      HEAD("8.0", "sm_80") ".extern .func (.param .b64 r) malloc(\n.param .b64 n\n);\n"
                           ".extern .func free(\n.param .b64 p\n);\n"
                           ".extern .func (.param .b64 r) cudaGetParameterBufferV2(\n.param .b64 a\n);\n"
                           ".global .u32 h;\n",
      HEAD("8.0",
           "sm_80") ".global .u32 h;\n.visible .global .u32 h_gcap_u1;\n"
                    ".visible .entry k()\n{\n.reg .b64 %rd<3>;\nmov.u64 %rd1, h;\nmov.u64 %rd2, h_gcap_u1;\nret;\n}\n",
  };
  char *text = link_units(units, 2);
  if (!text) fail_msg("%s", err);
  assert_int_equal(count(text, ".extern .func (.param .b64 r) malloc("), 1);
  assert_int_equal(count(text, ".global .u32 h_gcap_u0;"), 1);
  assert_int_equal(count(text, ".global .u32 h_gcap_u1_1;"), 1);
  assert_int_equal(count(text, "mov.u64 %rd1, h_gcap_u1_1;\nmov.u64 %rd2, h_gcap_u1;"), 1);
  struct loaded l;
  load(text, &l);
  unload(&l);
  free(text);
}

/* The highest .version; the target's options of every unit; texts not ending in a NUL. */
static void test_headers(void **state) {
  (void)state;
  const char *units[] = {HEAD("7.8", "sm_80"), HEAD("8.10", "sm_80, debug"), HEAD("8.3", "sm_80")};
  char *text = link_units(units, 3);
  if (!text) fail_msg("%s", err);
  assert_true(strncmp(text, ".version 8.10\n.target sm_80, debug\n.address_size 64\n", 51) == 0);
  free(text);
  const char *texts[] = {HEAD("8.0", "sm_80") "XXXX"};
  size_t lens[] = {strlen(texts[0]) - 4}, len = 0;
  text = gcap__cudart_link_ptx(texts, lens, 1, &len, err, sizeof err);
  assert_non_null(text);
  assert_null(strstr(text, "XXXX"));
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cross_unit_call_and_variable),
      cmocka_unit_test(test_static_names_are_renamed),
      cmocka_unit_test(test_weak_definitions),
      cmocka_unit_test(test_shared_memory_and_files),
      cmocka_unit_test(test_runtime_functions_and_taken_names),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_headers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
