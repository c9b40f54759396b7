/*
 * The CUDA backend against the recording fake driver (fake_libcuda.c): every node type becomes
 * the driver node of the same type with the same parameters and edges; setters, enable/disable
 * and whole-graph update reach the matching driver calls; every handle is released; and the
 * driver's documented preconditions hold throughout. Also the backend's own duties: no driver
 * call from a host function, synchronous copies complete on return, a context synchronize that
 * leaves other contexts' captures alone, the calling thread's current context kept.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cudaTypedefs.h>
#include <gcap/cuda.h>

#include "../common.h"
#include "fake_libcuda.h"

#define TEXT 16384

/* ------------------------------------------------------------ setup */

static gcap_context *cuda_context(void) {
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_CUDA;
  gcap_context *ctx = NULL;
  assert_ok(gcap_context_create(&o, &ctx));
  return ctx;
}

static void assert_no_violations(void) {
  static char text[TEXT];
  size_t n = fake_cuda_violations(text, sizeof text);
  if (n) fail_msg("the driver's preconditions were broken %zu time(s):\n%s", n, text);
}

static size_t live_before; /* handles a failed earlier test left behind */

static int count_live_handles(void **state) {
  (void)state;
  live_before = fake_cuda_live(NULL, 0);
  fake_cuda_log_clear();
  return 0;
}

/* Destroys ctx; then no driver handle it made may be left and no precondition broken. */
static void finish(gcap_context *ctx) {
  static char text[TEXT];
  gcap_context_destroy(ctx);
  size_t live = fake_cuda_live(text, sizeof text);
  if (live > live_before) fail_msg("%zu driver handle(s) outlive their gcap context:\n%s", live - live_before, text);
  assert_no_violations();
}

