/*
 * libFuzzer harness of gcap_graph_load. Any input must give a status and a message, never a
 * crash, leak or sanitizer report; an input that loads must save, load and save again to the
 * same bytes, and survive race analysis and DOT output.
 */
#define _GNU_SOURCE /* fmemopen, open_memstream */
#include <gcap/gcap.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_harness_cleanup(void);

static gcap_context *ctx;

/* For the replay driver, so that leak checkers see everything freed. */
void fuzz_harness_cleanup(void) {
  gcap_context_destroy(ctx);
  ctx = NULL;
}

static gcap_context *context(void) {
  if (ctx) return ctx;
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  if (gcap_context_create(&o, &ctx) != GCAP_SUCCESS || fuzz_load_module(ctx) != GCAP_SUCCESS) abort();
  return ctx;
}

/* The saved form of g, or NULL. */
static char *saved(const gcap_graph *g, size_t *len) {
  char *text = NULL;
  FILE *f = open_memstream(&text, len);
  if (!f) abort();
  gcap_status st = gcap_graph_save(g, f);
  fclose(f);
  if (st == GCAP_SUCCESS) return text;
  free(text);
  return NULL;
}

static gcap_graph *loaded(const void *data, size_t size) {
  FILE *f = fmemopen((void *)data, size, "r");
  if (!f) return NULL;
  gcap_graph *g = (gcap_graph *)&g;
  gcap_status st = gcap_graph_load(context(), f, &g);
  fclose(f);
  if (st != GCAP_SUCCESS && (g != NULL || gcap_last_error_message()[0] == '\0')) abort(); /* half made or unexplained */
  return st == GCAP_SUCCESS ? g : NULL;
}

/* save -> load -> save gives the same bytes. */
static void round_trip(const gcap_graph *g) {
  size_t len = 0, again_len = 0;
  char *first = saved(g, &len);
  if (!first) abort();
  gcap_graph *copy = loaded(first, len);
  if (!copy) abort();
  char *second = saved(copy, &again_len);
  if (!second || again_len != len || memcmp(first, second, len) != 0) abort();
  free(first);
  free(second);
  gcap_graph_destroy(copy);
}

static void analyse(const gcap_graph *g) {
  size_t races = 0;
  if (gcap_graph_find_races(g, NULL, &races) != GCAP_SUCCESS) abort();
  char *dot = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&dot, &len);
  if (!f) abort();
  if (gcap_graph_write_dot(g, f, GCAP_DOT_VERBOSE) != GCAP_SUCCESS) abort();
  fclose(f);
  free(dot);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  gcap_graph *g = loaded(data, size);
  if (!g) return 0;
  round_trip(g);
  analyse(g);
  gcap_graph_destroy(g);
  return 0;
}
