/*
 * One test body for both backends (GCAP_BACKEND): real kernels from PTX on the GPU, their
 * sim_fn twins on the simulator, and the same memory contents expected from each. Tests of
 * what only a GPU has (native child graphs, work issued behind gcap's back) skip elsewhere.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <cudaTypedefs.h>
#include <gcap/cuda.h>

#include "../common.h"

#define N 1000u

static const char kernels_ptx[] = ".version 7.0\n"
                                  ".target sm_52\n"
                                  ".address_size 64\n"
                                  "\n"
                                  ".visible .entry fill_u32(.param .u64 p, .param .u32 v, .param .u64 n)\n"
                                  "{\n"
                                  "  .reg .pred %pr<2>;\n"
                                  "  .reg .b32 %r<5>;\n"
                                  "  .reg .b64 %rd<6>;\n"
                                  "  ld.param.u64 %rd1, [p];\n"
                                  "  ld.param.u32 %r1, [v];\n"
                                  "  ld.param.u64 %rd2, [n];\n"
                                  "  mov.u32 %r2, %ctaid.x;\n"
                                  "  mov.u32 %r3, %ntid.x;\n"
                                  "  mov.u32 %r4, %tid.x;\n"
                                  "  mad.lo.s32 %r2, %r2, %r3, %r4;\n"
                                  "  cvt.u64.u32 %rd3, %r2;\n"
                                  "  setp.ge.u64 %pr1, %rd3, %rd2;\n"
                                  "  @%pr1 bra FILL_DONE;\n"
                                  "  cvta.to.global.u64 %rd4, %rd1;\n"
                                  "  shl.b64 %rd5, %rd3, 2;\n"
                                  "  add.s64 %rd4, %rd4, %rd5;\n"
                                  "  st.global.u32 [%rd4], %r1;\n"
                                  "FILL_DONE:\n"
                                  "  ret;\n"
                                  "}\n"
                                  "\n"
                                  ".visible .entry add_u32(.param .u64 p, .param .u32 v, .param .u64 n)\n"
                                  "{\n"
                                  "  .reg .pred %pr<2>;\n"
                                  "  .reg .b32 %r<6>;\n"
                                  "  .reg .b64 %rd<6>;\n"
                                  "  ld.param.u64 %rd1, [p];\n"
                                  "  ld.param.u32 %r1, [v];\n"
                                  "  ld.param.u64 %rd2, [n];\n"
                                  "  mov.u32 %r2, %ctaid.x;\n"
                                  "  mov.u32 %r3, %ntid.x;\n"
                                  "  mov.u32 %r4, %tid.x;\n"
                                  "  mad.lo.s32 %r2, %r2, %r3, %r4;\n"
                                  "  cvt.u64.u32 %rd3, %r2;\n"
                                  "  setp.ge.u64 %pr1, %rd3, %rd2;\n"
                                  "  @%pr1 bra ADD_DONE;\n"
                                  "  cvta.to.global.u64 %rd4, %rd1;\n"
                                  "  shl.b64 %rd5, %rd3, 2;\n"
                                  "  add.s64 %rd4, %rd4, %rd5;\n"
                                  "  ld.global.u32 %r5, [%rd4];\n"
                                  "  add.s32 %r5, %r5, %r1;\n"
                                  "  st.global.u32 [%rd4], %r5;\n"
                                  "ADD_DONE:\n"
                                  "  ret;\n"
                                  "}\n";

static void fill_u32_sim(const gcap_sim_thread *t, void *const *args) {
  uint32_t *p = *(uint32_t *const *)args[0];
  uint64_t i = (uint64_t)t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < *(const uint64_t *)args[2]) p[i] = *(const uint32_t *)args[1];
}

static void add_u32_sim(const gcap_sim_thread *t, void *const *args) {
  uint32_t *p = *(uint32_t *const *)args[0];
  uint64_t i = (uint64_t)t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < *(const uint64_t *)args[2]) p[i] += *(const uint32_t *)args[1];
}

static const size_t kernel_sizes[] = {8, 4, 8};

struct fixture {
  gcap_context *ctx;
  gcap_stream *s;
  gcap_module *m;
  gcap_kernel *fill, *add;
  uint32_t *dev;  /* N elements */
  uint32_t *host; /* N elements, page-locked */
};

static gcap_module_desc module_desc(const gcap_kernel_def *defs, size_t count) {
  return (gcap_module_desc){kernels_ptx, sizeof kernels_ptx, defs, count};
}