/* A driver entry point, as gcap itself gets it; ISO C has no cast to a function pointer, so copy the bits. */
static void driver_fn(const char *name, int version, void *slot, size_t size) {
  void *fn = NULL;
  CUdriverProcAddressQueryResult found;
  assert_int_equal(cuGetProcAddress(name, &fn, version, 0, &found), CUDA_SUCCESS);
  assert_int_equal(size, sizeof fn);
  memcpy(slot, &fn, sizeof fn);
}
#define DRIVER_FN(var, name, version)                                                                                  \
  PFN_##name##_v##version var = NULL;                                                                                  \
  driver_fn(#name, version, &var, sizeof var)

/* The fake takes a kernel's parameter sizes from its name: "k_8_4" has an 8 and a 4-byte one. */
static gcap_kernel *load_kernel(gcap_context *ctx, const char *name, gcap_module **m) {
  static const char ptx[] = ".version 7.0\n.target sm_52\n.address_size 64\n";
  gcap_module_desc d = {ptx, sizeof ptx, NULL, 0};
  gcap_kernel *k = NULL;
  assert_ok(gcap_module_load(ctx, &d, m));
  assert_ok(gcap_module_get_kernel(*m, name, &k));
  return k;
}

/* ------------------------------------------------------------ the core's graph, described as the fake does */

struct lines {
  char *items[512];
  size_t count;
};

static void add_line(struct lines *l, const char *text) {
  assert_true(l->count < 512);
  l->items[l->count++] = strdup(text);
}

static void kernel_label(const gcap_node *n, char *out, size_t size) {
  gcap_kernel_node_params p;
  assert_ok(gcap_node_get_kernel_params(n, &p));
  const char *name = gcap_kernel_name(p.kernel);
  unsigned char args[256] = {0};
  size_t used = 0, i = 0;
  for (const char *at = strchr(name, '_'); at; at = strchr(at + 1, '_'), i++) {
    size_t sz = strtoul(at + 1, NULL, 10);
    used = (used + sz - 1) / sz * sz;
    memcpy(args + used, p.args[i], sz);
    used += sz;
  }
  int w = snprintf(out, size, "kernel %s grid=%u,%u,%u block=%u,%u,%u shmem=%u args=", name, p.grid.x, p.grid.y,
                   p.grid.z, p.block.x, p.block.y, p.block.z, p.shared_mem_bytes);
  for (size_t b = 0; b < used; b++) w += snprintf(out + w, size - (size_t)w, "%02x", args[b]);
}

/* A side's first byte: its position folded into its pointer, as the backend passes it. */
static const char *first_byte(const gcap_pitched_ptr *pp, const gcap_pos *pos) {
  return (const char *)pp->ptr + (pos->z * pp->ysize + pos->y) * pp->pitch + pos->x;
}

static void copy_label(const gcap_node *n, char *out, size_t size) {
  gcap_memcpy_3d_params c;
  assert_ok(gcap_node_get_memcpy_3d_params(n, &c));
  int w = snprintf(out, size, "memcpy dst=%p src=%p bytes=%zu", (const void *)first_byte(&c.dst, &c.dst_pos),
                   (const void *)first_byte(&c.src, &c.src_pos), c.extent.width);
  if (c.extent.height > 1 || c.extent.depth > 1)
    snprintf(out + w, size - (size_t)w, " rows=%zu slices=%zu pitch=%zu,%zu height=%zu,%zu", c.extent.height,
             c.extent.depth, c.dst.pitch, c.src.pitch, c.extent.depth > 1 ? c.dst.ysize : 0,
             c.extent.depth > 1 ? c.src.ysize : 0);
}

/* What a node becomes in the driver's graph; a gcap child graph's entry and exit are empty nodes. */
static void label(const gcap_node *n, char *out, size_t size) {
  gcap_memset_node_params f;
  gcap_graph *child = NULL;
  switch (gcap_node_get_type(n)) {
  case GCAP_NODE_KERNEL: kernel_label(n, out, size); break;
  case GCAP_NODE_MEMCPY: copy_label(n, out, size); break;
  case GCAP_NODE_MEMSET:
    assert_ok(gcap_node_get_memset_params(n, &f));
    snprintf(out, size, "memset dst=%p value=%u element=%u width=%zu height=%zu pitch=%zu", f.dst, f.value,
             f.element_size, f.width, f.height, f.height > 1 ? f.pitch : f.width * f.element_size);
    break;
  case GCAP_NODE_HOST: snprintf(out, size, "host"); break;
  case GCAP_NODE_EVENT_RECORD: snprintf(out, size, "event_record"); break;
  case GCAP_NODE_EVENT_WAIT: snprintf(out, size, "event_wait"); break;
  case GCAP_NODE_GRAPH:
    if (gcap_node_get_child_graph(n, &child) == GCAP_ERROR_NOT_SUPPORTED) snprintf(out, size, "child nodes=1");
    else snprintf(out, size, "empty");
    break;
  case GCAP_NODE_CONDITIONAL: {
    gcap_graph *bodies[8];
    gcap_conditional_node_params p = {.body_out = bodies};
    assert_ok(gcap_node_get_conditional_params(n, &p));
    int w = snprintf(out, size, "conditional type=%d size=%u bodies", (int)p.type, p.size);
    for (unsigned b = 0; b < p.size; b++)
      w += snprintf(out + w, size - (size_t)w, "%s%zu", b ? "," : "=", gcap_graph_node_count(bodies[b]));
    break;
  }
  default: snprintf(out, size, "empty"); break; /* EMPTY, MEM_ALLOC, MEM_FREE */
  }
}

static void describe_core(const gcap_graph *g, struct lines *l);

static void describe_node_edges(const gcap_node *n, struct lines *l) {
  char to[400], from[400], edge[820];
  label(n, to, sizeof to);
  add_line(l, to);
  gcap_node *deps[64];
  size_t count = 64;
  assert_ok(gcap_node_get_dependencies(n, deps, &count));
  for (size_t k = 0; k < count; k++) {
    label(deps[k], from, sizeof from);
    snprintf(edge, sizeof edge, "%s -> %s", from, to);
    add_line(l, edge);
  }
  gcap_graph *child = NULL;
  if (gcap_node_get_type(n) != GCAP_NODE_GRAPH || gcap_node_get_child_graph(n, &child) != GCAP_SUCCESS) return;
  /* The child's nodes hang between its entry and its exit (both "empty"). */
  add_line(l, "empty");
  gcap_node *nodes[64];
  size_t num = 64;
  assert_ok(gcap_graph_get_nodes(child, nodes, &num));
  if (num == 0) add_line(l, "empty -> empty");
  for (size_t i = 0; i < num; i++) {
    size_t d = 64, s = 64;
    gcap_node *tmp[64];
    char mid[400];
    label(nodes[i], mid, sizeof mid);
    assert_ok(gcap_node_get_dependencies(nodes[i], tmp, &d));
    assert_ok(gcap_node_get_dependents(nodes[i], tmp, &s));
    if (d == 0) snprintf(edge, sizeof edge, "empty -> %s", mid), add_line(l, edge);
    if (s == 0) snprintf(edge, sizeof edge, "%s -> empty", mid), add_line(l, edge);
  }
  describe_core(child, l);
}

static void describe_core(const gcap_graph *g, struct lines *l) {
  gcap_node *nodes[64];
  size_t num = 64;
  assert_ok(gcap_graph_get_nodes(g, nodes, &num));
  for (size_t i = 0; i < num; i++) describe_node_edges(nodes[i], l);
}

static int compare_lines(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Fails unless the driver's executable is the core's graph, node by node and edge by edge. */
static void assert_same_graph(const gcap_graph *g, gcap_exec *x) {
  static char want[TEXT], got[TEXT];
  struct lines l = {{0}, 0};
  describe_core(g, &l);
  qsort(l.items, l.count, sizeof *l.items, compare_lines);
  size_t used = 0;
  want[0] = '\0';
  for (size_t i = 0; i < l.count; i++) {
    used += (size_t)snprintf(want + used, sizeof want - used, "%s\n", l.items[i]);
    free(l.items[i]);
  }
  CUgraphExec native = gcap_cuda_graph_exec(x);
  assert_non_null(native);
  fake_cuda_describe_exec(native, got, sizeof got);
  if (strcmp(want, got) != 0)
    fail_msg("the driver's graph differs from gcap's:\n--- gcap\n%s--- driver\n%s", want, got);
}

/* ------------------------------------------------------------ host functions */

struct host_log {
  int runs;
  gcap_exec *exec; /* what the function tries to launch, when set */
  gcap_stream *stream;
  gcap_status from_inside; /* what that attempt returned */
  char message[256];
};

static void count_run(void *user_data) { ((struct host_log *)user_data)->runs++; }

static void launch_from_inside(void *user_data) {
  struct host_log *log = user_data;
  log->runs++;
  log->from_inside = gcap_exec_launch(log->exec, log->stream);
  snprintf(log->message, sizeof log->message, "%s", gcap_last_error_message());
}

/* ------------------------------------------------------------ tests */

struct every_type {
  gcap_context *ctx;
  gcap_module *module;
  gcap_stream *s;
  gcap_event *e;
  gcap_graph *g, *child, *captured;
  void *dev, *dev2, *pinned, *plain;
  uint64_t arg_ptr;
  uint32_t arg_val;
  struct host_log log;
};

/* A graph with a node of every type, each with its own parameters, and a captured one with memory nodes. */
static void build_every_type(struct every_type *t) {
  t->ctx = cuda_context();
  gcap_kernel *k = load_kernel(t->ctx, "k_8_4", &t->module);
  assert_ok(gcap_stream_create(t->ctx, &t->s));
  assert_ok(gcap_event_create(t->ctx, &t->e));
  assert_ok(gcap_mem_alloc(t->ctx, 256, &t->dev));
  assert_ok(gcap_mem_alloc(t->ctx, 256, &t->dev2));
  assert_ok(gcap_host_alloc(t->ctx, 256, &t->pinned));
  t->plain = calloc(1, 256);
  memset(t->pinned, 0x5a, 256);
  assert_ok(gcap_graph_create(t->ctx, &t->g));
  assert_ok(gcap_graph_create(t->ctx, &t->child));

  gcap_node *n[12];
  t->arg_ptr = (uint64_t)(uintptr_t)t->dev, t->arg_val = 0xabcdef01u;
  void *args[] = {&t->arg_ptr, &t->arg_val};
  gcap_kernel_node_params kp = {k, GCAP_DIM3(4, 2, 1), GCAP_DIM3(32, 1, 1), 64, args};
  assert_ok(gcap_graph_add_kernel_node(t->g, NULL, 0, &kp, &n[0]));
  gcap_memcpy_node_params up = {t->dev, t->pinned, 256, GCAP_MEMCPY_HOST_TO_DEVICE};
  assert_ok(gcap_graph_add_memcpy_node(t->g, &n[0], 1, &up, &n[1]));
  gcap_memset_node_params fill2d = {t->dev2, 7, 4, 8, 4, 64};
  assert_ok(gcap_graph_add_memset_node(t->g, &n[1], 1, &fill2d, &n[2]));
  gcap_memcpy_node_params d2d = {(char *)t->dev2 + 32, t->dev, 16, GCAP_MEMCPY_DEVICE_TO_DEVICE};
  assert_ok(gcap_graph_add_memcpy_node(t->g, &n[2], 1, &d2d, &n[3]));
  /* A pointer the core does not know, kind DEFAULT: the driver must work out what it is. */
  gcap_memcpy_node_params down = {t->plain, t->dev2, 256, GCAP_MEMCPY_DEFAULT};
  assert_ok(gcap_graph_add_memcpy_node(t->g, &n[3], 1, &down, &n[4]));
  gcap_host_node_params hp = {count_run, &t->log};
  assert_ok(gcap_graph_add_host_node(t->g, &n[4], 1, &hp, &n[5]));
  assert_ok(gcap_graph_add_event_record_node(t->g, &n[5], 1, t->e, &n[6]));
  assert_ok(gcap_graph_add_event_wait_node(t->g, &n[6], 1, t->e, &n[7]));
  gcap_memset_node_params fill1d = {t->dev, 0x11, 1, 8, 1, 0};
  gcap_node *c[2];
  assert_ok(gcap_graph_add_memset_node(t->child, NULL, 0, &fill1d, &c[0]));
  assert_ok(gcap_graph_add_empty_node(t->child, &c[0], 1, &c[1]));
  assert_ok(gcap_graph_add_child_graph_node(t->g, &n[7], 1, t->child, &n[8]));
  gcap_node *roots[2] = {n[0], n[8]};
  assert_ok(gcap_graph_add_empty_node(t->g, roots, 2, &n[9]));

  /* A native child graph: one empty node, made straight on the driver. */
  DRIVER_FN(create, cuGraphCreate, 10000);
  DRIVER_FN(add_empty, cuGraphAddEmptyNode, 10000);
  DRIVER_FN(destroy, cuGraphDestroy, 10000);
  CUgraph native = NULL;
  CUgraphNode only = NULL;
  assert_int_equal(create(&native, 0), CUDA_SUCCESS);
  assert_int_equal(add_empty(&only, native, NULL, 0), CUDA_SUCCESS);
  assert_ok(gcap_cuda_graph_add_native_child(t->g, &n[9], 1, native, &n[10]));
  assert_int_equal(destroy(native), CUDA_SUCCESS);

  /* Memory nodes come from capture. */
  void *scratch = NULL;
  assert_ok(gcap_stream_begin_capture(t->s, GCAP_CAPTURE_MODE_RELAXED));
  assert_ok(gcap_mem_alloc_async(t->s, 64, &scratch));
  assert_ok(gcap_memset_d32_async(t->s, scratch, 3, 16));
  assert_ok(gcap_mem_free_async(t->s, scratch));
  assert_ok(gcap_stream_end_capture(t->s, &t->captured));
}

static void free_every_type(struct every_type *t) {
  gcap_graph_destroy(t->g);
  gcap_graph_destroy(t->child);
  gcap_graph_destroy(t->captured);
  free(t->plain);
  finish(t->ctx);
}

static void test_every_node_type_becomes_the_same_driver_graph(void **state) {
  (void)state;
  struct every_type t;
  memset(&t, 0, sizeof t);
  build_every_type(&t);
  fake_cuda_log_clear();
  gcap_exec *x = NULL, *xc = NULL;
  assert_ok(gcap_graph_instantiate(t.g, 0, &x));
  assert_same_graph(t.g, x);
  assert_ok(gcap_graph_instantiate(t.captured, 0, &xc));
  assert_same_graph(t.captured, xc);
  /* Sides gcap knows are typed; the unknown host pointer under DEFAULT is left to unified addressing. */
  assert_int_equal(fake_cuda_calls("copy dst=DEVICE src=HOST bytes=256"), 1);
  assert_int_equal(fake_cuda_calls("copy dst=DEVICE src=DEVICE bytes=16"), 1);
  assert_int_equal(fake_cuda_calls("copy dst=UNIFIED src=DEVICE bytes=256"), 1);
  assert_int_equal(fake_cuda_calls("cuGraphInstantiateWithFlags("), 2);

  /* Run it: the copies and fills really happen on the fake's memory, the host node runs once. */
  assert_ok(gcap_exec_launch(x, t.s));
  assert_ok(gcap_stream_synchronize(t.s));
  assert_int_equal(t.log.runs, 1);
  const unsigned char *plain = t.plain;
  assert_int_equal(plain[0], 7);       /* the 2-D fill's first row */
  assert_int_equal(plain[32], 0x5a);   /* the device-to-device copy of the uploaded bytes */
  assert_int_equal(plain[64 + 4], 7);  /* second row */
  assert_int_equal(plain[64 + 40], 0); /* past the row's 32 bytes: untouched */
  assert_int_equal(fake_cuda_kernel_runs() > 0, 1);
  gcap_exec_destroy(x);
  gcap_exec_destroy(xc);
  free_every_type(&t);
}

static void test_setters_enable_and_update_reach_the_driver(void **state) {
  (void)state;
  struct every_type t;
  memset(&t, 0, sizeof t);
  build_every_type(&t);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(t.g, 0, &x));
  gcap_node *n[16];
  size_t num = 16;
  assert_ok(gcap_graph_get_nodes(t.g, n, &num));
  fake_cuda_log_clear();

  /* Per-node setters: the core's node changes too, so the comparison follows them. */
  gcap_kernel_node_params kp;
  assert_ok(gcap_node_get_kernel_params(n[0], &kp));
  uint32_t other = 42;
  void *args[] = {kp.args[0], &other};
  kp.args = args, kp.grid = GCAP_DIM3(9, 1, 1);
  assert_ok(gcap_exec_kernel_node_set_params(x, n[0], &kp));
  assert_ok(gcap_node_set_kernel_params(n[0], &kp));
  gcap_memset_node_params fp;
  assert_ok(gcap_node_get_memset_params(n[2], &fp));
  fp.value = 9, fp.dst = (char *)fp.dst + 16;
  assert_ok(gcap_exec_memset_node_set_params(x, n[2], &fp));
  assert_ok(gcap_node_set_memset_params(n[2], &fp));
  gcap_memcpy_node_params cp;
  assert_ok(gcap_node_get_memcpy_params(n[3], &cp));
  cp.bytes = 8;
  assert_ok(gcap_exec_memcpy_node_set_params(x, n[3], &cp));
  assert_ok(gcap_node_set_memcpy_params(n[3], &cp));
  struct host_log second = {0};
  gcap_host_node_params hp = {count_run, &second};
  assert_ok(gcap_exec_host_node_set_params(x, n[5], &hp));
  assert_ok(gcap_node_set_host_params(n[5], &hp));
  assert_int_equal(fake_cuda_calls("cuGraphExecKernelNodeSetParams("), 1);
  assert_int_equal(fake_cuda_calls("cuGraphExecMemsetNodeSetParams("), 1);
  assert_int_equal(fake_cuda_calls("cuGraphExecMemcpyNodeSetParams("), 1);
  assert_int_equal(fake_cuda_calls("cuGraphExecHostNodeSetParams("), 1);
  assert_same_graph(t.g, x);

  /* The new host record is the one that runs. */
  assert_ok(gcap_exec_launch(x, t.s));
  assert_ok(gcap_stream_synchronize(t.s));
  assert_int_equal(t.log.runs, 0);
  assert_int_equal(second.runs, 1);

  /* Disabled, and enabled again. */
  static char got[TEXT];
  assert_ok(gcap_exec_node_set_enabled(x, n[0], false));
  assert_int_equal(fake_cuda_calls("cuGraphNodeSetEnabled("), 1);
  assert_int_equal(fake_cuda_calls(", 0)"), 1);
  fake_cuda_describe_exec(gcap_cuda_graph_exec(x), got, sizeof got);
  assert_non_null(strstr(got, "grid=9,1,1 block=32,1,1 shmem=64 args="));
  assert_non_null(strstr(got, "[disabled]\n"));
  assert_ok(gcap_exec_node_set_enabled(x, n[0], true));
  fake_cuda_describe_exec(gcap_cuda_graph_exec(x), got, sizeof got);
  assert_null(strstr(got, "[disabled]"));

  /* Whole-graph update from a clone with other values: the driver's executable takes them all. */
  gcap_graph *fresh = NULL;
  assert_ok(gcap_graph_clone(t.g, &fresh));
  gcap_node *m[16];
  size_t mnum = 16;
  assert_ok(gcap_graph_get_nodes(fresh, m, &mnum));
  fp.value = 13;
  assert_ok(gcap_node_set_memset_params(m[2], &fp));
  cp.bytes = 4;
  assert_ok(gcap_node_set_memcpy_params(m[3], &cp));
  gcap_exec_update_info info;
  assert_ok(gcap_exec_update(x, fresh, &info));
  assert_int_equal(fake_cuda_calls("cuGraphExecUpdate("), 1);
  assert_same_graph(fresh, x);
  gcap_graph_destroy(fresh);
  gcap_exec_destroy(x);
  free_every_type(&t);
}

/* The driver forbids CUDA calls in host functions: gcap refuses them there and calls nothing. */
/* Managed memory is cuMemAllocManaged(GLOBAL): the host touches it, copies take it, cuMemFree frees it. */
static void test_managed_memory_reaches_the_driver(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  uint32_t *m = NULL;
  void *dev = NULL;
  assert_ok(gcap_mem_alloc_managed(ctx, 256, (void **)&m));
  assert_int_equal(fake_cuda_calls("cuMemAllocManaged(256, 1)"), 1);
  for (uint32_t i = 0; i < 64; i++) m[i] = i;
  assert_ok(gcap_mem_alloc(ctx, 256, &dev));
  assert_ok(gcap_memcpy(ctx, dev, m, 256, GCAP_MEMCPY_HOST_TO_DEVICE)); /* managed memory takes any kind */
  memset(m, 0, 256);
  assert_ok(gcap_memcpy(ctx, m, dev, 256, GCAP_MEMCPY_DEFAULT));
  assert_int_equal(m[63], 63);
  void *p = (void *)&p;
  assert_status(gcap_mem_alloc_managed(ctx, (size_t)1 << 41, &p), GCAP_ERROR_OUT_OF_MEMORY);
  test_assert_message_contains("gcap_mem_alloc_managed: cuMemAllocManaged(");
  assert_null(p);
  assert_ok(gcap_mem_free(ctx, m));
  assert_ok(gcap_mem_free(ctx, dev));
  finish(ctx);
}

static void test_host_function_makes_no_driver_call(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  gcap_stream *s = NULL;
  gcap_graph *g = NULL, *target = NULL;
  gcap_exec *x = NULL, *tx = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_graph_create(ctx, &target));
  gcap_node *node = NULL;
  assert_ok(gcap_graph_add_empty_node(target, NULL, 0, &node));
  assert_ok(gcap_graph_instantiate(target, 0, &tx));
  struct host_log log = {0, tx, s, GCAP_SUCCESS, ""};
  gcap_host_node_params hp = {launch_from_inside, &log};
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_add_host_node(g, NULL, 0, &hp, &node));
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, s));
  size_t launches = fake_cuda_calls("cuGraphLaunch(");
  /* Run the device without holding any gcap lock, as a driver thread would. */
  fake_cuda_drain();
  assert_int_equal(log.runs, 1);
  assert_int_equal(log.from_inside, GCAP_ERROR_ILLEGAL_STATE);
  assert_non_null(strstr(log.message, "gcap_exec_launch"));
  assert_non_null(strstr(log.message, "host"));
  assert_int_equal(fake_cuda_calls("cuGraphLaunch("), launches);
  gcap_exec_destroy(x);
  gcap_exec_destroy(tx);
  gcap_graph_destroy(g);
  gcap_graph_destroy(target);
  finish(ctx);
}

