/*
 * libFuzzer harness of the public API: the input bytes are a program of gcap calls over two
 * simulator contexts, with live, destroyed, foreign, wrong-type and NULL handles, odd sizes,
 * every node kind, capture in every mode with fork and join, pools, update, save and load.
 * After every call: a known status code, a message after a failure and "" after a success,
 * NULL handle outputs after a failure. After a context is destroyed every handle it made is
 * refused with INVALID_HANDLE, and at the end of an input no handle is left registered.
 * Kernels and host callbacks touch only memory the harness knows to be live, so a sanitizer
 * report is the library's fault.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream, fmemopen */
#endif
#include <gcap/gcap.h>
#include <gcap/sim.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/registry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_harness_cleanup(void);

#define MAX_OPS 200
#define MAX_CHILD_GRAPHS 6
#define ARENA 4096 /* host bytes every copy may use: never freed, so never dangling */

/* ------------------------------------------------------------ input */

struct input {
  const uint8_t *p;
  size_t n;
};

static uint8_t byte(struct input *in) {
  if (in->n == 0) return 0;
  in->n--;
  return *in->p++;
}

static size_t choose(struct input *in, size_t n) { return n ? byte(in) % n : 0; }

static uint32_t u32_of(struct input *in, const uint32_t *table, size_t n) { return table[choose(in, n)]; }
#define PICK(in, table) (table)[choose((in), sizeof(table) / sizeof((table)[0]))]

/* ----------------------------------------------------------- handles */

enum kind { K_CTX, K_STREAM, K_EVENT, K_MODULE, K_KERNEL, K_GRAPH, K_NODE, K_EXEC, K_CAPTURE, K_POOL, K_COUNT };
static const unsigned kind_slots[K_COUNT] = {2, 6, 4, 3, 8, 8, 48, 4, 3, 3};
static const char *const kind_names[K_COUNT] = {"context", "stream", "event", "module",  "kernel",
                                                "graph",   "node",   "exec",  "capture", "pool"};

struct slot {
  void *h;
  int ctx;    /* context slot, -1 unknown */
  int parent; /* node: its graph's slot; graph: the child-graph node embedding it, else -1 */
  int module; /* kernel: its module's slot */
  bool live;  /* as far as the harness knows */
};

enum ptr_kind { P_DEVICE, P_PINNED, P_GRAPH };
struct ptr {
  void *p;
  size_t bytes;
  int ctx;
  enum ptr_kind kind;
  bool live; /* eager allocations only: graph memory's lifetime is the library's business */
};

#define NPTR 16
#define NCALLBACK 8

struct callback {
  int action;
  int slot; /* a stream or graph slot the callback uses */
};

static struct {
  struct slot slots[K_COUNT][48];
  struct ptr ptrs[NPTR];
  struct callback callbacks[NCALLBACK];
  size_t next_ptr;
  unsigned child_graphs; /* child-graph nodes added so far */
  uint8_t arena[ARENA];
  bool callback_failed; /* a call inside a host callback failed during the current call */
  /* Conditional handles made so far, with their defaults: a WHILE takes only a handle that starts
   * at 0, since no kernel here ever sets one (a loop on 1 would never end). */
  gcap_conditional_handle conds[8];
  unsigned cond_defaults[8];
  size_t next_cond;
} st;

static max_align_t bogus[4]; /* addresses that were never handles */

static void fail(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_api: %s: %s (message \"%s\")\n", what, detail, gcap_last_error_message());
  abort();
}

/* Mostly a live handle of the kind; else a stale or empty slot, NULL, a non-handle or another kind's. */
static void *handle(struct input *in, enum kind k) {
  uint8_t sel = byte(in);
  if (sel < 160) {
    unsigned live = 0;
    for (unsigned i = 0; i < kind_slots[k]; i++) live += st.slots[k][i].live;
    for (unsigned i = 0, want = live ? sel % live : 0; live && i < kind_slots[k]; i++)
      if (st.slots[k][i].live && want-- == 0) return st.slots[k][i].h;
  }
  if (sel < 208) return st.slots[k][sel % kind_slots[k]].h;
  if (sel < 224) return NULL;
  if (sel < 240) return &bogus[sel % 4];
  enum kind other = (enum kind)((k + 1 + sel % (K_COUNT - 1)) % K_COUNT);
  return st.slots[other][sel % kind_slots[other]].h;
}

/* The live slot of kind k holding h, or -1. */
static int slot_of(enum kind k, const void *h) {
  if (!h) return -1;
  for (unsigned i = 0; i < kind_slots[k]; i++)
    if (st.slots[k][i].live && st.slots[k][i].h == h) return (int)i;
  return -1;
}

static int ctx_of(enum kind k, const void *h) {
  int i = slot_of(k, h);
  return i < 0 ? -1 : st.slots[k][i].ctx;
}

/* Records a new handle in a free slot (or forgets it: the context still owns it). */
static int remember(enum kind k, void *h, int ctx, int parent) {
  int same = slot_of(k, h);
  if (same >= 0 && k == K_KERNEL) return same; /* looked up again */
  if (same >= 0) fail(kind_names[k], "a new handle equals a live one");
  for (unsigned i = 0; i < kind_slots[k]; i++) {
    struct slot *s = &st.slots[k][i];
    if (s->live) continue;
    *s = (struct slot){h, ctx, parent, -1, true};
    return (int)i;
  }
  return -1;
}

static void forget_graph(int g);

static void forget_node(int n) {
  st.slots[K_NODE][n].live = false;
  for (unsigned g = 0; g < kind_slots[K_GRAPH]; g++)
    if (st.slots[K_GRAPH][g].live && st.slots[K_GRAPH][g].parent == n) forget_graph((int)g);
}

static void forget_graph(int g) {
  st.slots[K_GRAPH][g].live = false;
  for (unsigned n = 0; n < kind_slots[K_NODE]; n++)
    if (st.slots[K_NODE][n].live && st.slots[K_NODE][n].parent == g) forget_node((int)n);
}

static void forget(enum kind k, const void *h) {
  int i = slot_of(k, h);
  if (i < 0) return;
  if (k == K_GRAPH) forget_graph(i);
  else if (k == K_NODE) forget_node(i);
  else st.slots[k][i].live = false;
  if (k == K_MODULE)
    for (unsigned j = 0; j < kind_slots[K_KERNEL]; j++)
      if (st.slots[K_KERNEL][j].module == i) st.slots[K_KERNEL][j].live = false;
}

/* ----------------------------------------------------------- checks */

static bool known_status(gcap_status s) { return strcmp(gcap_status_name(s), "GCAP_UNKNOWN_STATUS") != 0; }

/* With FUZZ_API_STATS set, how often each call succeeded and failed is printed at exit; FUZZ_API_TRACE prints every
 * call. */
#define MAX_CALLS 96
static struct {
  const char *name;
  unsigned long ok, failed;
} call_stats[MAX_CALLS];

static void print_stats(void) {
  for (size_t i = 0; i < MAX_CALLS && call_stats[i].name; i++)
    fprintf(stderr, "%-32s %10lu ok %10lu failed\n", call_stats[i].name, call_stats[i].ok, call_stats[i].failed);
}

static void count_call(const char *call, bool ok) {
  static int enabled = -1, trace = -1;
  if (trace < 0) trace = getenv("FUZZ_API_TRACE") != NULL;
  if (trace) fprintf(stderr, "%s -> %s\n", call, ok ? "ok" : gcap_last_error_message());
  if (enabled < 0 && (enabled = getenv("FUZZ_API_STATS") != NULL)) atexit(print_stats);
  if (!enabled) return;
  for (size_t i = 0; i < MAX_CALLS; i++) {
    if (!call_stats[i].name) call_stats[i].name = call;
    if (strcmp(call_stats[i].name, call) != 0) continue;
    ok ? call_stats[i].ok++ : call_stats[i].failed++;
    return;
  }
}

