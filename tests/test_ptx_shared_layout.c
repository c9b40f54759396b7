/*
 * The layout of a block's shared memory on the simulator's PTX engine: static shared variables
 * (the module's, every .func's, the kernel's own), then dynamic shared memory (`extern
 * __shared__`), aligned to 16 bytes or its arrays' .align, then the reserved region that
 * %reserved_smem_offset_* name. Writing all of the dynamic array leaves the static variables
 * alone, and the shared-memory special registers read where these regions are.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ptx_util.h"

#define ARGS(...) ((void *[]){__VA_ARGS__})
#define DIM1(x) GCAP_DIM3((x), 1, 1)

/* A last-block reduction whose static flag and marker sit beside a dynamic array it fills whole. */
static void test_last_block_static_beside_dynamic(void **state) {
  struct ptx_fixture *f = *state;
  enum { BLOCKS = 8, THREADS = 64, DYNAMIC = 4 * THREADS * sizeof(float) };
  float in[BLOCKS * THREADS], partial[BLOCKS], total = 0.0f, want = 0.0f;
  for (size_t i = 0; i < BLOCKS * THREADS; i++) in[i] = (float)(i % 17);
  for (size_t i = 0; i < BLOCKS * THREADS; i++) want += in[i];
  void *din = ptx_dev(f->ctx, in, sizeof in), *dpartial = ptx_dev(f->ctx, NULL, sizeof partial);
  void *dcount = ptx_dev(f->ctx, NULL, sizeof(unsigned)), *dtotal = ptx_dev(f->ctx, NULL, sizeof total);
  void *dmarkers = ptx_dev(f->ctx, NULL, BLOCKS * sizeof(unsigned));
  ptx_run(f, "last_block_sum", DIM1(BLOCKS), DIM1(THREADS), DYNAMIC,
          ARGS(&din, &dpartial, &dcount, &dtotal, &dmarkers));
  unsigned markers[BLOCKS];
  ptx_get(f->ctx, markers, dmarkers, sizeof markers);
  ptx_get(f->ctx, partial, dpartial, sizeof partial);
  ptx_get(f->ctx, &total, dtotal, sizeof total);
  for (unsigned b = 0; b < BLOCKS; b++) {
    float sum = 0.0f;
    for (unsigned t = 0; t < THREADS; t++) sum += in[b * THREADS + t];
    assert_int_equal(markers[b], 0xc0ffee00u + b);
    assert_true(partial[b] == sum);
  }
  assert_true(total == want); /* the last block saw its static flag */
}

/* The special registers, and where the static and dynamic arrays are. */
static void test_shared_registers(void **state) {
  struct ptx_fixture *f = *state;
  enum { DYNAMIC = 200, STATIC = 100, WORDS = 11 };
  void *dout = ptx_dev(f->ctx, NULL, WORDS * sizeof(unsigned));
  ptx_run(f, "smem_registers", DIM1(1), DIM1(64), DYNAMIC, ARGS(&dout));
  unsigned out[WORDS];
  ptx_get(f->ctx, out, dout, sizeof out);
  unsigned dyn = (STATIC + 15) / 16 * 16, begin = (dyn + DYNAMIC + 15) / 16 * 16;
  /* %total_smem_size: static and dynamic, in 128-byte units */
  unsigned total = (dyn + DYNAMIC + 127) / 128 * 128;
  assert_int_equal(out[7], 0);            /* the static array: the kernel's only static variable */
  assert_int_equal(out[8], dyn);          /* the dynamic array: after it, 16-aligned */
  assert_int_equal(out[0], DYNAMIC);      /* %dynamic_smem_size */
  assert_int_equal(out[2], begin);        /* %reserved_smem_offset_begin: after the dynamic array */
  assert_int_equal(out[4], 1024);         /* %reserved_smem_offset_cap */
  assert_int_equal(out[3], begin + 1024); /* %reserved_smem_offset_end */
  assert_int_equal(out[1], total);        /* %total_smem_size: not the reserved region */
  assert_int_equal(out[5], begin);        /* %reserved_smem_offset_0 */
  assert_true(out[6] >= begin && out[6] + 288 <= begin + 1024); /* _1: room for cooperative groups' scratch */
  assert_int_equal(out[9], STATIC * (STATIC + 1) / 2);          /* the static array kept its bytes */
  assert_int_equal(out[10], 0x5eedu);                           /* the reserved region holds what is written there */
}