struct graph_edit {
  gcap_graph *g;
  gcap_context *ctx;
  gcap_status added, copied;
};

/* On the driver's thread: a graph edit takes the context lock; a blocking copy is refused before it. */
static void edit_from_inside(void *user_data) {
  struct graph_edit *e = user_data;
  gcap_node *n = NULL;
  unsigned char byte = 0;
  e->added = gcap_graph_add_empty_node(e->g, NULL, 0, &n);
  e->copied = gcap_memcpy(e->ctx, &byte, &byte, 1, GCAP_MEMCPY_HOST_TO_HOST);
}

/*
 * The host waits (stream, event and context synchronize, executable destroy) without holding
 * the context lock, so a host function that calls gcap on the driver's thread finishes instead
 * of deadlocking; the test would hang otherwise.
 */
static void test_host_function_calls_gcap_while_the_host_waits(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  gcap_stream *s = NULL;
  gcap_event *ev = NULL;
  gcap_graph *g = NULL, *edited = NULL;
  gcap_exec *x = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_event_create(ctx, &ev));
  assert_ok(gcap_graph_create(ctx, &edited));
  struct graph_edit e = {edited, ctx, GCAP_ERROR_BACKEND, GCAP_ERROR_BACKEND};
  gcap_host_node_params hp = {edit_from_inside, &e};
  gcap_node *node = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_add_host_node(g, NULL, 0, &hp, &node));
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  size_t count = 0;
  for (int wait = 0; wait < 4; wait++) {
    assert_ok(gcap_exec_launch(x, s));
    if (wait == 0) assert_ok(gcap_stream_synchronize(s));
    if (wait == 1) {
      assert_ok(gcap_event_record(ev, s));
      assert_ok(gcap_event_synchronize(ev));
    }
    if (wait == 2) assert_ok(gcap_context_synchronize(ctx));
    if (wait == 3) gcap_exec_destroy(x); /* waits for the launch */
    assert_ok(gcap_graph_get_nodes(edited, NULL, &count));
    assert_int_equal(count, (size_t)wait + 1);
    assert_int_equal(e.added, GCAP_SUCCESS);
    assert_int_equal(e.copied, GCAP_ERROR_ILLEGAL_STATE);
  }
  assert_int_equal(fake_cuda_calls("cuCtxSynchronize"), 0);
  gcap_graph_destroy(g);
  gcap_graph_destroy(edited);
  assert_ok(gcap_event_destroy(ev));
  finish(ctx);
}

/* Host-node records outlive a launch still in flight when its executable is destroyed. */
static void test_exec_destroy_keeps_records_of_a_running_launch(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  gcap_stream *s = NULL;
  gcap_graph *g = NULL;
  gcap_exec *x = NULL;
  struct host_log log = {0};
  gcap_host_node_params hp = {count_run, &log};
  gcap_node *node = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_add_host_node(g, NULL, 0, &hp, &node));
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_exec_launch(x, s));
  gcap_exec_destroy(x);
  fake_cuda_drain(); /* both launches run after the destroy returned (unless it waited) */
  assert_int_equal(log.runs, 2);
  assert_int_equal(fake_cuda_calls("cuCtxSynchronize"), 0);
  gcap_graph_destroy(g);
  finish(ctx);
}