/* Every call's contract; `out` is its handle output or NULL. Returns true on success. */
static bool check(gcap_status s, const char *call, void *const *out) {
  const char *msg = gcap_last_error_message();
  if (!known_status(s)) fail(call, "unknown status code");
  if (s == GCAP_ERROR_OUT_OF_MEMORY || s == GCAP_ERROR_BACKEND || s == GCAP_ERROR_NOT_INITIALIZED)
    fail(call, "a failure nothing here can cause");
  count_call(call, s == GCAP_SUCCESS);
  bool after_callback_failure = st.callback_failed;
  st.callback_failed = false;
  if (s == GCAP_SUCCESS) {
    if (msg[0] != '\0')
      fail(call, after_callback_failure ? "succeeded with the message of a host callback's failed call"
                                        : "succeeded with a message");
    return true;
  }
  if (msg[0] == '\0') fail(call, "failed without a message");
  if (out && *out != NULL) fail(call, "failed but left its handle output set");
  return false;
}

#define SENTINEL ((void *)&bogus[3])

/* ------------------------------------------------------------ memory */

static bool inside(const struct ptr *r, const void *p, size_t bytes) {
  uintptr_t a = (uintptr_t)r->p, q = (uintptr_t)p;
  return q >= a && q - a <= r->bytes && bytes <= r->bytes - (q - a);
}

/* True when [p, p + bytes) lies in memory that stays valid while kernels run. */
static bool touchable(const void *p, size_t bytes) {
  struct ptr arena = {st.arena, ARENA, -1, P_PINNED, true};
  if (inside(&arena, p, bytes)) return true;
  for (size_t i = 0; i < NPTR; i++)
    if (st.ptrs[i].live && st.ptrs[i].kind != P_GRAPH && inside(&st.ptrs[i], p, bytes)) return true;
  return false;
}

/* Round robin: freed pointers stay a while to be passed again; a live one pushed out is just not touched. */
static void remember_ptr(void *p, size_t bytes, int ctx, enum ptr_kind kind) {
  st.ptrs[st.next_ptr++ % NPTR] = (struct ptr){p, bytes, ctx, kind, kind != P_GRAPH};
}

static void forget_ptr(const void *p) {
  for (size_t i = 0; i < NPTR; i++)
    if (st.ptrs[i].p == p) st.ptrs[i].live = false;
}

static const size_t offsets[] = {0, 0, 0, 1, 4, 8, 64, 255, 256};

/* A pointer for a side that must be device memory: anything, the library checks it. */
static void *device_side(struct input *in) {
  uint8_t sel = byte(in);
  size_t off = PICK(in, offsets);
  if (sel < 200) {
    struct ptr *r = &st.ptrs[sel % NPTR];
    for (size_t i = 0; sel < 140 && !r->p && i < NPTR; i++) r = &st.ptrs[(sel + i) % NPTR];
    return r->p ? (uint8_t *)r->p + off : st.arena + off;
  }
  if (sel < 215) return NULL;
  if (sel < 235) return st.arena + off;
  return (uint8_t *)&bogus[0] + (off & 7);
}

/*
 * Where a copy's pointers may be host memory. The library cannot tell freed memory from host
 * memory, so only a synchronous copy may name an allocation there; work that may be recorded
 * (and replayed after a free) gets the arena, or for DEFAULT a live device allocation, whose
 * inferred kind the library must keep.
 */
enum copy_use { USE_RECORDED, USE_EAGER };

static void *host_side(struct input *in, size_t *room, enum copy_use use, gcap_memcpy_kind kind, int ctx) {
  uint8_t sel = byte(in);
  size_t off = PICK(in, offsets);
  struct ptr *r = &st.ptrs[sel % NPTR];
  bool allowed = use == USE_EAGER ? r->kind != P_GRAPH : kind == GCAP_MEMCPY_DEFAULT && r->kind == P_DEVICE;
  /* Another context's allocation is refused on either side; past its end memory would be host memory. */
  if (sel < 160 && r->live && allowed && ctx >= 0 && off < r->bytes) {
    /* The library checks ranges in device memory only; page-locked memory is host memory. */
    *room = r->kind == P_DEVICE ? SIZE_MAX : r->bytes - off;
    return (uint8_t *)r->p + off;
  }
  *room = ARENA - off;
  return st.arena + off;
}

static const size_t byte_counts[] = {0, 1, 3, 4, 8, 16, 64, 256, 1000, 4096, SIZE_MAX, SIZE_MAX / 2 + 1};

/* A copy whose host-side pointers cannot run outside memory the harness owns. */
static gcap_memcpy_node_params copy_params(struct input *in, enum copy_use use, int ctx) {
  static const gcap_memcpy_kind kinds[] = {GCAP_MEMCPY_HOST_TO_HOST,   GCAP_MEMCPY_HOST_TO_DEVICE,
                                           GCAP_MEMCPY_DEVICE_TO_HOST, GCAP_MEMCPY_DEVICE_TO_DEVICE,
                                           GCAP_MEMCPY_DEFAULT,        (gcap_memcpy_kind)7};
  gcap_memcpy_node_params p = {.kind = PICK(in, kinds), .bytes = PICK(in, byte_counts)};
  bool dst_host =
      p.kind == GCAP_MEMCPY_HOST_TO_HOST || p.kind == GCAP_MEMCPY_DEVICE_TO_HOST || p.kind == GCAP_MEMCPY_DEFAULT;
  bool src_host =
      p.kind == GCAP_MEMCPY_HOST_TO_HOST || p.kind == GCAP_MEMCPY_HOST_TO_DEVICE || p.kind == GCAP_MEMCPY_DEFAULT;
  size_t room = SIZE_MAX, src_room = SIZE_MAX;
  p.dst = dst_host ? host_side(in, &room, use, p.kind, ctx) : device_side(in);
  p.src = src_host ? host_side(in, &src_room, use, p.kind, ctx) : device_side(in);
  if (src_room < room) room = src_room;
  if (p.bytes > room) p.bytes = room;
  return p;
}

static gcap_memset_node_params fill_params(struct input *in) {
  static const unsigned elem[] = {1, 2, 4, 4, 0, 3};
  static const size_t widths[] = {0, 1, 3, 16, 64, SIZE_MAX}, heights[] = {1, 1, 0, 2, 4}, pitches[] = {0, 4, 64, 256};
  gcap_memset_node_params p = {.dst = device_side(in), .value = byte(in) * 0x01010101u, .element_size = PICK(in, elem)};
  p.width = PICK(in, widths);
  p.height = PICK(in, heights);
  p.pitch = PICK(in, pitches);
  return p;
}

/* ------------------------------------------------------------ kernels */

/*
 * The thread's index in the whole grid, every dimension counted, so that no two threads (and no
 * two blocks, which worker threads may run at once) write the same element.
 */
static uint64_t grid_index(const gcap_sim_thread *t) {
  const gcap_dim3 g = t->grid_dim, b = t->block_dim, bi = t->block_idx, ti = t->thread_idx;
  uint64_t block = bi.x + (uint64_t)g.x * (bi.y + (uint64_t)g.y * bi.z);
  uint64_t thread = ti.x + (uint64_t)b.x * (ti.y + (uint64_t)b.y * ti.z);
  return block * ((uint64_t)b.x * b.y * b.z) + thread;
}

/* x[i] = x[i] * 2 + 1 for i < n, when [x, x + n) is live. Params: float *x, uint32_t n. */
static void scale_sim(const gcap_sim_thread *t, void *const *args) {
  float *x;
  uint32_t n;
  memcpy(&x, args[0], sizeof x);
  memcpy(&n, args[1], sizeof n);
  uint64_t i = grid_index(t);
  if (i < n && (uintptr_t)x % sizeof *x == 0 && touchable(x, (size_t)n * sizeof *x)) x[i] = x[i] * 2.0f + 1.0f;
}

