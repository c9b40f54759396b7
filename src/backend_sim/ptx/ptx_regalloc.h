/*
 * Register packing for functions that declare more value registers than a frame holds
 * (ptx_regalloc.c). Compilers emit registers in single-assignment style: a fully unrolled
 * kernel declares tens of thousands while only a few hundred hold a value at any one point.
 */
#ifndef GCAP_SIM_PTX_REGALLOC_H
#define GCAP_SIM_PTX_REGALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "ptx/ptx.h"

/*
 * Gives the value registers of pf (those with pred_of_reg[r] == UINT32_MAX) slots by live range:
 * registers whose ranges (over the instructions in order, covering every point where each holds
 * a value a later instruction may read) do not overlap share a slot. On success slot_of_reg[r] is
 * rewritten for every value register, *num_slots is the slots used and 0 is returned. When more
 * than `limit` - 1 slots would be needed, 1 is returned and `why` says how many registers are live
 * at once and where; -1 when memory runs out.
 */
int px_pack_registers(const struct ptx_func *pf, const uint32_t *pred_of_reg, uint32_t *slot_of_reg, unsigned limit,
                      unsigned *num_slots, char *why, size_t why_size);

#endif /* GCAP_SIM_PTX_REGALLOC_H */
