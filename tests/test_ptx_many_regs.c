/*
 * Kernels that declare more value registers than a simulator frame holds, as fully unrolled
 * compiler output does: their registers share slots by live range. A generated kernel of about
 * 40,000 registers in single-assignment style (a window of values live at once, 64-bit values
 * among them, a loop whose trip count differs between lanes and carries values across its back
 * edge, a guarded write that keeps the old value in the other lanes, narrow shared-memory
 * address bases, calls with register arguments) runs bit for bit against the same program
 * evaluated in C, in IMMEDIATE and DEFERRED with every check on. One with too many values live
 * at once is refused at launch, saying how many and the limit.
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

#include "common.h"
#include "ptx_util.h"

enum { BLOCK = 64, BLOCKS = 2, THREADS = BLOCK * BLOCKS, STEPS_A = 19000, STEPS_LOOP = 40, STEPS_B = 18000 };
enum { MAX_R = 50000, MAX_RD = 8000 };

/* The program, written as PTX (emit) and evaluated for one thread at the same time. */
struct gen {
  bool emit;
  char *text;
  size_t len, cap;
  uint32_t *r; /* the thread's registers, as the program leaves them */
  uint64_t *rd;
  unsigned nr, nrd; /* registers handed out */
  unsigned w[8];    /* the window of live values, oldest first */
  unsigned tid;
  uint32_t result; /* the thread's output (evaluation) */
};

static void emitf(struct gen *g, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void emitf(struct gen *g, const char *fmt, ...) {
  if (!g->emit) return;
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int n = vsnprintf(g->text + g->len, g->cap - g->len, fmt, ap);
    va_end(ap);
    assert_true(n >= 0);
    if (g->len + (size_t)n < g->cap) {
      g->len += (size_t)n;
      return;
    }
    g->cap = g->cap * 2 + (size_t)n + 1024;
    g->text = realloc(g->text, g->cap);
    assert_non_null(g->text);
  }
}

static unsigned new_r(struct gen *g) {
  assert_true(g->nr < MAX_R);
  return g->nr++;
}
static unsigned new_rd(struct gen *g) {
  assert_true(g->nrd < MAX_RD);
  return g->nrd++;
}

static uint32_t konst(unsigned s) { return ((s % 997u) * 0x9e3779b9u) ^ 0x5bd1e995u; } /* few distinct immediates */

static void push(struct gen *g, unsigned d) {
  memmove(g->w, g->w + 1, 7 * sizeof g->w[0]);
  g->w[7] = d;
}

/* One step: a new register from the window. */
static void step(struct gen *g, unsigned s) {
  unsigned *w = g->w, d = 0;
  uint32_t *r = g->r;
  if (s % 16 == 15) { /* through 64 bits */
    unsigned a = new_rd(g), b = new_rd(g);
    d = new_r(g);
    emitf(g, "mul.wide.u32 %%rd%u, %%r%u, %%r%u;\nshr.u64 %%rd%u, %%rd%u, %u;\ncvt.u32.u64 %%r%u, %%rd%u;\n", a, w[7],
          w[3], b, a, 13 + s % 7, d, b);
    g->rd[a] = (uint64_t)r[w[7]] * r[w[3]];
    g->rd[b] = g->rd[a] >> (13 + s % 7);
    r[d] = (uint32_t)g->rd[b];
  } else {
    d = new_r(g);
    switch (s % 4) {
    case 0:
      emitf(g, "add.u32 %%r%u, %%r%u, %%r%u;\n", d, w[7], w[0]);
      r[d] = r[w[7]] + r[w[0]];
      break;
    case 1:
      emitf(g, "xor.b32 %%r%u, %%r%u, 0x%08x;\n", d, w[7], konst(s));
      r[d] = r[w[7]] ^ konst(s);
      break;
    case 2:
      emitf(g, "mul.lo.u32 %%r%u, %%r%u, 0x%08x;\n", d, w[7], konst(s) | 1u);
      r[d] = r[w[7]] * (konst(s) | 1u);
      break;
    default:
      emitf(g, "sub.u32 %%r%u, %%r%u, %%r%u;\n", d, w[7], w[3]);
      r[d] = r[w[7]] - r[w[3]];
      break;
    }
  }
  push(g, d);
}

/* A store to the thread's shared word through a 32-bit base register, and the load back. */
static void through_shared(struct gen *g) {
  unsigned a = new_r(g), o = new_r(g), b = new_r(g), d = new_r(g);
  emitf(g, "mov.u32 %%r%u, sh;\nshl.b32 %%r%u, %%r%u, 2;\nadd.u32 %%r%u, %%r%u, %%r%u;\n", a, o, g->tid, b, a, o);
  emitf(g, "st.shared.u32 [%%r%u], %%r%u;\nld.shared.u32 %%r%u, [%%r%u+0];\n", b, g->w[7], d, b);
  g->r[d] = g->r[g->w[7]];
  push(g, d);
}

