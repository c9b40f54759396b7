/* gcap/cuda.h: the native handles behind gcap objects, and native graphs as child nodes. */
#include <gcap/cuda.h>

#include "cuda_internal.h"
#include "base/error.h"

static bool on_cuda(const struct gcap__backend_ctx *b) { return b && b->ops == &gcap__cuda_ops; }

CUstream gcap_cuda_stream(gcap_stream *s) {
  GCAP_ENTER();
  struct gcap__backend_ctx *b = NULL;
  void *impl = gcap__stream_backend(s, &b);
  return impl && on_cuda(b) ? (CUstream)impl : NULL;
}

CUcontext gcap_cuda_context(gcap_context *ctx) {
  GCAP_ENTER();
  struct gcap__backend_ctx *b = gcap__context_backend(ctx);
  return on_cuda(b) ? cuda_context_from(b)->ctx : NULL;
}

CUgraphExec gcap_cuda_graph_exec(gcap_exec *x) {
  GCAP_ENTER();
  struct gcap__backend_ctx *b = NULL;
  void *impl = gcap__exec_backend(x, &b);
  if (!impl || !on_cuda(b)) return NULL;
  return cuda_exec_native(impl);
}

gcap_status gcap_cuda_graph_add_native_child(gcap_graph *g, gcap_node *const *deps, size_t num_deps, CUgraph native,
                                             gcap_node **out) {
  GCAP_ENTER();
  return gcap__graph_add_native(g, deps, num_deps, native, out);
}
