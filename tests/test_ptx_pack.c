/*
 * Register packing by live range (src/backend_sim/ptx/ptx_regalloc.c), on small functions whose
 * live ranges are known: registers live at the same time never share a slot (across a loop's
 * back edge, around a guarded write), a chain of single-assignment values takes few slots, a
 * limit too small is refused with what is live at once and where, and every allocation failure
 * gives -1 without a leak.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_sim/ptx/ptx_regalloc.h"
#include "base/alloc.h"
#include "ptx/ptx.h"

/*
 * %r1 = tid; a chain %r2..%r9; before the loop inv (%r10) and gx (%r11); in the loop gx is
 * written under a guard at the top and read in the middle, inv read at the top only; %r12..%r19
 * are temporaries of the body; after the loop only %r20..%r22.
 */
static const char loop_ptx[] =
    ".version 7.8\n.target sm_80\n.address_size 64\n"
    ".visible .entry k(.param .u64 p)\n{\n"
    "  .reg .pred %p<3>;\n  .reg .b32 %r<24>;\n  .reg .b64 %rd<2>;\n"
    "  ld.param.u64 %rd1, [p];\n" /* 0 */
    "  mov.u32 %r1, %tid.x;\n"    /* 1 */
    "  add.u32 %r2, %r1, 1;\n  add.u32 %r3, %r2, 1;\n  add.u32 %r4, %r3, 1;\n  add.u32 %r5, %r4, 1;\n"
    "  add.u32 %r6, %r5, 1;\n  add.u32 %r7, %r6, 1;\n  add.u32 %r8, %r7, 1;\n  add.u32 %r9, %r8, 1;\n" /* 2-9 */
    "  add.u32 %r10, %r9, 7;\n"                                                                        /* 10: inv */
    "  add.u32 %r11, %r9, 3;\n"                                                                        /* 11: gx */
    "  setp.eq.u32 %p1, %r1, 1;\n"                                                                     /* 12 */
    "  mov.u32 %r20, 0;\n"                                                                             /* 13: counter */
    "$L:\n"
    "  add.u32 %r12, %r20, %r10;\n"   /* 14: inv's last read */
    "  @%p1 add.u32 %r11, %r12, 9;\n" /* 15: guarded write */
    "  add.u32 %r13, %r12, 1;\n  add.u32 %r14, %r13, 1;\n"
    "  xor.b32 %r15, %r14, %r11;\n" /* 18: gx's last read */
    "  add.u32 %r16, %r15, 1;\n  add.u32 %r17, %r16, 1;\n  add.u32 %r18, %r17, 1;\n  add.u32 %r19, %r18, 1;\n"
    "  add.u32 %r20, %r20, 1;\n  setp.lt.u32 %p2, %r20, 4;\n  @%p2 bra $L;\n"
    "  mul.lo.u32 %r21, %r20, %r20;\n  add.u32 %r22, %r21, %r19;\n  st.global.u32 [%rd1], %r22;\n  ret;\n}\n";

static struct ptx_module *parse(const char *text) {
  struct ptx_error err;
  struct ptx_module *m = ptx_parse(text, strlen(text), PTX_PARSE_FULL, &err);
  if (!m) fail_msg("parse: line %u: %s", err.line, err.message);
  return m;
}

static uint32_t reg_of(const struct ptx_func *f, const char *name) {
  for (uint32_t r = 0; r < f->num_regs; r++)
    if (strcmp(f->regs[r].name, name) == 0) return r;
  fail_msg("no register %s", name);
  return 0;
}

struct packed {
  uint32_t *pred, *slot;
  unsigned slots;
  int rc;
  char why[300];
};

static void pack(const struct ptx_func *f, unsigned limit, struct packed *p) {
  p->pred = calloc(f->num_regs + 1, sizeof *p->pred);
  p->slot = calloc(f->num_regs + 1, sizeof *p->slot);
  assert_non_null(p->pred);
  assert_non_null(p->slot);
  for (uint32_t r = 0; r < f->num_regs; r++) {
    p->pred[r] = f->regs[r].type == PTX_T_PRED ? r : UINT32_MAX;
    p->slot[r] = UINT32_MAX;
  }
  p->why[0] = 0;
  p->rc = px_pack_registers(f, p->pred, p->slot, limit, &p->slots, p->why, sizeof p->why);
}

