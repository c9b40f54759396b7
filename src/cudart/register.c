/* Registration: what the constructor nvcc writes into every translation unit tells the runtime
 * (its fatbin, its kernels by host stub, its variables by host shadow). Only recorded here; the
 * modules are loaded into gcap when first used. */
#include "cudart.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct gcap__cudart_module *modules;
static struct gcap__cudart_symbol *symbols;

/* A registration the runtime cannot refuse (the calls return nothing) but cannot keep: said on
 * stderr, and the launch that needs it fails later saying the same. */
static void complain(const char *call, const char *what) { fprintf(stderr, "gcap-cudart: %s: %s\n", call, what); }

void **__cudaRegisterFatBinary(void *wrapper);
void __cudaRegisterFatBinaryEnd(void **handle);
void __cudaUnregisterFatBinary(void **handle);
void __cudaRegisterFunction(void **handle, const char *host_stub, char *device_fun, const char *device_name,
                            int thread_limit, void *tid, void *bid, void *block_dim, void *grid_dim, int *warp_size);
void __cudaRegisterVar(void **handle, char *host_var, char *device_address, const char *device_name, int ext,
                       size_t size, int constant, int global);
void __cudaRegisterManagedVar(void **handle, void **host_var_ptr, char *device_address, const char *device_name,
                              int ext, size_t size, int constant, int global);

/* The handle nvcc keeps is the address of the module's first member. */
static struct gcap__cudart_module *module_of(void **handle) { return (struct gcap__cudart_module *)(void *)handle; }

void **__cudaRegisterFatBinary(void *wrapper) {
  struct gcap__cudart_module *m = calloc(1, sizeof *m);
  if (!m) {
    complain("__cudaRegisterFatBinary", "out of memory; the kernels of this binary cannot run");
    return NULL;
  }
  m->wrapper = wrapper;
  if (gcap__fatbin_from_wrapper(&m->fatbin, wrapper, m->error, sizeof m->error)) {
    m->bad = 1;
    complain("__cudaRegisterFatBinary", m->error);
  }
  pthread_mutex_lock(&lock);
  m->next = modules;
  modules = m;
  pthread_mutex_unlock(&lock);
  return &m->handle;
}

void __cudaRegisterFatBinaryEnd(void **handle) {
  if (handle) __atomic_store_n(&module_of(handle)->ended, 1, __ATOMIC_RELEASE);
}

static void add_symbol(const char *call, void **handle, enum gcap__cudart_symbol_kind kind, const void *host,
                       const char *name, size_t size, int constant) {
  if (!handle || !host || !name) {
    complain(call, !handle ? "no module (its registration failed)" : !host ? "a NULL host address" : "a NULL name");
    return;
  }
  struct gcap__cudart_symbol *s = calloc(1, sizeof *s);
  if (!s) {
    fprintf(stderr, "gcap-cudart: %s: out of memory registering %s\n", call, name);
    return;
  }
  *s = (struct gcap__cudart_symbol){
      .kind = kind, .module = module_of(handle), .host = host, .name = name, .size = size, .constant = constant};
  pthread_mutex_lock(&lock);
  s->next = symbols;
  symbols = s;
  pthread_mutex_unlock(&lock);
}

void __cudaRegisterFunction(void **handle, const char *host_stub, char *device_fun, const char *device_name,
                            int thread_limit, void *tid, void *bid, void *block_dim, void *grid_dim, int *warp_size) {
  add_symbol("__cudaRegisterFunction", handle, GCAP__CUDART_FUNCTION, host_stub, device_name, 0, 0);
}

void __cudaRegisterVar(void **handle, char *host_var, char *device_address, const char *device_name, int ext,
                       size_t size, int constant, int global) {
  add_symbol("__cudaRegisterVar", handle, GCAP__CUDART_VARIABLE, host_var, device_name, size, constant);
}

void __cudaRegisterManagedVar(void **handle, void **host_var_ptr, char *device_address, const char *device_name,
                              int ext, size_t size, int constant, int global) {
  add_symbol("__cudaRegisterManagedVar", handle, GCAP__CUDART_MANAGED, host_var_ptr, device_name, size, constant);
}

void __cudaUnregisterFatBinary(void **handle) {
  if (!handle) return;
  struct gcap__cudart_module *m = module_of(handle);
  pthread_mutex_lock(&lock);
  for (struct gcap__cudart_module **p = &modules; *p; p = &(*p)->next)
    if (*p == m) {
      *p = m->next;
      break;
    }
  for (struct gcap__cudart_symbol **p = &symbols; *p;) {
    struct gcap__cudart_symbol *s = *p;
    if (s->module == m) {
      *p = s->next;
      free(s);
    } else {
      p = &s->next;
    }
  }
  pthread_mutex_unlock(&lock);
  gcap__fatbin_free(&m->fatbin);
  free(m);
}

struct gcap__cudart_symbol *gcap__cudart_symbol_of(const void *host) {
  pthread_mutex_lock(&lock);
  struct gcap__cudart_symbol *s = symbols;
  while (s && s->host != host) s = s->next;
  pthread_mutex_unlock(&lock);
  return s;
}

void gcap__cudart_each_module(void (*fn)(struct gcap__cudart_module *m, void *arg), void *arg) {
  pthread_mutex_lock(&lock);
  for (struct gcap__cudart_module *m = modules; m; m = m->next) fn(m, arg);
  pthread_mutex_unlock(&lock);
}

void gcap__cudart_each_symbol(const struct gcap__cudart_module *m, void (*fn)(struct gcap__cudart_symbol *s, void *arg),
                              void *arg) {
  pthread_mutex_lock(&lock);
  for (struct gcap__cudart_symbol *s = symbols; s; s = s->next)
    if (!m || s->module == m) fn(s, arg);
  pthread_mutex_unlock(&lock);
}

unsigned gcap__cudart_cc(void) {
  static const unsigned fallback = 90;
  const char *v = getenv("GCAP_CUDART_CC");
  if (!v || !*v) return fallback;
  unsigned major = 0, minor = 0;
  char dot = 0, extra = 0;
  if (sscanf(v, "%u%c%u%c", &major, &dot, &minor, &extra) != 3 || dot != '.' || major < 1 || major > 99 || minor > 9) {
    static unsigned char said;
    if (!__atomic_exchange_n(&said, (unsigned char)1, __ATOMIC_RELAXED))
      fprintf(stderr, "gcap-cudart: GCAP_CUDART_CC=\"%s\" is not a compute capability such as 9.0; using 9.0\n", v);
    return fallback;
  }
  return major * 10 + minor;
}
