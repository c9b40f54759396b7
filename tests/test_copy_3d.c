/*
 * 2-D and 3-D copies of linear memory: gcap_mem_alloc_pitch, gcap_memcpy_2d_async (eager and
 * captured), copy nodes with 3-D parameters, their setters, race analysis by rows, clone, update,
 * saving and DOT.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream, fmemopen */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common.h"

#define W 24  /* bytes of a row that copies move */
#define H 5   /* rows */
#define HP 40 /* a host matrix's pitch */

static int setup(void **state) { return test_setup(state); }
static int teardown(void **state) { return test_teardown(state); }

/* H rows of HP bytes: byte (r, x) = 10 * r + x for x < W, 0xee in the padding. */
static void host_matrix(unsigned char *m) {
  memset(m, 0xee, HP * H);
  for (int r = 0; r < H; r++)
    for (int x = 0; x < W; x++) m[r * HP + x] = (unsigned char)(10 * r + x);
}

static void assert_rows(const unsigned char *m, size_t pitch, size_t rows, int first_row, unsigned char padding) {
  for (size_t r = 0; r < rows; r++)
    for (size_t x = 0; x < pitch; x++)
      assert_int_equal(m[r * pitch + x], x < W ? (unsigned char)(10 * (first_row + (int)r) + (int)x) : padding);
}

