/*
 * Entry points of API.md that later versions implement: race analysis and saved graphs. Each returns NOT_SUPPORTED and says so.
 */
#include "graph.h"

static gcap_status not_yet(const char *feature) {
  return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "%s is not supported by this version of gcap", feature);
}

gcap_status gcap_graph_find_races(const gcap_graph *g, gcap_race *races, size_t *count) {
  GCAP_ENTER();
  return not_yet("race analysis");
}

gcap_status gcap_graph_save(const gcap_graph *g, FILE *out) {
  GCAP_ENTER();
  return not_yet("saving graphs");
}

gcap_status gcap_graph_load(gcap_context *ctx, FILE *in, gcap_graph **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  return not_yet("loading graphs");
}
