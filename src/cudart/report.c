/* What a program did, printed at exit when GCAP_CUDART_REPORT=1 (gcap-run --report): its
 * kernels with their launches and lane-instructions, captures, graphs, replays, the errors its
 * calls met, and the runtime functions it called that gcap does not support. */
#include "cudart.h"

#include <gcap/sim.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KERNELS 256
#define MAX_ERRORS 32
#define MAX_UNSUPPORTED 64

struct kernel_row {
  const char *name; /* the program's own string (registration) */
  uint64_t launches, instructions;
};

struct error_row {
  cudaError_t code;
  uint64_t count;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t counts[GCAP__RT_COUNTERS];
static struct kernel_row kernels[MAX_KERNELS];
static size_t num_kernels, kernels_dropped;
static struct error_row errors[MAX_ERRORS];
static size_t num_errors;
static const char *unsupported[MAX_UNSUPPORTED];
static size_t num_unsupported;
static char first_fault[1024];

int gcap__rt_reporting(void) {
  static int cached = -1;
  int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (v < 0) {
    const char *e = getenv("GCAP_CUDART_REPORT");
    v = e && strcmp(e, "1") == 0;
    __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
  }
  return v;
}

void gcap__rt_count(enum gcap__rt_counter c) {
  if (gcap__rt_reporting()) __atomic_add_fetch(&counts[c], 1, __ATOMIC_RELAXED);
}

void gcap__rt_report_error(cudaError_t e, int sticky, const char *message) {
  if (!gcap__rt_reporting()) return;
  pthread_mutex_lock(&lock);
  size_t i = 0;
  while (i < num_errors && errors[i].code != e) i++;
  if (i == num_errors && num_errors < MAX_ERRORS) errors[num_errors++] = (struct error_row){e, 0};
  if (i < num_errors) errors[i].count++;
  if (sticky && !first_fault[0] && message) snprintf(first_fault, sizeof first_fault, "%s", message);
  pthread_mutex_unlock(&lock);
}

void gcap__rt_report_unsupported(const char *name) {
  if (!gcap__rt_reporting()) return;
  pthread_mutex_lock(&lock);
  if (num_unsupported < MAX_UNSUPPORTED) unsupported[num_unsupported++] = name;
  pthread_mutex_unlock(&lock);
}

static void add_kernel(const char *name, const gcap_sim_kernel_stats *ks) {
  size_t i = 0;
  while (i < num_kernels && strcmp(kernels[i].name, name) != 0) i++;
  if (i == num_kernels) {
    if (num_kernels == MAX_KERNELS) {
      kernels_dropped++;
      return;
    }
    kernels[num_kernels++] = (struct kernel_row){name, 0, 0};
  }
  kernels[i].launches += ks->launches;
  kernels[i].instructions += ks->ptx_instructions;
}

static void collect_kernel(struct gcap__cudart_symbol *s, void *arg) {
  gcap_context *ctx = arg;
  gcap_sim_kernel_stats ks;
  if (s->kind != GCAP__CUDART_FUNCTION || !s->kernel || s->generation != gcap__rt_generation()) return;
  if (gcap_sim_get_kernel_stats(ctx, s->kernel, &ks) == GCAP_SUCCESS && ks.launches) add_kernel(s->name, &ks);
}

void gcap__rt_report_collect(gcap_context *ctx) {
  if (!gcap__rt_reporting() || !ctx) return;
  pthread_mutex_lock(&lock);
  gcap__cudart_each_symbol(NULL, collect_kernel, ctx);
  pthread_mutex_unlock(&lock);
}

static int by_work(const void *a, const void *b) {
  const struct kernel_row *x = a, *y = b;
  if (x->launches != y->launches) return x->launches < y->launches ? 1 : -1;
  if (x->instructions != y->instructions) return x->instructions < y->instructions ? 1 : -1;
  return strcmp(x->name, y->name);
}

/* C++ names as the program's source spells them, through the C++ runtime a CUDA program loads
 * anyway; the mangled name where there is none. */
typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static void print_name(FILE *out, const char *name) {
  demangle_fn demangle = (demangle_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "__cxa_demangle");
  int status = -1;
  char *plain = demangle ? demangle(name, NULL, NULL, &status) : NULL;
  fprintf(out, "%s\n", plain && status == 0 ? plain : name);
  free(plain);
}

static void print_kernels(FILE *out) {
  qsort(kernels, num_kernels, sizeof kernels[0], by_work);
  fprintf(out, "gcap-run report: %zu kernel%s ran\n", num_kernels, num_kernels == 1 ? "" : "s");
  for (size_t i = 0; i < num_kernels; i++) {
    fprintf(out, "  %10llu launches %14llu lane-instructions  ", (unsigned long long)kernels[i].launches,
            (unsigned long long)kernels[i].instructions);
    print_name(out, kernels[i].name);
  }
  if (kernels_dropped) fprintf(out, "  (%zu more kernels not listed)\n", kernels_dropped);
}

void gcap__rt_report_print(void) {
  if (!gcap__rt_reporting()) return;
  FILE *out = stderr;
  fflush(stdout); /* what the program printed comes first */
  pthread_mutex_lock(&lock);
  print_kernels(out);
  fprintf(out, "  captures %llu, graphs instantiated %llu, graph launches %llu\n",
          (unsigned long long)counts[GCAP__RT_CAPTURES], (unsigned long long)counts[GCAP__RT_INSTANTIATIONS],
          (unsigned long long)counts[GCAP__RT_GRAPH_LAUNCHES]);
  if (!num_errors) fprintf(out, "  errors: none\n");
  for (size_t i = 0; i < num_errors; i++)
    fprintf(out, "  error %s (%d): %llu call%s\n", cudaGetErrorName(errors[i].code), (int)errors[i].code,
            (unsigned long long)errors[i].count, errors[i].count == 1 ? "" : "s");
  if (first_fault[0]) fprintf(out, "  first kernel fault or check report: %s\n", first_fault);
  fprintf(out, "  unsupported functions called: %s", num_unsupported ? "" : "none");
  for (size_t i = 0; i < num_unsupported; i++) fprintf(out, "%s%s", i ? ", " : "", unsupported[i]);
  fprintf(out, "\n");
  pthread_mutex_unlock(&lock);
}
