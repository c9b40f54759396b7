/* What a backend's native-handle getters (gcap/cuda.h) need from the core: checked handles. */
#include "exec.h"

struct gcap__backend_ctx *gcap__context_backend(gcap_context *ctx) {
  return gcap__check_context(ctx, "ctx") == GCAP_SUCCESS ? ctx->backend : NULL;
}

void *gcap__stream_backend(gcap_stream *s, struct gcap__backend_ctx **b) {
  if (gcap__check_stream(s, "stream") != GCAP_SUCCESS) return NULL;
  *b = s->ctx->backend;
  return s->impl;
}

void *gcap__exec_backend(gcap_exec *x, struct gcap__backend_ctx **b) {
  if (gcap__check_exec(x, "exec") != GCAP_SUCCESS) return NULL;
  *b = x->ctx->backend;
  return x->impl;
}
