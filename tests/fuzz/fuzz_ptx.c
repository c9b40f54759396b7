/*
 * libFuzzer harness of the PTX front end: every input is parsed in full and in declarations-only
 * mode. A parse gives a module or an error with a message, never anything else; every index a
 * module holds (registers, variables, labels, functions, call lists, relocations) points inside
 * it, and every name and text is a string a reader can walk, so that a sanitizer report or an
 * abort here is the parser's fault. Each input is then loaded as a module on a simulator context
 * that runs kernels from their PTX, so the executor's lowering meets every module the parser
 * accepts: a load succeeds or fails with INVALID_PTX (or OUT_OF_MEMORY) and a message.
 * tests/fuzz/replay.c runs the kept corpus without libFuzzer.
 */
#include <gcap/gcap.h>
#include <gcap/sim.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_harness_cleanup(void);

static volatile unsigned char sink; /* reads that the compiler must keep */

static void check(bool ok) {
  if (!ok) abort();
}

static gcap_context *sim;

void fuzz_harness_cleanup(void) {
  gcap_context_destroy(sim);
  sim = NULL;
}

/* The input as a module image: lowered for the simulator, or refused with a message. */
static void load(const uint8_t *data, size_t size) {
  if (!sim) {
    gcap_sim_options so;
    gcap_sim_options_init(&so);
    so.kernels = GCAP_SIM_KERNELS_PTX;
    gcap_context_options o;
    gcap_context_options_init(&o);
    o.backend = GCAP_BACKEND_SIM;
    o.sim = &so;
    check(gcap_context_create(&o, &sim) == GCAP_SUCCESS);
  }
  char *text = malloc(size + 1);
  check(text != NULL);
  memcpy(text, data, size);
  text[size] = '\0';
  gcap_module_desc d = {.image = text, .image_size = size + 1};
  gcap_module *m = NULL;
  gcap_status st = gcap_module_load(sim, &d, &m);
  if (st == GCAP_SUCCESS) check(gcap_module_unload(m) == GCAP_SUCCESS);
  else check(gcap_last_error_message()[0] != '\0');
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
    check(o->count >= 1 && o->count <= 4);
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
  for (int mode = PTX_PARSE_FULL; mode <= PTX_PARSE_DECLS; mode++) {
    struct ptx_error err;
    struct ptx_module *m = ptx_parse((const char *)data, size, (enum ptx_parse_mode)mode, &err);
    if (m) check_module(m, (enum ptx_parse_mode)mode);
    else check(memchr(err.message, '\0', sizeof err.message) != NULL && err.message[0] != '\0');
    ptx_module_free(m);
  }
  load(data, size);
  return 0;
}