static int setup(void **state) {
  struct fixture *f = calloc(1, sizeof *f);
  if (!f) return -1;
  f->ctx = test_context_create();
  const gcap_kernel_def defs[] = {{"fill_u32", fill_u32_sim, 3, kernel_sizes, NULL},
                                  {"add_u32", add_u32_sim, 3, kernel_sizes, NULL}};
  gcap_module_desc d = module_desc(defs, 2);
  if (gcap_stream_create(f->ctx, &f->s) != GCAP_SUCCESS || gcap_module_load(f->ctx, &d, &f->m) != GCAP_SUCCESS ||
      gcap_module_get_kernel(f->m, "fill_u32", &f->fill) != GCAP_SUCCESS ||
      gcap_module_get_kernel(f->m, "add_u32", &f->add) != GCAP_SUCCESS ||
      gcap_mem_alloc(f->ctx, N * sizeof(uint32_t), (void **)&f->dev) != GCAP_SUCCESS ||
      gcap_host_alloc(f->ctx, N * sizeof(uint32_t), (void **)&f->host) != GCAP_SUCCESS) {
    print_error("setup: %s\n", gcap_last_error_message());
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = *state;
  gcap_context_destroy(f->ctx); /* frees streams, modules and memory */
  free(f);
  return 0;
}

static void launch(struct fixture *f, gcap_kernel *k, uint32_t value) {
  uint64_t n = N;
  void *args[] = {&f->dev, &value, &n};
  assert_ok(gcap_launch_kernel(f->s, k, GCAP_DIM3((N + 127) / 128, 1, 1), GCAP_DIM3(128, 1, 1), 0, args));
}

static void read_back(struct fixture *f) {
  memset(f->host, 0xee, N * sizeof(uint32_t));
  assert_ok(gcap_memcpy_async(f->s, f->host, f->dev, N * sizeof(uint32_t), GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_stream_synchronize(f->s));
}

static void assert_all(const uint32_t *p, uint32_t value) {
  for (size_t i = 0; i < N; i++)
    if (p[i] != value) fail_msg("element %zu is %u, expected %u", i, p[i], value);
}

static void test_eager_kernels(void **state) {
  struct fixture *f = *state;
  launch(f, f->fill, 40);
  launch(f, f->add, 2);
  read_back(f);
  assert_all(f->host, 42);
}

/* memset -> fill -> add -> D2H -> host check, replayed; then changed per node and disabled. */
struct pipeline {
  gcap_graph *g;
  gcap_node *memset, *fill, *add, *copy, *host;
  gcap_exec *x;
  uint32_t fill_value, add_value;
  uint64_t n;
  void *fill_args[3], *add_args[3];
};

static void count_call(void *user_data) { ++*(int *)user_data; }

static void build_pipeline(struct fixture *f, struct pipeline *p, int *calls) {
  p->fill_value = 10, p->add_value = 5, p->n = N;
  p->fill_args[0] = p->add_args[0] = &f->dev;
  p->fill_args[1] = &p->fill_value, p->add_args[1] = &p->add_value;
  p->fill_args[2] = p->add_args[2] = &p->n;
  assert_ok(gcap_graph_create(f->ctx, &p->g));
  gcap_memset_node_params ms = {f->dev, 0, 4, N, 1, 0};
  assert_ok(gcap_graph_add_memset_node(p->g, NULL, 0, &ms, &p->memset));
  gcap_kernel_node_params kf = {f->fill, GCAP_DIM3((N + 127) / 128, 1, 1), GCAP_DIM3(128, 1, 1), 0, p->fill_args};
  assert_ok(gcap_graph_add_kernel_node(p->g, &p->memset, 1, &kf, &p->fill));
  gcap_kernel_node_params ka = {f->add, kf.grid, kf.block, 0, p->add_args};
  assert_ok(gcap_graph_add_kernel_node(p->g, &p->fill, 1, &ka, &p->add));
  gcap_memcpy_node_params mc = {f->host, f->dev, N * sizeof(uint32_t), GCAP_MEMCPY_DEVICE_TO_HOST};
  assert_ok(gcap_graph_add_memcpy_node(p->g, &p->add, 1, &mc, &p->copy));
  gcap_host_node_params hp = {count_call, calls};
  assert_ok(gcap_graph_add_host_node(p->g, &p->copy, 1, &hp, &p->host));
  assert_ok(gcap_graph_instantiate(p->g, 0, &p->x));
}

static void replay(struct fixture *f, struct pipeline *p) {
  memset(f->host, 0xee, N * sizeof(uint32_t));
  assert_ok(gcap_exec_launch(p->x, f->s));
  assert_ok(gcap_stream_synchronize(f->s));
}

static void test_graph_replay_and_setters(void **state) {
  struct fixture *f = *state;
  int calls = 0;
  struct pipeline p;
  build_pipeline(f, &p, &calls);
  assert_int_equal(gcap_exec_node_count(p.x), 5);
  for (int i = 0; i < 3; i++) replay(f, &p);
  assert_all(f->host, 15);
  assert_int_equal(calls, 3);

  /* A new add value for the executable only: the graph keeps its own. */
  uint32_t seven = 7;
  void *args[] = {&f->dev, &seven, &p.n};
  gcap_kernel_node_params ka = {f->add, GCAP_DIM3((N + 127) / 128, 1, 1), GCAP_DIM3(128, 1, 1), 0, args};
  assert_ok(gcap_exec_kernel_node_set_params(p.x, p.add, &ka));
  replay(f, &p);
  assert_all(f->host, 17);

  assert_ok(gcap_exec_node_set_enabled(p.x, p.add, false));
  replay(f, &p);
  assert_all(f->host, 10);
  assert_ok(gcap_exec_node_set_enabled(p.x, p.add, true));
  gcap_memset_node_params ms = {f->dev, 1, 4, N, 1, 0};
  assert_ok(gcap_exec_memset_node_set_params(p.x, p.memset, &ms));
  replay(f, &p);
  assert_all(f->host, 17);
  assert_int_equal(calls, 6);
  gcap_exec_destroy(p.x);
  gcap_graph_destroy(p.g);
}

static void test_whole_graph_update(void **state) {
  struct fixture *f = *state;
  int calls = 0;
  struct pipeline p;
  build_pipeline(f, &p, &calls);
  replay(f, &p);
  assert_all(f->host, 15);
  gcap_graph *changed = NULL;
  assert_ok(gcap_graph_clone(p.g, &changed));
  gcap_node *nodes[5];
  size_t count = 5;
  assert_ok(gcap_graph_get_nodes(changed, nodes, &count));
  uint32_t hundred = 100;
  void *args[] = {&f->dev, &hundred, &p.n};
  gcap_kernel_node_params kf = {f->fill, GCAP_DIM3((N + 127) / 128, 1, 1), GCAP_DIM3(128, 1, 1), 0, args};
  assert_ok(gcap_node_set_kernel_params(nodes[1], &kf));
  gcap_exec_update_info info;
  assert_ok(gcap_exec_update(p.x, changed, &info));
  assert_int_equal(info.result, GCAP_EXEC_UPDATE_SUCCESS);
  replay(f, &p);
  assert_all(f->host, 105);
  assert_int_equal(calls, 2);
  gcap_graph_destroy(changed);
  gcap_exec_destroy(p.x);
  gcap_graph_destroy(p.g);
}

/* Captured work, fork and join through events: the same graph shape and results on both. */
static void test_captured_fork_join(void **state) {
  struct fixture *f = *state;
  gcap_stream *side = NULL;
  gcap_event *forked = NULL, *joined = NULL;
  assert_ok(gcap_stream_create(f->ctx, &side));
  assert_ok(gcap_event_create(f->ctx, &forked));
  assert_ok(gcap_event_create(f->ctx, &joined));
  assert_ok(gcap_stream_begin_capture(f->s, GCAP_CAPTURE_MODE_GLOBAL));
  launch(f, f->fill, 1);
  assert_ok(gcap_event_record(forked, f->s));
  assert_ok(gcap_stream_wait_event(side, forked));
  uint32_t three = 3;
  uint64_t n = N / 2;
  uint32_t *upper = f->dev + N / 2;
  void *args[] = {&upper, &three, &n};
  assert_ok(gcap_launch_kernel(side, f->add, GCAP_DIM3(4, 1, 1), GCAP_DIM3(128, 1, 1), 0, args));
  assert_ok(gcap_event_record(joined, side));
  assert_ok(gcap_stream_wait_event(f->s, joined));
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_end_capture(f->s, &g));
  size_t count = 0;
  assert_ok(gcap_graph_get_nodes(g, NULL, &count));
  assert_int_equal(count, 2);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, f->s));
  read_back(f);
  for (size_t i = 0; i < N; i++) assert_int_equal(f->host[i], i < N / 2 ? 1 : 4);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  gcap_event_destroy(forked);
  gcap_event_destroy(joined);
  assert_ok(gcap_stream_destroy(side));
}