/* A call of `twice` with registers as its argument and result. */
static void call_twice(struct gen *g) {
  unsigned d = new_r(g);
  emitf(g, "call.uni (%%r%u), twice, (%%r%u);\n", d, g->w[7]);
  g->r[d] = g->r[g->w[7]] * 2u;
  push(g, d);
}

/* Many values live at once for a moment (they take slots freed long before), then folded into one. */
static void burst(struct gen *g) {
  unsigned v[24], acc = g->w[7];
  for (unsigned k = 0; k < 24; k++) {
    v[k] = new_r(g);
    emitf(g, "add.u32 %%r%u, %%r%u, %u;\n", v[k], g->w[7], 3 * k + 1);
    g->r[v[k]] = g->r[g->w[7]] + 3 * k + 1;
  }
  for (unsigned k = 0; k < 24; k++) {
    unsigned d = new_r(g);
    emitf(g, "%s %%r%u, %%r%u, %%r%u;\n", k % 2 ? "xor.b32" : "mul.lo.u32", d, acc, v[k]);
    g->r[d] = k % 2 ? g->r[acc] ^ g->r[v[k]] : g->r[acc] * g->r[v[k]];
    acc = d;
  }
  push(g, acc);
}

static void steps(struct gen *g, unsigned from, unsigned count) {
  for (unsigned s = from; s < from + count; s++) {
    step(g, s);
    if (s % 1000 == 500) through_shared(g);
    if (s % 5000 == 2500) call_twice(g);
  }
}