/* dst[i] = src[i] for i < n, both ranges live. Params: const uint8_t *src, uint8_t *dst, uint32_t n. */
static void copy_sim(const gcap_sim_thread *t, void *const *args) {
  const uint8_t *src;
  uint8_t *dst;
  uint32_t n;
  memcpy(&src, args[0], sizeof src);
  memcpy(&dst, args[1], sizeof dst);
  memcpy(&n, args[2], sizeof n);
  uint64_t i = grid_index(t);
  if (i < n && touchable(src, n) && touchable(dst, n)) dst[i] = src[i];
}

static const size_t scale_sizes[] = {sizeof(float *), sizeof(uint32_t)};
static const size_t copy_sizes[] = {sizeof(void *), sizeof(void *), sizeof(uint32_t)};
static const gcap_param_access copy_access[] = {GCAP_ACCESS_READ, GCAP_ACCESS_WRITE, GCAP_ACCESS_NONE};
static const gcap_kernel_def kernel_defs[] = {
    {.name = "scale", .sim_fn = scale_sim, .num_params = 2, .param_sizes = scale_sizes},
    {.name = "copy", .sim_fn = copy_sim, .num_params = 3, .param_sizes = copy_sizes, .param_access = copy_access},
    {.name = "stub", .num_params = 0},
};
static const char *const kernel_names[] = {"scale", "copy", "stub", "absent", ""};

/* Argument storage of one launch or node: values are copied by the library. */
struct kargs {
  void *p0, *p1;
  uint32_t n;
  void *argv[3];
};

static void **kernel_args(struct input *in, struct kargs *a) {
  static const uint32_t counts[] = {0, 1, 4, 16, 64, 1000};
  memset(a, 0, sizeof *a); /* a parameter may be read at another kernel's (larger) size */
  a->p0 = device_side(in);
  a->p1 = device_side(in);
  a->n = u32_of(in, counts, sizeof counts / sizeof counts[0]);
  uint8_t shape = byte(in) % 8;
  if (shape == 0) return NULL;
  a->argv[0] = &a->p0;
  a->argv[1] = shape == 1 ? (void *)&a->n : (void *)&a->p1; /* scale takes (x, n); copy (src, dst, n) */
  a->argv[2] = &a->n;
  return a->argv;
}

static gcap_dim3 dims(struct input *in, bool block) {
  static const uint32_t grid_x[] = {1, 1, 2, 3, 0}, block_x[] = {1, 32, 64, 0, 1025, 4};
  static const uint32_t yz[] = {1, 1, 1, 2, 0};
  gcap_dim3 d = {block ? PICK(in, block_x) : PICK(in, grid_x), PICK(in, yz), PICK(in, yz)};
  return d;
}

static gcap_kernel_node_params kernel_params(struct input *in, struct kargs *a) {
  static const uint32_t shared[] = {0, 0, 16, 49152, 1u << 20};
  gcap_kernel_node_params p = {.kernel = handle(in, K_KERNEL), .grid = dims(in, false), .block = dims(in, true)};
  p.shared_mem_bytes = u32_of(in, shared, sizeof shared / sizeof shared[0]);
  p.args = kernel_args(in, a);
  return p;
}

/* ------------------------------------------------------ host callbacks */

enum { CB_NOTHING, CB_BLOCK, CB_QUERY, CB_FAIL, CB_ALLOC, CB_COUNT };

static void callback_check(gcap_status s, bool want_failure, gcap_status want) {
  if (!known_status(s)) fail("host callback", "unknown status code");
  if (s != GCAP_SUCCESS) st.callback_failed = true;
  if (s != GCAP_SUCCESS && gcap_last_error_message()[0] == '\0') fail("host callback", "failure without a message");
  if (want_failure && s != want) fail("host callback", gcap_status_name(s));
}

/*
 * A callback's call on a stream the harness still follows: a stream being destroyed runs its
 * queued work (DEFERRED) after its handle is gone, as CUDA's stream destroy returns before its
 * work ends; the call then finds no stream, which counts as the refusal the callback expects.
 */
static gcap_status on_stream(gcap_status s) { return s == GCAP_ERROR_INVALID_HANDLE ? GCAP_ERROR_ILLEGAL_STATE : s; }

/* Makes a gcap call from inside a launch, as the callback's spec says. */
static void host_callback(void *user_data) {
  const struct callback *c = user_data;
  gcap_stream *s = st.slots[K_STREAM][c->slot % kind_slots[K_STREAM]].h;
  gcap_graph *g = st.slots[K_GRAPH][c->slot % kind_slots[K_GRAPH]].h;
  size_t count = 0;
  switch (c->action) {
  case CB_BLOCK:
    if (slot_of(K_STREAM, s) >= 0)
      callback_check(on_stream(gcap_stream_synchronize(s)), true, GCAP_ERROR_ILLEGAL_STATE);
    break;
  case CB_QUERY:
    callback_check(gcap_graph_get_nodes(g, NULL, &count), false, GCAP_SUCCESS);
    (void)gcap_graph_node_count(g);
    break;
  case CB_FAIL: callback_check(gcap_stream_query(NULL), true, GCAP_ERROR_INVALID_HANDLE); break;
  case CB_ALLOC:
    if (slot_of(K_STREAM, s) >= 0) {
      void *p = NULL;
      callback_check(on_stream(gcap_mem_alloc_async(s, 64, &p)), true, GCAP_ERROR_ILLEGAL_STATE);
      callback_check(gcap_mem_alloc(st.slots[K_CTX][0].h, 64, &p), true,
                     st.slots[K_CTX][0].live ? GCAP_ERROR_ILLEGAL_STATE : GCAP_ERROR_INVALID_HANDLE);
      callback_check(on_stream(gcap_mem_free_async(s, st.ptrs[0].p)), true, GCAP_ERROR_ILLEGAL_STATE);
    }
    break;
  default: break;
  }
}

static gcap_host_node_params host_params(struct input *in) {
  uint8_t sel = byte(in);
  gcap_host_node_params p = {sel < 240 ? host_callback : NULL, NULL};
  struct callback *c = &st.callbacks[sel % NCALLBACK];
  p.user_data = c;
  return p;
}

/* ------------------------------------------------------------ graphs */

struct deps {
  gcap_node *n[4];
  size_t count;
};

static struct deps dependencies(struct input *in) {
  struct deps d = {{NULL}, byte(in) % 5};
  for (size_t i = 0; i < d.count; i++) d.n[i] = handle(in, K_NODE);
  if (d.count == 4) d.count = 0; /* a non-NULL array with zero entries */
  return d;
}

/* Takes the output's address: the call has written it by the time this runs. */
static void node_made(gcap_status s, const char *call, gcap_graph *g, gcap_node *const *n) {
  if (!check(s, call, (void *const *)n)) return;
  int gs = slot_of(K_GRAPH, g);
  /*
   * A stale graph handle whose address a new graph the harness does not follow now has (a
   * capture object's graph, once the allocator reused it) is a live graph: the node is real, but
   * nothing here would see it go with that graph, so it is not followed either.
   */
  if (gs >= 0) remember(K_NODE, *n, st.slots[K_GRAPH][gs].ctx, gs);
}

static void op_add_node(struct input *in) {
  gcap_graph *g = handle(in, K_GRAPH);
  struct deps d = dependencies(in);
  gcap_node *n = SENTINEL;
  struct kargs a;
  switch (byte(in) % 9) {
  case 0: {
    gcap_kernel_node_params p = kernel_params(in, &a);
    node_made(gcap_graph_add_kernel_node(g, d.n, d.count, &p, &n), "add_kernel_node", g, &n);
    break;
  }
  case 1: {
    gcap_memcpy_node_params p = copy_params(in, USE_RECORDED, ctx_of(K_GRAPH, g));
    node_made(gcap_graph_add_memcpy_node(g, d.n, d.count, &p, &n), "add_memcpy_node", g, &n);
    break;
  }
  case 2: {
    gcap_memset_node_params p = fill_params(in);
    node_made(gcap_graph_add_memset_node(g, d.n, d.count, &p, &n), "add_memset_node", g, &n);
    break;
  }
  case 3: {
    gcap_host_node_params p = host_params(in);
    node_made(gcap_graph_add_host_node(g, d.n, d.count, &p, &n), "add_host_node", g, &n);
    break;
  }
  case 4: node_made(gcap_graph_add_empty_node(g, d.n, d.count, &n), "add_empty_node", g, &n); break;
  case 5:
    /* Each embedding may double a graph (one embedded in itself): a few keep the input's cost bounded. */
    if (++st.child_graphs > MAX_CHILD_GRAPHS) break;
    node_made(gcap_graph_add_child_graph_node(g, d.n, d.count, handle(in, K_GRAPH), &n), "add_child_graph_node", g, &n);
    break;
  case 6:
    node_made(gcap_graph_add_event_record_node(g, d.n, d.count, handle(in, K_EVENT), &n), "add_event_record_node", g,
              &n);
    break;
  case 7:
    node_made(gcap_graph_add_event_wait_node(g, d.n, d.count, handle(in, K_EVENT), &n), "add_event_wait_node", g, &n);
    break;
  default: node_made(gcap_graph_add_empty_node(g, NULL, 3, &n), "add_empty_node(NULL deps)", g, &n); break;
  }
}

