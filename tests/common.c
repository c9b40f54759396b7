#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

void test_check_status_(gcap_status got, gcap_status expected, const char *expr, const char *file, int line) {
  if (got == expected) return;
  print_error("%s:%d: %s returned %s, expected %s (message: \"%s\")\n", file, line, expr, gcap_status_name(got),
              gcap_status_name(expected), gcap_last_error_message());
  _fail(file, line);
}

static gcap_backend_kind selected_backend(void) {
  const char *env = getenv("GCAP_BACKEND");
  if (env == NULL || *env == '\0') return GCAP_BACKEND_SIM;
  if (strcmp(env, "cuda") == 0) return GCAP_BACKEND_CUDA;
  if (strcmp(env, "auto") == 0) return GCAP_BACKEND_AUTO;
  return GCAP_BACKEND_SIM;
}

bool test_on_sim(void) { return selected_backend() == GCAP_BACKEND_SIM; }

void test_require_sim(void) {
  if (!test_on_sim()) skip();
}

void test_require_backend(void) {
  gcap_backend_kind k = selected_backend();
  if (k == GCAP_BACKEND_SIM) return;
  if (gcap_backend_available(GCAP_BACKEND_CUDA) != GCAP_SUCCESS) {
    fprintf(stderr, "skipped: GCAP_BACKEND=%s but CUDA cannot start here: %s\n", getenv("GCAP_BACKEND"),
            gcap_last_error_message());
    exit(77);
  }
}

gcap_context *test_context_create(void) {
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = selected_backend();
  gcap_context *ctx = NULL;
  gcap_status s = gcap_context_create(&o, &ctx);
  if (s != GCAP_SUCCESS) {
    print_error("gcap_context_create failed: %s (%s)\n", gcap_status_name(s), gcap_last_error_message());
    fail();
  }
  return ctx;
}

void test_assert_message_contains(const char *needle) {
  const char *msg = gcap_last_error_message();
  if (strstr(msg, needle) != NULL) return;
  print_error("last error message \"%s\" does not contain \"%s\"\n", msg, needle);
  fail();
}

void test_assert_message_empty(void) { assert_string_equal(gcap_last_error_message(), ""); }

void test_assert_message_set(void) { assert_true(strlen(gcap_last_error_message()) > 0); }

gcap_kernel *test_kernel_of(gcap_module *m, const char *name) {
  gcap_kernel *k = NULL;
  assert_ok(gcap_module_get_kernel(m, name, &k));
  assert_non_null(k);
  return k;
}

gcap_stream *test_stream_create(gcap_context *ctx) {
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_non_null(s);
  return s;
}

gcap_graph *test_graph_create(gcap_context *ctx) {
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  assert_non_null(g);
  return g;
}

void *test_dev_alloc(gcap_context *ctx, size_t bytes) {
  void *p = NULL;
  assert_ok(gcap_mem_alloc(ctx, bytes, &p));
  assert_non_null(p);
  return p;
}

gcap_context *test_sim_context_create(const gcap_sim_options *so) {
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  o.sim = so;
  gcap_context *ctx = NULL;
  assert_ok(gcap_context_create(&o, &ctx));
  assert_non_null(ctx);
  return ctx;
}

int test_setup(void **state) {
  struct test_fixture *f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  f->ctx = test_context_create();
  if (gcap_stream_create(f->ctx, &f->s) != GCAP_SUCCESS) return -1;
  *state = f;
  return 0;
}

int test_teardown(void **state) {
  struct test_fixture *f = *state;
  if (f == NULL) return 0;
  if (gcap_stream_destroy(f->s) != GCAP_SUCCESS) return -1;
  gcap_context_destroy(f->ctx);
  free(f);
  return 0;
}

/* ------------------------------------------------ stub modules for backends that load images */

static const char stub_ptx_header[] = ".version 7.0\n.target sm_52\n.address_size 64\n";

