/* The fatbin reader of the runtime stand-in (src/cudart/fatbin.c), on fatbins made by nvcc 13
 * (tests/cudart/gen-fatbins.sh) and on broken copies of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cudart.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char err[512];

struct blob {
  unsigned char *data;
  size_t size;
};

/* A file of FATBIN_DIR in a buffer of exactly its size (so the sanitizers see any read past it). */
static struct blob load(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", FATBIN_DIR, name);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  assert_true(n > 0);
  rewind(f);
  struct blob b = {malloc((size_t)n), (size_t)n};
  assert_non_null(b.data);
  assert_int_equal(fread(b.data, 1, b.size, f), b.size);
  fclose(f);
  return b;
}

/* A copy of the first n bytes of b, in a buffer of exactly n bytes. */
static struct blob head(struct blob b, size_t n) {
  struct blob c = {malloc(n ? n : 1), n};
  assert_non_null(c.data);
  memcpy(c.data, b.data, n);
  return c;
}

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void assert_err(const char *needle) {
  if (!strstr(err, needle)) fail_msg("message \"%s\" lacks \"%s\"", err, needle);
}

/* The entries of b, described and joined with "; ". */
static void describe_all(const struct gcap__fatbin *fb, char *out, size_t size) {
  out[0] = '\0';
  for (size_t i = 0; i < fb->count; i++) {
    char one[64];
    gcap__fatbin_describe(&fb->entries[i], one, sizeof one);
    size_t n = strlen(out);
    snprintf(out + n, size - n, "%s%s", i ? "; " : "", one);
  }
}

static char *ptx_for(const struct gcap__fatbin *fb, unsigned cc, size_t *len) {
  const struct gcap__fatbin_entry *e = gcap__fatbin_pick_ptx(fb, cc, -1, err, sizeof err);
  if (!e) fail_msg("no PTX for %u: %s", cc, err);
  char *text = gcap__fatbin_ptx_text(e, len, err, sizeof err);
  if (!text) fail_msg("PTX for %u: %s", cc, err);
  return text;
}

static void lists_entries(void **state) {
  (void)state;
  struct blob b = load("multi.fatbin");
  struct gcap__fatbin fb = {0};
  assert_int_equal(gcap__fatbin_parse(&fb, b.data, b.size, 0, err, sizeof err), 0);
  char all[512];
  describe_all(&fb, all, sizeof all);
  assert_string_equal(all, "PTX compute_75 (zstd); PTX compute_80 (zstd); ELF sm_90; PTX compute_90 (zstd)");
  assert_int_equal(fb.units, 1);
  for (size_t i = 0; i < fb.count; i++) {
    const struct gcap__fatbin_entry *e = &fb.entries[i];
    assert_true(e->payload > b.data && e->payload + e->stored_size <= b.data + b.size);
    assert_int_equal(e->unit, 0);
    if (e->kind != GCAP__FATBIN_PTX) continue;
    assert_int_equal(e->ptx_major, 9); /* nvcc 13 writes PTX ISA 9.0 */
    assert_int_equal(e->ptx_minor, 0);
    assert_true(e->uncompressed_size > e->stored_size);
  }
  gcap__fatbin_free(&fb);
  free(b.data);
}

