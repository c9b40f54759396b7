/*
 * libFuzzer harness of the PTX front end: every input is parsed in full and in declarations-only
 * mode. A parse gives a module or an error with a message, never anything else; every index a
 * module holds (registers, variables, labels, functions, call lists, relocations) points inside
 * it, and every name and text is a string a reader can walk, so that a sanitizer report or an
 * abort here is the parser's fault. Each input is then loaded as a module on a simulator context
 * that runs kernels from their PTX, so the executor's lowering meets every module the parser
 * accepts: a load succeeds or fails with INVALID_PTX (or OUT_OF_MEMORY) and a message.
 *
 * What loads is run: each visible kernel is launched on a small grid (1 or 2 blocks of 1 to 64
 * threads, the input choosing), with zeroed arguments (an 8-byte parameter points to a small
 * zeroed device allocation), under every check set (none, memory, sync, shared, init, all) in
 * IMMEDIATE and DEFERRED mode; a launch or its synchronisation succeeds or fails with a message.
 * The simulator's watchdog ends kernels that run on. With the memory check off a wild global
 * pointer is used as it is (as on a GPU), so a module that touches global or generic memory, or
 * calls a function, runs only under the sets that check memory; shared, local and parameter
 * accesses are checked in every set.
 * tests/fuzz/replay.c runs the kept corpus without libFuzzer.
 */
#include <gcap/gcap.h>
#include <gcap/sim.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx/ptx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_harness_cleanup(void);

static volatile unsigned char sink; /* reads that the compiler must keep */

static void check(bool ok) {
  if (!ok) abort();
}

/* The check sets, and a context for each in IMMEDIATE [0] and DEFERRED [1] mode (made when first
 * used, destroyed after a failed launch: a kernel's fault is sticky). */
#define CHECKS_ALL (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT)
static const unsigned check_sets[] = {
    CHECKS_ALL, 0, GCAP_SIM_CHECK_MEMORY, GCAP_SIM_CHECK_SYNC, GCAP_SIM_CHECK_SHARED_RACES, GCAP_SIM_CHECK_INIT};
#define NUM_SETS (sizeof check_sets / sizeof check_sets[0])
#define WATCHDOG_MS 100u  /* a kernel that runs on: LAUNCH_TIMEOUT */
#define POINTEE_BYTES 256 /* what an 8-byte argument points to */
#define MAX_THREADS 64    /* threads of a block (the input chooses 1, 32, 33 or 64; a .reqntid up to this) */
#define MAX_KERNELS 4     /* launched per module and context: kernels that run on cost the watchdog's time */

static gcap_context *sims[NUM_SETS][2];
static unsigned long launches, failed_launches; /* printed at the end when FUZZ_PTX_STATS is set */

void fuzz_harness_cleanup(void) {
  if (getenv("FUZZ_PTX_STATS")) fprintf(stderr, "fuzz_ptx: %lu launches, %lu failed\n", launches, failed_launches);
  for (size_t c = 0; c < NUM_SETS; c++)
    for (int e = 0; e < 2; e++) {
      gcap_context_destroy(sims[c][e]);
      sims[c][e] = NULL;
    }
}

static gcap_context *context(size_t set, int deferred) {
  if (!sims[set][deferred]) {
    gcap_sim_options so;
    gcap_sim_options_init(&so);
    so.kernels = GCAP_SIM_KERNELS_PTX;
    so.checks = check_sets[set];
    so.exec = deferred ? GCAP_SIM_EXEC_DEFERRED : GCAP_SIM_EXEC_IMMEDIATE;
    so.kernel_timeout_ms = WATCHDOG_MS;
    gcap_context_options o;
    gcap_context_options_init(&o);
    o.backend = GCAP_BACKEND_SIM;
    o.sim = &so;
    check(gcap_context_create(&o, &sims[set][deferred]) == GCAP_SUCCESS);
  }
  return sims[set][deferred];
}

static void drop_context(size_t set, int deferred) {
  gcap_context_destroy(sims[set][deferred]);
  sims[set][deferred] = NULL;
}

/* An instruction that may use a wild global address, or hand one to a callee (vprintf). */
static bool touches_global(const struct ptx_instr *in) {
  switch ((enum ptx_op)in->op) {
  case PTX_OP_LD:
  case PTX_OP_LDU:
  case PTX_OP_ST:
  case PTX_OP_ATOM:
  case PTX_OP_RED:
  case PTX_OP_PREFETCH:
  case PTX_OP_PREFETCHU: return in->space == PTX_SPACE_GLOBAL || in->space == PTX_SPACE_GENERIC;
  case PTX_OP_CALL:
  case PTX_OP_CP: return true; /* cp.async's source, cp.async.bulk's */
  default: return false;
  }
}