static void op_edges(struct input *in) {
  gcap_graph *g = handle(in, K_GRAPH);
  gcap_node *from[3], *to[3];
  size_t n = byte(in) % 4;
  for (size_t i = 0; i < 3; i++) {
    from[i] = handle(in, K_NODE);
    to[i] = handle(in, K_NODE);
  }
  if (byte(in) & 1) check(gcap_graph_add_dependencies(g, from, to, n), "add_dependencies", NULL);
  else check(gcap_graph_remove_dependencies(g, from, to, n), "remove_dependencies", NULL);
}

static void op_destroy_node(struct input *in) {
  gcap_node *n = handle(in, K_NODE);
  if (check(gcap_graph_destroy_node(n), "destroy_node", NULL)) forget(K_NODE, n);
}

/* Enumerations with counts that are too small, exact, too large, or NULL. */
static void op_query_graph(struct input *in) {
  gcap_graph *g = handle(in, K_GRAPH);
  gcap_node *nodes[8], *to[8];
  size_t count = byte(in) % 9;
  size_t *countp = byte(in) == 0 ? NULL : &count;
  switch (byte(in) % 4) {
  case 0: check(gcap_graph_get_nodes(g, byte(in) & 1 ? nodes : NULL, countp), "get_nodes", NULL); break;
  case 1: check(gcap_graph_get_root_nodes(g, byte(in) & 1 ? nodes : NULL, countp), "get_root_nodes", NULL); break;
  case 2: {
    uint8_t which = byte(in) % 4;
    check(gcap_graph_get_edges(g, which & 1 ? nodes : NULL, which & 2 ? to : NULL, countp), "get_edges", NULL);
    break;
  }
  default:
    (void)gcap_graph_node_count(g);
    (void)gcap_graph_edge_count(g);
    break;
  }
}

static void op_query_node(struct input *in) {
  gcap_node *n = handle(in, K_NODE);
  gcap_node *list[8];
  size_t count = byte(in) % 9;
  gcap_kernel_node_params kp;
  gcap_memcpy_node_params cp;
  gcap_memset_node_params fp;
  gcap_host_node_params hp;
  (void)gcap_node_get_type(n);
  switch (byte(in) % 10) {
  case 0: check(gcap_node_get_dependencies(n, byte(in) & 1 ? list : NULL, &count), "get_dependencies", NULL); break;
  case 1: check(gcap_node_get_dependents(n, byte(in) & 1 ? list : NULL, &count), "get_dependents", NULL); break;
  case 2: check(gcap_node_get_kernel_params(n, &kp), "get_kernel_params", NULL); break;
  case 3: check(gcap_node_get_memcpy_params(n, &cp), "get_memcpy_params", NULL); break;
  case 4: check(gcap_node_get_memset_params(n, &fp), "get_memset_params", NULL); break;
  case 5: check(gcap_node_get_host_params(n, &hp), "get_host_params", NULL); break;
  case 6: {
    gcap_event *e = SENTINEL;
    check(gcap_node_get_event(n, &e), "get_event", (void *const *)&e);
    break;
  }
  case 7: {
    gcap_graph *child = SENTINEL;
    if (check(gcap_node_get_child_graph(n, &child), "get_child_graph", (void *const *)&child) &&
        slot_of(K_GRAPH, child) < 0) {
      int ns = slot_of(K_NODE, n);
      if (ns >= 0) remember(K_GRAPH, child, st.slots[K_NODE][ns].ctx, ns);
    }
    break;
  }
  case 9: {
    gcap_node *copy = SENTINEL;
    gcap_graph *clone = handle(in, K_GRAPH);
    bool no_out = byte(in) == 9;
    check(gcap_graph_node_find_in_clone(clone, n, no_out ? NULL : &copy), "node_find_in_clone",
          no_out ? NULL : (void *const *)&copy);
    break;
  }
  default: check(gcap_node_get_kernel_params(n, NULL), "get_kernel_params(NULL)", NULL); break;
  }
}

static void op_set_node(struct input *in) {
  gcap_node *n = handle(in, K_NODE);
  struct kargs a;
  switch (byte(in) % 6) {
  case 0: {
    gcap_kernel_node_params p = kernel_params(in, &a);
    check(gcap_node_set_kernel_params(n, &p), "set_kernel_params", NULL);
    break;
  }
  case 1: {
    gcap_memcpy_node_params p = copy_params(in, USE_RECORDED, ctx_of(K_NODE, n));
    check(gcap_node_set_memcpy_params(n, &p), "set_memcpy_params", NULL);
    break;
  }
  case 2: {
    gcap_memset_node_params p = fill_params(in);
    check(gcap_node_set_memset_params(n, &p), "set_memset_params", NULL);
    break;
  }
  case 3: {
    gcap_host_node_params p = host_params(in);
    check(gcap_node_set_host_params(n, &p), "set_host_params", NULL);
    break;
  }
  case 4:
    if (byte(in) & 1) {
      check(gcap_node_set_event(n, handle(in, K_EVENT)), "node_set_event", NULL);
    } else {
      gcap_node_params p = {.type = (gcap_node_type)(byte(in) % 11)};
      if (p.type == GCAP_NODE_HOST) p.u.host = host_params(in);
      else if (p.type == GCAP_NODE_MEMSET) p.u.fill = fill_params(in);
      else if (p.type == GCAP_NODE_EVENT_RECORD || p.type == GCAP_NODE_EVENT_WAIT) p.u.event = handle(in, K_EVENT);
      if (byte(in) & 1) check(gcap_node_set_params(n, &p), "node_set_params", NULL);
      else check(gcap_exec_node_set_params(handle(in, K_EXEC), n, &p), "exec_node_set_params", NULL);
    }
    break;
  default: {
    gcap_exec *x = handle(in, K_EXEC);
    gcap_event *e = handle(in, K_EVENT);
    if (byte(in) & 1) check(gcap_exec_event_record_node_set_event(x, n, e), "exec_event_record_node_set_event", NULL);
    else check(gcap_exec_event_wait_node_set_event(x, n, e), "exec_event_wait_node_set_event", NULL);
    break;
  }
  }
}

static void op_graph_lifetime(struct input *in) {
  gcap_graph *out = SENTINEL;
  switch (byte(in) % 3) {
  case 0: {
    gcap_context *ctx = handle(in, K_CTX);
    if (check(gcap_graph_create(ctx, &out), "graph_create", (void *const *)&out))
      remember(K_GRAPH, out, ctx_of(K_CTX, ctx), -1);
    break;
  }
  case 1: {
    gcap_graph *g = handle(in, K_GRAPH);
    if (check(gcap_graph_clone(g, &out), "graph_clone", (void *const *)&out))
      remember(K_GRAPH, out, ctx_of(K_GRAPH, g), -1);
    break;
  }
  default: {
    gcap_graph *g = handle(in, K_GRAPH);
    int s = slot_of(K_GRAPH, g);
    gcap_graph_destroy(g);
    /* An embedded graph or one being captured into is refused; the rest is gone. */
    if (s >= 0 && st.slots[K_GRAPH][s].parent < 0 && gcap_last_error_message()[0] == '\0') forget(K_GRAPH, g);
    break;
  }
  }
}

