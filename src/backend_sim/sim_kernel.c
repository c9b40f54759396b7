/* Kernels on the CPU: per-thread and per-block implementations, barriers, worker threads. */
#include "sim_internal.h"

/* Runs every thread of every block, one block after another, each block with its shared memory. */
gcap_status sim_run_kernel(struct sim_context *sc, const struct gcap__launch *l) {
  gcap_sim_kernel_fn fn = l->kernel->sim_fn;
  if (!fn) {
    sc->stats.kernels_stubbed++;
    return GCAP_SUCCESS;
  }
  sc->stats.kernels_executed++;
  gcap_sim_thread t = {.grid_dim = l->grid, .block_dim = l->block};
  t.shared_mem = l->shared_mem_bytes ? sc->shared_mem : NULL;
  for (t.block_idx.z = 0; t.block_idx.z < l->grid.z; t.block_idx.z++)
    for (t.block_idx.y = 0; t.block_idx.y < l->grid.y; t.block_idx.y++)
      for (t.block_idx.x = 0; t.block_idx.x < l->grid.x; t.block_idx.x++)
        for (t.thread_idx.z = 0; t.thread_idx.z < l->block.z; t.thread_idx.z++)
          for (t.thread_idx.y = 0; t.thread_idx.y < l->block.y; t.thread_idx.y++)
            for (t.thread_idx.x = 0; t.thread_idx.x < l->block.x; t.thread_idx.x++) fn(&t, l->args);
  return GCAP_SUCCESS;
}

void gcap_sim_syncthreads(const gcap_sim_thread *t) { (void)t; }