/* True when every check set may run the module's kernels: none of its functions touches global memory. */
static bool safe_unchecked(const struct ptx_module *pm) {
  for (size_t i = 0; i < pm->num_funcs; i++)
    for (size_t k = 0; k < pm->funcs[i].num_instrs; k++)
      if (touches_global(&pm->funcs[i].instrs[k])) return false;
  return true;
}

/* A launch's shape, from the input's bytes. */
struct shape {
  gcap_dim3 grid, block;
  uint32_t shared;
};

static struct shape shape_of(const uint8_t *data, size_t size, const struct ptx_func *f) {
  static const unsigned threads[] = {1, 32, 33, 64};
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 16777619u;
  struct shape s = {{1 + (h & 1), 1, 1}, {threads[(h >> 1) & 3], 1, 1}, (h >> 3) & 1 ? 64 : 0};
  if (f->reqntid[0]) s.block = (gcap_dim3){f->reqntid[0], f->reqntid[1], f->reqntid[2]};
  return s;
}

/* Zeroed arguments for f's parameters: an 8-byte one holds the address of `pointee`. */
static void **make_args(const struct ptx_func *f, void *pointee) {
  void **args = calloc(f->num_params + 1, sizeof *args);
  check(args != NULL);
  for (size_t i = 0; i < f->num_params; i++) {
    size_t bytes = f->params[i].size < 8 ? 8 : f->params[i].size;
    args[i] = calloc(1, bytes);
    check(args[i] != NULL);
    if (f->params[i].size == 8) memcpy(args[i], &pointee, sizeof pointee);
  }
  return args;
}

static void free_args(const struct ptx_func *f, void **args) {
  for (size_t i = 0; i < f->num_params; i++) free(args[i]);
  free(args);
}

/* Every visible kernel of the module, on one context; false when a launch failed (the context is
 * then the fault's: sticky). */
static bool run_kernels(gcap_context *ctx, gcap_module *m, const struct ptx_module *pm, const uint8_t *data,
                        size_t size) {
  void *pointee = NULL;
  gcap_stream *s = NULL;
  if (gcap_mem_alloc(ctx, POINTEE_BYTES, &pointee) != GCAP_SUCCESS) return false;
  static const unsigned char zeros[POINTEE_BYTES];
  check(gcap_memcpy(ctx, pointee, zeros, POINTEE_BYTES, GCAP_MEMCPY_HOST_TO_DEVICE) == GCAP_SUCCESS);
  check(gcap_stream_create(ctx, &s) == GCAP_SUCCESS);
  bool ok = true;
  unsigned launched = 0;
  for (size_t i = 0; i < pm->num_funcs && ok && launched < MAX_KERNELS; i++) {
    const struct ptx_func *f = &pm->funcs[i];
    gcap_kernel *k = NULL;
    if (!f->is_entry || !f->is_visible || !f->has_body || gcap_module_get_kernel(m, f->name, &k) != GCAP_SUCCESS)
      continue;
    struct shape sh = shape_of(data, size, f);
    if ((uint64_t)sh.block.x * sh.block.y * sh.block.z > MAX_THREADS) continue;
    void **args = make_args(f, pointee);
    gcap_status st = gcap_launch_kernel(s, k, sh.grid, sh.block, sh.shared, args);
    launches++, launched++;
    if (st == GCAP_SUCCESS) st = gcap_stream_synchronize(s);
    free_args(f, args);
    if (st != GCAP_SUCCESS) {
      check(gcap_last_error_message()[0] != '\0');
      failed_launches++;
      ok = false;
    }
  }
  if (ok) {
    check(gcap_stream_destroy(s) == GCAP_SUCCESS);
    check(gcap_mem_free(ctx, pointee) == GCAP_SUCCESS);
  }
  return ok;
}

/* The input as a module image: lowered for the simulator, or refused with a message; what loads
 * runs under every check set in both modes. */
static void load(const uint8_t *data, size_t size, const struct ptx_module *pm) {
  char *text = malloc(size + 1);
  check(text != NULL);
  memcpy(text, data, size);
  text[size] = '\0';
  gcap_module_desc d = {.image = text, .image_size = size + 1};
  bool unchecked_ok = pm && safe_unchecked(pm);
  for (size_t set = 0; set < NUM_SETS; set++)
    for (int deferred = 0; deferred < 2; deferred++) {
      if (set > 0 && (!pm || (!(check_sets[set] & GCAP_SIM_CHECK_MEMORY) && !unchecked_ok))) continue;
      gcap_context *ctx = context(set, deferred);
      gcap_module *m = NULL;
      gcap_status st = gcap_module_load(ctx, &d, &m);
      if (st != GCAP_SUCCESS) {
        check(gcap_last_error_message()[0] != '\0');
        if (set == 0) goto done; /* it loads nowhere */
        continue;
      }
      if (!pm || !run_kernels(ctx, m, pm, data, size)) {
        if (pm) drop_context(set, deferred);
        else check(gcap_module_unload(m) == GCAP_SUCCESS);
        continue;
      }
      check(gcap_module_unload(m) == GCAP_SUCCESS);
    }
done:
  free(text);
}

