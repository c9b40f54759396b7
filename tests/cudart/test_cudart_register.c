/* Registration (src/cudart/register.c): the calls nvcc's constructors make, recorded for later
 * loading; and the simulated compute capability from GCAP_CUDART_CC. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "stderr_capture.h"

#include "cudart.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void **__cudaRegisterFatBinary(void *wrapper);
void __cudaRegisterFatBinaryEnd(void **handle);
void __cudaUnregisterFatBinary(void **handle);
void __cudaRegisterFunction(void **handle, const char *host_stub, char *device_fun, const char *device_name,
                            int thread_limit, void *tid, void *bid, void *block_dim, void *grid_dim, int *warp_size);
void __cudaRegisterVar(void **handle, char *host_var, char *device_address, const char *device_name, int ext,
                       size_t size, int constant, int global);
char __cudaInitModule(void **handle);

static const char *said = "";

struct wrapper {
  uint32_t magic;
  uint32_t version;
  const void *data;
  const void *fatbins;
};

static unsigned char *load(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", FATBIN_DIR, name);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  rewind(f);
  unsigned char *d = malloc((size_t)n);
  assert_non_null(d);
  assert_int_equal(fread(d, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  return d;
}

static char stub_a, stub_b, shadow;

static void registers_and_unregisters(void **state) {
  (void)state;
  unsigned char *data = load("multi.fatbin");
  struct wrapper w = {GCAP__FATBIN_WRAPPER_MAGIC, 1, data, NULL};
  stderr_listen();
  void **h = __cudaRegisterFatBinary(&w);
  __cudaRegisterFunction(h, &stub_a, (char *)"add", "add", -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFunction(h, &stub_b, (char *)"_Z3subPii", "_Z3subPii", -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterVar(h, &shadow, (char *)"table", "table", 0, 64, 1, 0);
  __cudaRegisterFatBinaryEnd(h);
  said = stderr_heard();
  assert_string_equal(said, ""); /* a good fatbin registers silently */
  assert_non_null(h);
  assert_int_equal(__cudaInitModule(h), 1);
  const struct gcap__cudart_module *m = (const struct gcap__cudart_module *)(const void *)h;
  assert_int_equal(m->bad, 0);
  assert_int_equal(m->ended, 1);
  assert_int_equal(m->fatbin.count, 4);
  const struct gcap__cudart_symbol *a = gcap__cudart_symbol_of(&stub_a), *b = gcap__cudart_symbol_of(&stub_b);
  const struct gcap__cudart_symbol *v = gcap__cudart_symbol_of(&shadow);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(v);
  assert_string_equal(a->name, "add");
  assert_int_equal(a->kind, GCAP__CUDART_FUNCTION);
  assert_ptr_equal(a->module, m);
  assert_string_equal(b->name, "_Z3subPii");
  assert_string_equal(v->name, "table");
  assert_int_equal(v->kind, GCAP__CUDART_VARIABLE);
  assert_int_equal(v->size, 64);
  assert_int_equal(v->constant, 1);
  assert_null(gcap__cudart_symbol_of(&said));
  __cudaUnregisterFatBinary(h);
  assert_null(gcap__cudart_symbol_of(&stub_a));
  assert_null(gcap__cudart_symbol_of(&shadow));
  free(data);
}

/* A fatbin that cannot be read still gets a handle (the program cannot be told otherwise); the
 * reason is said at once and kept for the launch that needs it. */
static void bad_fatbin_said(void **state) {
  (void)state;
  static const uint64_t junk[4] = {0x1234};
  struct wrapper w = {GCAP__FATBIN_WRAPPER_MAGIC, 1, junk, NULL};
  stderr_listen();
  void **h = __cudaRegisterFatBinary(&w);
  __cudaRegisterFunction(h, &stub_a, (char *)"add", "add", -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFunction(NULL, &stub_b, (char *)"add", "add", -1, NULL, NULL, NULL, NULL, NULL);
  said = stderr_heard();
  assert_non_null(h);
  const struct gcap__cudart_module *m = (const struct gcap__cudart_module *)(const void *)h;
  assert_int_equal(m->bad, 1);
  assert_non_null(strstr(m->error, "bad magic 0x00001234 (expected 0xba55ed50)"));
  assert_non_null(strstr(said, "gcap-cudart: __cudaRegisterFatBinary: fatbin: container at"));
  assert_non_null(strstr(said, "gcap-cudart: __cudaRegisterFunction: no module (its registration failed)\n"));
  assert_non_null(gcap__cudart_symbol_of(&stub_a));
  assert_null(gcap__cudart_symbol_of(&stub_b));
  __cudaUnregisterFatBinary(h);
  assert_null(gcap__cudart_symbol_of(&stub_a));
  __cudaUnregisterFatBinary(NULL);
}

static void compute_capability_from_env(void **state) {
  (void)state;
  assert_int_equal(unsetenv("GCAP_CUDART_CC"), 0);
  assert_int_equal(gcap__cudart_cc(), 90);
  static const struct {
    const char *value;
    unsigned cc;
  } good[] = {{"7.5", 75}, {"8.6", 86}, {"9.0", 90}, {"12.0", 120}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    assert_int_equal(setenv("GCAP_CUDART_CC", good[i].value, 1), 0);
    assert_int_equal(gcap__cudart_cc(), good[i].cc);
  }
  stderr_listen();
  const char *bad[] = {"9", "x", "8.6.1", "9.10", "0.5", "8,6"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(setenv("GCAP_CUDART_CC", bad[i], 1), 0);
    assert_int_equal(gcap__cudart_cc(), 90);
  }
  said = stderr_heard();
  assert_string_equal(said, "gcap-cudart: GCAP_CUDART_CC=\"9\" is not a compute capability such as 9.0; using 9.0\n");
  assert_int_equal(unsetenv("GCAP_CUDART_CC"), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(registers_and_unregisters),
      cmocka_unit_test(bad_fatbin_said),
      cmocka_unit_test(compute_capability_from_env),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