/* The PTX chosen for each compute capability: the highest architecture not above it. */
static void picks_ptx_for_cc(void **state) {
  (void)state;
  struct blob b = load("multi.fatbin");
  struct gcap__fatbin fb = {0};
  assert_int_equal(gcap__fatbin_parse(&fb, b.data, b.size, 0, err, sizeof err), 0);
  static const struct {
    unsigned cc, arch;
    const char *target;
  } cases[] = {{75, 75, ".target sm_75"}, {80, 80, ".target sm_80"}, {86, 80, ".target sm_80"},
               {89, 80, ".target sm_80"}, {90, 90, ".target sm_90"}, {120, 90, ".target sm_90"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct gcap__fatbin_entry *e = gcap__fatbin_pick_ptx(&fb, cases[i].cc, -1, err, sizeof err);
    assert_non_null(e);
    assert_int_equal(e->kind, GCAP__FATBIN_PTX);
    assert_int_equal(e->arch, cases[i].arch);
    size_t len = 0;
    char *text = ptx_for(&fb, cases[i].cc, &len);
    assert_int_equal(strlen(text), len);
    assert_non_null(strstr(text, cases[i].target));
    assert_non_null(strstr(text, ".entry add("));
    assert_true(text[len - 1] != '\0');
    free(text);
  }
  /* Below every PTX architecture: refused, saying what there is. */
  assert_null(gcap__fatbin_pick_ptx(&fb, 70, -1, err, sizeof err));
  assert_err("its PTX is for compute_75, compute_80, compute_90; none runs on compute capability 7.0");
  gcap__fatbin_free(&fb);
  free(b.data);
}

/* The same kernel stored plain, LZ4- and zstd-compressed gives the same text. */
static void decompresses_lz4_and_zstd(void **state) {
  (void)state;
  const char *names[] = {"plain.fatbin", "lz4.fatbin", "zstd.fatbin"};
  const enum gcap__fatbin_compression kinds[] = {GCAP__FATBIN_PLAIN, GCAP__FATBIN_LZ4, GCAP__FATBIN_ZSTD};
  char *texts[3];
  for (int i = 0; i < 3; i++) {
    struct blob b = load(names[i]);
    struct gcap__fatbin fb = {0};
    assert_int_equal(gcap__fatbin_parse(&fb, b.data, b.size, 0, err, sizeof err), 0);
    assert_int_equal(fb.count, 1);
    assert_int_equal(fb.entries[0].compression, kinds[i]);
    size_t len;
    texts[i] = ptx_for(&fb, 80, &len);
    assert_non_null(strstr(texts[i], ".target sm_80"));
    gcap__fatbin_free(&fb);
    free(b.data);
  }
  assert_string_equal(texts[0], texts[1]);
  assert_string_equal(texts[0], texts[2]);
  for (int i = 0; i < 3; i++) free(texts[i]);
}

/* A compression library that cannot be loaded: a message naming it and the way out. */
static void missing_library_named(void **state) {
  (void)state;
  const char *names[] = {"lz4.fatbin", "zstd.fatbin"};
  const enum gcap__fatbin_compression kinds[] = {GCAP__FATBIN_LZ4, GCAP__FATBIN_ZSTD};
  for (int i = 0; i < 2; i++) {
    struct blob b = load(names[i]);
    struct gcap__fatbin fb = {0};
    assert_int_equal(gcap__fatbin_parse(&fb, b.data, b.size, 0, err, sizeof err), 0);
    gcap__fatbin_set_library(kinds[i], "libgcap-test-absent.so.1");
    size_t len = 7;
    assert_null(gcap__fatbin_ptx_text(&fb.entries[0], &len, err, sizeof err));
    gcap__fatbin_set_library(kinds[i], NULL);
    assert_int_equal(len, 7);
    assert_err(i == 0 ? "LZ4-compressed and libgcap-test-absent.so.1 cannot be loaded"
                      : "zstd-compressed and libgcap-test-absent.so.1 cannot be loaded");
    assert_err("-compress-mode=none");
    gcap__fatbin_free(&fb);
    free(b.data);
  }
}

/* Compressed bytes that are not what their header says: refused, not trusted. */
static void corrupt_compressed_refused(void **state) {
  (void)state;
  const char *names[] = {"lz4.fatbin", "zstd.fatbin"};
  for (int i = 0; i < 2; i++) {
    struct blob b = load(names[i]);
    struct gcap__fatbin fb = {0};
    assert_int_equal(gcap__fatbin_parse(&fb, b.data, b.size, 0, err, sizeof err), 0);
    struct gcap__fatbin_entry e = fb.entries[0];
    unsigned char *junk = malloc(e.stored_size);
    assert_non_null(junk);
    memset(junk, 0xa5, e.stored_size);
    e.payload = junk;
    assert_null(gcap__fatbin_ptx_text(&e, NULL, err, sizeof err));
    assert_err("does not decompress");
    /* Claiming a larger text than the data hold. */
    e = fb.entries[0];
    e.uncompressed_size += 100;
    assert_null(gcap__fatbin_ptx_text(&e, NULL, err, sizeof err));
    assert_err("compute_80");
    free(junk);
    gcap__fatbin_free(&fb);
    free(b.data);
  }
}

/* Machine code only: no PTX to run, and the message says how to build with it. */
static void sass_only_refused(void **state) {
  (void)state;
  struct blob b = load("sass.fatbin");
  struct gcap__fatbin fb = {0};
  assert_int_equal(gcap__fatbin_parse(&fb, b.data, b.size, 0, err, sizeof err), 0);
  char all[128];
  describe_all(&fb, all, sizeof all);
  assert_string_equal(all, "ELF sm_90");
  assert_null(gcap__fatbin_pick_ptx(&fb, 90, -1, err, sizeof err));
  assert_err("no PTX, only machine code (ELF: sm_90)");
  assert_err("-arch=sm_XX");
  assert_null(gcap__fatbin_ptx_text(&fb.entries[0], NULL, err, sizeof err));
  assert_err("not PTX");
  gcap__fatbin_free(&fb);
  free(b.data);
}

/* A -rdc=true object keeps its PTX in a relocatable fatbin, a container like the others. */
static void reads_relocatable_fatbin(void **state) {
  (void)state;
  struct blob b = load("rdc.relfatbin");
  struct gcap__fatbin fb = {0};
  assert_int_equal(gcap__fatbin_parse(&fb, b.data, b.size, 1, err, sizeof err), 0);
  char all[256];
  describe_all(&fb, all, sizeof all);
  assert_string_equal(all, "ELF sm_80 (zstd); PTX compute_80 (zstd)");
  assert_int_equal(fb.units, 2);
  size_t len;
  char *text = ptx_for(&fb, 90, &len);
  assert_non_null(strstr(text, ".entry add("));
  free(text);
  gcap__fatbin_free(&fb);
  free(b.data);
}

struct wrapper {
  uint32_t magic;
  uint32_t version;
  const void *data;
  const void *const *fatbins;
};

/* What __cudaRegisterFatBinary receives: version 1, and version 2 with relocatable fatbins. */
static void reads_wrapper(void **state) {
  (void)state;
  struct blob multi = load("multi.fatbin"), plain = load("plain.fatbin"), lz4 = load("lz4.fatbin");
  struct gcap__fatbin fb;
  struct wrapper w = {GCAP__FATBIN_WRAPPER_MAGIC, 1, multi.data, NULL};
  assert_int_equal(gcap__fatbin_from_wrapper(&fb, &w, err, sizeof err), 0);
  assert_int_equal(fb.count, 4);
  assert_int_equal(fb.units, 1);
  gcap__fatbin_free(&fb);

  const void *rel[] = {plain.data, lz4.data, NULL};
  struct wrapper w2 = {GCAP__FATBIN_WRAPPER_MAGIC, 2, multi.data, rel};
  assert_int_equal(gcap__fatbin_from_wrapper(&fb, &w2, err, sizeof err), 0);
  assert_int_equal(fb.count, 6);
  assert_int_equal(fb.units, 3);
  assert_int_equal(fb.entries[4].unit, 1);
  assert_int_equal(fb.entries[5].unit, 2);
  assert_int_equal(fb.entries[5].compression, GCAP__FATBIN_LZ4);
  const struct gcap__fatbin_entry *e = gcap__fatbin_pick_ptx(&fb, 90, 2, err, sizeof err);
  assert_ptr_equal(e, &fb.entries[5]);
  assert_null(gcap__fatbin_pick_ptx(&fb, 90, 3, err, sizeof err));
  gcap__fatbin_free(&fb);

  /* Refused: bad magic, an unknown version, no data, a relocatable fatbin that is not one. */
  struct wrapper bad = w;
  bad.magic = 0x12345678;
  assert_int_equal(gcap__fatbin_from_wrapper(&fb, &bad, err, sizeof err), -1);
  assert_err("bad magic 0x12345678 (expected 0x466243b1)");
  assert_null(fb.entries);
  bad = w;
  bad.version = 3;
  assert_int_equal(gcap__fatbin_from_wrapper(&fb, &bad, err, sizeof err), -1);
  assert_err("version 3 is not supported (expected 1 or 2)");
  bad = w;
  bad.data = NULL;
  assert_int_equal(gcap__fatbin_from_wrapper(&fb, &bad, err, sizeof err), -1);
  assert_err("its data pointer is NULL");
  assert_int_equal(gcap__fatbin_from_wrapper(&fb, NULL, err, sizeof err), -1);
  assert_err("the wrapper is NULL");
  static const uint64_t not_fatbin[4] = {0x1234};
  const void *bad_rel[] = {plain.data, not_fatbin, NULL};
  struct wrapper w3 = {GCAP__FATBIN_WRAPPER_MAGIC, 2, multi.data, bad_rel};
  assert_int_equal(gcap__fatbin_from_wrapper(&fb, &w3, err, sizeof err), -1);
  assert_err("relocatable fatbin at");
  assert_err("bad magic 0x00001234");
  assert_null(fb.entries);
  assert_int_equal(fb.count, 0);
  free(multi.data);
  free(plain.data);
  free(lz4.data);
}

/* Every truncation of a fatbin is refused, reading nothing past its end (the sanitizers watch). */
static void truncated_refused(void **state) {
  (void)state;
  const char *names[] = {"multi.fatbin", "zstd.fatbin", "sass.fatbin"};
  for (int f = 0; f < 3; f++) {
    struct blob b = load(names[f]);
    for (size_t n = 0; n < b.size; n++) {
      struct blob c = head(b, n);
      struct gcap__fatbin fb = {0};
      err[0] = '\0';
      if (gcap__fatbin_parse(&fb, c.data, c.size, 0, err, sizeof err) != -1)
        fail_msg("%s cut to %zu bytes was accepted", names[f], n);
      assert_true(strncmp(err, "fatbin: ", 8) == 0);
      assert_int_equal(fb.count, 0);
      gcap__fatbin_free(&fb);
      free(c.data);
    }
    free(b.data);
  }
  struct blob b = load("multi.fatbin");
  struct blob c = head(b, 100);
  struct gcap__fatbin fb = {0};
  assert_int_equal(gcap__fatbin_parse(&fb, c.data, c.size, 0, err, sizeof err), -1);
  assert_err("container at offset 0: payload size");
  assert_err("runs past the end (84 bytes left)");
  free(c.data);
  c = head(b, 8);
  assert_int_equal(gcap__fatbin_parse(&fb, c.data, c.size, 0, err, sizeof err), -1);
  assert_err("8 bytes, less than a container header (16)");
  free(c.data);
  assert_int_equal(gcap__fatbin_parse(&fb, b.data, 0, 0, err, sizeof err), -1);
  assert_err("fatbin: empty");
  free(b.data);
}

/* Headers whose numbers do not fit what encloses them. */
static void bad_headers_refused(void **state) {
  (void)state;
  struct blob b = load("zstd.fatbin");
  struct gcap__fatbin fb = {0};
  static const struct {
    size_t at;
    int width;
    uint64_t value;
    const char *message;
  } cases[] = {
      {0, 4, 0xdeadbeef, "container at offset 0: bad magic 0xdeadbeef (expected 0xba55ed50)"},
      {4, 2, 2, "container at offset 0: version 2 is not supported (expected 1)"},
      {6, 2, 8, "container at offset 0: header size 8 is outside [16,"},
      {8, 8, UINT64_MAX, "container at offset 0: payload size 18446744073709551615 runs past the end"},
      {16 + 4, 4, 8, "entry at offset 16: header size 8 is outside [64,"},
      {16 + 4, 4, 0xffffffffu, "entry at offset 16: header size 4294967295 is outside [64,"},
      {16 + 8, 8, UINT64_MAX / 2, "entry at offset 16: payload size 9223372036854775807 runs past its container"},
      {16 + 16, 4, 0, "entry at offset 16: compressed size 0 is outside [1,"},
      {16 + 16, 4, 0x7fffffff, "entry at offset 16: compressed size 2147483647 is outside [1,"},
      {16 + 56, 8, 0, "entry at offset 16: uncompressed size 0 is outside [1,"},
      {16 + 56, 8, UINT64_MAX, "entry at offset 16: uncompressed size 18446744073709551615 is outside [1,"},
      {16 + 40, 8, 0xa011, "entry at offset 16: flags 0xa011 name both LZ4 and zstd"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct blob c = head(b, b.size);
    if (cases[i].width == 2) {
      c.data[cases[i].at] = (unsigned char)cases[i].value;
      c.data[cases[i].at + 1] = (unsigned char)(cases[i].value >> 8);
    } else if (cases[i].width == 4) {
      put32(c.data + cases[i].at, (uint32_t)cases[i].value);
    } else {
      put64(c.data + cases[i].at, cases[i].value);
    }
    err[0] = '\0';
    assert_int_equal(gcap__fatbin_parse(&fb, c.data, c.size, 0, err, sizeof err), -1);
    assert_err(cases[i].message);
    assert_int_equal(fb.count, 0);
    free(c.data);
  }
  /* Garbage after a container (not zero padding) is a container with a bad magic. */
  struct blob c = {malloc(b.size + 24), b.size + 24};
  assert_non_null(c.data);
  memcpy(c.data, b.data, b.size);
  memset(c.data + b.size, 0, 24);
  assert_int_equal(gcap__fatbin_parse(&fb, c.data, c.size, 0, err, sizeof err), 0); /* zero padding: fine */
  assert_int_equal(fb.count, 1);
  gcap__fatbin_free(&fb);
  c.data[b.size + 20] = 1;
  assert_int_equal(gcap__fatbin_parse(&fb, c.data, c.size, 0, err, sizeof err), -1);
  assert_err("bad magic 0x00000000");
  free(c.data);
  gcap__fatbin_free(&fb);
  free(b.data);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(lists_entries),
      cmocka_unit_test(picks_ptx_for_cc),
      cmocka_unit_test(decompresses_lz4_and_zstd),
      cmocka_unit_test(missing_library_named),
      cmocka_unit_test(corrupt_compressed_refused),
      cmocka_unit_test(sass_only_refused),
      cmocka_unit_test(reads_wrapper),
      cmocka_unit_test(reads_relocatable_fatbin),
      cmocka_unit_test(truncated_refused),
      cmocka_unit_test(bad_headers_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
