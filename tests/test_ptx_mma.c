/*
 * Tensor-core instructions on the simulator's PTX engine: vector operands as long as their
 * fragments.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ptx_util.h"

#define CHECKS_ALL (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT)
#define HEAD ".version 8.0\n.target sm_80\n.address_size 64\n"

/* Loading text that must fail with INVALID_PTX and a message holding `needle`. */
static void load_fails(gcap_context *ctx, const char *text, const char *needle) {
  gcap_module *m = NULL;
  gcap_module_desc d = {.image = text, .image_size = strlen(text) + 1};
  assert_int_equal(gcap_module_load(ctx, &d, &m), GCAP_ERROR_INVALID_PTX);
  test_assert_message_contains(needle);
  assert_null(m);
}

/* A vector operand holds up to 8 elements (a wmma fragment); ld, st and mov still take at most 4. */
static void vector_operands_hold_eight(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(CHECKS_ALL);
  load_fails(ctx,
             HEAD ".visible .entry k(.param .u64 p)\n{\n  .reg .b32 %r<12>;\n  .reg .b64 %rd<2>;\n"
                  "  ld.param.u64 %rd1, [p];\n"
                  "  ld.global.v4.u32 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9}, [%rd1];\n  ret;\n}\n",
             "at most 8 elements");
  load_fails(ctx,
             HEAD ".visible .entry k(.param .u64 p)\n{\n  .reg .b32 %r<12>;\n  .reg .b64 %rd<2>;\n"
                  "  ld.param.u64 %rd1, [p];\n"
                  "  ld.global.v4.u32 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [%rd1];\n  ret;\n}\n",
             "a vector of 8 elements (ld and st take at most 4)");
  load_fails(ctx,
             HEAD ".visible .entry k()\n{\n  .reg .b16 %h<8>;\n  .reg .b64 %rd<2>;\n"
                  "  mov.b64 {%h1, %h2, %h3, %h4, %h5}, %rd1;\n  ret;\n}\n",
             "a vector of 5 elements (mov takes at most 4)");
  gcap_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(vector_operands_hold_eight),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
