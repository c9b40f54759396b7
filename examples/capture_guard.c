/*
 * gcap capture_guard: a scoped capture object, a capture that goes wrong, and the fallback.
 *
 * try_capture() records
 *     upload a <- in (H2D), zero b, scale a by 3, [allocate scratch], square a into scratch,
 *     accumulate b += a + scratch, download out <- b (D2H)
 * with a capture object held by GCAP_SCOPED_CAPTURE. Allocating scratch half way is a
 * potentially unsafe call, prohibited while the thread captures in GLOBAL mode: it fails with
 * STREAM_CAPTURE_UNSUPPORTED and invalidates the capture. Everything recorded after it fails with
 * STREAM_CAPTURE_INVALIDATED, gcap_capture_end reports INVALIDATED and its message names the
 * call that broke the capture. try_capture() returns; the capture object is destroyed as it goes
 * out of scope, the stream is an ordinary stream again, and the program does the same work
 * eagerly on the same stream and checks every result: out[i] = 3 in[i] + 9 in[i]^2.
 *
 * Runs on the CPU simulator unless the GCAP_BACKEND environment variable is set.
 * Exit status: 0 when the capture failed as expected and the eager results are right, 1 otherwise.
 */
#include <gcap/gcap.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/capture_guard_ptx.h" /* the same kernels for the CUDA backend, from kernels/capture_guard.cu */

#define N 512u
#define BLOCK 128u

#define CHECK(call)                                                                              \
  do {                                                                                           \
    gcap_status st_ = (call);                                                                    \
    if (st_ != GCAP_SUCCESS) {                                                                   \
      fprintf(stderr, "capture_guard: %s failed: %s: %s\n", #call, gcap_status_name(st_),        \
              gcap_last_error_message());                                                        \
      goto done;                                                                                 \
    }                                                                                            \
  } while (0)

/* ---- CPU implementations of the kernels ---- */

static uint32_t global_index(const gcap_sim_thread *t) { return t->block_idx.x * t->block_dim.x + t->thread_idx.x; }

/* scale(int32_t *a, int32_t k, uint32_t n): a[i] *= k */
static void scale_sim(const gcap_sim_thread *t, void *const *args) {
  int32_t *a, k;
  uint32_t n;
  memcpy(&a, args[0], sizeof a);
  memcpy(&k, args[1], sizeof k);
  memcpy(&n, args[2], sizeof n);
  uint32_t i = global_index(t);
  if (i < n) a[i] *= k;
}

/* square(const int32_t *a, int32_t *out, uint32_t n): out[i] = a[i]^2 */
static void square_sim(const gcap_sim_thread *t, void *const *args) {
  const int32_t *a;
  int32_t *out;
  uint32_t n;
  memcpy(&a, args[0], sizeof a);
  memcpy(&out, args[1], sizeof out);
  memcpy(&n, args[2], sizeof n);
  uint32_t i = global_index(t);
  if (i < n) out[i] = a[i] * a[i];
}

/* accumulate(int32_t *b, const int32_t *a, const int32_t *c, uint32_t n): b[i] += a[i] + c[i] */
static void accumulate_sim(const gcap_sim_thread *t, void *const *args) {
  int32_t *b;
  const int32_t *a, *c;
  uint32_t n;
  memcpy(&b, args[0], sizeof b);
  memcpy(&a, args[1], sizeof a);
  memcpy(&c, args[2], sizeof c);
  memcpy(&n, args[3], sizeof n);
  uint32_t i = global_index(t);
  if (i < n) b[i] += a[i] + c[i];
}

struct buffers {
  gcap_context *ctx;
  int32_t *in, *out;     /* pinned host */
  int32_t *a, *b;        /* device */
  int32_t *scratch;      /* device, allocated when the work needs it */
};

static const gcap_dim3 grid = {(N + BLOCK - 1) / BLOCK, 1, 1}, block = {BLOCK, 1, 1};

/*
 * Tries to record the work as a graph. Returns SUCCESS with *exec set, or the status that
 * ended the attempt. Whatever happens, the capture object is destroyed when `c` goes out of
 * scope, and the stream is no longer capturing when this function returns.
 */