/* Race analysis, DOT, save and load: the graph's outputs. */
static void op_graph_outputs(struct input *in) {
  gcap_graph *g = handle(in, K_GRAPH);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) abort();
  switch (byte(in) % 5) {
  case 0: {
    gcap_race races[4];
    size_t count = byte(in) % 5;
    check(gcap_graph_find_races(g, byte(in) & 1 ? races : NULL, &count), "find_races", NULL);
    break;
  }
  case 1: check(gcap_graph_write_dot(g, f, byte(in) % 3), "write_dot", NULL); break;
  case 4: {
    uint8_t how = byte(in);
    unsigned flags = how < 200 ? (unsigned)how * 331u % 0x10000u : 1u << (how % 20);
    check(gcap_graph_debug_dot_print(g, how == 255 ? NULL : "/dev/null", flags), "debug_dot_print", NULL);
    break;
  }
  default: {
    if (!check(gcap_graph_save(g, f), "graph_save", NULL)) break;
    fflush(f);
    FILE *back = fmemopen(text, len, "r");
    if (!back) break;
    gcap_context *ctx = handle(in, K_CTX);
    gcap_graph *loaded = SENTINEL;
    if (check(gcap_graph_load(ctx, back, &loaded), "graph_load", (void *const *)&loaded))
      remember(K_GRAPH, loaded, ctx_of(K_CTX, ctx), -1);
    fclose(back);
    break;
  }
  }
  fclose(f);
  free(text);
}

/* ------------------------------------------------------- executables */

static void op_exec(struct input *in) {
  gcap_exec *x = handle(in, K_EXEC);
  gcap_stream *s = handle(in, K_STREAM);
  switch (byte(in) % 8) {
  case 0: {
    gcap_graph *g = handle(in, K_GRAPH);
    gcap_exec *out = SENTINEL;
    unsigned flags = byte(in) % 3;
    gcap_status made;
    if (byte(in) & 1) {
      gcap_instantiate_params p = {byte(in) % 20, handle(in, K_STREAM), NULL, GCAP_INSTANTIATE_SUCCESS};
      made = gcap_graph_instantiate_with_params(g, &p, &out);
    } else {
      made = gcap_graph_instantiate(g, flags, &out);
    }
    if (check(made, "instantiate", (void *const *)&out)) remember(K_EXEC, out, ctx_of(K_GRAPH, g), -1);
    break;
  }
  case 1: check(gcap_exec_upload(x, s), "exec_upload", NULL); break;
  case 2:
  case 3: check(gcap_exec_launch(x, s), "exec_launch", NULL); break;
  case 4: (void)gcap_exec_node_count(x); break;
  case 6: {
    bool on = false;
    check(gcap_exec_node_get_enabled(x, handle(in, K_NODE), byte(in) == 7 ? NULL : &on), "exec_node_get_enabled", NULL);
    break;
  }
  case 7: {
    unsigned flags = 0;
    check(gcap_exec_get_flags(x, byte(in) == 7 ? NULL : &flags), "exec_get_flags", NULL);
    break;
  }
  default:
    gcap_exec_destroy(x);
    forget(K_EXEC, x);
    break;
  }
}

static void op_exec_update(struct input *in) {
  gcap_exec *x = handle(in, K_EXEC);
  gcap_node *n = handle(in, K_NODE);
  struct kargs a;
  switch (byte(in) % 6) {
  case 0: {
    gcap_exec_update_info info;
    check(gcap_exec_update(x, handle(in, K_GRAPH), byte(in) == 7 ? NULL : &info), "exec_update", NULL);
    break;
  }
  case 1: {
    gcap_kernel_node_params p = kernel_params(in, &a);
    check(gcap_exec_kernel_node_set_params(x, n, &p), "exec_kernel_node_set_params", NULL);
    break;
  }
  case 2: {
    gcap_memcpy_node_params p = copy_params(in, USE_RECORDED, ctx_of(K_EXEC, x));
    check(gcap_exec_memcpy_node_set_params(x, n, &p), "exec_memcpy_node_set_params", NULL);
    break;
  }
  case 3: {
    gcap_memset_node_params p = fill_params(in);
    check(gcap_exec_memset_node_set_params(x, n, &p), "exec_memset_node_set_params", NULL);
    break;
  }
  case 4: {
    gcap_host_node_params p = host_params(in);
    check(gcap_exec_host_node_set_params(x, n, &p), "exec_host_node_set_params", NULL);
    break;
  }
  default: check(gcap_exec_node_set_enabled(x, n, byte(in) & 1), "exec_node_set_enabled", NULL); break;
  }
}

/* ------------------------------------------------------ stream work */

static void op_stream_work(struct input *in) {
  gcap_stream *s = handle(in, K_STREAM);
  struct kargs a;
  switch (byte(in) % 8) {
  case 0: {
    gcap_memcpy_node_params p = copy_params(in, USE_RECORDED, ctx_of(K_STREAM, s));
    check(gcap_memcpy_async(s, p.dst, p.src, p.bytes, p.kind), "memcpy_async", NULL);
    break;
  }
  case 1: {
    gcap_memset_node_params p = fill_params(in);
    size_t count = p.width * p.height; /* may wrap: the library checks the range */
    if (p.element_size == 2) check(gcap_memset_d16_async(s, p.dst, (uint16_t)p.value, count), "memset_d16_async", NULL);
    else if (p.element_size == 4) check(gcap_memset_d32_async(s, p.dst, p.value, count), "memset_d32_async", NULL);
    else check(gcap_memset_async(s, p.dst, (int)p.value, count), "memset_async", NULL);
    break;
  }
  case 2:
  case 3: {
    gcap_kernel_node_params p = kernel_params(in, &a);
    check(gcap_launch_kernel(s, p.kernel, p.grid, p.block, p.shared_mem_bytes, p.args), "launch_kernel", NULL);
    break;
  }
  case 4: {
    gcap_host_node_params p = host_params(in);
    check(gcap_launch_host_func(s, p.fn, p.user_data), "launch_host_func", NULL);
    break;
  }
  case 5: {
    static const size_t sizes[] = {0, 1, 64, 256, 4096};
    void *p = SENTINEL;
    size_t bytes = PICK(in, sizes);
    if (check(gcap_mem_alloc_async(s, bytes, &p), "mem_alloc_async", NULL)) remember_ptr(p, bytes, -1, P_GRAPH);
    break;
  }
  default: {
    void *p = device_side(in);
    if (check(gcap_mem_free_async(s, p), "mem_free_async", NULL)) forget_ptr(p);
    break;
  }
  }
}

static void op_sync(struct input *in) {
  switch (byte(in) % 8) {
  case 0: check(gcap_stream_synchronize(handle(in, K_STREAM)), "stream_synchronize", NULL); break;
  case 1: {
    gcap_status s = gcap_stream_query(handle(in, K_STREAM));
    check(s, "stream_query", NULL);
    break;
  }
  case 2: check(gcap_event_record(handle(in, K_EVENT), handle(in, K_STREAM)), "event_record", NULL); break;
  case 3: check(gcap_stream_wait_event(handle(in, K_STREAM), handle(in, K_EVENT)), "stream_wait_event", NULL); break;
  case 4: check(gcap_event_synchronize(handle(in, K_EVENT)), "event_synchronize", NULL); break;
  case 5: check(gcap_event_query(handle(in, K_EVENT)), "event_query", NULL); break;
  case 7: {
    float ms = 0;
    gcap_event *a = handle(in, K_EVENT), *b = handle(in, K_EVENT);
    check(gcap_event_elapsed_time(a, b, byte(in) == 7 ? NULL : &ms), "event_elapsed_time", NULL);
    break;
  }
  default: check(gcap_context_synchronize(handle(in, K_CTX)), "context_synchronize", NULL); break;
  }
}

/* ------------------------------------------------------------ capture */

