/* Saved graphs: gcap_graph_save and gcap_graph_load (docs/format.md). */
#include "graph.h"

gcap_status gcap_graph_save(const gcap_graph *g, FILE *out) {
  GCAP_ENTER();
  return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "saving graphs is not supported by this version of gcap");
}

gcap_status gcap_graph_load(gcap_context *ctx, FILE *in, gcap_graph **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "loading graphs is not supported by this version of gcap");
}
