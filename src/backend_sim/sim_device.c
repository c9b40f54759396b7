/*
 * The size check of cooperative launches: how many blocks of a launch the simulated device (the
 * H100 of ptx_exec.h's PX_DEVICE_* figures) holds at once, counted as CUDA's occupancy
 * calculator counts them, and COOPERATIVE_LAUNCH_TOO_LARGE for a grid with more.
 */
#include <stdint.h>

#include "base/error.h"
#include "backend_sim/ptx/ptx_exec.h"
#include "sim_internal.h"

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

gcap_status sim_cooperative_check(const struct gcap__backend_ctx *b, const struct gcap__launch *l, int regs,
                                  int static_shared) {
  (void)b;
  uint64_t threads = (uint64_t)l->block.x * l->block.y * l->block.z, warps = (threads + 31) / 32;
  uint64_t by_threads = PX_DEVICE_THREADS_PER_SM / (warps * 32);
  uint64_t regs_per_warp = ((uint64_t)(regs > 0 ? regs : 0) * 32 + 255) / 256 * 256;
  uint64_t by_regs = regs_per_warp ? PX_DEVICE_REGS_PER_SM / regs_per_warp / warps : UINT64_MAX;
  uint64_t shared =
      (uint64_t)(static_shared > 0 ? static_shared : 0) + l->shared_mem_bytes + PX_DEVICE_RESERVED_PER_BLOCK;
  uint64_t by_shared = PX_DEVICE_SHARED_PER_SM / shared;
  uint64_t per_sm = min_u64(min_u64(PX_DEVICE_BLOCKS_PER_SM, by_threads), min_u64(by_regs, by_shared));
  uint64_t most = per_sm * PX_DEVICE_SMS, blocks = (uint64_t)l->grid.x * l->grid.y * l->grid.z;
  if (blocks <= most) return GCAP_SUCCESS;
  const char *bound = per_sm == PX_DEVICE_BLOCKS_PER_SM ? "blocks"
                      : per_sm == by_threads            ? "threads"
                      : per_sm == by_regs               ? "registers"
                                                        : "shared memory";
  return gcap__fail(GCAP_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
                    "kernel \"%s\": grid (%u, %u, %u) has %llu blocks, but the simulated device holds at most %llu at "
                    "once (%llu a multiprocessor, bound by its %s, x %u multiprocessors; blocks of %llu threads, %d "
                    "registers a thread, %llu bytes of shared memory with the %u the system reserves)",
                    l->kernel->name, l->grid.x, l->grid.y, l->grid.z, (unsigned long long)blocks,
                    (unsigned long long)most, (unsigned long long)per_sm, bound, PX_DEVICE_SMS,
                    (unsigned long long)threads, regs, (unsigned long long)shared, PX_DEVICE_RESERVED_PER_BLOCK);
}