static const gcap_capture_mode modes[] = {GCAP_CAPTURE_MODE_GLOBAL, GCAP_CAPTURE_MODE_THREAD_LOCAL,
                                          GCAP_CAPTURE_MODE_RELAXED, (gcap_capture_mode)3};

static void op_stream_capture(struct input *in) {
  gcap_stream *s = handle(in, K_STREAM);
  switch (byte(in) % 7) {
  case 0: check(gcap_stream_begin_capture(s, PICK(in, modes)), "begin_capture", NULL); break;
  case 1: {
    gcap_graph *g = SENTINEL;
    /* A capture into a graph the harness made hands that graph back: it is followed already. */
    if (check(gcap_stream_end_capture(s, &g), "end_capture", (void *const *)&g) && slot_of(K_GRAPH, g) < 0)
      remember(K_GRAPH, g, ctx_of(K_STREAM, s), -1);
    break;
  }
  case 5: {
    gcap_graph *g = handle(in, K_GRAPH);
    struct deps d = dependencies(in);
    check(gcap_stream_begin_capture_to_graph(s, g, d.count ? d.n : NULL, d.count, PICK(in, modes)),
          "begin_capture_to_graph", NULL);
    break;
  }
  case 6: {
    struct deps d = dependencies(in);
    check(gcap_stream_update_capture_dependencies(s, d.count ? d.n : NULL, d.count, byte(in) % 3),
          "update_capture_dependencies", NULL);
    break;
  }
  case 2: {
    gcap_capture_info info;
    check(gcap_stream_get_capture_info(s, byte(in) == 9 ? NULL : &info), "get_capture_info", NULL);
    break;
  }
  case 3: {
    gcap_capture_status cs;
    check(gcap_stream_is_capturing(s, &cs), "is_capturing", NULL);
    break;
  }
  default: {
    gcap_capture_mode m = PICK(in, modes);
    check(gcap_thread_exchange_capture_mode(&m), "thread_exchange_capture_mode", NULL);
    break;
  }
  }
}

static void op_capture_object(struct input *in) {
  gcap_capture *c = handle(in, K_CAPTURE);
  switch (byte(in) % 8) {
  case 0: {
    gcap_stream *s = handle(in, K_STREAM);
    gcap_capture_options o;
    gcap_capture_options_init(&o);
    o.mode = PICK(in, modes);
    o.pool = byte(in) & 1 ? handle(in, K_POOL) : NULL;
    gcap_capture *out = SENTINEL;
    if (check(gcap_capture_begin(s, byte(in) == 5 ? NULL : &o, &out), "capture_begin", (void *const *)&out))
      remember(K_CAPTURE, out, ctx_of(K_STREAM, s), -1);
    break;
  }
  case 1: {
    struct kargs a;
    gcap_kernel_node_params p = kernel_params(in, &a);
    check(gcap_capture_record_kernel(c, PICK(in, kernel_names), p.grid, p.block, p.shared_mem_bytes, p.args),
          "capture_record_kernel", NULL);
    break;
  }
  case 2: {
    gcap_memcpy_node_params p = copy_params(in, USE_RECORDED, ctx_of(K_CAPTURE, c));
    check(gcap_capture_record_memcpy(c, p.dst, p.src, p.bytes, p.kind), "capture_record_memcpy", NULL);
    break;
  }
  case 3: {
    gcap_memset_node_params p = fill_params(in);
    check(gcap_capture_record_memset(c, p.dst, (uint8_t)p.value, p.width), "capture_record_memset", NULL);
    break;
  }
  case 4: {
    gcap_capture_status cs;
    (void)gcap_capture_recorded_count(c);
    (void)gcap_capture_is_active(c);
    check(gcap_capture_get_status(c, &cs), "capture_get_status", NULL);
    break;
  }
  case 5: {
    gcap_graph *g = SENTINEL;
    if (check(gcap_capture_end(c, &g), "capture_end", (void *const *)&g))
      remember(K_GRAPH, g, ctx_of(K_CAPTURE, c), -1);
    break;
  }
  case 6: {
    gcap_exec *x = SENTINEL;
    if (check(gcap_capture_finish(c, byte(in) % 3, &x), "capture_finish", (void *const *)&x))
      remember(K_EXEC, x, ctx_of(K_CAPTURE, c), -1);
    break;
  }
  default:
    gcap_capture_destroy(c);
    forget(K_CAPTURE, c);
    break;
  }
}

/* ------------------------------------------------- objects and memory */

static void op_objects(struct input *in) {
  gcap_context *ctx = handle(in, K_CTX);
  int cs = ctx_of(K_CTX, ctx);
  void *out = SENTINEL;
  switch (byte(in) % 8) {
  case 0:
    if (check(gcap_stream_create(ctx, (gcap_stream **)&out), "stream_create", &out)) remember(K_STREAM, out, cs, -1);
    break;
  case 1: {
    gcap_stream *s = handle(in, K_STREAM);
    gcap_status gone = gcap_stream_destroy(s);
    /* Its work's failure is reported too, the stream destroyed all the same. */
    if (check(gone, "stream_destroy", NULL) || (gone != GCAP_ERROR_INVALID_HANDLE && gone != GCAP_ERROR_ILLEGAL_STATE))
      forget(K_STREAM, s);
    break;
  }
  case 2: {
    static const unsigned event_flags[] = {0, 0, GCAP_EVENT_DISABLE_TIMING, GCAP_EVENT_BLOCKING_SYNC, 4, 8};
    uint8_t how = byte(in);
    gcap_status made = how < 128 ? gcap_event_create(ctx, (gcap_event **)&out)
                                 : gcap_event_create_with_flags(ctx, event_flags[how % 6], (gcap_event **)&out);
    if (check(made, how < 128 ? "event_create" : "event_create_with_flags", &out)) remember(K_EVENT, out, cs, -1);
    break;
  }
  case 3: {
    gcap_event *e = handle(in, K_EVENT);
    if (check(gcap_event_destroy(e), "event_destroy", NULL)) forget(K_EVENT, e);
    break;
  }
  case 4:
    if (check(gcap_pool_create(ctx, (gcap_pool **)&out), "pool_create", &out)) remember(K_POOL, out, cs, -1);
    break;
  case 5: {
    gcap_pool *p = handle(in, K_POOL);
    gcap_pool_stats stats;
    uint64_t value = 0;
    uint8_t how = byte(in);
    if (how < 128) check(gcap_pool_get_stats(p, &stats), "pool_get_stats", NULL);
    else if (how < 192) check(gcap_context_graph_mem_trim(ctx), "graph_mem_trim", NULL);
    else if (how < 240)
      check(gcap_context_get_graph_mem_attribute(ctx, (gcap_graph_mem_attribute)(how % 5), how & 1 ? &value : NULL),
            "get_graph_mem_attribute", NULL);
    else
      check(gcap_context_set_graph_mem_attribute(ctx, (gcap_graph_mem_attribute)(how % 5), how & 2),
            "set_graph_mem_attribute", NULL);
    break;
  }
  case 6: {
    /* Retain and release in pairs: the harness's slot stays the one user reference. */
    gcap_pool *p = handle(in, K_POOL);
    if (gcap_pool_retain(p) == p) gcap_pool_release(p);
    break;
  }
  default: {
    gcap_pool *p = handle(in, K_POOL);
    gcap_pool_release(p);
    forget(K_POOL, p);
    break;
  }
  }
}