static gcap_status try_capture(gcap_stream *s, struct buffers *m, gcap_exec **exec, char *why, size_t why_size) {
  gcap_capture *c GCAP_SCOPED_CAPTURE = NULL;
  gcap_status st = gcap_capture_begin(s, NULL, &c); /* NULL options: GLOBAL mode */
  if (st != GCAP_SUCCESS) return st;

  const size_t bytes = N * sizeof(int32_t);
  int32_t three = 3;
  uint32_t n = N;
  if ((st = gcap_capture_record_memcpy(c, m->a, m->in, bytes, GCAP_MEMCPY_HOST_TO_DEVICE)) != GCAP_SUCCESS) return st;
  if ((st = gcap_capture_record_memset(c, m->b, 0, bytes)) != GCAP_SUCCESS) return st;
  void *scale_args[] = {&m->a, &three, &n};
  if ((st = gcap_capture_record_kernel(c, "scale", grid, block, 0, scale_args)) != GCAP_SUCCESS) return st;
  printf("recorded %zu nodes\n", gcap_capture_recorded_count(c));
  if (gcap_capture_recorded_count(c) != 3) return GCAP_ERROR_ILLEGAL_STATE; /* upload, zero, scale */

  /* Half way, the work wants scratch memory: not permitted while capturing in GLOBAL mode. */
  st = gcap_mem_alloc(m->ctx, bytes, (void **)&m->scratch);
  printf("gcap_mem_alloc during capture: %s\n  %s\n", gcap_status_name(st), gcap_last_error_message());

  /* The capture is invalidated: the rest is refused, and nothing is added. */
  void *square_args[] = {&m->a, &m->scratch, &n};
  st = gcap_capture_record_kernel(c, "square", grid, block, 0, square_args);
  printf("record square:           %s\n", gcap_status_name(st));
  void *acc_args[] = {&m->b, &m->a, &m->scratch, &n};
  st = gcap_capture_record_kernel(c, "accumulate", grid, block, 0, acc_args);
  printf("record accumulate:       %s\n", gcap_status_name(st));
  st = gcap_capture_record_memcpy(c, m->out, m->b, bytes, GCAP_MEMCPY_DEVICE_TO_HOST);
  printf("record download:         %s\n", gcap_status_name(st));

  gcap_graph *g = NULL;
  st = gcap_capture_end(c, &g);
  if (st != GCAP_SUCCESS) {
    printf("gcap_capture_end:        %s\n  %s\n", gcap_status_name(st), gcap_last_error_message());
    snprintf(why, why_size, "%s", gcap_last_error_message()); /* keep a copy: later gcap calls replace the message */
    return st; /* c is destroyed here; g is NULL */
  }
  st = gcap_graph_instantiate(g, 0, exec);
  gcap_graph_destroy(g);
  return st;
}

/* The same work, eagerly, on the same stream. */
static gcap_status run_eagerly(gcap_stream *s, struct buffers *m) {
  const size_t bytes = N * sizeof(int32_t);
  int32_t three = 3;
  uint32_t n = N;
  gcap_kernel *scale, *square, *accumulate;
  gcap_status st;
  if ((st = gcap_context_find_kernel(m->ctx, "scale", &scale)) != GCAP_SUCCESS) return st;
  if ((st = gcap_context_find_kernel(m->ctx, "square", &square)) != GCAP_SUCCESS) return st;
  if ((st = gcap_context_find_kernel(m->ctx, "accumulate", &accumulate)) != GCAP_SUCCESS) return st;
  if ((st = gcap_memcpy_async(s, m->a, m->in, bytes, GCAP_MEMCPY_HOST_TO_DEVICE)) != GCAP_SUCCESS) return st;
  if ((st = gcap_memset_async(s, m->b, 0, bytes)) != GCAP_SUCCESS) return st;
  void *scale_args[] = {&m->a, &three, &n};
  if ((st = gcap_launch_kernel(s, scale, grid, block, 0, scale_args)) != GCAP_SUCCESS) return st;
  if (m->scratch == NULL && (st = gcap_mem_alloc(m->ctx, bytes, (void **)&m->scratch)) != GCAP_SUCCESS) return st;
  void *square_args[] = {&m->a, &m->scratch, &n};
  if ((st = gcap_launch_kernel(s, square, grid, block, 0, square_args)) != GCAP_SUCCESS) return st;
  void *acc_args[] = {&m->b, &m->a, &m->scratch, &n};
  if ((st = gcap_launch_kernel(s, accumulate, grid, block, 0, acc_args)) != GCAP_SUCCESS) return st;
  if ((st = gcap_memcpy_async(s, m->out, m->b, bytes, GCAP_MEMCPY_DEVICE_TO_HOST)) != GCAP_SUCCESS) return st;
  return gcap_stream_synchronize(s);
}

