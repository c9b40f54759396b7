#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ptx_util.h"

#ifndef PTX_CORPUS_DIR
#error "PTX_CORPUS_DIR must name the tests/ptx directory"
#endif

char *ptx_read_text(const char *rel, size_t *len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", PTX_CORPUS_DIR, rel);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    print_error("cannot open %s\n", path);
    fail();
  }
  size_t cap = 1 << 16, n = 0;
  char *text = malloc(cap);
  assert_non_null(text);
  size_t got;
  while ((got = fread(text + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (cap - n - 1 == 0) {
      cap *= 2;
      text = realloc(text, cap);
      assert_non_null(text);
    }
  }
  fclose(f);
  text[n] = '\0';
  if (len != NULL) *len = n;
  return text;
}

void ptx_sim_options(gcap_sim_options *so, unsigned checks) {
  gcap_sim_options_init(so);
  so->kernels = GCAP_SIM_KERNELS_PTX;
  so->checks = checks;
  so->exec = GCAP_SIM_EXEC_IMMEDIATE;
  so->threads = 1;
}

gcap_context *ptx_sim_context(unsigned checks) {
  gcap_sim_options so;
  ptx_sim_options(&so, checks);
  return test_sim_context_create(&so);
}

gcap_context *ptx_context(unsigned checks) {
  if (!test_on_sim()) return test_context_create(); /* GCAP_BACKEND=cuda: the references checked on a GPU */
  return ptx_sim_context(checks);
}

gcap_module *ptx_load_text(gcap_context *ctx, const char *text) {
  gcap_module_desc d = {.image = text, .image_size = strlen(text) + 1};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  return m;
}

gcap_status ptx_launch_on(gcap_context *ctx, gcap_module *m, const char *name, gcap_dim3 grid, gcap_dim3 block,
                          uint32_t shared, void **args) {
  return gcap_launch_kernel(test_stream_create(ctx), test_kernel_of(m, name), grid, block, shared, args);
}

gcap_module *ptx_load(gcap_context *ctx, const char *rel) {
  size_t len = 0;
  char *text = ptx_read_text(rel, &len);
  gcap_module_desc d = {.image = text, .image_size = len + 1};
  gcap_module *m = NULL;
  gcap_status st = gcap_module_load(ctx, &d, &m);
  free(text);
  if (st != GCAP_SUCCESS) {
    print_error("loading %s: %s (%s)\n", rel, gcap_status_name(st), gcap_last_error_message());
    fail();
  }
  return m;
}

int ptx_setup(void **state) {
  struct ptx_fixture *f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  f->file = *state;
  f->ctx = ptx_context(PTX_CHECKS_ALL);
  f->s = test_stream_create(f->ctx);
  f->m = ptx_load(f->ctx, f->file);
  *state = f;
  return 0;
}

int ptx_teardown(void **state) {
  struct ptx_fixture *f = *state;
  if (f == NULL) return 0;
  gcap_context_destroy(f->ctx); /* the stream, the module and the allocations go with it */
  free(f);
  return 0;
}

void *ptx_dev(gcap_context *ctx, const void *host, size_t bytes) {
  void *d = test_dev_alloc(ctx, bytes);
  if (host != NULL) {
    ptx_put(ctx, d, host, bytes);
    return d;
  }
  void *zero = calloc(1, bytes);
  assert_non_null(zero);
  ptx_put(ctx, d, zero, bytes);
  free(zero);
  return d;
}

void ptx_get(gcap_context *ctx, void *host, const void *dev, size_t bytes) {
  assert_ok(gcap_memcpy(ctx, host, dev, bytes, GCAP_MEMCPY_DEVICE_TO_HOST));
}

void ptx_put(gcap_context *ctx, void *dev, const void *host, size_t bytes) {
  assert_ok(gcap_memcpy(ctx, dev, host, bytes, GCAP_MEMCPY_HOST_TO_DEVICE));
}

gcap_status ptx_launch(struct ptx_fixture *f, const char *name, gcap_dim3 grid, gcap_dim3 block, uint32_t shared,
                       void **args) {
  gcap_kernel *k = test_kernel_of(f->m, name);
  return gcap_launch_kernel(f->s, k, grid, block, shared, args);
}

void ptx_run(struct ptx_fixture *f, const char *name, gcap_dim3 grid, gcap_dim3 block, uint32_t shared, void **args) {
  gcap_status st = ptx_launch(f, name, grid, block, shared, args);
  if (st != GCAP_SUCCESS) {
    print_error("%s (%s): %s (%s)\n", name, f->file, gcap_status_name(st), gcap_last_error_message());
    fail();
  }
  assert_ok(gcap_stream_synchronize(f->s));
}

gcap_dim3 ptx_grid_for(size_t n, uint32_t block) { return GCAP_DIM3((uint32_t)((n + block - 1) / block), 1, 1); }

uint64_t ptx_rand64(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545f4914f6cdd1dull;
}

uint32_t ptx_rand32(uint64_t *state) { return (uint32_t)(ptx_rand64(state) >> 32); }

uint32_t ptx_f32_bits(float x) {
  uint32_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}

float ptx_f32_from(uint32_t bits) {
  float x;
  memcpy(&x, &bits, sizeof x);
  return x;
}

uint64_t ptx_f64_bits(double x) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}

double ptx_f64_from(uint64_t bits) {
  double x;
  memcpy(&x, &bits, sizeof x);
  return x;
}

bool ptx_same_f32(float got, float want) {
  if (isnan(got) && isnan(want)) return true;
  return ptx_f32_bits(got) == ptx_f32_bits(want);
}

bool ptx_same_f64(double got, double want) {
  if (isnan(got) && isnan(want)) return true;
  return ptx_f64_bits(got) == ptx_f64_bits(want);
}

double ptx_ulp_f32(double x) {
  x = fabs(x);
  if (x < FLT_MIN) return ldexp(1.0, -149);
  if (x >= FLT_MAX) x = FLT_MAX;
  int e;
  frexp(x, &e); /* x = m * 2^e with m in [0.5, 1): floats there are 2^(e - 24) apart */
  return ldexp(1.0, e - 24);
}

void ptx_expect(bool ok, const char *kernel, const char *what, size_t index, const char *fmt, ...) {
  if (ok) return;
  char detail[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  print_error("%s: %s, element %zu: %s\n", kernel, what, index, detail);
  fail();
}

size_t ptx_marked_lines(const char *rel, int *lines, size_t max) {
  char *text = ptx_read_text(rel, NULL);
  size_t count = 0;
  int line = 1;
  for (char *p = text; *p != '\0' && count < max; line++) {
    char *end = strchr(p, '\n');
    if (end != NULL) *end = '\0';
    if (strstr(p, "// BUG") != NULL) lines[count++] = line;
    if (end == NULL) break;
    p = end + 1;
  }
  free(text);
  return count;
}