/* gcap_memcpy is synchronous: its data is in place on return, whatever the direction. */
static void test_synchronous_copy_is_complete_on_return(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  void *a = NULL, *b = NULL;
  unsigned char in[64], out[64];
  memset(in, 0x3c, sizeof in);
  memset(out, 0, sizeof out);
  assert_ok(gcap_mem_alloc(ctx, 64, &a));
  assert_ok(gcap_mem_alloc(ctx, 64, &b));
  assert_ok(gcap_memcpy(ctx, a, in, 64, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memcpy(ctx, b, a, 64, GCAP_MEMCPY_DEVICE_TO_DEVICE));
  assert_memory_equal(b, in, 64); /* device memory is host memory in the fake */
  assert_ok(gcap_memcpy(ctx, out, b, 64, GCAP_MEMCPY_DEFAULT));
  assert_memory_equal(out, in, 64);
  assert_int_equal(fake_cuda_calls("cuMemcpy("), 0);
  finish(ctx);
}

/* Synchronizing one gcap context leaves a capture in another context of the same device intact. */
static void test_context_synchronize_spares_other_captures(void **state) {
  (void)state;
  gcap_context *a = cuda_context(), *b = cuda_context();
  gcap_stream *sa = NULL, *sb = NULL;
  void *dev = NULL;
  assert_ok(gcap_stream_create(a, &sa));
  assert_ok(gcap_stream_create(b, &sb));
  assert_ok(gcap_mem_alloc(a, 64, &dev));
  assert_ok(gcap_stream_begin_capture(sa, GCAP_CAPTURE_MODE_RELAXED));
  assert_ok(gcap_memset_async(sa, dev, 1, 64));
  assert_ok(gcap_memset_d32_async(sb, dev, 2, 4)); /* b has work of its own to wait for */
  assert_ok(gcap_context_synchronize(b));
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_end_capture(sa, &g));
  assert_int_equal(gcap_graph_node_count(g), 1);
  assert_int_equal(fake_cuda_calls("cuCtxSynchronize"), 0);
  assert_int_equal(((uint32_t *)dev)[0], 2u);
  gcap_graph_destroy(g);
  gcap_context_destroy(b);
  finish(a);
}

/* A thread's own current context survives gcap calls. */
static void test_callers_current_context_is_restored(void **state) {
  (void)state;
  DRIVER_FN(retain, cuDevicePrimaryCtxRetain, 7000);
  DRIVER_FN(release, cuDevicePrimaryCtxRelease, 11000);
  DRIVER_FN(set, cuCtxSetCurrent, 4000);
  DRIVER_FN(get, cuCtxGetCurrent, 4000);
  CUcontext mine = NULL, now = NULL;
  assert_int_equal(retain(&mine, 1), CUDA_SUCCESS);
  assert_int_equal(set(mine), CUDA_SUCCESS);
  gcap_context *ctx = cuda_context();
  void *dev = NULL;
  gcap_stream *s = NULL;
  assert_ok(gcap_mem_alloc(ctx, 16, &dev));
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_memset_async(s, dev, 0, 16));
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(get(&now), CUDA_SUCCESS);
  assert_ptr_equal(now, mine);
  assert_true(gcap_cuda_context(ctx) != mine);
  assert_int_equal(set(NULL), CUDA_SUCCESS);
  assert_int_equal(release(1), CUDA_SUCCESS);
  finish(ctx);
}

/* A 2-D fill whose pitch is not a multiple of its element size is refused before the driver sees it. */
static void test_fill_pitch_alignment(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  void *dev = NULL;
  gcap_graph *g = NULL;
  gcap_exec *x = NULL;
  gcap_node *n = NULL;
  assert_ok(gcap_mem_alloc(ctx, 256, &dev));
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_memset_node_params p = {dev, 1, 4, 4, 3, 18};
  gcap_status st = gcap_graph_add_memset_node(g, NULL, 0, &p, &n);
  if (st == GCAP_SUCCESS) st = gcap_graph_instantiate(g, 0, &x);
  assert_int_equal(st, GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("pitch");
  test_assert_message_contains("18");
  assert_null(x);
  assert_int_equal(fake_cuda_calls("cuGraphAddMemsetNode("), 0);
  gcap_graph_destroy(g);
  finish(ctx);
}

/* Work captured into a graph built by hand, after one of its nodes, becomes part of the same driver graph. */
static void test_capture_into_a_graph_reaches_the_driver(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  gcap_stream *s = NULL;
  unsigned char *dev = NULL, host[64];
  gcap_graph *g = NULL;
  gcap_node *first = NULL;
  gcap_exec *x = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_mem_alloc(ctx, 64, (void **)&dev));
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_memset_node_params fill = {dev, 0x11, 1, 64, 1, 64};
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &fill, &first));
  assert_ok(gcap_stream_begin_capture_to_graph(s, g, &first, 1, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_memset_async(s, dev + 16, 0x22, 16));
  assert_ok(gcap_stream_update_capture_dependencies(s, &first, 1, GCAP_STREAM_ADD_CAPTURE_DEPENDENCIES));
  assert_ok(gcap_memset_async(s, dev + 48, 0x33, 16));
  assert_ok(gcap_stream_end_capture(s, NULL));
  assert_int_equal(gcap_graph_node_count(g), 3);
  assert_int_equal(gcap_graph_edge_count(g), 3);
  fake_cuda_log_clear();
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_same_graph(g, x);
  assert_int_equal(fake_cuda_calls("cuGraphAddMemsetNode("), 3);
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  assert_ok(gcap_memcpy(ctx, host, dev, 64, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_int_equal(host[0], 0x11);
  assert_int_equal(host[16], 0x22);
  assert_int_equal(host[40], 0x11);
  assert_int_equal(host[63], 0x33);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(ctx, dev));
  assert_ok(gcap_stream_destroy(s));
  finish(ctx);
}

/* Event flags reach cuEventCreate; elapsed time is the driver's, and its refusals keep their meaning. */
static void test_event_timing_reaches_the_driver(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  gcap_stream *s = NULL;
  gcap_event *start = NULL, *end = NULL, *untimed = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  fake_cuda_log_clear();
  assert_ok(gcap_event_create(ctx, &start));
  assert_ok(gcap_event_create_with_flags(ctx, GCAP_EVENT_BLOCKING_SYNC, &end));
  assert_ok(gcap_event_create_with_flags(ctx, GCAP_EVENT_DISABLE_TIMING, &untimed));
  assert_int_equal(fake_cuda_calls("cuEventCreate(flags=0)"), 1);
  assert_int_equal(fake_cuda_calls("cuEventCreate(flags=1)"), 1);
  assert_int_equal(fake_cuda_calls("cuEventCreate(flags=2)"), 1);
  float ms = -1;
  assert_status(gcap_event_elapsed_time(start, end, &ms), GCAP_ERROR_INVALID_HANDLE); /* never recorded */
  assert_ok(gcap_event_record(start, s));
  assert_ok(gcap_event_record(end, s));
  assert_ok(gcap_event_record(untimed, s));
  assert_ok(gcap_event_synchronize(end));
  assert_ok(gcap_event_elapsed_time(start, end, &ms));
  assert_true(ms >= 0.0f && ms < 1000.0f);
  assert_int_equal(fake_cuda_calls("cuEventElapsedTime("), 2);
  assert_status(gcap_event_elapsed_time(start, untimed, &ms), GCAP_ERROR_INVALID_HANDLE); /* refused by gcap */
  assert_int_equal(fake_cuda_calls("cuEventElapsedTime("), 2);
  assert_ok(gcap_event_destroy(start));
  assert_ok(gcap_event_destroy(end));
  assert_ok(gcap_event_destroy(untimed));
  assert_ok(gcap_stream_destroy(s));
  finish(ctx);
}

/* The event setters of an executable reach cuGraphExecEvent{Record,Wait}NodeSetEvent. */
static void test_event_node_setters_reach_the_driver(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  gcap_stream *s = NULL;
  gcap_event *a = NULL, *b = NULL;
  gcap_graph *g = NULL;
  gcap_node *rec = NULL, *wait = NULL;
  gcap_exec *x = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_event_create(ctx, &a));
  assert_ok(gcap_event_create(ctx, &b));
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_add_event_record_node(g, NULL, 0, a, &rec));
  assert_ok(gcap_graph_add_event_wait_node(g, &rec, 1, a, &wait));
  assert_ok(gcap_node_set_event(wait, b));
  fake_cuda_log_clear();
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_same_graph(g, x);
  assert_ok(gcap_exec_event_record_node_set_event(x, rec, b));
  assert_ok(gcap_exec_event_wait_node_set_event(x, wait, a));
  assert_int_equal(fake_cuda_calls("cuGraphExecEventRecordNodeSetEvent("), 1);
  assert_int_equal(fake_cuda_calls("cuGraphExecEventWaitNodeSetEvent("), 1);
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_event_destroy(a));
  assert_ok(gcap_event_destroy(b));
  assert_ok(gcap_stream_destroy(s));
  finish(ctx);
}

/* Kernels found by name take their parameter sizes from cuFuncGetParamInfo. */
static void test_kernel_sizes_from_the_driver(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  gcap_module *m = NULL;
  gcap_kernel *k = load_kernel(ctx, "k_8_2_4", &m);
  assert_non_null(k);
  /* A kernel node copies its arguments by the sizes gcap took: each must reach the driver whole. */
  uint64_t a = 0x1122334455667788u;
  uint16_t b = 0xaabb;
  uint32_t c = 0xccddeeffu;
  void *args[] = {&a, &b, &c};
  gcap_graph *g = NULL;
  gcap_node *n = NULL;
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_kernel_node_params p = {k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, args};
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &p, &n));
  a = b = c = 0; /* copied at addition */
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_int_equal(fake_cuda_calls("cuGraphAddKernelNode args=0x1122334455667788,0xaabb,0xccddeeff"), 1);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  finish(ctx);
}