/* Writes the program (emit) or runs it for thread `gtid` of input x (evaluation). */
static void program(struct gen *g, unsigned tid, uint32_t x) {
  uint32_t *r = g->r;
  g->nr = 1;
  g->nrd = 1;
  /* %rd1 = &out[gid], %r1 = tid, %r2 = x */
  emitf(
      g,
      "ld.param.u64 %%rd1, [p_in];\nld.param.u64 %%rd2, [p_out];\n"
      "mov.u32 %%r1, %%tid.x;\nmov.u32 %%r2, %%ctaid.x;\nmov.u32 %%r3, %%ntid.x;\nmad.lo.s32 %%r4, %%r2, %%r3, %%r1;\n"
      "mul.wide.u32 %%rd3, %%r4, 4;\nadd.s64 %%rd4, %%rd1, %%rd3;\nadd.s64 %%rd5, %%rd2, %%rd3;\n"
      "ld.global.u32 %%r5, [%%rd4];\n");
  g->nr = 6;
  g->nrd = 6;
  g->tid = 1;
  r[1] = tid;
  r[5] = x;
  for (unsigned k = 0; k < 8; k++) {
    unsigned d = new_r(g);
    emitf(g, "mad.lo.s32 %%r%u, %%r5, %u, %u;\n", d, 2 * k + 1, konst(k) & 0xffffu);
    r[d] = r[5] * (2 * k + 1) + (konst(k) & 0xffffu);
    g->w[k] = d;
  }
  unsigned keep = new_r(g);
  emitf(g, "xor.b32 %%r%u, %%r%u, 0x1234;\n", keep, g->w[0]);
  r[keep] = r[g->w[0]] ^ 0x1234u;
  /* The guarded write: pv is written for every lane, much later again for lanes tid % 4 == 1 only. */
  steps(g, 0, 100);
  unsigned pv = new_r(g), t = new_r(g);
  emitf(g, "add.u32 %%r%u, %%r%u, 5;\nand.b32 %%r%u, %%r1, 3;\nsetp.eq.u32 %%p3, %%r%u, 1;\n", pv, g->w[7], t, t);
  r[pv] = r[g->w[7]] + 5;
  r[t] = tid & 3u;
  steps(g, 100, STEPS_A - 100);
  emitf(g, "@%%p3 add.u32 %%r%u, %%r%u, 77;\n", pv, g->w[7]);
  if ((tid & 3u) == 1) r[pv] = r[g->w[7]] + 77;
  {
    unsigned d = new_r(g);
    emitf(g, "xor.b32 %%r%u, %%r%u, %%r%u;\n", d, g->w[7], pv);
    r[d] = r[g->w[7]] ^ r[pv];
    push(g, d);
  }
  /*
   * The loop: 2 to 5 trips by lane; c[] carry the window across the back edge. inv is read at
   * the top of the body only, and gx written there under a guard and read in the middle: both
   * hold their values across the back edge (gx from before the loop in the lanes the guard skips).
   */
  unsigned inv = new_r(g), gx = new_r(g);
  emitf(g, "xor.b32 %%r%u, %%r%u, 0x77;\nadd.u32 %%r%u, %%r%u, 3;\n", inv, g->w[7], gx, g->w[6]);
  r[inv] = r[g->w[7]] ^ 0x77u;
  r[gx] = r[g->w[6]] + 3;
  unsigned c[8], cnt = new_r(g), lim0 = new_r(g), lim = new_r(g);
  for (unsigned k = 0; k < 8; k++) {
    c[k] = new_r(g);
    emitf(g, "mov.b32 %%r%u, %%r%u;\n", c[k], g->w[k]);
    r[c[k]] = r[g->w[k]];
  }
  emitf(g, "mov.u32 %%r%u, 0;\nand.b32 %%r%u, %%r1, 3;\nadd.u32 %%r%u, %%r%u, 2;\n$L_loop:\n", cnt, lim0, lim, lim0);
  r[cnt] = 0;
  r[lim0] = tid & 3u;
  r[lim] = r[lim0] + 2;
  unsigned body = g->nr, body_rd = g->nrd, end = 0, end_rd = 0;
  do {
    g->nr = body;
    g->nrd = body_rd;
    memcpy(g->w, c, sizeof c);
    unsigned d = new_r(g);
    emitf(g, "add.u32 %%r%u, %%r%u, %%r%u;\n@%%p3 add.u32 %%r%u, %%r%u, 9;\n", d, g->w[7], inv, gx, g->w[7]);
    r[d] = r[g->w[7]] + r[inv];
    if ((tid & 3u) == 1) r[gx] = r[g->w[7]] + 9;
    push(g, d);
    steps(g, STEPS_A, STEPS_LOOP / 2);
    d = new_r(g);
    emitf(g, "xor.b32 %%r%u, %%r%u, %%r%u;\n", d, g->w[7], gx);
    r[d] = r[g->w[7]] ^ r[gx];
    push(g, d);
    burst(g);
    steps(g, STEPS_A + STEPS_LOOP / 2, STEPS_LOOP / 2);
    for (unsigned k = 0; k < 8; k++) {
      emitf(g, "mov.b32 %%r%u, %%r%u;\n", c[k], g->w[k]);
      r[c[k]] = r[g->w[k]];
    }
    emitf(g, "add.u32 %%r%u, %%r%u, 1;\nsetp.lt.u32 %%p2, %%r%u, %%r%u;\n@%%p2 bra $L_loop;\n", cnt, cnt, cnt, lim);
    r[cnt]++;
    end = g->nr;
    end_rd = g->nrd;
  } while (!g->emit && r[cnt] < r[lim]);
  g->nr = end;
  g->nrd = end_rd;
  memcpy(g->w, c, sizeof c);
  steps(g, STEPS_A + STEPS_LOOP, STEPS_B);
  /* out = the window, keep and pv folded together */
  unsigned acc = keep;
  for (unsigned k = 0; k < 8; k++) {
    unsigned d = new_r(g);
    emitf(g, "add.u32 %%r%u, %%r%u, %%r%u;\n", d, acc, g->w[k]);
    r[d] = r[acc] + r[g->w[k]];
    acc = d;
  }
  unsigned fin = new_r(g);
  emitf(g, "xor.b32 %%r%u, %%r%u, %%r%u;\nst.global.u32 [%%rd5], %%r%u;\nret;\n", fin, acc, pv, fin);
  r[fin] = r[acc] ^ r[pv];
  g->result = r[fin]; /* the result */
}

static struct gen *gen_new(bool emit) {
  struct gen *g = calloc(1, sizeof *g);
  assert_non_null(g);
  g->emit = emit;
  g->cap = emit ? 1 << 20 : 0;
  g->text = emit ? malloc(g->cap) : NULL;
  assert_true(!emit || g->text);
  g->r = calloc(MAX_R, sizeof *g->r);
  g->rd = calloc(MAX_RD, sizeof *g->rd);
  assert_non_null(g->r);
  assert_non_null(g->rd);
  return g;
}

static void gen_free(struct gen *g) {
  free(g->text);
  free(g->r);
  free(g->rd);
  free(g);
}