/* The alignment the core gives a parameter of `size` bytes (src/core/module.c copy_def). */
static size_t param_alignment(size_t size) {
  return size >= 16 ? 16 : size >= 8 ? 8 : size >= 4 ? 4 : size >= 2 ? 2 : 1;
}

/* A definition the core accepts; for any other, gcap_module_load itself reports what is wrong. */
static bool def_is_stubbable(const gcap_kernel_def *k) {
  if (k->name == NULL || *k->name == '\0') return false;
  if (k->num_params > 0 && k->param_sizes == NULL) return false;
  for (size_t p = 0; p < k->num_params; p++)
    if (k->param_sizes[p] == 0 || k->param_sizes[p] > 4096) return false;
  return true;
}

/* True when d needs a stub image on ctx: a valid context off the simulator, no image, kernels to stub. */
static bool needs_stub_image(gcap_context *ctx, const gcap_module_desc *d) {
  gcap_backend_kind kind = gcap_context_backend(ctx); /* AUTO: not a live context */
  if (kind == GCAP_BACKEND_SIM || kind == GCAP_BACKEND_AUTO) return false;
  if (d == NULL || d->image != NULL || d->num_kernels == 0 || d->kernels == NULL) return false;
  for (size_t i = 0; i < d->num_kernels; i++)
    if (!def_is_stubbable(&d->kernels[i])) return false;
  return true;
}

/* Bytes enough for the stub text of d: the header, then per kernel its name and at most 96 bytes a parameter. */
static size_t stub_text_capacity(const gcap_module_desc *d) {
  size_t cap = sizeof stub_ptx_header;
  for (size_t i = 0; i < d->num_kernels; i++) cap += strlen(d->kernels[i].name) + 64 + 96 * d->kernels[i].num_params;
  return cap;
}

/* Appends the stub of k to text (capacity cap, len used); returns the new length. */
static size_t append_stub(char *text, size_t cap, size_t len, const gcap_kernel_def *k) {
  len += (size_t)snprintf(text + len, cap - len, ".visible .entry %s(", k->name);
  for (size_t p = 0; p < k->num_params; p++) {
    size_t size = k->param_sizes[p];
    len += (size_t)snprintf(text + len, cap - len, "%s\n  .param .align %zu .b8 p%zu[%zu]", p > 0 ? "," : "",
                            param_alignment(size), p, size);
  }
  len += (size_t)snprintf(text + len, cap - len, ")\n{\n  ret;\n}\n");
  return len;
}

/* NUL-terminated PTX text (malloc'd) with a stub of every kernel of d; NULL when out of memory. */
static char *stub_ptx(const gcap_module_desc *d) {
  size_t cap = stub_text_capacity(d);
  char *text = malloc(cap);
  if (text == NULL) return NULL;
  size_t len = (size_t)snprintf(text, cap, "%s", stub_ptx_header);
  for (size_t i = 0; i < d->num_kernels; i++) len = append_stub(text, cap, len, &d->kernels[i]);
  return text;
}

gcap_status test_module_load(gcap_context *ctx, const gcap_module_desc *d, gcap_module **out) {
  if (!needs_stub_image(ctx, d)) return gcap_module_load(ctx, d, out);
  char *ptx = stub_ptx(d);
  if (ptx == NULL) {
    if (out != NULL) *out = NULL;
    return GCAP_ERROR_OUT_OF_MEMORY;
  }
  gcap_module_desc with_image = *d;
  with_image.image = ptx;
  with_image.image_size = strlen(ptx) + 1;
  gcap_status st = gcap_module_load(ctx, &with_image, out);
  free(ptx);
  return st;
}

void test_countdown_sim(const gcap_sim_thread *t, void *const *args) {
  uint32_t *counter;
  gcap_conditional_handle h;
  memcpy(&counter, args[0], sizeof counter);
  memcpy(&h, args[1], sizeof h);
  if (t->thread_idx.x != 0) return;
  --*counter;
  gcap_sim_set_conditional(h, *counter != 0);
}

const size_t test_countdown_sizes[2] = {sizeof(uint32_t *), sizeof(gcap_conditional_handle)};