/*
 * Kernel pointer arguments declared READ or WRITE that gcap does not know (another library's
 * cudaMalloc, say) are the driver's business on CUDA, as for copies: nothing refuses them.
 */
/*
 * A side gcap does not know is typed UNIFIED in a graph copy even under an explicit HOST kind:
 * it may be another library's device memory, which HOST would make the driver read as host.
 */
static void test_unknown_copy_sides_are_unified(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  unsigned char in[64], out[64] = {0}, *pinned = NULL;
  for (int i = 0; i < 64; i++) in[i] = (unsigned char)(i * 3 + 1);
  void *dev = NULL;
  assert_ok(gcap_mem_alloc(ctx, 64, &dev));
  assert_ok(gcap_host_alloc(ctx, 64, (void **)&pinned));
  gcap_graph *g = NULL;
  gcap_node *up = NULL, *down = NULL, *pin = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_memcpy_node_params pu = {dev, in, 64, GCAP_MEMCPY_HOST_TO_DEVICE};
  gcap_memcpy_node_params pd = {out, dev, 64, GCAP_MEMCPY_DEVICE_TO_HOST};
  gcap_memcpy_node_params pp = {pinned, dev, 32, GCAP_MEMCPY_DEVICE_TO_HOST};
  assert_ok(gcap_graph_add_memcpy_node(g, NULL, 0, &pu, &up));
  assert_ok(gcap_graph_add_memcpy_node(g, &up, 1, &pd, &down));
  assert_ok(gcap_graph_add_memcpy_node(g, &up, 1, &pp, &pin));
  fake_cuda_log_clear();
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_int_equal(fake_cuda_calls("copy dst=DEVICE src=UNIFIED bytes=64"), 1);
  assert_int_equal(fake_cuda_calls("copy dst=UNIFIED src=DEVICE bytes=64"), 1);
  assert_int_equal(fake_cuda_calls("copy dst=HOST src=DEVICE bytes=32"), 1); /* gcap's own host memory */
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  assert_memory_equal(out, in, 64);
  assert_memory_equal(pinned, in, 32);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  gcap_stream_destroy(s);
  assert_ok(gcap_host_free(ctx, pinned));
  assert_ok(gcap_mem_free(ctx, dev));
  finish(ctx);
}

/*
 * The driver's executable copy setter takes 1-D copies only: a copy with rows is set through a
 * whole-graph update, and the launch copies the new rows.
 */
static void test_shaped_copy_setter_updates_the_whole_graph(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  enum { P = 8, BYTES = P * 4 };
  unsigned char host[BYTES];
  for (int i = 0; i < BYTES; i++) host[i] = (unsigned char)(i + 1);
  void *a = NULL, *b = NULL;
  assert_ok(gcap_mem_alloc(ctx, BYTES, &a));
  assert_ok(gcap_mem_alloc(ctx, BYTES, &b));
  assert_ok(gcap_memcpy(ctx, a, host, BYTES, GCAP_MEMCPY_HOST_TO_DEVICE));
  gcap_memcpy_3d_params p;
  memset(&p, 0, sizeof p);
  p.src = (gcap_pitched_ptr){a, P, P, 4};
  p.dst = (gcap_pitched_ptr){b, P, P, 4};
  p.extent = (gcap_extent){2, 4, 1}; /* columns 0..1 of 4 rows */
  p.kind = GCAP_MEMCPY_DEVICE_TO_DEVICE;
  gcap_graph *g = NULL;
  gcap_node *n = NULL;
  gcap_exec *x = NULL;
  gcap_stream *s = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_add_memcpy_3d_node(g, NULL, 0, &p, &n));
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_stream_create(ctx, &s));
  fake_cuda_log_clear();
  gcap_memcpy_3d_params q = p;
  q.src_pos.x = 4; /* columns 4..5 instead */
  assert_ok(gcap_exec_memcpy_3d_node_set_params(x, n, &q));
  assert_int_equal(fake_cuda_calls("cuGraphExecMemcpyNodeSetParams("), 0);
  assert_int_equal(fake_cuda_calls("cuGraphExecUpdate("), 1);
  memset(host, 0, BYTES);
  assert_ok(gcap_memcpy(ctx, b, host, BYTES, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  assert_ok(gcap_memcpy(ctx, host, b, BYTES, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (int r = 0; r < 4; r++) {
    assert_int_equal(host[r * P], r * P + 4 + 1);
    assert_int_equal(host[r * P + 1], r * P + 5 + 1);
    assert_int_equal(host[r * P + 2], 0);
  }
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  gcap_stream_destroy(s);
  assert_ok(gcap_mem_free(ctx, a));
  assert_ok(gcap_mem_free(ctx, b));
  finish(ctx);
}

/* Two copies with rows in one child graph: set through one whole-graph update, both take effect. */
static gcap_graph *two_column_copies(gcap_context *ctx, void *dst, void *src, size_t first_col, size_t second_col) {
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  size_t cols[2] = {first_col, second_col};
  for (int i = 0; i < 2; i++) {
    gcap_memcpy_3d_params p;
    memset(&p, 0, sizeof p);
    p.src = (gcap_pitched_ptr){src, 8, 8, 4};
    p.dst = (gcap_pitched_ptr){dst, 8, 8, 4};
    p.src_pos.x = cols[i];
    p.dst_pos.x = (size_t)i;
    p.extent = (gcap_extent){1, 4, 1};
    p.kind = GCAP_MEMCPY_DEVICE_TO_DEVICE;
    gcap_node *n = NULL;
    assert_ok(gcap_graph_add_memcpy_3d_node(g, NULL, 0, &p, &n));
  }
  return g;
}

static void test_child_setter_with_shaped_copies(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  unsigned char host[32];
  for (int i = 0; i < 32; i++) host[i] = (unsigned char)(i + 1);
  void *a = NULL, *b = NULL;
  assert_ok(gcap_mem_alloc(ctx, 32, &a));
  assert_ok(gcap_mem_alloc(ctx, 32, &b));
  assert_ok(gcap_memcpy(ctx, a, host, 32, GCAP_MEMCPY_HOST_TO_DEVICE));
  gcap_graph *child = two_column_copies(ctx, b, a, 0, 1), *other = two_column_copies(ctx, b, a, 6, 7), *g = NULL;
  gcap_node *cn = NULL;
  gcap_exec *x = NULL;
  gcap_stream *s = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_add_child_graph_node(g, NULL, 0, child, &cn));
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_stream_create(ctx, &s));
  fake_cuda_log_clear();
  assert_ok(gcap_exec_child_graph_node_set_params(x, cn, other));
  assert_int_equal(fake_cuda_calls("cuGraphExecMemcpyNodeSetParams("), 0);
  assert_int_equal(fake_cuda_calls("cuGraphExecUpdate("), 1);
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  assert_ok(gcap_memcpy(ctx, host, b, 32, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (int r = 0; r < 4; r++) {
    assert_int_equal(host[r * 8], r * 8 + 6 + 1);
    assert_int_equal(host[r * 8 + 1], r * 8 + 7 + 1);
  }
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  gcap_graph_destroy(child);
  gcap_graph_destroy(other);
  gcap_stream_destroy(s);
  assert_ok(gcap_mem_free(ctx, a));
  assert_ok(gcap_mem_free(ctx, b));
  finish(ctx);
}

static void test_unknown_kernel_pointers_reach_the_driver(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  static const char ptx[] = ".version 7.0\n.target sm_52\n.address_size 64\n";
  static const size_t sizes[] = {8, 8};
  static const gcap_param_access access[] = {GCAP_ACCESS_READ, GCAP_ACCESS_WRITE};
  gcap_kernel_def def = {.name = "k_8_8", .num_params = 2, .param_sizes = sizes, .param_access = access};
  gcap_module_desc d = {ptx, sizeof ptx, &def, 1};
  gcap_module *m = NULL;
  gcap_kernel *k = NULL;
  gcap_stream *s = NULL;
  gcap_graph *g = NULL;
  gcap_node *n = NULL;
  gcap_exec *x = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  assert_ok(gcap_module_get_kernel(m, "k_8_8", &k));
  assert_ok(gcap_stream_create(ctx, &s));
  void *elsewhere = (void *)(uintptr_t)0x7f0000001000u, *null = NULL;
  void *args[] = {&elsewhere, &null};
  assert_ok(gcap_launch_kernel(s, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, args));
  gcap_kernel_node_params p = {k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, args};
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &p, &n));
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(fake_cuda_calls("cuLaunchKernel("), 1);
  /* The pointers themselves reach the driver, eagerly and in the graph's node. */
  assert_int_equal(fake_cuda_calls("cuLaunchKernel args=0x7f0000001000,0x0"), 1);
  assert_int_equal(fake_cuda_calls("cuGraphAddKernelNode args=0x7f0000001000,0x0"), 1);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
  finish(ctx);
}

/* A child-graph node of an executable takes another graph's values: one driver setter per node inside. */
static void test_child_graph_setter_reaches_the_driver(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  void *dev = NULL;
  assert_ok(gcap_mem_alloc(ctx, 256, &dev));
  gcap_graph *child[2], *parent[2];
  gcap_node *cn[2];
  for (int i = 0; i < 2; i++) {
    gcap_node *fill = NULL, *root = NULL;
    gcap_memset_node_params mp = {dev, 1u + (unsigned)i, 4, 16, 1, 0};
    gcap_memcpy_node_params cp = {(char *)dev + 128, dev, 32u * (unsigned)(i + 1), GCAP_MEMCPY_DEVICE_TO_DEVICE};
    assert_ok(gcap_graph_create(ctx, &child[i]));
    assert_ok(gcap_graph_add_memset_node(child[i], NULL, 0, &mp, &fill));
    assert_ok(gcap_graph_add_memcpy_node(child[i], &fill, 1, &cp, &(gcap_node *){NULL}));
    assert_ok(gcap_graph_create(ctx, &parent[i]));
    assert_ok(gcap_graph_add_empty_node(parent[i], NULL, 0, &root));
    assert_ok(gcap_graph_add_child_graph_node(parent[i], &root, 1, child[i], &cn[i]));
  }
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(parent[0], 0, &x));
  fake_cuda_log_clear();
  assert_ok(gcap_exec_child_graph_node_set_params(x, cn[0], child[1]));
  assert_int_equal(fake_cuda_calls("cuGraphExecMemsetNodeSetParams("), 1);
  assert_int_equal(fake_cuda_calls("cuGraphExecMemcpyNodeSetParams("), 1);
  assert_same_graph(parent[1], x);
  for (int i = 0; i < 2; i++) {
    gcap_graph_destroy(parent[i]);
    gcap_graph_destroy(child[i]);
  }
  gcap_exec_destroy(x);
  assert_ok(gcap_mem_free(ctx, dev));
  finish(ctx);
}