static void test_native_handles(void **state) {
  struct fixture *f = *state;
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(f->ctx, &g));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  bool cuda = gcap_context_backend(f->ctx) == GCAP_BACKEND_CUDA;
  assert_int_equal(gcap_cuda_stream(f->s) != NULL, cuda);
  assert_int_equal(gcap_cuda_context(f->ctx) != NULL, cuda);
  assert_int_equal(gcap_cuda_graph_exec(x) != NULL, cuda);
  assert_null(gcap_cuda_stream(NULL));
  test_assert_message_contains("gcap_cuda_stream");
  assert_null(gcap_cuda_context(NULL));
  assert_null(gcap_cuda_graph_exec(NULL));

  gcap_node *n = (gcap_node *)(uintptr_t)1;
  assert_status(gcap_cuda_graph_add_native_child(NULL, NULL, 0, (CUgraph)(uintptr_t)8, &n), GCAP_ERROR_INVALID_HANDLE);
  assert_null(n);
  assert_status(gcap_cuda_graph_add_native_child(g, NULL, 0, NULL, &n), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("native");
  if (!cuda) {
    /* Never dereferenced: the simulator refuses before touching it. */
    assert_status(gcap_cuda_graph_add_native_child(g, NULL, 0, (CUgraph)(uintptr_t)8, &n), GCAP_ERROR_NOT_SUPPORTED);
    test_assert_message_contains("CUDA backend");
  }
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

/* -------------------------------------------------------------- GPU only */

struct native_api {
  PFN_cuGraphCreate_v10000 graph_create;
  PFN_cuGraphAddMemsetNode_v10000 add_memset;
  PFN_cuGraphDestroy_v10000 graph_destroy;
  PFN_cuMemsetD32Async_v3020 memset_async;
};

static void resolve(void *lib, const char *name, void *slot) {
  void *p = dlsym(lib, name);
  if (!p) fail_msg("libcuda.so.1 has no %s", name);
  memcpy(slot, &p, sizeof p);
}

static struct native_api native_api(void) {
  struct native_api api;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) fail_msg("dlopen libcuda.so.1: %s", dlerror());
  resolve(lib, "cuGraphCreate", &api.graph_create);
  resolve(lib, "cuGraphAddMemsetNode", &api.add_memset);
  resolve(lib, "cuGraphDestroy", &api.graph_destroy);
  resolve(lib, "cuMemsetD32Async", &api.memset_async);
  return api;
}