static size_t walk(const char *s) {
  check(s != NULL);
  return strlen(s);
}

static void check_var(const struct ptx_module *m, const struct ptx_var *v) {
  walk(v->name);
  check(v->size <= ((size_t)1 << 30) && v->space <= PTX_SPACE_CONST && ptx_type_size(v->type) > 0);
  if (v->init && v->size) sink ^= v->init[0] ^ v->init[v->size - 1];
  for (size_t r = 0; r < v->num_relocs; r++)
    check(v->relocs[r].var < m->num_vars && v->relocs[r].offset + 8 <= v->size);
}

static void check_operand(const struct ptx_module *m, const struct ptx_func *f, const struct ptx_operand *o) {
  size_t vars[] = {m->num_vars, f->num_params, f->num_rets, f->num_vars};
  switch (o->kind) {
  case PTX_OPND_REG: check(o->index < f->num_regs); break;
  case PTX_OPND_SREG: check(o->sreg < PTX_SREG_COUNT && o->comp < 3); break;
  case PTX_OPND_SYM: check(o->scope <= PTX_SCOPE_BODY && o->index < vars[o->scope]); break;
  case PTX_OPND_ADDR:
    if (o->base == PTX_ADDR_REG) check(o->index < f->num_regs);
    if (o->base == PTX_ADDR_SYM) check(o->scope <= PTX_SCOPE_BODY && o->index < vars[o->scope]);
    break;
  case PTX_OPND_VEC:
    check(o->count >= 1 && o->count <= PTX_MAX_VEC);
    for (unsigned e = 0; e < o->count; e++)
      if (o->elems[e].kind == PTX_OPND_REG) check(o->elems[e].reg < f->num_regs);
    break;
  case PTX_OPND_LABEL: check(o->index <= f->num_instrs); break;
  case PTX_OPND_FUNC: check(o->index < m->num_funcs); break;
  default: check(o->kind == PTX_OPND_IMM || o->kind == PTX_OPND_SINK); break;
  }
}

static void check_instr(const struct ptx_module *m, const struct ptx_func *f, const struct ptx_instr *in) {
  check(in->op < PTX_OP_COUNT && in->num_operands <= PTX_MAX_OPERANDS && walk(in->text) > 0);
  check(in->guard < (int64_t)f->num_regs && in->dest2 < (int64_t)f->num_regs && in->line > 0 && in->column > 0);
  for (unsigned i = 0; i < in->num_operands; i++) check_operand(m, f, &in->opnd[i]);
  for (unsigned i = 0; i < in->num_call_rets; i++) check_operand(m, f, &in->call_rets[i]);
  for (unsigned i = 0; i < in->num_call_args; i++) check_operand(m, f, &in->call_args[i]);
}

static void check_module(const struct ptx_module *m, enum ptx_parse_mode mode) {
  check(m->address_size == 64);
  for (size_t i = 0; i < m->num_vars; i++) check_var(m, &m->vars[i]);
  for (size_t i = 0; i < m->num_files; i++)
    if (m->files[i]) walk(m->files[i]);
  for (size_t i = 0; i < m->num_funcs; i++) {
    const struct ptx_func *f = &m->funcs[i];
    check(walk(f->name) > 0 && (mode == PTX_PARSE_FULL || f->num_instrs == 0));
    for (size_t k = 0; k < f->num_params; k++) check_var(m, &f->params[k]);
    for (size_t k = 0; k < f->num_rets; k++) check_var(m, &f->rets[k]);
    for (size_t k = 0; k < f->num_vars; k++) check_var(m, &f->vars[k]);
    for (size_t k = 0; k < f->num_regs; k++) walk(f->regs[k].name);
    for (size_t k = 0; k < f->num_instrs; k++) check_instr(m, f, &f->instrs[k]);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct ptx_module *full = NULL;
  for (int mode = PTX_PARSE_FULL; mode <= PTX_PARSE_DECLS; mode++) {
    struct ptx_error err;
    struct ptx_module *m = ptx_parse((const char *)data, size, (enum ptx_parse_mode)mode, &err);
    if (m) check_module(m, (enum ptx_parse_mode)mode);
    else check(memchr(err.message, '\0', sizeof err.message) != NULL && err.message[0] != '\0');
    if (mode == PTX_PARSE_FULL) full = m;
    else ptx_module_free(m);
  }
  load(data, size, full);
  ptx_module_free(full);
  return 0;
}