/*
 * Hand-written PTX: a .func with a .shared variable of its own that also writes the dynamic
 * array, called by a kernel with its own .shared variable. None of the three overlap, and the
 * dynamic array starts after all the static ones, aligned to its .align of 64.
 */
static const char funcs_ptx[] = ".version 7.0\n"
                                ".target sm_75\n"
                                ".address_size 64\n"
                                ".extern .shared .align 64 .b8 dyn[];\n"
                                ".shared .align 4 .u32 module_word;\n"
                                ".func (.param .u32 r) helper(.param .u32 x)\n"
                                "{\n"
                                "  .shared .align 4 .u32 func_word;\n"
                                "  .reg .u32 %a<4>;\n"
                                "  ld.param.u32 %a0, [x];\n"
                                "  st.shared.u32 [func_word], %a0;\n"
                                "  st.shared.u32 [dyn], 7;\n"
                                "  st.shared.u32 [dyn+4], 8;\n"
                                "  mov.u32 %a1, dyn;\n"
                                "  ld.shared.u32 %a2, [func_word];\n"
                                "  add.u32 %a3, %a1, %a2;\n"
                                "  st.param.u32 [r], %a3;\n"
                                "  ret;\n"
                                "}\n"
                                ".visible .entry k(.param .u64 out)\n"
                                "{\n"
                                "  .shared .align 4 .u32 entry_word;\n"
                                "  .reg .u32 %r<12>;\n"
                                "  .reg .u64 %rd<4>;\n"
                                "  ld.param.u64 %rd1, [out];\n"
                                "  cvta.to.global.u64 %rd2, %rd1;\n"
                                "  st.shared.u32 [module_word], 11;\n"
                                "  st.shared.u32 [entry_word], 22;\n"
                                "  {\n"
                                "  .param .u32 pr;\n"
                                "  .param .u32 px;\n"
                                "  st.param.u32 [px], 33;\n"
                                "  call (pr), helper, (px);\n"
                                "  ld.param.u32 %r1, [pr];\n"
                                "  }\n"
                                "  ld.shared.u32 %r2, [module_word];\n"
                                "  ld.shared.u32 %r3, [entry_word];\n"
                                "  ld.shared.u32 %r4, [dyn];\n"
                                "  mov.u32 %r5, dyn;\n"
                                "  st.global.u32 [%rd2], %r2;\n"
                                "  st.global.u32 [%rd2+4], %r3;\n"
                                "  st.global.u32 [%rd2+8], %r4;\n"
                                "  st.global.u32 [%rd2+12], %r5;\n"
                                "  st.global.u32 [%rd2+16], %r1;\n"
                                "  ret;\n"
                                "}\n";

static void test_func_shared_apart(void **state) {
  (void)state;
  struct ptx_fixture f = {.ctx = ptx_context(PTX_CHECKS_ALL), .file = "funcs_ptx"};
  f.s = test_stream_create(f.ctx);
  gcap_module_desc d = {.image = funcs_ptx, .image_size = sizeof funcs_ptx};
  gcap_status st = gcap_module_load(f.ctx, &d, &f.m);
  if (st != GCAP_SUCCESS) print_error("%s\n", gcap_last_error_message());
  assert_int_equal(st, GCAP_SUCCESS);
  void *dout = ptx_dev(f.ctx, NULL, 5 * sizeof(unsigned));
  ptx_run(&f, "k", DIM1(1), DIM1(1), 8, ARGS(&dout));
  unsigned out[5];
  ptx_get(f.ctx, out, dout, sizeof out);
  assert_int_equal(out[0], 11);      /* module_word */
  assert_int_equal(out[1], 22);      /* entry_word */
  assert_int_equal(out[2], 7);       /* dyn[0], written by the .func */
  assert_int_equal(out[3], 64);      /* dyn: after the three words, at its .align */
  assert_int_equal(out[4], 64 + 33); /* the .func sees dyn there too, and its own word apart */
  gcap_context_destroy(f.ctx);
}

int main(void) {
  test_require_backend();
  if (!test_on_sim()) {
    fprintf(stderr, "skipped: the layout checked is the simulator's\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_prestate_setup_teardown(test_last_block_static_beside_dynamic, ptx_setup, ptx_teardown,
                                               "shared_layout.ptx"),
      cmocka_unit_test_prestate_setup_teardown(test_shared_registers, ptx_setup, ptx_teardown, "shared_layout.ptx"),
      cmocka_unit_test(test_func_shared_apart),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