/* A kernel node's priority becomes the driver node's attribute, and the flag the driver's. */
static void test_kernel_priority_reaches_the_driver(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  gcap_module *m = NULL;
  gcap_kernel *k = load_kernel(ctx, "k_8_4", &m);
  void *dev = NULL;
  assert_ok(gcap_mem_alloc(ctx, 64, &dev));
  uint32_t value = 3;
  void *args[] = {&dev, &value};
  gcap_kernel_node_params kp = {k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 0, args};
  gcap_graph *g = NULL;
  gcap_node *n = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &kp, &n));
  gcap_kernel_node_attr_value v = {.priority = -4};
  assert_ok(gcap_graph_kernel_node_set_attribute(n, GCAP_KERNEL_NODE_ATTR_PRIORITY, &v));
  fake_cuda_log_clear();
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, GCAP_INSTANTIATE_USE_NODE_PRIORITY, &x));
  assert_int_equal(fake_cuda_calls("cuGraphKernelNodeSetAttribute("), 1);
  assert_int_equal(fake_cuda_calls("cuGraphInstantiateWithFlags("), 1);
  assert_int_equal(fake_cuda_calls("flags=8)"), 1);
  static char got[TEXT];
  fake_cuda_describe_exec(gcap_cuda_graph_exec(x), got, sizeof got);
  assert_non_null(strstr(got, " priority=-4"));
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(ctx, dev));
  finish(ctx);
}

/* Cooperative launches are cuLaunchCooperativeKernel; the driver's size refusal is gcap's; kernel nodes
 * with the attribute, made by hand or by a capture, carry CU_LAUNCH_ATTRIBUTE_COOPERATIVE. */
static void test_cooperative_launch_reaches_the_driver(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  gcap_module *m = NULL;
  gcap_kernel *k = load_kernel(ctx, "k_8_4", &m);
  void *dev = NULL;
  assert_ok(gcap_mem_alloc(ctx, 64, &dev));
  uint32_t value = 3;
  void *args[] = {&dev, &value};
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  fake_cuda_log_clear();
  assert_ok(gcap_launch_cooperative_kernel(s, k, GCAP_DIM3(4, 1, 1), GCAP_DIM3(32, 1, 1), 0, args));
  assert_int_equal(fake_cuda_calls("cuLaunchCooperativeKernel("), 1);
  assert_int_equal(fake_cuda_calls("cuLaunchKernel("), 0);
  assert_int_equal(fake_cuda_calls("grid=4,1,1, block=32,1,1"), 1);
  /* more threads than the fake device holds at once */
  assert_status(gcap_launch_cooperative_kernel(s, k, GCAP_DIM3(300, 1, 1), GCAP_DIM3(1024, 1, 1), 0, args),
                GCAP_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  test_assert_message_contains("gcap_launch_cooperative_kernel: ");
  test_assert_message_contains("cuLaunchCooperativeKernel(\"k_8_4\")");
  assert_ok(gcap_stream_synchronize(s)); /* not sticky */
  /* a node made by hand */
  gcap_kernel_node_params kp = {k, GCAP_DIM3(2, 1, 1), GCAP_DIM3(32, 1, 1), 0, args};
  gcap_graph *g = NULL;
  gcap_node *n = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &kp, &n));
  gcap_kernel_node_attr_value v = {.cooperative = 1};
  assert_ok(gcap_graph_kernel_node_set_attribute(n, GCAP_KERNEL_NODE_ATTR_COOPERATIVE, &v));
  fake_cuda_log_clear();
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_int_equal(fake_cuda_calls("cuGraphKernelNodeSetAttribute("), 1);
  assert_int_equal(fake_cuda_calls(", 2)"), 1); /* CU_LAUNCH_ATTRIBUTE_COOPERATIVE */
  static char got[TEXT];
  fake_cuda_describe_exec(gcap_cuda_graph_exec(x), got, sizeof got);
  assert_non_null(strstr(got, " cooperative=1"));
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  /* a capture records the attribute, and its node carries it to the driver */
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_launch_cooperative_kernel(s, k, GCAP_DIM3(4, 1, 1), GCAP_DIM3(32, 1, 1), 0, args));
  g = NULL;
  assert_ok(gcap_stream_end_capture(s, &g));
  gcap_node *nodes[2];
  size_t count = 2;
  assert_ok(gcap_graph_get_nodes(g, nodes, &count));
  assert_int_equal(count, 1);
  v.cooperative = 0;
  assert_ok(gcap_graph_kernel_node_get_attribute(nodes[0], GCAP_KERNEL_NODE_ATTR_COOPERATIVE, &v));
  assert_int_equal(v.cooperative, 1);
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  fake_cuda_describe_exec(gcap_cuda_graph_exec(x), got, sizeof got);
  assert_non_null(strstr(got, " cooperative=1"));
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
  assert_ok(gcap_mem_free(ctx, dev));
  finish(ctx);
}

/* Stream priorities reach the driver (clamped); the legacy stream's ordering is event waits between native streams. */
static void test_stream_priority_and_legacy_order_reach_the_driver(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  fake_cuda_log_clear();
  gcap_stream *b = NULL, *legacy = NULL;
  assert_ok(gcap_stream_create_with_flags(ctx, GCAP_STREAM_DEFAULT, -9, &b));
  assert_int_equal(fake_cuda_calls("cuStreamCreateWithPriority(flags=1, priority=-5)"), 1);
  int priority = 0;
  assert_ok(gcap_stream_get_priority(b, &priority));
  assert_int_equal(priority, -5);
  assert_ok(gcap_context_legacy_stream(ctx, &legacy));
  struct host_log log = {0};
  assert_ok(gcap_launch_host_func(b, count_run, &log));
  fake_cuda_log_clear();
  assert_ok(gcap_launch_host_func(legacy, count_run, &log)); /* waits for b's work first */
  assert_int_equal(fake_cuda_calls("cuEventRecord("), 1);
  assert_int_equal(fake_cuda_calls("cuStreamWaitEvent("), 1);
  static char wanted[64];
  snprintf(wanted, sizeof wanted, "stream=%p)", (void *)gcap_cuda_stream(b));
  assert_int_equal(fake_cuda_calls(wanted), 1);
  assert_ok(gcap_stream_synchronize(b));
  assert_ok(gcap_stream_synchronize(legacy));
  assert_int_equal(log.runs, 2);
  finish(ctx);
}

/* Allocation nodes by hand: the memory is the driver's from the node's creation; the nodes order only. */
static void test_mem_nodes_by_hand_reach_the_driver(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  gcap_graph *g = NULL;
  gcap_node *a = NULL, *fill = NULL, *fr = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  fake_cuda_log_clear();
  gcap_mem_alloc_node_params ap = {256, NULL, NULL};
  assert_ok(gcap_graph_add_mem_alloc_node(g, NULL, 0, &ap, &a));
  assert_int_equal(fake_cuda_calls("cuMemAlloc("), 1);
  gcap_memset_node_params fp = {ap.dptr, 7, 4, 64, 1, 0};
  assert_ok(gcap_graph_add_memset_node(g, &a, 1, &fp, &fill));
  assert_ok(gcap_graph_add_mem_free_node(g, &fill, 1, ap.dptr, &fr));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_same_graph(g, x);
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_int_equal(fake_cuda_calls("cuMemFree("), 1);
  assert_ok(gcap_stream_destroy(s));
  finish(ctx);
}

