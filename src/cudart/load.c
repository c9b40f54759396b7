/* Modules and kernels: a registered fatbin becomes a gcap module the first time one of its
 * kernels or variables is used, from the PTX entry that best fits the simulated device (several
 * units of an -rdc program linked into one). Kernels are found by the stub the program holds. */
#include "cudart.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

/* The PTX text of one unit: the entry best fitting the device, decompressed. */
static char *unit_text(const struct gcap__cudart_module *m, int unit, size_t *len, char *err, size_t err_size) {
  const struct gcap__fatbin_entry *e = gcap__fatbin_pick_ptx(&m->fatbin, gcap__cudart_cc(), unit, err, err_size);
  return e ? gcap__fatbin_ptx_text(e, len, err, err_size) : NULL;
}

/* The module's PTX: unit 0's, or the relocatable units' of an -rdc program linked by name. */
static char *module_text(const struct gcap__cudart_module *m, size_t *len, char *err, size_t err_size) {
  if (m->fatbin.units <= 1) return unit_text(m, 0, len, err, err_size);
  size_t n = m->fatbin.units - 1;
  char **texts = calloc(n, sizeof *texts);
  size_t *lens = calloc(n, sizeof *lens);
  char *linked = NULL;
  if (!texts || !lens) snprintf(err, err_size, "out of memory");
  size_t done = 0;
  while (texts && lens && done < n && (texts[done] = unit_text(m, (int)done + 1, &lens[done], err, err_size))) done++;
  if (texts && lens && done == n)
    linked = gcap__cudart_link_ptx((const char *const *)texts, lens, n, len, err, err_size);
  for (size_t i = 0; texts && i < done; i++) free(texts[i]);
  free(texts);
  free(lens);
  return linked;
}

/* A module that cannot load is said once, naming a kernel of it when the caller has one. */
static cudaError_t refuse(struct gcap__cudart_module *m, cudaError_t e, const char *kernel, const char *why) {
  m->load_error = e;
  m->generation = gcap__rt_generation();
  fprintf(stderr, "gcap-cudart: cannot load the device code%s%s: %s\n", kernel ? " of kernel " : "",
          kernel ? kernel : "", why);
  return e;
}

/* Managed variables: the program reads them through the pointer registered with them. */
static void point_managed(struct gcap__cudart_symbol *s, void *arg) {
  gcap_module *gm = arg;
  void *dptr = NULL;
  size_t bytes = 0;
  if (s->kind == GCAP__CUDART_MANAGED && gcap_module_get_global(gm, s->name, &dptr, &bytes) == GCAP_SUCCESS) {
    *(void **)(uintptr_t)s->host = dptr;
    gcap__rt_mem_note_managed(dptr, bytes);
  }
}

/* Whether the fatbin holds PTX the simulated device can take: without it, CUDA's "no kernel
 * image for the device"; with it, a failure to read that PTX is a bad image. */
static int has_fitting_ptx(const struct gcap__cudart_module *m) {
  for (size_t i = 0; i < m->fatbin.count; i++)
    if (m->fatbin.entries[i].kind == GCAP__FATBIN_PTX && m->fatbin.entries[i].arch <= gcap__cudart_cc()) return 1;
  return 0;
}

/* Loads m into ctx unless it is loaded in this generation; under load_lock. */
static cudaError_t load_module(gcap_context *ctx, struct gcap__cudart_module *m, const char *kernel) {
  unsigned long gen = gcap__rt_generation();
  if (m->generation == gen) return m->loaded ? cudaSuccess : m->load_error;
  m->loaded = NULL;
  if (m->bad) return refuse(m, cudaErrorInvalidKernelImage, kernel, m->error);
  char err[512] = "";
  size_t len = 0;
  char *text = module_text(m, &len, err, sizeof err);
  if (!text)
    return refuse(m, has_fitting_ptx(m) ? cudaErrorInvalidKernelImage : cudaErrorNoKernelImageForDevice, kernel, err);
  gcap_module_desc d = {.image = text, .image_size = len + 1};
  gcap_module *gm = NULL;
  /* The runtime loads lazily, at a kernel's first use, which may be inside a capture: like the
   * driver's lazy loading, that is not the program's unsafe call, so the capture goes on. */
  gcap_capture_mode mode = GCAP_CAPTURE_MODE_RELAXED;
  gcap_thread_exchange_capture_mode(&mode);
  gcap_status st = gcap_module_load(ctx, &d, &gm);
  char why[1024] = ""; /* restoring the mode clears gcap's message */
  if (st != GCAP_SUCCESS) snprintf(why, sizeof why, "%s", gcap_last_error_message());
  gcap_thread_exchange_capture_mode(&mode);
  free(text);
  if (st != GCAP_SUCCESS) {
    cudaError_t e = st == GCAP_ERROR_INVALID_PTX ? cudaErrorInvalidPtx : gcap__rt_error_of(st);
    return refuse(m, e, kernel, why);
  }
  m->loaded = gm;
  m->generation = gen;
  m->load_error = cudaSuccess;
  gcap__cudart_each_symbol(m, point_managed, gm);
  return cudaSuccess;
}