static void op_modules(struct input *in) {
  gcap_context *ctx = handle(in, K_CTX);
  switch (byte(in) % 4) {
  case 0: {
    gcap_module_desc d = {.kernels = kernel_defs, .num_kernels = byte(in) % 4};
    gcap_module *m = SENTINEL;
    if (check(gcap_module_load(ctx, &d, &m), "module_load", (void *const *)&m))
      remember(K_MODULE, m, ctx_of(K_CTX, ctx), -1);
    break;
  }
  case 1: {
    gcap_module *m = handle(in, K_MODULE);
    if (check(gcap_module_unload(m), "module_unload", NULL)) forget(K_MODULE, m);
    break;
  }
  case 2: {
    gcap_module *m = handle(in, K_MODULE);
    gcap_kernel *k = SENTINEL;
    if (check(gcap_module_get_kernel(m, PICK(in, kernel_names), &k), "module_get_kernel", (void *const *)&k)) {
      int ks = remember(K_KERNEL, k, ctx_of(K_MODULE, m), -1);
      if (ks >= 0) st.slots[K_KERNEL][ks].module = slot_of(K_MODULE, m);
    }
    break;
  }
  default: {
    gcap_kernel *k = SENTINEL;
    const char *name = PICK(in, kernel_names);
    if (check(gcap_context_find_kernel(ctx, name, &k), "context_find_kernel", (void *const *)&k)) {
      (void)gcap_kernel_name(k);
      int ks = slot_of(K_KERNEL, k) < 0 ? remember(K_KERNEL, k, ctx_of(K_CTX, ctx), -1) : -1;
      /* Its module, so that unloading that module stops following it, as for module_get_kernel:
       * a kernel of an unloaded module may be freed and its address reused by another context's. */
      for (unsigned m = 0; ks >= 0 && m < kind_slots[K_MODULE]; m++) {
        gcap_kernel *same = NULL;
        if (st.slots[K_MODULE][m].live &&
            gcap_module_get_kernel(st.slots[K_MODULE][m].h, name, &same) == GCAP_SUCCESS && same == k)
          st.slots[K_KERNEL][ks].module = (int)m;
      }
    }
    break;
  }
  }
}

static void op_memory(struct input *in) {
  static const size_t sizes[] = {0, 1, 7, 64, 256, 4096};
  gcap_context *ctx = handle(in, K_CTX);
  void *p = SENTINEL;
  size_t bytes = PICK(in, sizes);
  switch (byte(in) % 5) {
  case 0:
    if (check(gcap_mem_alloc(ctx, bytes, &p), "mem_alloc", NULL)) remember_ptr(p, bytes, ctx_of(K_CTX, ctx), P_DEVICE);
    break;
  case 1:
    if (check(gcap_host_alloc(ctx, bytes, &p), "host_alloc", NULL))
      remember_ptr(p, bytes, ctx_of(K_CTX, ctx), P_PINNED);
    break;
  case 2:
    p = device_side(in);
    if (check(gcap_mem_free(ctx, p), "mem_free", NULL)) forget_ptr(p);
    break;
  case 3: {
    /* Only a live pinned allocation may be handed to host_free: anything else may be host memory it frees. */
    struct ptr *r = &st.ptrs[byte(in) % NPTR];
    void *q = r->kind == P_PINNED && r->live ? r->p : device_side(in);
    if (check(gcap_host_free(ctx, q), "host_free", NULL)) forget_ptr(q);
    break;
  }
  default: {
    gcap_memcpy_node_params c = copy_params(in, USE_EAGER, ctx_of(K_CTX, ctx));
    check(gcap_memcpy(ctx, c.dst, c.src, c.bytes, c.kind), "memcpy", NULL);
    break;
  }
  }
}

/* --------------------------------------------------------- contexts */

/* Every handle the context made, as the harness knows them, must now be refused. */
static void check_all_refused(int c) {
  gcap_node *nodes[1];
  size_t count = 1;
  gcap_kernel *kernel = SENTINEL;
  gcap_pool_stats stats;
  gcap_capture_status cs;
  struct {
    enum kind k;
    gcap_status got;
  } probe;
  for (enum kind k = K_STREAM; k < K_COUNT; k++)
    for (unsigned i = 0; i < kind_slots[k]; i++) {
      struct slot *s = &st.slots[k][i];
      if (!s->live || s->ctx != c) continue;
      probe.k = k;
      switch (k) {
      case K_STREAM: probe.got = gcap_stream_query(s->h); break;
      case K_EVENT: probe.got = gcap_event_query(s->h); break;
      case K_MODULE: probe.got = gcap_module_get_kernel(s->h, "stub", &kernel); break;
      case K_KERNEL: probe.got = gcap_kernel_name(s->h) ? GCAP_SUCCESS : GCAP_ERROR_INVALID_HANDLE; break;
      case K_GRAPH: probe.got = gcap_graph_get_nodes(s->h, nodes, &count); break;
      case K_NODE: probe.got = gcap_node_get_dependencies(s->h, NULL, &count); break;
      case K_EXEC: probe.got = gcap_exec_upload(s->h, NULL); break;
      case K_CAPTURE: probe.got = gcap_capture_get_status(s->h, &cs); break;
      case K_POOL: probe.got = gcap_pool_get_stats(s->h, &stats); break;
      default: probe.got = GCAP_ERROR_INVALID_HANDLE; break;
      }
      if (probe.got != GCAP_ERROR_INVALID_HANDLE) fail(kind_names[probe.k], "a handle outlived its context");
      s->live = false;
    }
  for (size_t i = 0; i < NPTR; i++)
    if (st.ptrs[i].ctx == c || st.ptrs[i].kind == P_GRAPH) st.ptrs[i].live = false;
}

static void destroy_context(int c) {
  struct slot *s = &st.slots[K_CTX][c];
  if (!s->live) return;
  s->live = false; /* from the start: DEFERRED host callbacks run inside the destroy, the handle gone */
  gcap_context_destroy(s->h);
  if (gcap_context_synchronize(s->h) != GCAP_ERROR_INVALID_HANDLE) fail("context", "destroyed but still valid");
  check_all_refused(c);
}

static void create_context(struct input *in) {
  int c = (int)choose(in, kind_slots[K_CTX]);
  if (st.slots[K_CTX][c].live) return;
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  uint8_t flags = byte(in);
  so.order = flags & 1 ? GCAP_SIM_ORDER_SHUFFLE : GCAP_SIM_ORDER_CAPTURE;
  so.seed = flags >> 4;
  so.check_races = flags & 2;
  so.exec = flags & 4 ? GCAP_SIM_EXEC_DEFERRED : GCAP_SIM_EXEC_IMMEDIATE;
  so.threads = flags & 8 ? 2 : 0;
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  o.sim = &so;
  gcap_context *ctx = SENTINEL;
  if (!check(gcap_context_create(&o, &ctx), "context_create", (void *const *)&ctx)) fail("context_create", "refused");
  st.slots[K_CTX][c] = (struct slot){ctx, c, -1, -1, true};
  gcap_module_desc d = {.kernels = kernel_defs, .num_kernels = 3};
  gcap_module *m = SENTINEL;
  if (check(gcap_module_load(ctx, &d, &m), "module_load", (void *const *)&m)) remember(K_MODULE, m, c, -1);
  gcap_stream *s = SENTINEL;
  if (check(gcap_stream_create(ctx, &s), "stream_create", (void *const *)&s)) remember(K_STREAM, s, c, -1);
}

static void op_contexts(struct input *in) {
  if (byte(in) % 4 == 0) destroy_context((int)choose(in, kind_slots[K_CTX]));
  else create_context(in);
}

/* User objects: handles kept loosely (a stale one is refused); every destructor must run exactly once. */
static struct {
  gcap_user_object *objs[4];
  unsigned created, destroyed;
} uo;

static void uo_destroy(void *ptr) {
  (void)ptr;
  uo.destroyed++;
}

static void op_user_objects(struct input *in) {
  gcap_user_object *obj = uo.objs[byte(in) % 4];
  unsigned count = byte(in) % 3;
  switch (byte(in) % 4) {
  case 0: {
    gcap_user_object *made = SENTINEL;
    unsigned flags = byte(in) % 5 == 0 ? 0 : GCAP_USER_OBJECT_NO_DESTRUCTOR_SYNC;
    if (check(gcap_user_object_create(handle(in, K_CTX), NULL, uo_destroy, count, flags, &made), "user_object_create",
              (void *const *)&made)) {
      uo.created++;
      uo.objs[byte(in) % 4] = made;
    }
    break;
  }
  case 1:
    if (byte(in) & 1) check(gcap_user_object_release(obj, count), "user_object_release", NULL);
    else check(gcap_user_object_retain(obj, count), "user_object_retain", NULL);
    break;
  case 2:
    check(gcap_graph_retain_user_object(handle(in, K_GRAPH), obj, count, byte(in) % 3), "graph_retain_user_object",
          NULL);
    break;
  default:
    check(gcap_graph_release_user_object(handle(in, K_GRAPH), obj, count), "graph_release_user_object", NULL);
    break;
  }
}

