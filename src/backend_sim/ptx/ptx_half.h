/*
 * Half-precision values for the executor's files (ptx_half.c): the arithmetic of .f16, .bf16
 * and their packed .x2 forms, their comparisons, and the rounding the atomics use.
 */
#ifndef GCAP_SIM_PTX_HALF_H
#define GCAP_SIM_PTX_HALF_H

#include <stdbool.h>
#include <stdint.h>

#include "ptx/ptx.h"

struct px_lower;
struct px_ins;

/*
 * Lowers add, sub, mul, fma, neg, abs, min, max, ex2, tanh, setp and set of the half types
 * (.f16, .f16x2, .bf16, .bf16x2; set and setp by their source type), and cvt to or from .e4m3x2
 * and .e5m2x2. 1 when it filled `in`, 0 when the instruction is not one of these, -1 after
 * px_refuse or px_unsupported.
 */
int px_lower_half(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in);

/* The value of a binary16 (bf false) or bfloat16 (bf true) bit pattern; exact. */
float px_half_value(bool bf, uint32_t h);

/*
 * x rounded once to nearest (ties to even) to binary16 or bfloat16. `tail` says where the exact
 * value lies when x is not it: above x in magnitude (> 0), below (< 0), or x is exact (0). NaN
 * gives the canonical NaN 0x7fff, overflow infinity.
 */
uint32_t px_half_round(bool bf, double x, int tail);

/* a + b of two half values of the format, rounded once to nearest even (atom.add.noftz). */
static inline uint32_t px_half_add(bool bf, uint32_t a, uint32_t b) {
  return px_half_round(bf, (double)px_half_value(bf, a) + (double)px_half_value(bf, b), 0);
}

#endif /* GCAP_SIM_PTX_HALF_H */