static cudaError_t resolve(gcap_context *ctx, struct gcap__cudart_symbol *s) {
  pthread_mutex_lock(&load_lock);
  cudaError_t e = load_module(ctx, s->module, s->kind == GCAP__CUDART_FUNCTION ? s->name : NULL);
  if (!e && s->kind == GCAP__CUDART_FUNCTION) {
    gcap_kernel *k = NULL;
    if (gcap_module_get_kernel(s->module->loaded, s->name, &k) != GCAP_SUCCESS) e = cudaErrorInvalidDeviceFunction;
    __atomic_store_n(&s->kernel, k, __ATOMIC_RELAXED);
    __atomic_store_n(&s->generation, gcap__rt_generation(), __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&load_lock);
  return e;
}

cudaError_t gcap__rt_kernel(const void *stub, gcap_kernel **out) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  struct gcap__cudart_symbol *s = gcap__cudart_symbol_of(stub);
  if (!s || s->kind != GCAP__CUDART_FUNCTION)
    return gcap__rt_fail("kernel", cudaErrorInvalidDeviceFunction, "%p is not a registered kernel", stub);
  if (__atomic_load_n(&s->generation, __ATOMIC_ACQUIRE) == gcap__rt_generation() && s->kernel)
    return *out = s->kernel, cudaSuccess;
  e = resolve(ctx, s);
  if (e) return gcap__rt_fail("kernel", e, "kernel %s", s->name);
  *out = s->kernel;
  return cudaSuccess;
}

struct stub_search {
  const gcap_kernel *kernel;
  const void *stub;
};

static void match_stub(struct gcap__cudart_symbol *s, void *arg) {
  struct stub_search *q = arg;
  if (s->kind == GCAP__CUDART_FUNCTION && s->kernel == q->kernel && s->generation == gcap__rt_generation())
    q->stub = s->host;
}

const void *gcap__rt_stub_of(const gcap_kernel *k) {
  struct stub_search q = {k, NULL};
  gcap__cudart_each_symbol(NULL, match_stub, &q);
  return q.stub;
}

struct managed_search {
  const void *address;
  struct gcap__cudart_symbol *found;
};

static void match_managed(struct gcap__cudart_symbol *s, void *arg) {
  struct managed_search *q = arg;
  if (s->kind == GCAP__CUDART_MANAGED && s->module->loaded && s->module->generation == gcap__rt_generation() &&
      *(void *const *)s->host == q->address)
    q->found = s;
}

/* A __managed__ variable's name in host code is the variable itself: the program passes its
 * managed address where it passes a __device__ variable's shadow. */
static struct gcap__cudart_symbol *managed_at(const void *address) {
  struct managed_search q = {address, NULL};
  if (address) gcap__cudart_each_symbol(NULL, match_managed, &q);
  return q.found;
}

cudaError_t gcap__rt_symbol(const void *shadow, void **dptr, size_t *size) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  struct gcap__cudart_symbol *s = gcap__cudart_symbol_of(shadow);
  if (!s) s = managed_at(shadow);
  if (!s || s->kind == GCAP__CUDART_FUNCTION)
    return gcap__rt_fail("symbol", cudaErrorInvalidSymbol, "%p is not a registered __device__ variable", shadow);
  e = resolve(ctx, s);
  if (e) return gcap__rt_fail("symbol", e, "variable %s", s->name);
  gcap_status st = gcap_module_get_global(s->module->loaded, s->name, dptr, size);
  if (st != GCAP_SUCCESS) return gcap__rt_fail("symbol", cudaErrorInvalidSymbol, "variable %s", s->name);
  return cudaSuccess;
}

char __cudaInitModule(void **handle);
/* nvcc calls it before the host first touches a __managed__ variable of the module. */
char __cudaInitModule(void **handle) {
  if (!handle) return 0;
  gcap_context *ctx;
  if (gcap__rt_enter(&ctx)) return 0;
  pthread_mutex_lock(&load_lock);
  cudaError_t e = load_module(ctx, (struct gcap__cudart_module *)(void *)handle, NULL);
  pthread_mutex_unlock(&load_lock);
  return e == cudaSuccess;
}