static void test_native_child_graph(void **state) {
  struct fixture *f = *state;
  if (gcap_context_backend(f->ctx) != GCAP_BACKEND_CUDA) skip();
  struct native_api api = native_api();
  CUgraph native = NULL;
  assert_int_equal(api.graph_create(&native, 0), CUDA_SUCCESS);
  CUDA_MEMSET_NODE_PARAMS ms;
  memset(&ms, 0, sizeof ms);
  ms.dst = (CUdeviceptr)(uintptr_t)f->dev, ms.elementSize = 4, ms.width = N, ms.height = 1, ms.value = 7;
  ms.pitch = N * 4;
  CUgraphNode set7;
  assert_int_equal(api.add_memset(&set7, native, NULL, 0, &ms, gcap_cuda_context(f->ctx)), CUDA_SUCCESS);

  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(f->ctx, &g));
  gcap_memset_node_params zero = {f->dev, 0, 4, N, 1, 0};
  gcap_node *first = NULL, *child = NULL, *add = NULL;
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &zero, &first));
  assert_ok(gcap_cuda_graph_add_native_child(g, &first, 1, native, &child));
  assert_int_equal(api.graph_destroy(native), CUDA_SUCCESS); /* gcap keeps its own clone */
  assert_int_equal(gcap_node_get_type(child), GCAP_NODE_GRAPH);
  gcap_graph *inner = NULL;
  assert_status(gcap_node_get_child_graph(child, &inner), GCAP_ERROR_NOT_SUPPORTED);
  uint32_t one = 1;
  uint64_t n = N;
  void *args[] = {&f->dev, &one, &n};
  gcap_kernel_node_params ka = {f->add, GCAP_DIM3((N + 127) / 128, 1, 1), GCAP_DIM3(128, 1, 1), 0, args};
  assert_ok(gcap_graph_add_kernel_node(g, &child, 1, &ka, &add));
  gcap_graph *copy = NULL;
  assert_ok(gcap_graph_clone(g, &copy));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(copy, 0, &x));
  gcap_graph_destroy(copy);
  gcap_graph_destroy(g);
  assert_ok(gcap_exec_launch(x, f->s));
  read_back(f);
  assert_all(f->host, 8);
  gcap_exec_destroy(x);
}