/* The whole module: `many` (the generated kernel) and `twice`. */
static char *many_ptx(unsigned *num_regs) {
  struct gen *g = gen_new(true);
  program(g, 0, 0);
  size_t size = g->len + 4096;
  char *text = malloc(size);
  assert_non_null(text);
  snprintf(text, size,
           ".version 7.8\n.target sm_80\n.address_size 64\n"
           ".func (.param .b32 rv) twice(.param .b32 x)\n{\n  .reg .b32 %%t<3>;\n"
           "  ld.param.b32 %%t1, [x];\n  shl.b32 %%t2, %%t1, 1;\n  st.param.b32 [rv], %%t2;\n  ret;\n}\n"
           ".visible .entry many(.param .u64 p_in, .param .u64 p_out)\n{\n"
           "  .reg .pred %%p<4>;\n  .reg .b32 %%r<%u>;\n  .reg .b64 %%rd<%u>;\n"
           "  .shared .align 4 .b8 sh[%u];\n%s}\n",
           g->nr, g->nrd, BLOCK * 4, g->text);
  *num_regs = g->nr + g->nrd;
  gen_free(g);
  return text;
}

static void run_many(gcap_context *ctx) {
  unsigned regs = 0;
  char *text = many_ptx(&regs);
  assert_true(regs > 40000); /* far above the 16383 slots of a frame */
  gcap_module *m = ptx_load_text(ctx, text);
  free(text);
  uint32_t in[THREADS], out[THREADS], want[THREADS];
  uint64_t seed = 35;
  for (unsigned i = 0; i < THREADS; i++) in[i] = ptx_rand32(&seed);
  in[3] = 0;
  in[4] = 0xffffffffu;
  void *din = ptx_dev(ctx, in, sizeof in), *dout = ptx_dev(ctx, NULL, sizeof out);
  void *args[] = {&din, &dout};
  gcap_status st = ptx_launch_on(ctx, m, "many", (gcap_dim3){BLOCKS, 1, 1}, (gcap_dim3){BLOCK, 1, 1}, 0, args);
  if (st != GCAP_SUCCESS) fail_msg("launch: status %d: %s", (int)st, gcap_last_error_message());
  assert_int_equal(gcap_context_synchronize(ctx), GCAP_SUCCESS);
  ptx_get(ctx, out, dout, sizeof out);
  struct gen *g = gen_new(false);
  for (unsigned i = 0; i < THREADS; i++) {
    program(g, i % BLOCK, in[i]);
    want[i] = g->result;
  }
  gen_free(g);
  for (unsigned i = 0; i < THREADS; i++)
    ptx_expect(out[i] == want[i], "many", "out", i, "0x%08x, want 0x%08x", out[i], want[i]);
}

static void many_registers_run_immediate(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(PTX_CHECKS_ALL);
  run_many(ctx);
  gcap_context_destroy(ctx);
}

static void many_registers_run_deferred(void **state) {
  (void)state;
  gcap_sim_options so;
  ptx_sim_options(&so, PTX_CHECKS_ALL);
  so.exec = GCAP_SIM_EXEC_DEFERRED;
  so.threads = 2;
  gcap_context *ctx = test_sim_context_create(&so);
  run_many(ctx);
  gcap_context_destroy(ctx);
}

/* 17,000 values live at once (all summed at the end): refused at launch; the module loads. */
static void too_many_live_at_once_is_refused(void **state) {
  (void)state;
  enum { LIVE = 17000 };
  struct gen *g = gen_new(true);
  emitf(g,
        ".version 7.8\n.target sm_80\n.address_size 64\n"
        ".visible .entry wide(.param .u64 p_out)\n{\n  .reg .b32 %%r<%u>;\n  .reg .b64 %%rd<2>;\n"
        "ld.param.u64 %%rd1, [p_out];\nmov.u32 %%r0, %%tid.x;\n",
        2 * LIVE + 1);
  for (unsigned i = 1; i <= LIVE; i++) emitf(g, "add.u32 %%r%u, %%r0, %u;\n", i, i);
  emitf(g, "mov.u32 %%r%u, 0;\n", LIVE + 1);
  for (unsigned i = 1; i < LIVE; i++) emitf(g, "add.u32 %%r%u, %%r%u, %%r%u;\n", LIVE + 1 + i, LIVE + i, i);
  emitf(g, "st.global.u32 [%%rd1], %%r%u;\nret;\n}\n", 2 * LIVE);
  gcap_context *ctx = ptx_sim_context(PTX_CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, g->text);
  gen_free(g);
  void *dout = ptx_dev(ctx, NULL, 4);
  void *args[] = {&dout};
  assert_int_equal(ptx_launch_on(ctx, m, "wide", (gcap_dim3){1, 1, 1}, (gcap_dim3){32, 1, 1}, 0, args),
                   GCAP_ERROR_NOT_SUPPORTED);
  const char *msg = gcap_last_error_message();
  assert_non_null(strstr(msg, "kernel \"wide\""));
  assert_non_null(strstr(msg, "registers live at once"));
  assert_non_null(strstr(msg, "more than the 16382 the simulator holds"));
  gcap_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(many_registers_run_immediate),
      cmocka_unit_test(many_registers_run_deferred),
      cmocka_unit_test(too_many_live_at_once_is_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