static void test_pitched_allocation(void **state) {
  struct test_fixture *f = *state;
  void *d = NULL;
  size_t pitch = 0;
  assert_ok(gcap_mem_alloc_pitch(f->ctx, 100, 3, &d, &pitch));
  assert_int_equal(pitch, 512);
  assert_ok(gcap_memset_async(f->s, d, 1, pitch * 3)); /* all of it is one allocation */
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_mem_free(f->ctx, d));
  assert_ok(gcap_mem_alloc_pitch(f->ctx, 513, 1, &d, &pitch));
  assert_int_equal(pitch, 1024);
  assert_ok(gcap_mem_free(f->ctx, d));
  assert_status(gcap_mem_alloc_pitch(f->ctx, 0, 3, &d, &pitch), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_mem_alloc_pitch: width is 0");
  assert_null(d);
  assert_status(gcap_mem_alloc_pitch(f->ctx, 8, 0, &d, &pitch), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("height is 0");
  assert_status(gcap_mem_alloc_pitch(f->ctx, 8, 1, NULL, &pitch), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("dptr is NULL");
  assert_status(gcap_mem_alloc_pitch(f->ctx, 8, 1, &d, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("pitch is NULL");
  assert_status(gcap_mem_alloc_pitch(f->ctx, SIZE_MAX / 2, 4, &d, &pitch), GCAP_ERROR_OUT_OF_MEMORY);
  assert_status(gcap_mem_alloc_pitch(NULL, 8, 1, &d, &pitch), GCAP_ERROR_INVALID_HANDLE);
}

/* Host matrix -> pitched device rows -> another host layout; the padding in between is never touched. */
static void test_eager_2d_round_trip(void **state) {
  struct test_fixture *f = *state;
  unsigned char src[HP * H], back[32 * H];
  host_matrix(src);
  memset(back, 0x77, sizeof back);
  void *d = NULL;
  size_t pitch = 0;
  assert_ok(gcap_mem_alloc_pitch(f->ctx, W, H, &d, &pitch));
  assert_ok(gcap_memset_async(f->s, d, 0x55, pitch * H));
  assert_ok(gcap_memcpy_2d_async(f->s, d, pitch, src, HP, W, H, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memcpy_2d_async(f->s, back, 32, d, pitch, W, H, GCAP_MEMCPY_DEFAULT));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_rows(back, 32, H, 0, 0x77);
  unsigned char whole[512 * H];
  assert_ok(gcap_memcpy(f->ctx, whole, d, pitch * H, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_rows(whole, pitch, H, 0, 0x55);

  /* A pitch below the width is refused even for one row, as CUDA refuses it; one row or none is
   * fine with pitches of the width. */
  assert_status(gcap_memcpy_2d_async(f->s, back, 0, src, 0, W, 1, GCAP_MEMCPY_HOST_TO_HOST), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("dpitch 0 is below width 24");
  assert_status(gcap_memcpy_2d_async(f->s, back, W, src, 0, W, 0, GCAP_MEMCPY_HOST_TO_HOST), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("spitch 0 is below width 24");
  assert_ok(gcap_memcpy_2d_async(f->s, back, W, src, W, W, 1, GCAP_MEMCPY_HOST_TO_HOST));
  assert_ok(gcap_memcpy_2d_async(f->s, back, W, src, W, W, 0, GCAP_MEMCPY_HOST_TO_HOST));

  assert_status(gcap_memcpy_2d_async(f->s, d, W - 1, src, HP, W, H, GCAP_MEMCPY_HOST_TO_DEVICE),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_memcpy_2d_async: dpitch 23 is below width 24");
  assert_status(gcap_memcpy_2d_async(f->s, d, pitch, src, 8, W, H, GCAP_MEMCPY_HOST_TO_DEVICE),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("spitch 8 is below width 24");
  assert_status(gcap_memcpy_2d_async(f->s, d, pitch, src, HP, W, H + 1, GCAP_MEMCPY_HOST_TO_DEVICE),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("runs");
  test_assert_message_contains("past the end of its allocation");
  assert_status(gcap_memcpy_2d_async(f->s, d, pitch, src, HP, W, H, GCAP_MEMCPY_DEVICE_TO_HOST),
                GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memcpy_2d_async(NULL, d, pitch, src, HP, W, H, GCAP_MEMCPY_HOST_TO_DEVICE),
                GCAP_ERROR_INVALID_HANDLE);
  assert_ok(gcap_mem_free(f->ctx, d));
}

static gcap_memcpy_3d_params d2d(void *dst, size_t dpitch, size_t dys, void *src, size_t spitch, size_t sys,
                                 gcap_extent e) {
  gcap_memcpy_3d_params p;
  memset(&p, 0, sizeof p);
  p.src = (gcap_pitched_ptr){src, spitch, spitch, sys};
  p.dst = (gcap_pitched_ptr){dst, dpitch, dpitch, dys};
  p.extent = e;
  p.kind = GCAP_MEMCPY_DEVICE_TO_DEVICE;
  return p;
}

/* Captured: one MEMCPY node holding the 2-D layout; it replays as the eager copy ran. */
static void test_captured_2d_copy(void **state) {
  struct test_fixture *f = *state;
  unsigned char src[HP * H], back[HP * H];
  host_matrix(src);
  void *d = NULL;
  size_t pitch = 0;
  assert_ok(gcap_mem_alloc_pitch(f->ctx, W, H, &d, &pitch));
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_begin_capture(f->s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_memcpy_2d_async(f->s, d, pitch, src, HP, W, H, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memcpy_2d_async(f->s, back, HP, d, pitch, W, H, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_stream_end_capture(f->s, &g));
  gcap_node *n[2];
  size_t count = 2;
  assert_ok(gcap_graph_get_nodes(g, n, &count));
  assert_int_equal(count, 2);
  gcap_memcpy_3d_params p;
  assert_ok(gcap_node_get_memcpy_3d_params(n[0], &p));
  assert_ptr_equal(p.dst.ptr, d);
  assert_int_equal(p.dst.pitch, pitch);
  assert_ptr_equal(p.src.ptr, src);
  assert_int_equal(p.src.pitch, HP);
  assert_int_equal(p.extent.width, W);
  assert_int_equal(p.extent.height, H);
  assert_int_equal(p.extent.depth, 1);
  assert_int_equal(p.kind, GCAP_MEMCPY_HOST_TO_DEVICE);
  gcap_memcpy_node_params flat;
  assert_status(gcap_node_get_memcpy_params(n[0], &flat), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("copies 5 x 1 rows: read it with gcap_node_get_memcpy_3d_params");

  memset(back, 0x33, sizeof back);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, f->s));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_rows(back, HP, H, 0, 0x33);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(f->ctx, d));
}

/* A box of 2 slices x 2 rows x 4 bytes, from positions inside two 3-D arrays of 3 slices x 4 rows x 16 bytes. */
static void test_3d_node_box_and_checks(void **state) {
  struct test_fixture *f = *state;
  enum { P = 16, Y = 4, Z = 3, BYTES = P * Y * Z };
  unsigned char *a = test_dev_alloc(f->ctx, BYTES), *b = test_dev_alloc(f->ctx, BYTES), host[BYTES];
  for (int i = 0; i < BYTES; i++) host[i] = (unsigned char)i;
  assert_ok(gcap_memcpy(f->ctx, a, host, BYTES, GCAP_MEMCPY_HOST_TO_DEVICE));
  memset(host, 0, BYTES);
  assert_ok(gcap_memcpy(f->ctx, b, host, BYTES, GCAP_MEMCPY_HOST_TO_DEVICE));
  gcap_memcpy_3d_params p = d2d(b, P, Y, a, P, Y, (gcap_extent){4, 2, 2});
  p.src_pos = (gcap_pos){3, 1, 1};
  p.dst_pos = (gcap_pos){8, 2, 0};
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_memcpy_3d_node(g, NULL, 0, &p, &n));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, f->s));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_memcpy(f->ctx, host, b, BYTES, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (int z = 0; z < Z; z++)
    for (int y = 0; y < Y; y++)
      for (int xb = 0; xb < P; xb++) {
        bool inside = z < 2 && y >= 2 && xb >= 8 && xb < 12;
        int from = ((z + 1) * Y + (y - 2 + 1)) * P + (xb - 8 + 3);
        assert_int_equal(host[(z * Y + y) * P + xb], inside ? (unsigned char)from : 0);
      }

  /* Each refusal names the field. */
  gcap_memcpy_3d_params bad = p;
  bad.dst_pos.x = 13;
  assert_status(gcap_graph_add_memcpy_3d_node(g, NULL, 0, &bad, &(gcap_node *){NULL}), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_graph_add_memcpy_3d_node: params->dst.pitch 16 is below dst_pos.x + extent.width");
  bad = p;
  bad.src.ysize = 2;
  assert_status(gcap_graph_add_memcpy_3d_node(g, NULL, 0, &bad, &(gcap_node *){NULL}), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("params->src.ysize 2 is below src_pos.y + extent.height");
  bad = p;
  bad.extent.depth = 0;
  assert_status(gcap_graph_add_memcpy_3d_node(g, NULL, 0, &bad, &(gcap_node *){NULL}), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("params->extent (4, 2, 0) is empty");
  bad = p;
  bad.src.ptr = NULL;
  assert_status(gcap_graph_add_memcpy_3d_node(g, NULL, 0, &bad, &(gcap_node *){NULL}), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("params->src.ptr is NULL");
  bad = p;
  bad.src_pos.z = 2; /* slices 2 and 3 of three */
  assert_status(gcap_graph_add_memcpy_3d_node(g, NULL, 0, &bad, &(gcap_node *){NULL}), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("past the end of its allocation");
  bad = p;
  bad.kind = GCAP_MEMCPY_HOST_TO_DEVICE;
  if (test_on_sim()) {
    assert_status(gcap_graph_add_memcpy_3d_node(g, NULL, 0, &bad, &(gcap_node *){NULL}), GCAP_ERROR_INVALID_VALUE);
    test_assert_message_contains("is device memory but kind HOST_TO_DEVICE needs host memory");
  }
  assert_status(gcap_graph_add_memcpy_3d_node(g, NULL, 0, NULL, &(gcap_node *){NULL}), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("params is NULL");
  assert_int_equal(gcap_graph_node_count(g), 1);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

/*
 * The two sides of a 3-D copy with different pitches, rows per slice and positions: every byte of
 * the destination is the source byte its box maps to, or untouched.
 */
static void test_3d_sides_of_different_shape(void **state) {
  struct test_fixture *f = *state;
  enum { SP = 20, SY = 5, SZ = 3, DP = 12, DY = 4, DZ = 3 };
  unsigned char *src = test_dev_alloc(f->ctx, SP * SY * SZ), *dst = test_dev_alloc(f->ctx, DP * DY * DZ);
  unsigned char host[SP * SY * SZ], back[DP * DY * DZ];
  for (int i = 0; i < SP * SY * SZ; i++) host[i] = (unsigned char)(i * 7 + 1);
  assert_ok(gcap_memcpy(f->ctx, src, host, sizeof host, GCAP_MEMCPY_HOST_TO_DEVICE));
  memset(back, 0xaa, sizeof back);
  assert_ok(gcap_memcpy(f->ctx, dst, back, sizeof back, GCAP_MEMCPY_HOST_TO_DEVICE));
  gcap_memcpy_3d_params p = d2d(dst, DP, DY, src, SP, SY, (gcap_extent){6, 3, 2});
  p.src_pos = (gcap_pos){11, 2, 1};
  p.dst_pos = (gcap_pos){5, 1, 0};
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_memcpy_3d_node(g, NULL, 0, &p, &n));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, f->s));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_memcpy(f->ctx, back, dst, sizeof back, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (int z = 0; z < DZ; z++)
    for (int y = 0; y < DY; y++)
      for (int xb = 0; xb < DP; xb++) {
        bool inside = z < 2 && y >= 1 && y < 4 && xb >= 5 && xb < 11;
        int from = ((z + 1) * SY + (y - 1 + 2)) * SP + (xb - 5 + 11);
        assert_int_equal(back[(z * DY + y) * DP + xb], inside ? host[from] : 0xaa);
      }
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

/* Node setters (3-D, and 1-D making it a plain copy again) and the executable's 3-D setter. */
static void test_setters(void **state) {
  struct test_fixture *f = *state;
  enum { P = 8, BYTES = P * 4 };
  unsigned char *a = test_dev_alloc(f->ctx, BYTES), *b = test_dev_alloc(f->ctx, BYTES), host[BYTES];
  for (int i = 0; i < BYTES; i++) host[i] = (unsigned char)(i + 1);
  assert_ok(gcap_memcpy(f->ctx, a, host, BYTES, GCAP_MEMCPY_HOST_TO_DEVICE));
  gcap_memcpy_3d_params p = d2d(b, P, 4, a, P, 4, (gcap_extent){2, 4, 1}); /* column 0..1 of 4 rows */
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_memcpy_3d_node(g, NULL, 0, &p, &n));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));

  gcap_memcpy_3d_params q = p;
  q.src_pos.x = 4; /* column 4..5 instead */
  assert_ok(gcap_exec_memcpy_3d_node_set_params(x, n, &q));
  memset(host, 0, BYTES);
  assert_ok(gcap_memcpy(f->ctx, b, host, BYTES, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_exec_launch(x, f->s));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_memcpy(f->ctx, host, b, BYTES, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (int r = 0; r < 4; r++) {
    assert_int_equal(host[r * P], r * P + 4 + 1);
    assert_int_equal(host[r * P + 1], r * P + 5 + 1);
    assert_int_equal(host[r * P + 2], 0);
  }
  gcap_memcpy_3d_params got;
  assert_ok(gcap_node_get_memcpy_3d_params(n, &got)); /* the graph's node is unchanged */
  assert_int_equal(got.src_pos.x, 0);

  unsigned char out[BYTES];
  q.dst = (gcap_pitched_ptr){out, P, P, 4};
  q.kind = GCAP_MEMCPY_DEVICE_TO_HOST;
  assert_status(gcap_exec_memcpy_3d_node_set_params(x, n, &q), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_exec_memcpy_3d_node_set_params: kind 2 differs from the node's kind 3");
  assert_status(gcap_exec_memcpy_3d_node_set_params(x, n, NULL), GCAP_ERROR_INVALID_VALUE);

  /* In the graph: 3-D parameters, then 1-D ones, which make it one row again. */
  q = p;
  q.extent.height = 2;
  assert_ok(gcap_node_set_memcpy_3d_params(n, &q));
  assert_ok(gcap_node_get_memcpy_3d_params(n, &got));
  assert_int_equal(got.extent.height, 2);
  gcap_memcpy_node_params flat = {b, a, 16, GCAP_MEMCPY_DEVICE_TO_DEVICE};
  assert_ok(gcap_node_set_memcpy_params(n, &flat));
  assert_ok(gcap_node_get_memcpy_3d_params(n, &got));
  assert_int_equal(got.extent.width, 16);
  assert_int_equal(got.extent.height, 1);
  assert_int_equal(got.dst.pitch, 0);
  assert_ok(gcap_node_get_memcpy_params(n, &flat));
  assert_int_equal(flat.bytes, 16);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

/* Two copies writing alternate rows of one buffer do not race; rows in common do. */
static void test_races_by_rows(void **state) {
  struct test_fixture *f = *state;
  enum { P = 16, ROWS = 8 };
  unsigned char *src = test_dev_alloc(f->ctx, P * ROWS), *dst = test_dev_alloc(f->ctx, P * ROWS);
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_memcpy_3d_params even = d2d(dst, 2 * P, 0, src, 2 * P, 0, (gcap_extent){P, ROWS / 2, 1});
  gcap_memcpy_3d_params odd = even;
  odd.dst_pos.x = P; /* row 1, 3, ... (a pitch of two rows) */
  assert_ok(gcap_graph_add_memcpy_3d_node(g, NULL, 0, &even, &(gcap_node *){NULL}));
  assert_ok(gcap_graph_add_memcpy_3d_node(g, NULL, 0, &odd, &(gcap_node *){NULL}));
  size_t count = 0;
  assert_ok(gcap_graph_find_races(g, NULL, &count));
  assert_int_equal(count, 0);
  gcap_memcpy_3d_params shifted = even;
  shifted.dst_pos.y = 3; /* rows 6, 8, ...: row 6 is the first's too */
  shifted.extent.height = 1;
  assert_ok(gcap_graph_add_memcpy_3d_node(g, NULL, 0, &shifted, &(gcap_node *){NULL}));
  assert_ok(gcap_graph_find_races(g, NULL, &count));
  assert_int_equal(count, 1);
  gcap_race race;
  count = 1;
  assert_ok(gcap_graph_find_races(g, &race, &count));
  assert_ptr_equal(race.addr, dst + 6 * P);
  assert_int_equal(race.bytes, P);
  gcap_graph_destroy(g);
}

/* Clone, whole-graph update, DOT and saving carry the 3-D parameters. */
static void test_clone_update_dot_and_save(void **state) {
  struct test_fixture *f = *state;
  enum { P = 8, BYTES = P * 4 };
  unsigned char *a = test_dev_alloc(f->ctx, BYTES), *b = test_dev_alloc(f->ctx, BYTES);
  gcap_memcpy_3d_params p = d2d(b, P, 2, a, P, 2, (gcap_extent){4, 2, 2});
  gcap_graph *g = test_graph_create(f->ctx), *clone = NULL;
  gcap_node *n = NULL, *c = NULL;
  assert_ok(gcap_graph_add_memcpy_3d_node(g, NULL, 0, &p, &n));
  assert_ok(gcap_graph_clone(g, &clone));
  assert_ok(gcap_graph_node_find_in_clone(clone, n, &c));
  gcap_memcpy_3d_params got;
  assert_ok(gcap_node_get_memcpy_3d_params(c, &got));
  assert_memory_equal(&got, &p, sizeof p);
  gcap_graph_destroy(g); /* the clone's parameters are its own */
  assert_ok(gcap_node_get_memcpy_3d_params(c, &got));
  assert_int_equal(got.extent.depth, 2);

  gcap_exec *x = NULL;
  gcap_exec_update_info info;
  assert_ok(gcap_graph_instantiate(clone, 0, &x));
  got.src_pos.x = 4;
  assert_ok(gcap_node_set_memcpy_3d_params(c, &got));
  assert_ok(gcap_exec_update(x, clone, &info));
  assert_int_equal(info.result, GCAP_EXEC_UPDATE_SUCCESS);
  assert_ok(gcap_exec_launch(x, f->s));
  assert_ok(gcap_stream_synchronize(f->s));

  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  assert_ok(gcap_graph_write_dot(clone, out, GCAP_DOT_VERBOSE));
  fclose(out);
  assert_non_null(strstr(text, "4 bytes x 2 rows x 2 slices\\npitch 8 (dst) 8 (src)"));
  free(text);
  text = NULL;
  out = open_memstream(&text, &len);
  gcap_status saved = gcap_graph_save(clone, out);
  fclose(out);
  if (saved == GCAP_SUCCESS) {
    assert_non_null(strstr(text, "\"memcpy_3d\""));
    FILE *in = fmemopen(text, strlen(text), "r");
    gcap_graph *loaded = NULL;
    gcap_node *ln = NULL;
    size_t one = 1;
    assert_ok(gcap_graph_load(f->ctx, in, &loaded));
    fclose(in);
    assert_ok(gcap_graph_get_nodes(loaded, &ln, &one));
    gcap_memcpy_3d_params back;
    assert_ok(gcap_node_get_memcpy_3d_params(ln, &back));
    assert_memory_equal(&back, &got, sizeof got);
    gcap_graph_destroy(loaded);
  } else {
    assert_int_equal(saved, GCAP_ERROR_NOT_SUPPORTED); /* no jansson */
  }
  free(text);
  gcap_exec_destroy(x);
  gcap_graph_destroy(clone);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_pitched_allocation, setup, teardown),
      cmocka_unit_test_setup_teardown(test_eager_2d_round_trip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_captured_2d_copy, setup, teardown),
      cmocka_unit_test_setup_teardown(test_3d_node_box_and_checks, setup, teardown),
      cmocka_unit_test_setup_teardown(test_3d_sides_of_different_shape, setup, teardown),
      cmocka_unit_test_setup_teardown(test_setters, setup, teardown),
      cmocka_unit_test_setup_teardown(test_races_by_rows, setup, teardown),
      cmocka_unit_test_setup_teardown(test_clone_update_dot_and_save, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