/* 2-D and 3-D copies: cuMemcpy3DAsync on streams, CUDA_MEMCPY3D shapes in graphs, and the bytes land. */
static void test_copies_in_rows_reach_the_driver(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  unsigned char host[4 * 16], back[4 * 16];
  for (int i = 0; i < 64; i++) host[i] = (unsigned char)i;
  memset(back, 0, sizeof back);
  void *d = NULL;
  size_t pitch = 0;
  assert_ok(gcap_mem_alloc_pitch(ctx, 8, 4, &d, &pitch));
  fake_cuda_log_clear();
  assert_ok(gcap_memcpy_2d_async(s, d, pitch, host, 16, 8, 4, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_int_equal(fake_cuda_calls("cuMemcpy3DAsync(8 x 4 x 1"), 1);
  gcap_graph *g = NULL;
  gcap_node *n = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_memcpy_3d_params p;
  memset(&p, 0, sizeof p);
  p.src = (gcap_pitched_ptr){d, pitch, 8, 2};
  p.dst = (gcap_pitched_ptr){back, 16, 16, 2};
  p.extent = (gcap_extent){8, 2, 2};
  p.kind = GCAP_MEMCPY_DEVICE_TO_HOST;
  assert_ok(gcap_graph_add_memcpy_3d_node(g, NULL, 0, &p, &n));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_same_graph(g, x);
  static char got[TEXT];
  fake_cuda_describe_exec(gcap_cuda_graph_exec(x), got, sizeof got);
  char want[96];
  snprintf(want, sizeof want, " rows=2 slices=2 pitch=16,%zu height=2,2", pitch);
  assert_non_null(strstr(got, want));
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  for (int r = 0; r < 4; r++) /* two slices of two rows: the four rows, pitch 16 again */
    for (int b = 0; b < 16; b++) assert_int_equal(back[r * 16 + b], b < 8 ? host[r * 16 + b] : 0);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(ctx, d));
  assert_ok(gcap_stream_destroy(s));
  finish(ctx);
}

/* Conditional nodes: handles made on one driver graph, which the executable is built in; bodies filled from their
 * plans. */
static void test_conditional_nodes_reach_the_driver(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  void *dev = NULL;
  assert_ok(gcap_mem_alloc(ctx, 64, &dev));
  gcap_graph *g = NULL, *body[1], *cases[2];
  assert_ok(gcap_graph_create(ctx, &g));
  fake_cuda_log_clear();
  gcap_conditional_handle h = 0, k = 0;
  assert_ok(gcap_graph_conditional_handle_create(g, 1, GCAP_GRAPH_COND_ASSIGN_DEFAULT, &h));
  assert_ok(gcap_graph_conditional_handle_create(g, 0, 0, &k));
  assert_int_equal(fake_cuda_calls("cuGraphConditionalHandleCreate("), 2);
  assert_int_equal(fake_cuda_calls("cuGraphCreate("), 1); /* one graph holds both */
  assert_true(h >= 0x100 && k == h + 1);                  /* the driver's own values */
  gcap_conditional_node_params wp = {h, GCAP_CONDITIONAL_WHILE, 1, body};
  gcap_node *loop = NULL, *sw = NULL;
  assert_ok(gcap_graph_add_conditional_node(g, NULL, 0, &wp, &loop));
  gcap_memset_node_params fill = {dev, 3, 4, 16, 1, 0};
  gcap_node *first = NULL;
  assert_ok(gcap_graph_add_memset_node(body[0], NULL, 0, &fill, &first));
  gcap_conditional_node_params sp = {k, GCAP_CONDITIONAL_SWITCH, 2, cases}; /* nested in the body */
  assert_ok(gcap_graph_add_conditional_node(body[0], &first, 1, &sp, &sw));
  assert_ok(gcap_graph_add_memset_node(cases[1], NULL, 0, &fill, &(gcap_node *){NULL}));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_int_equal(fake_cuda_calls("cuGraphAddNode("), 2);
  assert_int_equal(fake_cuda_calls("cuGraphCreate("), 1); /* built in the handles' graph */
  assert_same_graph(g, x);
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  gcap_exec_destroy(x);
  assert_ok(gcap_graph_instantiate(g, 0, &x)); /* the previous executable's nodes are cleared first */
  assert_int_equal(fake_cuda_calls("cuGraphDestroyNode("), 1);
  assert_same_graph(g, x);
  gcap_graph_destroy(g); /* the executable keeps the handles' graph */
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  gcap_exec_destroy(x);
  assert_ok(gcap_mem_free(ctx, dev));
  assert_ok(gcap_stream_destroy(s));
  finish(ctx);
}

/* PTX calling cudaGraphSetConditional declares it .extern: the module is linked with libcudadevrt first. */
static void test_device_runtime_ptx_is_linked(void **state) {
  (void)state;
  static const char ptx[] = ".version 7.5\n.target sm_75\n.address_size 64\n"
                            ".extern .func cudaGraphSetConditional\n(\n .param .b64 h,\n .param .b32 v\n)\n;\n";
  static const size_t sizes[] = {8};
  gcap_kernel_def def = {.name = "k_8", .num_params = 1, .param_sizes = sizes};
  gcap_module_desc d = {ptx, sizeof ptx, &def, 1};
  char library[] = "/tmp/gcap-devrt-XXXXXX";
  int fd = mkstemp(library);
  assert_true(fd >= 0);
  gcap_context *ctx = cuda_context();
  gcap_module *m = NULL;
  assert_int_equal(setenv("GCAP_CUDADEVRT", "/nonexistent/libcudadevrt.a", 1), 0);
  assert_status(gcap_module_load(ctx, &d, &m), GCAP_ERROR_NOT_FOUND);
  test_assert_message_contains("need the CUDA toolkit's libcudadevrt.a; none found: set GCAP_CUDADEVRT");
  assert_int_equal(setenv("GCAP_CUDADEVRT", library, 1), 0);
  fake_cuda_log_clear();
  assert_ok(gcap_module_load(ctx, &d, &m));
  assert_int_equal(fake_cuda_calls("cuLinkAddFile(type 4, /tmp/gcap-devrt-"), 1); /* CU_JIT_INPUT_LIBRARY */
  assert_int_equal(fake_cuda_calls("cuLinkComplete"), 1);
  assert_int_equal(fake_cuda_calls("cuLinkDestroy"), 1);
  assert_ok(gcap_module_unload(m));
  unsetenv("GCAP_CUDADEVRT");
  close(fd);
  remove(library);
  finish(ctx);
}

/*
 * PTX without definitions on CUDA: the kernels are its entries, with the PTX's parameter sizes
 * (no cuFuncGetParamInfo needed), and its variables come from cuModuleGetGlobal, entered as
 * device memory that copies accept and no free may release.
 */
static void test_ptx_entries_and_globals_reach_the_driver(void **state) {
  (void)state;
  static const char ptx[] = ".version 7.5\n.target sm_75\n.address_size 64\n"
                            ".global .align 4 .b8 g_16[16] = {1, 2, 3, 4};\n"
                            ".visible .entry k_8_4(.param .u64 p, .param .u32 n)\n{\n  ret;\n}\n";
  gcap_context *ctx = cuda_context();
  gcap_module_desc d = {.image = ptx, .image_size = sizeof ptx};
  gcap_module *m = NULL;
  fake_cuda_log_clear();
  assert_ok(gcap_module_load(ctx, &d, &m));
  assert_int_equal(fake_cuda_calls("cuModuleGetFunction("), 1);
  assert_int_equal(fake_cuda_calls("cuModuleGetGlobal("), 1);
  gcap_kernel *k = NULL;
  assert_ok(gcap_module_get_kernel(m, "k_8_4", &k));
  void *g = NULL;
  size_t bytes = 0;
  assert_ok(gcap_module_get_global(m, "g_16", &g, &bytes));
  assert_int_equal(bytes, 16);
  uint32_t v = 7;
  assert_ok(gcap_memcpy(ctx, g, &v, sizeof v, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_status(gcap_mem_free(ctx, g), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_module_get_global(m, "h_4", &g, NULL), GCAP_ERROR_NOT_FOUND);
  assert_ok(gcap_module_unload(m));
  /* Declarations gcap cannot read (a texture reference) leave the PTX to the driver, as before. */
  static const char texref[] = ".version 7.5\n.target sm_75\n.address_size 64\n.global .texref t;\n"
                               ".visible .entry k_8(.param .u64 p)\n{\n  ret;\n}\n";
  gcap_module_desc dt = {.image = texref, .image_size = sizeof texref};
  assert_ok(gcap_module_load(ctx, &dt, &m));
  test_assert_message_empty();
  assert_ok(gcap_module_get_kernel(m, "k_8", &k));
  assert_ok(gcap_module_unload(m));
  finish(ctx);
}

/* gcap_kernel_get_attribute on CUDA: every attribute is the driver's (cuFuncGetAttribute), not
 * what the PTX declares (the fake's figures differ from the PTX's). */
static void test_kernel_attributes_come_from_the_driver(void **state) {
  (void)state;
  static const char ptx[] = ".version 7.5\n.target sm_75\n.address_size 64\n"
                            ".visible .entry k_8_4(.param .u64 p, .param .u32 n)\n.maxntid 128, 1, 1\n{\n  ret;\n}\n";
  gcap_context *ctx = cuda_context();
  gcap_module_desc d = {.image = ptx, .image_size = sizeof ptx};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  gcap_kernel *k = NULL;
  assert_ok(gcap_module_get_kernel(m, "k_8_4", &k));
  fake_cuda_log_clear();
  static const struct {
    gcap_kernel_attr attr;
    int value;
  } want[] = {
      {GCAP_KERNEL_ATTR_MAX_THREADS_PER_BLOCK, 768},
      {GCAP_KERNEL_ATTR_SHARED_SIZE_BYTES, 512},
      {GCAP_KERNEL_ATTR_CONST_SIZE_BYTES, 0},
      {GCAP_KERNEL_ATTR_LOCAL_SIZE_BYTES, 16},
      {GCAP_KERNEL_ATTR_NUM_REGS, 40},
      {GCAP_KERNEL_ATTR_PTX_VERSION, 80},
      {GCAP_KERNEL_ATTR_BINARY_VERSION, 90},
      {GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, 48 * 1024 - 512},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int v = -1;
    assert_ok(gcap_kernel_get_attribute(k, want[i].attr, &v));
    assert_int_equal(v, want[i].value);
  }
  assert_int_equal(fake_cuda_calls("cuFuncGetAttribute("), 8);
  int v = -1;
  assert_status(gcap_kernel_get_attribute(k, (gcap_kernel_attr)7, &v), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(fake_cuda_calls("cuFuncGetAttribute("), 8); /* refused before the driver */
  assert_ok(gcap_module_unload(m));
  finish(ctx);
}

/* gcap_kernel_set_attribute on CUDA: cuFuncSetAttribute, which checks the device's limit; launches
 * and kernel nodes then ask for more than 48 KiB of dynamic shared memory. */
static void test_kernel_set_attribute_goes_to_the_driver(void **state) {
  (void)state;
  static const char ptx[] = ".version 7.5\n.target sm_75\n.address_size 64\n"
                            ".visible .entry k_8_4(.param .u64 p, .param .u32 n)\n{\n  ret;\n}\n";
  gcap_context *ctx = cuda_context();
  gcap_module_desc d = {.image = ptx, .image_size = sizeof ptx};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  gcap_kernel *k = NULL;
  assert_ok(gcap_module_get_kernel(m, "k_8_4", &k));
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  uint64_t p = 0;
  uint32_t n = 0;
  void *args[] = {&p, &n};
  const uint32_t big = 96 * 1024;
  fake_cuda_log_clear();
  assert_status(gcap_launch_kernel(s, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), big, args), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(fake_cuda_calls("cuLaunchKernel("), 0); /* refused before the driver */
  assert_ok(gcap_kernel_set_attribute(k, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, (int)big));
  assert_int_equal(fake_cuda_calls("cuFuncSetAttribute("), 1);
  assert_int_equal(fake_cuda_calls(", 8, 98304)"), 1);
  int v = -1;
  assert_ok(gcap_kernel_get_attribute(k, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, &v));
  assert_int_equal(v, big);
  /* the fake's H100 gives a block 232448 bytes; k_8_4 has 512 of static shared memory */
  assert_status(gcap_kernel_set_attribute(k, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, 232448 - 512 + 1),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_kernel_set_attribute");
  test_assert_message_contains("value 231937");
  assert_status(gcap_kernel_set_attribute(k, GCAP_KERNEL_ATTR_NUM_REGS, 32), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(fake_cuda_calls("cuFuncSetAttribute("), 2); /* the other attribute never reached it */
  assert_ok(gcap_kernel_get_attribute(k, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, &v));
  assert_int_equal(v, big); /* unchanged by the refusals */
  assert_ok(gcap_launch_kernel(s, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), big, args));
  assert_int_equal(fake_cuda_calls("shmem=98304"), 1);
  gcap_graph *g = NULL;
  gcap_node *node = NULL;
  gcap_exec *x = NULL;
  gcap_kernel_node_params kp = {k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), big, args};
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &kp, &node));
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
  assert_ok(gcap_module_unload(m));
  finish(ctx);
}

/*
 * gcap_mem_free_async is stream-ordered on CUDA: no cuMemFree (which would stall the device and
 * invalidate another stream's capture) until the stream has reached the free, and none while a
 * stream of the context captures.
 */
static void test_stream_ordered_free_waits_for_its_stream(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  gcap_stream *s = NULL, *cap = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_stream_create(ctx, &cap));
  void *p = NULL;
  assert_ok(gcap_mem_alloc(ctx, 256, &p));
  assert_ok(gcap_stream_begin_capture(cap, GCAP_CAPTURE_MODE_RELAXED));
  fake_cuda_log_clear();
  assert_ok(gcap_memset_async(s, p, 1, 256));
  assert_ok(gcap_mem_free_async(s, p));
  assert_int_equal(fake_cuda_calls("cuMemFree("), 0);
  assert_int_equal(fake_cuda_calls("cuEventRecord("), 1);
  fake_cuda_drain(); /* the stream got there, but a capture is going on */
  void *q = NULL;
  assert_ok(gcap_mem_alloc(ctx, 64, &q));
  assert_int_equal(fake_cuda_calls("cuMemFree("), 0);
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_end_capture(cap, &g));
  assert_ok(gcap_context_synchronize(ctx));
  assert_int_equal(fake_cuda_calls("cuMemFree("), 1);
  assert_ok(gcap_mem_free(ctx, q));
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
  assert_ok(gcap_stream_destroy(cap));
  finish(ctx);
}

