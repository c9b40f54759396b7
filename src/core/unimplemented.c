/*
 * Entry points of API.md that later versions implement: graph-owned memory and pools, updating
 * race analysis and saved graphs. Each returns NOT_SUPPORTED and says so.
 */
#include "graph.h"

static gcap_status not_yet(const char *feature) {
  return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "%s is not supported by this version of gcap", feature);
}

gcap_status gcap_mem_alloc_async(gcap_stream *s, size_t bytes, void **dptr) {
  GCAP_ENTER();
  if (dptr) *dptr = NULL;
  gcap_status st = gcap__check_stream(s, "stream");
  return st != GCAP_SUCCESS ? st : not_yet("stream-ordered allocation");
}

gcap_status gcap_mem_free_async(gcap_stream *s, void *dptr) {
  GCAP_ENTER();
  gcap_status st = gcap__check_stream(s, "stream");
  return st != GCAP_SUCCESS ? st : not_yet("stream-ordered allocation");
}

gcap_status gcap_pool_create(gcap_context *ctx, gcap_pool **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  gcap_status st = gcap__check_context(ctx, "ctx");
  return st != GCAP_SUCCESS ? st : not_yet("memory pools");
}

gcap_pool *gcap_pool_retain(gcap_pool *p) { return p; }

void gcap_pool_release(gcap_pool *p) {}

gcap_status gcap_pool_get_stats(const gcap_pool *p, gcap_pool_stats *out) {
  GCAP_ENTER();
  return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "pool %p is not a live pool", (const void *)p);
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