static void unpack(struct packed *p) {
  free(p->pred);
  free(p->slot);
}

static void live_registers_never_share(void **state) {
  (void)state;
  struct ptx_module *m = parse(loop_ptx);
  const struct ptx_func *f = ptx_find_func(m, "k");
  struct packed p;
  pack(f, 1000, &p);
  assert_int_equal(p.rc, 0);
  for (uint32_t r = 0; r < f->num_regs; r++) {
    if (f->regs[r].type == PTX_T_PRED) assert_int_equal(p.slot[r], UINT32_MAX); /* predicates are not packed */
    else assert_true(p.slot[r] < p.slots);
  }
  /* inv and gx are live through the whole loop: no body temporary, no counter shares their slots */
  const char *loop_regs[] = {"%r12", "%r13", "%r14", "%r15", "%r16", "%r17", "%r18", "%r19", "%r20", "%r1"};
  uint32_t inv = p.slot[reg_of(f, "%r10")], gx = p.slot[reg_of(f, "%r11")];
  assert_int_not_equal(inv, gx);
  for (size_t i = 0; i < sizeof loop_regs / sizeof loop_regs[0]; i++) {
    uint32_t s = p.slot[reg_of(f, loop_regs[i])];
    if (s == inv || s == gx) fail_msg("%s shares a slot with inv or gx", loop_regs[i]);
  }
  /* %r20 (the counter) is live across the back edge and after the loop, so is %r19 */
  assert_int_not_equal(p.slot[reg_of(f, "%r20")], p.slot[reg_of(f, "%r19")]);
  /*
   * An instruction's destination never takes the slot of a source it reads last (handlers of
   * many registers, such as mma's, may write some before they read others).
   */
  for (unsigned i = 2; i < 9; i++) {
    char a[8], b[8];
    snprintf(a, sizeof a, "%%r%u", i);
    snprintf(b, sizeof b, "%%r%u", i + 1);
    assert_int_not_equal(p.slot[reg_of(f, a)], p.slot[reg_of(f, b)]);
  }
  /* the chains take few slots */
  assert_true(p.slots <= 8);
  assert_true(p.slots >= 5);
  unpack(&p);
  ptx_module_free(m);
}

static void a_small_limit_is_refused(void **state) {
  (void)state;
  struct ptx_module *m = parse(loop_ptx);
  const struct ptx_func *f = ptx_find_func(m, "k");
  struct packed p;
  pack(f, 3, &p);
  assert_int_equal(p.rc, 1);
  if (!strstr(p.why, "function \"k\" has ") || !strstr(p.why, "registers live at once (at PTX line ") ||
      !strstr(p.why, "more than the 2 the simulator holds"))
    fail_msg("message: %s", p.why);
  unpack(&p);
  ptx_module_free(m);
}

static void allocation_failures(void **state) {
  (void)state;
  struct ptx_module *m = parse(loop_ptx);
  const struct ptx_func *f = ptx_find_func(m, "k");
  struct packed want;
  pack(f, 1000, &want);
  assert_int_equal(want.rc, 0);
  long n = 0;
  for (;; n++) {
    struct packed p;
    gcap__alloc_fail_after(-1);
    gcap__alloc_fail_after(n);
    pack(f, 1000, &p);
    gcap__alloc_fail_after(-1);
    int rc = p.rc;
    if (rc == 0) {
      assert_int_equal(p.slots, want.slots);
      assert_memory_equal(p.slot, want.slot, f->num_regs * sizeof *p.slot);
    } else {
      assert_int_equal(rc, -1);
    }
    unpack(&p);
    if (rc == 0) break;
    assert_true(n < 1000);
  }
  assert_true(n > 2);
  unpack(&want);
  ptx_module_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(live_registers_never_share),
      cmocka_unit_test(a_small_limit_is_refused),
      cmocka_unit_test(allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