static void test_work_behind_gcaps_back_is_refused(void **state) {
  struct fixture *f = *state;
  if (gcap_context_backend(f->ctx) != GCAP_BACKEND_CUDA) skip();
  struct native_api api = native_api();
  launch(f, f->fill, 1);
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_stream_begin_capture(f->s, GCAP_CAPTURE_MODE_GLOBAL));
  launch(f, f->add, 1);
  assert_int_equal(api.memset_async((CUdeviceptr)(uintptr_t)f->dev, 5, N, gcap_cuda_stream(f->s)), CUDA_SUCCESS);
  gcap_graph *g = (gcap_graph *)(uintptr_t)1;
  assert_status(gcap_stream_end_capture(f->s, &g), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_null(g);
  test_assert_message_contains("directly on the native stream");
  read_back(f);
  assert_all(f->host, 1); /* neither the captured add nor the native memset ran */

  /* The stream is free again: a clean capture works. */
  assert_ok(gcap_stream_begin_capture(f->s, GCAP_CAPTURE_MODE_GLOBAL));
  launch(f, f->add, 1);
  assert_ok(gcap_stream_end_capture(f->s, &g));
  gcap_graph_destroy(g);
}

/* Sizes are checked against the image on both backends (the simulator reads them from the PTX). */
static void test_definitions_must_match_the_image(void **state) {
  struct fixture *f = *state;
  static const size_t wrong[] = {8, 8, 8};
  const gcap_kernel_def bad_size[] = {{"fill_u32", NULL, 3, wrong, NULL}};
  gcap_module_desc d = module_desc(bad_size, 1);
  gcap_module *m = (gcap_module *)(uintptr_t)1;
  gcap_status st = gcap_module_load(f->ctx, &d, &m);
  if (st == GCAP_SUCCESS) { /* a driver before 12.4 cannot tell sizes */
    assert_ok(gcap_module_unload(m));
    skip();
  }
  assert_int_equal(st, GCAP_ERROR_INVALID_VALUE);
  assert_null(m);
  test_assert_message_contains("parameter 1 is 4 bytes");
  /* The simulator runs definitions the image lacks from their CPU versions. */
  if (gcap_context_backend(f->ctx) != GCAP_BACKEND_CUDA) return;

  const gcap_kernel_def absent[] = {{"no_such_kernel", NULL, 0, NULL, NULL}};
  d = module_desc(absent, 1);
  assert_status(gcap_module_load(f->ctx, &d, &m), GCAP_ERROR_NOT_FOUND);
  test_assert_message_contains("no_such_kernel");

  gcap_module_desc no_image = {NULL, 0, bad_size, 1};
  assert_status(gcap_module_load(f->ctx, &no_image, &m), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("image");
}

/* No definitions: the kernels are the PTX's entries (the simulator runs them from it). */
static void test_kernels_by_name_alone(void **state) {
  struct fixture *f = *state;
  gcap_module_desc d = module_desc(NULL, 0);
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(f->ctx, &d, &m));
  gcap_kernel *k = NULL;
  gcap_status st = gcap_module_get_kernel(m, "add_u32", &k);
  if (st == GCAP_ERROR_NOT_SUPPORTED) skip(); /* driver before 12.4 */
  assert_int_equal(st, GCAP_SUCCESS);
  assert_string_equal(gcap_kernel_name(k), "add_u32");
  gcap_kernel *again = NULL;
  assert_ok(gcap_module_get_kernel(m, "add_u32", &again));
  assert_ptr_equal(k, again);
  assert_status(gcap_module_get_kernel(m, "missing", &again), GCAP_ERROR_NOT_FOUND);
  launch(f, f->fill, 2);
  launch(f, k, 3);
  read_back(f);
  assert_all(f->host, 5);
  assert_ok(gcap_module_unload(m));
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_eager_kernels, setup, teardown),
      cmocka_unit_test_setup_teardown(test_graph_replay_and_setters, setup, teardown),
      cmocka_unit_test_setup_teardown(test_whole_graph_update, setup, teardown),
      cmocka_unit_test_setup_teardown(test_captured_fork_join, setup, teardown),
      cmocka_unit_test_setup_teardown(test_native_handles, setup, teardown),
      cmocka_unit_test_setup_teardown(test_native_child_graph, setup, teardown),
      cmocka_unit_test_setup_teardown(test_work_behind_gcaps_back_is_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_definitions_must_match_the_image, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kernels_by_name_alone, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