static void op_callbacks(struct input *in) {
  struct callback *c = &st.callbacks[byte(in) % NCALLBACK];
  c->action = byte(in) % CB_COUNT;
  c->slot = byte(in);
}

/* ------------------------------------------------- the CUDA 12 graph API */

static gcap_conditional_node_params conditional_params(struct input *in, gcap_graph **bodies) {
  size_t pick = byte(in) % 10;
  gcap_conditional_node_params p = {pick < 8 ? st.conds[pick] : (gcap_conditional_handle)byte(in) << 4,
                                    (gcap_conditional_type)(byte(in) % 4), byte(in) % 5, byte(in) == 9 ? NULL : bodies};
  if (p.type == GCAP_CONDITIONAL_WHILE && pick < 8 && st.cond_defaults[pick]) p.type = GCAP_CONDITIONAL_IF;
  return p;
}

/* Device sides only: the library checks those; a host side could run past memory the harness owns. */
static gcap_memcpy_3d_params copy_3d_params(struct input *in) {
  static const size_t sizes[] = {0, 1, 8, 16, 64, 256};
  gcap_memcpy_3d_params p;
  memset(&p, 0, sizeof p);
  p.src = (gcap_pitched_ptr){device_side(in), PICK(in, sizes), PICK(in, sizes), PICK(in, sizes)};
  p.dst = (gcap_pitched_ptr){device_side(in), PICK(in, sizes), PICK(in, sizes), PICK(in, sizes)};
  p.src_pos = (gcap_pos){PICK(in, sizes), byte(in) % 3, byte(in) % 3};
  p.dst_pos = (gcap_pos){PICK(in, sizes), byte(in) % 3, byte(in) % 3};
  p.extent = (gcap_extent){PICK(in, sizes), byte(in) % 4, byte(in) % 4};
  p.kind = byte(in) < 240 ? GCAP_MEMCPY_DEVICE_TO_DEVICE : (gcap_memcpy_kind)9;
  return p;
}

static void add_conditional(struct input *in, gcap_graph *g, struct deps *d) {
  gcap_graph *bodies[4] = {NULL};
  gcap_node *n = SENTINEL;
  gcap_conditional_node_params p = conditional_params(in, bodies);
  gcap_status s = gcap_graph_add_conditional_node(g, d->n, d->count, &p, &n);
  node_made(s, "add_conditional_node", g, &n);
  int ns = s == GCAP_SUCCESS ? slot_of(K_NODE, n) : -1;
  for (unsigned b = 0; ns >= 0 && b < p.size; b++) remember(K_GRAPH, bodies[b], st.slots[K_NODE][ns].ctx, ns);
}

static void op_graph_api_12(struct input *in) {
  gcap_graph *g = handle(in, K_GRAPH);
  struct deps d = dependencies(in);
  gcap_node *n = SENTINEL;
  switch (byte(in) % 8) {
  case 0: {
    gcap_conditional_handle h = 0;
    unsigned def = byte(in) % 3, flags = byte(in) % 3;
    if (check(gcap_graph_conditional_handle_create(g, def, flags, byte(in) == 9 ? NULL : &h),
              "conditional_handle_create", NULL) &&
        h) {
      st.cond_defaults[st.next_cond % 8] = def;
      st.conds[st.next_cond++ % 8] = h;
    }
    break;
  }
  case 1: add_conditional(in, g, &d); break;
  case 2: {
    gcap_memcpy_3d_params p = copy_3d_params(in);
    node_made(gcap_graph_add_memcpy_3d_node(g, d.n, d.count, &p, &n), "add_memcpy_3d_node", g, &n);
    break;
  }
  case 3: {
    static const size_t sizes[] = {0, 1, 64, 4096};
    gcap_mem_alloc_node_params p = {PICK(in, sizes), byte(in) < 200 ? NULL : handle(in, K_POOL), NULL};
    node_made(gcap_graph_add_mem_alloc_node(g, d.n, d.count, byte(in) == 9 ? NULL : &p, &n), "add_mem_alloc_node", g,
              &n);
    if (n && n != SENTINEL && p.dptr) remember_ptr(p.dptr, p.bytes, -1, P_GRAPH);
    break;
  }
  case 4:
    node_made(gcap_graph_add_mem_free_node(g, d.n, d.count, device_side(in), &n), "add_mem_free_node", g, &n);
    break;
  case 5: {
    gcap_kernel_node_attr_value v = {.priority = (int)byte(in) - 128};
    gcap_node *k = handle(in, K_NODE);
    if (byte(in) & 1)
      check(gcap_graph_kernel_node_set_attribute(k, (gcap_kernel_node_attr)(byte(in) % 10), &v),
            "kernel_node_set_attribute", NULL);
    else
      check(gcap_graph_kernel_node_get_attribute(k, GCAP_KERNEL_NODE_ATTR_PRIORITY, &v), "kernel_node_get_attribute",
            NULL);
    break;
  }
  case 6:
    check(gcap_exec_child_graph_node_set_params(handle(in, K_EXEC), handle(in, K_NODE), g),
          "exec_child_graph_node_set_params", NULL);
    break;
  default: {
    gcap_memcpy_3d_params p = copy_3d_params(in);
    gcap_stream *s = handle(in, K_STREAM);
    if (byte(in) & 1) {
      check(gcap_memcpy_2d_async(s, p.dst.ptr, p.dst.pitch, p.src.ptr, p.src.pitch, p.extent.width, p.extent.height,
                                 p.kind),
            "memcpy_2d_async", NULL);
    } else {
      gcap_exec *x = handle(in, K_EXEC);
      check(gcap_exec_memcpy_3d_node_set_params(x, handle(in, K_NODE), &p), "exec_memcpy_3d_node_set_params", NULL);
    }
    break;
  }
  }
}

/* ------------------------------------------------------------ driver */

typedef void (*op_fn)(struct input *in);
static const op_fn ops[] = {
    op_add_node,       op_add_node,       op_add_node,       op_edges,         op_destroy_node,   op_query_graph,
    op_query_node,     op_set_node,       op_graph_lifetime, op_graph_outputs, op_exec,           op_exec,
    op_exec_update,    op_stream_work,    op_stream_work,    op_sync,          op_stream_capture, op_stream_capture,
    op_capture_object, op_capture_object, op_objects,        op_modules,       op_memory,         op_memory,
    op_contexts,       op_callbacks,      op_user_objects,   op_graph_api_12,
};

static void reset(void) {
  memset(&st, 0, sizeof st);
  memset(&uo, 0, sizeof uo);
  for (size_t i = 0; i < NCALLBACK; i++) st.callbacks[i] = (struct callback){(int)(i % CB_COUNT), (int)i};
}

/* For the replay driver: every input destroys what it made, so nothing is kept between inputs. */
void fuzz_harness_cleanup(void) {}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct input in = {data, size};
  reset();
  create_context(&in);
  for (int i = 0; i < MAX_OPS && in.n > 0; i++) ops[byte(&in) % (sizeof ops / sizeof ops[0])](&in);
  for (int c = 0; c < (int)kind_slots[K_CTX]; c++) destroy_context(c);
  if (uo.destroyed != uo.created) fail("user objects", "a destructor did not run exactly once");
  gcap_capture_mode global = GCAP_CAPTURE_MODE_GLOBAL; /* the thread's mode must not leak into the next input */
  gcap_thread_exchange_capture_mode(&global);
  if (gcap__registry_size() != 0) fail("end of input", "handles are still registered with no context left");
  return 0;
}