/*
 * A whole-graph update the core allows but the driver refuses (a 1-D fill whose width changes,
 * which CUDA says it may refuse): the driver's result, and its failing node mapped back to gcap's.
 */
static void test_driver_refusal_reaches_update_info(void **state) {
  (void)state;
  gcap_context *ctx = cuda_context();
  void *p = NULL;
  assert_ok(gcap_mem_alloc(ctx, 256, &p));
  gcap_graph *g[2];
  gcap_node *fill[2];
  for (int v = 0; v < 2; v++) {
    assert_ok(gcap_graph_create(ctx, &g[v]));
    gcap_memset_node_params f = {p, 7, 4, v ? 32u : 16u, 1, 256};
    assert_ok(gcap_graph_add_memset_node(g[v], NULL, 0, &f, &fill[v]));
  }
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g[0], 0, &x));
  assert_int_equal(setenv("FAKE_CUDA_REFUSE_FILL_RESHAPE", "1", 1), 0);
  gcap_exec_update_info info = {GCAP_EXEC_UPDATE_SUCCESS, NULL, NULL};
  assert_status(gcap_exec_update(x, g[1], &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  unsetenv("FAKE_CUDA_REFUSE_FILL_RESHAPE");
  assert_int_equal(info.result, GCAP_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED);
  assert_ptr_equal(info.error_node, fill[1]);
  assert_null(info.error_from_node);
  assert_ok(gcap_exec_update(x, g[1], &info)); /* a driver that takes it */
  assert_int_equal(info.result, GCAP_EXEC_UPDATE_SUCCESS);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g[0]);
  gcap_graph_destroy(g[1]);
  assert_ok(gcap_mem_free(ctx, p));
  finish(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_ptx_entries_and_globals_reach_the_driver, count_live_handles),
      cmocka_unit_test_setup(test_stream_ordered_free_waits_for_its_stream, count_live_handles),
      cmocka_unit_test_setup(test_driver_refusal_reaches_update_info, count_live_handles),
      cmocka_unit_test_setup(test_every_node_type_becomes_the_same_driver_graph, count_live_handles),
      cmocka_unit_test_setup(test_setters_enable_and_update_reach_the_driver, count_live_handles),
      cmocka_unit_test_setup(test_host_function_makes_no_driver_call, count_live_handles),
      cmocka_unit_test_setup(test_host_function_calls_gcap_while_the_host_waits, count_live_handles),
      cmocka_unit_test_setup(test_exec_destroy_keeps_records_of_a_running_launch, count_live_handles),
      cmocka_unit_test_setup(test_synchronous_copy_is_complete_on_return, count_live_handles),
      cmocka_unit_test_setup(test_context_synchronize_spares_other_captures, count_live_handles),
      cmocka_unit_test_setup(test_callers_current_context_is_restored, count_live_handles),
      cmocka_unit_test_setup(test_fill_pitch_alignment, count_live_handles),
      cmocka_unit_test_setup(test_kernel_sizes_from_the_driver, count_live_handles),
      cmocka_unit_test_setup(test_unknown_kernel_pointers_reach_the_driver, count_live_handles),
      cmocka_unit_test_setup(test_unknown_copy_sides_are_unified, count_live_handles),
      cmocka_unit_test_setup(test_shaped_copy_setter_updates_the_whole_graph, count_live_handles),
      cmocka_unit_test_setup(test_child_setter_with_shaped_copies, count_live_handles),
      cmocka_unit_test_setup(test_capture_into_a_graph_reaches_the_driver, count_live_handles),
      cmocka_unit_test_setup(test_event_timing_reaches_the_driver, count_live_handles),
      cmocka_unit_test_setup(test_event_node_setters_reach_the_driver, count_live_handles),
      cmocka_unit_test_setup(test_child_graph_setter_reaches_the_driver, count_live_handles),
      cmocka_unit_test_setup(test_kernel_priority_reaches_the_driver, count_live_handles),
      cmocka_unit_test_setup(test_cooperative_launch_reaches_the_driver, count_live_handles),
      cmocka_unit_test_setup(test_stream_priority_and_legacy_order_reach_the_driver, count_live_handles),
      cmocka_unit_test_setup(test_mem_nodes_by_hand_reach_the_driver, count_live_handles),
      cmocka_unit_test_setup(test_copies_in_rows_reach_the_driver, count_live_handles),
      cmocka_unit_test_setup(test_conditional_nodes_reach_the_driver, count_live_handles),
      cmocka_unit_test_setup(test_device_runtime_ptx_is_linked, count_live_handles),
      cmocka_unit_test_setup(test_managed_memory_reaches_the_driver, count_live_handles),
      cmocka_unit_test_setup(test_kernel_attributes_come_from_the_driver, count_live_handles),
      cmocka_unit_test_setup(test_kernel_set_attribute_goes_to_the_driver, count_live_handles),
  };
  return cmocka_run_group_tests_name("CUDA backend on the recording fake driver", tests, NULL, NULL);
}