int main(void) {
  int ok = 0;
  gcap_context *ctx = NULL;
  gcap_module *mod = NULL;
  gcap_stream *s = NULL;
  gcap_exec *exec = NULL;
  struct buffers m = {0};

  const char *env = getenv("GCAP_BACKEND");
  gcap_context_options opts;
  gcap_context_options_init(&opts);
  opts.backend = (env != NULL && *env != '\0') ? GCAP_BACKEND_AUTO : GCAP_BACKEND_SIM;
  gcap_status created = gcap_context_create(&opts, &ctx);
  if (created == GCAP_ERROR_NOT_SUPPORTED || created == GCAP_ERROR_NOT_INITIALIZED) {
    fprintf(stderr, "capture_guard: skipped: %s\n", gcap_last_error_message());
    return 77; /* the backend GCAP_BACKEND names cannot start here (Meson's "skipped") */
  }
  CHECK(created);
  printf("gcap capture_guard on the %s backend\n", gcap_backend_name(gcap_context_backend(ctx)));
  m.ctx = ctx;

  const size_t p3[] = {sizeof(int32_t *), sizeof(int32_t), sizeof(uint32_t)};
  const size_t p3p[] = {sizeof(int32_t *), sizeof(int32_t *), sizeof(uint32_t)};
  const size_t p4[] = {sizeof(int32_t *), sizeof(int32_t *), sizeof(int32_t *), sizeof(uint32_t)};
  const gcap_kernel_def defs[] = {
      {.name = "scale", .sim_fn = scale_sim, .num_params = 3, .param_sizes = p3},
      {.name = "square", .sim_fn = square_sim, .num_params = 3, .param_sizes = p3p},
      {.name = "accumulate", .sim_fn = accumulate_sim, .num_params = 4, .param_sizes = p4},
  };
  const gcap_module_desc desc = {.image = capture_guard_ptx, .image_size = sizeof capture_guard_ptx, .kernels = defs, .num_kernels = 3};
  CHECK(gcap_module_load(ctx, &desc, &mod));
  CHECK(gcap_stream_create(ctx, &s));

  const size_t bytes = N * sizeof(int32_t);
  void *in = NULL, *out = NULL, *a = NULL, *b = NULL;
  CHECK(gcap_host_alloc(ctx, bytes, &in));
  CHECK(gcap_host_alloc(ctx, bytes, &out));
  CHECK(gcap_mem_alloc(ctx, bytes, &a));
  CHECK(gcap_mem_alloc(ctx, bytes, &b));
  m.in = in, m.out = out, m.a = a, m.b = b;
  for (uint32_t i = 0; i < N; i++) {
    m.in[i] = (int32_t)(i % 37u) - 18;
    m.out[i] = -1;
  }

  /* 1. The attempt: it must fail with INVALIDATED, naming gcap_mem_alloc. */
  char why[512] = "";
  gcap_status st = try_capture(s, &m, &exec, why, sizeof why);
  if (st != GCAP_ERROR_STREAM_CAPTURE_INVALIDATED || exec != NULL) {
    fprintf(stderr, "capture_guard: expected the capture to end INVALIDATED, got %s\n", gcap_status_name(st));
    goto done;
  }
  if (strstr(why, "invalidated by gcap_mem_alloc(") == NULL) {
    fprintf(stderr, "capture_guard: the message does not name gcap_mem_alloc: %s\n", why);
    goto done;
  }
  if (m.scratch != NULL) {
    fprintf(stderr, "capture_guard: the prohibited allocation returned a pointer\n");
    goto done;
  }

  /* 2. The scope is gone: the stream is not capturing, nothing ran, and it takes eager work again. */
  gcap_capture_status cs = GCAP_CAPTURE_STATUS_ACTIVE;
  CHECK(gcap_stream_is_capturing(s, &cs));
  if (cs != GCAP_CAPTURE_STATUS_NONE) {
    fprintf(stderr, "capture_guard: the stream is still capturing after try_capture returned\n");
    goto done;
  }
  for (uint32_t i = 0; i < N; i++)
    if (m.out[i] != -1) {
      fprintf(stderr, "capture_guard: out[%u] changed although nothing should have run\n", i);
      goto done;
    }
  printf("\nthe stream is not capturing any more; running the same work eagerly on it\n");

  /* 3. The fallback, and the check. */
  CHECK(run_eagerly(s, &m));
  long bad = 0;
  for (uint32_t i = 0; i < N; i++) {
    int32_t x = m.in[i], want = 3 * x + 9 * x * x;
    if (m.out[i] != want) bad++;
  }
  printf("eager results: %ld of %u wrong (out[0] = %d, expected %d)\n", bad, N, (int)m.out[0],
         (int)(3 * m.in[0] + 9 * m.in[0] * m.in[0]));
  if (bad != 0) goto done;

  CHECK(gcap_mem_free(ctx, m.scratch));
  CHECK(gcap_mem_free(ctx, a));
  CHECK(gcap_mem_free(ctx, b));
  CHECK(gcap_host_free(ctx, in));
  CHECK(gcap_host_free(ctx, out));
  CHECK(gcap_stream_destroy(s));
  CHECK(gcap_module_unload(mod));
  ok = 1;

done:
  gcap_exec_destroy(exec);
  gcap_context_destroy(ctx);
  if (!ok) {
    fprintf(stderr, "capture_guard: FAILED\n");
    return 1;
  }
  printf("\nOK: the capture failed cleanly, the guard released it, the eager fallback is correct\n");
  return 0;
}
