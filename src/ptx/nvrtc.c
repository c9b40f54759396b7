#include "ptx.h"

#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"

/*
 * The few NVRTC declarations used, written out so that the library builds without the toolkit's
 * nvrtc.h. nvrtcResult is a C enum (int-sized on every ABI NVRTC ships for).
 */
typedef int nvrtc_result;
typedef struct gcap__nvrtc_program_ *nvrtc_program;
enum { NVRTC_OK = 0, NVRTC_OUT_OF_MEMORY = 1, NVRTC_INVALID_OPTION = 5, NVRTC_COMPILATION = 6 };

struct nvrtc_api {
  nvrtc_result (*nvrtcCreateProgram)(nvrtc_program *prog, const char *src, const char *name, int num_headers,
                                     const char *const *headers, const char *const *include_names);
  nvrtc_result (*nvrtcCompileProgram)(nvrtc_program prog, int num_options, const char *const *options);
  nvrtc_result (*nvrtcGetPTXSize)(nvrtc_program prog, size_t *size);
  nvrtc_result (*nvrtcGetPTX)(nvrtc_program prog, char *ptx);
  nvrtc_result (*nvrtcGetProgramLogSize)(nvrtc_program prog, size_t *size);
  nvrtc_result (*nvrtcGetProgramLog)(nvrtc_program prog, char *log);
  nvrtc_result (*nvrtcDestroyProgram)(nvrtc_program *prog);
  const char *(*nvrtcGetErrorString)(nvrtc_result result);
  nvrtc_result (*nvrtcVersion)(int *major, int *minor);
};

/* A table, laid out by hand. */
/* clang-format off */
#define NVRTC_SYMBOLS(X)                                                                                     \
  X(nvrtcCreateProgram) X(nvrtcCompileProgram) X(nvrtcGetPTXSize) X(nvrtcGetPTX) X(nvrtcGetProgramLogSize)  \
  X(nvrtcGetProgramLog) X(nvrtcDestroyProgram) X(nvrtcGetErrorString) X(nvrtcVersion)
/* clang-format on */

#define HOW_TO_GET                                                                                                     \
  "install the CUDA toolkit's NVRTC (Debian non-free: libnvrtc12 or libnvrtc11.2; NVIDIA's repository: "               \
  "cuda-nvrtc-13-0; pip: nvidia-cuda-nvrtc, into the Python environment that runs gcap or $VIRTUAL_ENV) or point "     \
  "GCAP_NVRTC at libnvrtc.so"

/* The program name (NVRTC puts it in front of every line of its log, and in the PTX's .file) when
 * the caller gives none. */
#define DEFAULT_NAME "<nvrtc source>"
/* The messages hold 1 KiB: the first errors of a log are the ones that explain it. */
#define LOG_SHOWN 700

static struct nvrtc_api api;
static int version_major, version_minor;
static gcap_status load_status;
static char load_reason[900];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* Newest first; 11.2 is the soname every NVRTC 11.x has (Debian bookworm ships it). */
static const char *const lib_names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"};
static const char *const system_dirs[] = {"/usr/local/cuda/lib64",      "/opt/cuda/lib64", "/usr/lib/x86_64-linux-gnu",
                                          "/usr/lib/aarch64-linux-gnu", "/usr/lib64",      "/usr/lib"};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* dlsym returns a data pointer; ISO C has no cast to a function pointer, so copy the bits (POSIX). */
static bool symbol(void *lib, const char *name, void *fn_slot, size_t size) {
  void *p = dlsym(lib, name);
  if (!p || size != sizeof p) return false;
  memcpy(fn_slot, &p, sizeof p);
  return true;
}

/* Resolves every function from lib into api; on failure names the missing one in why. */
static bool resolve_all(void *lib, const char *path, char *why, size_t cap) {
#define GCAP_NVRTC_RESOLVE(name)                                                                                       \
  if (!symbol(lib, #name, &api.name, sizeof api.name)) {                                                               \
    snprintf(why, cap, "%s has no %s (not NVRTC, or too old)", path, #name);                                           \
    return false;                                                                                                      \
  }
  NVRTC_SYMBOLS(GCAP_NVRTC_RESOLVE)
#undef GCAP_NVRTC_RESOLVE
  if (api.nvrtcVersion(&version_major, &version_minor) != NVRTC_OK) {
    snprintf(why, cap, "%s: nvrtcVersion failed", path);
    return false;
  }
  return true;
}

/* dlopens path and resolves NVRTC from it; why says what went wrong otherwise. */
static bool try_open(const char *path, char *why, size_t cap) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *err = dlerror();
    snprintf(why, cap, "%s", err ? err : "dlopen gave no reason");
    return false;
  }
  /* Kept loaded for the life of the process: programs compile again, from any thread. */
  if (resolve_all(lib, path, why, cap)) return true;
  memset(&api, 0, sizeof api);
  dlclose(lib);
  return false;
}

static void refuse(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static void refuse(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(load_reason, sizeof load_reason, fmt, ap);
  va_end(ap);
  load_status = GCAP_ERROR_NOT_FOUND;
}

/*
 * Tries every name in dir. A file that is there but does not load is remembered in `broken`, so
 * that the final message says why a library the user can see was not used (last: the advice
 * before it must survive a cut).
 */
static bool try_dir(const char *dir, char *broken, size_t cap) {
  for (size_t i = 0; i < COUNT(lib_names); i++) {
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", dir, lib_names[i]);
    if (n < 0 || (size_t)n >= sizeof path || access(path, F_OK) != 0) continue;
    char why[400];
    if (try_open(path, why, sizeof why)) return true;
    if (!broken[0]) snprintf(broken, cap, "; %.150s is there but did not load: %.300s", path, why);
  }
  return false;
}

static bool try_env_dir(const char *var, char *broken, size_t cap) {
  const char *root = getenv(var);
  if (!root || !*root) return false;
  char dir[PATH_MAX];
  int n = snprintf(dir, sizeof dir, "%s/lib64", root);
  return n >= 0 && (size_t)n < sizeof dir && try_dir(dir, broken, cap);
}

/*
 * NVRTC installed with pip: the wheels put it in <site-packages>/nvidia/cu13/lib (CUDA 13 on,
 * nvidia-cuda-nvrtc) or <site-packages>/nvidia/cuda_nvrtc/lib (CUDA 11 and 12, -cu11 and -cu12).
 * The site-packages searched, in this order: $VIRTUAL_ENV's and $CONDA_PREFIX's
 * (lib/python3.N/site-packages), the one libgcap itself is installed in (the Python package's
 * <site-packages>/gcap/libgcap.so), and those of the running Python: every site-packages or
 * dist-packages a mapped file of the process lies in, and lib/python3.N/site-packages beside the
 * lib-dynload its extension modules come from.
 */
#define MAX_SITES 8
#define SITE_MAX 1024 /* a longer site-packages path is passed over */

struct sites {
  char dirs[MAX_SITES][SITE_MAX];
  size_t count;
};

static void add_site(struct sites *s, const char *dir, size_t len) {
  if (s->count == MAX_SITES || len == 0 || len >= SITE_MAX) return;
  for (size_t i = 0; i < s->count; i++)
    if (strlen(s->dirs[i]) == len && memcmp(s->dirs[i], dir, len) == 0) return;
  memcpy(s->dirs[s->count], dir, len);
  s->dirs[s->count++][len] = '\0';
}

/* root/lib/python3.N/site-packages, each that exists, the newest Python first. */
static void add_env_sites(struct sites *s, const char *var) {
  const char *root = getenv(var);
  char pattern[SITE_MAX];
  glob_t g;
  if (!root || !*root) return;
  int n = snprintf(pattern, sizeof pattern, "%s/lib/python3*/site-packages", root);
  if (n < 0 || (size_t)n >= sizeof pattern || glob(pattern, GLOB_ONLYDIR, NULL, &g) != 0) return;
  for (size_t i = g.gl_pathc; i-- > 0;) add_site(s, g.gl_pathv[i], strlen(g.gl_pathv[i]));
  globfree(&g);
}

/* The site-packages (or dist-packages) a file lies in, or the one beside its lib-dynload. */
static void add_site_of(struct sites *s, const char *path) {
  static const char *const names[] = {"/site-packages/", "/dist-packages/"};
  for (size_t i = 0; i < COUNT(names); i++) {
    const char *at = strstr(path, names[i]);
    if (at) add_site(s, path, (size_t)(at - path) + strlen(names[i]) - 1);
  }
  const char *dynload = strstr(path, "/lib-dynload/");
  const char *lib = strstr(path, "/lib/python3");
  if (dynload && lib && lib < dynload) {
    char dir[SITE_MAX];
    int n = snprintf(dir, sizeof dir, "%.*s/site-packages", (int)(dynload - path), path);
    if (n > 0 && (size_t)n < sizeof dir && access(dir, F_OK) == 0) add_site(s, dir, (size_t)n);
  }
}

/* The running Python's: what the files mapped into the process say (Linux's /proc/self/maps). */
static void add_mapped_sites(struct sites *s) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[SITE_MAX + 128];
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    char *path = strchr(line, '/');
    if (!path) continue;
    path[strcspn(path, "\n")] = '\0';
    add_site_of(s, path);
  }
  fclose(f);
}

/* Calls visit with each directory of an NVRTC wheel, in search order, until it returns true. */
static bool each_pip_dir(bool (*visit)(const char *dir, void *arg), void *arg) {
  static const char *const wheel_dirs[] = {"nvidia/cu[0-9]*/lib", "nvidia/cuda_nvrtc/lib"};
  struct sites s;
  Dl_info info;
  s.count = 0;
  add_env_sites(&s, "VIRTUAL_ENV");
  add_env_sites(&s, "CONDA_PREFIX");
  if (dladdr((void *)(uintptr_t)&each_pip_dir, &info) && info.dli_fname) add_site_of(&s, info.dli_fname);
  add_mapped_sites(&s);
  bool done = false;
  for (size_t i = 0; i < s.count && !done; i++)
    for (size_t w = 0; w < COUNT(wheel_dirs) && !done; w++) {
      char pattern[SITE_MAX + 32];
      glob_t g;
      int len = snprintf(pattern, sizeof pattern, "%s/%s", s.dirs[i], wheel_dirs[w]);
      if (len < 0 || (size_t)len >= sizeof pattern || glob(pattern, GLOB_ONLYDIR, NULL, &g) != 0) continue;
      for (size_t k = g.gl_pathc; k-- > 0 && !done;) done = visit(g.gl_pathv[k], arg); /* cu14 before cu13 */
      globfree(&g);
    }
  return done;
}

struct dir_list {
  char (*dirs)[PATH_MAX];
  size_t count, max;
};

static bool list_dir(const char *dir, void *arg) {
  struct dir_list *l = arg;
  if (l->count < l->max && strlen(dir) < PATH_MAX) strcpy(l->dirs[l->count++], dir);
  return l->count == l->max;
}

size_t gcap__nvrtc_pip_dirs(char (*dirs)[PATH_MAX], size_t max) {
  struct dir_list l = {dirs, 0, max};
  if (max) each_pip_dir(list_dir, &l);
  return l.count;
}

struct broken {
  char *text;
  size_t cap;
};

static bool try_pip_dir(const char *dir, void *arg) {
  struct broken *b = arg;
  return try_dir(dir, b->text, b->cap);
}

static bool try_pip(char *broken, size_t cap) {
  struct broken b = {broken, cap};
  return each_pip_dir(try_pip_dir, &b);
}

static bool try_loader_path(void) {
  for (size_t i = 0; i < COUNT(lib_names); i++) {
    char why[400];
    if (try_open(lib_names[i], why, sizeof why)) return true;
  }
  return false;
}

static void search(void) {
  char broken[500] = "";
  if (try_env_dir("CUDA_PATH", broken, sizeof broken) || try_env_dir("CUDA_HOME", broken, sizeof broken)) return;
  if (try_pip(broken, sizeof broken)) return;
  for (size_t i = 0; i < COUNT(system_dirs); i++)
    if (try_dir(system_dirs[i], broken, sizeof broken)) return;
  if (try_loader_path()) return;
  refuse("no NVRTC library: looked for libnvrtc.so(.13, .12, .11.2) in $CUDA_PATH/lib64, $CUDA_HOME/lib64, "
         "pip's nvidia/cu*/lib and nvidia/cuda_nvrtc/lib in the site-packages of $VIRTUAL_ENV, $CONDA_PREFIX, "
         "libgcap's own and the running Python's, /usr/local/cuda/lib64, /opt/cuda/lib64, /usr/lib/<multiarch>, "
         "/usr/lib64, /usr/lib and the loader's search path; " HOW_TO_GET "%s",
         broken);
}

static void load(void) {
  load_status = GCAP_SUCCESS;
  const char *given = getenv("GCAP_NVRTC");
  if (!given || !*given) {
    search();
    return;
  }
  /* An explicit choice is never second-guessed: a wrong path must not silently pick another NVRTC. */
  char why[600];
  if (!try_open(given, why, sizeof why)) refuse("GCAP_NVRTC=%.300s does not load (%.300s); " HOW_TO_GET, given, why);
}

static gcap_status nvrtc_api(void) {
  pthread_once(&load_once, load);
  if (load_status != GCAP_SUCCESS) return gcap__fail(load_status, "%s", load_reason);
  return GCAP_SUCCESS;
}

bool gcap__nvrtc_available(void) {
  pthread_once(&load_once, load);
  return load_status == GCAP_SUCCESS;
}

/* -------------------------------------------------------------- compiling */

static const char *result_name(nvrtc_result r) {
  const char *s = api.nvrtcGetErrorString(r);
  return s ? s : "an unknown NVRTC error";
}

static gcap_status nvrtc_fail(nvrtc_result r, const char *call) {
  gcap_status st = r == NVRTC_OUT_OF_MEMORY ? GCAP_ERROR_OUT_OF_MEMORY : GCAP_ERROR_BACKEND;
  return gcap__fail(st, "%s (NVRTC %d.%d) failed: %s (%d)", call, version_major, version_minor, result_name(r), (int)r);
}

static bool is_arch_option(const char *o) {
  static const char *const names[] = {"-arch", "--gpu-architecture"};
  for (size_t i = 0; i < COUNT(names); i++) {
    size_t n = strlen(names[i]);
    if (strncmp(o, names[i], n) == 0 && (o[n] == '\0' || o[n] == '=')) return true;
  }
  return false;
}

static gcap_status check_arguments(const char *source, const char *const *options, size_t num_options, char **ptx,
                                   size_t *ptx_size) {
  if (!source) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "source is NULL");
  if (!ptx || !ptx_size) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s is NULL", !ptx ? "ptx" : "ptx_size");
  if (num_options > 0 && !options)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "options is NULL but num_options is %zu", num_options);
  if (num_options >= INT_MAX) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "num_options %zu is too many", num_options);
  for (size_t i = 0; i < num_options; i++)
    if (!options[i]) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "options[%zu] is NULL", i);
  return GCAP_SUCCESS;
}

/* The caller's options, plus the default architecture when they name none; *owned is what to free. */
static gcap_status with_default_arch(const char *const *options, size_t num_options, const char *const **out,
                                     const char ***owned) {
  *owned = NULL;
  *out = options;
  for (size_t i = 0; i < num_options; i++)
    if (is_arch_option(options[i])) return GCAP_SUCCESS;
  const char **all = gcap__malloc((num_options + 1) * sizeof *all);
  if (!all) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the %zu NVRTC options", num_options + 1);
  for (size_t i = 0; i < num_options; i++) all[i] = options[i];
  all[num_options] = "-arch=compute_75";
  *owned = all;
  *out = all;
  return GCAP_SUCCESS;
}

/* NVRTC's log, whitespace-trimmed, in the message; the status is the one given, or OUT_OF_MEMORY. */
static gcap_status fail_with_log(nvrtc_program prog, gcap_status st, const char *what) {
  size_t size = 0;
  nvrtc_result r = api.nvrtcGetProgramLogSize(prog, &size);
  if (r != NVRTC_OK) return nvrtc_fail(r, "nvrtcGetProgramLogSize");
  char *log = gcap__malloc(size + 1);
  if (!log) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "%s, and no memory was left for its %zu-byte log", what, size);
  r = api.nvrtcGetProgramLog(prog, log);
  if (r != NVRTC_OK) {
    gcap__free(log);
    return nvrtc_fail(r, "nvrtcGetProgramLog");
  }
  log[size] = '\0';
  size_t n = strlen(log);
  while (n > 0 && (log[n - 1] == ' ' || log[n - 1] == '\n' || log[n - 1] == '\r' || log[n - 1] == '\t')) n--;
  bool cut = n > LOG_SHOWN;
  gcap__fail(st, "%s: %.*s%s", what, (int)(cut ? LOG_SHOWN : n), log, cut ? " [log cut]" : "");
  gcap__free(log);
  return st;
}

static gcap_status compile(nvrtc_program prog, const char *const *options, size_t num_options) {
  nvrtc_result r = api.nvrtcCompileProgram(prog, (int)num_options, options);
  if (r == NVRTC_OK) return GCAP_SUCCESS;
  if (r == NVRTC_COMPILATION)
    return fail_with_log(prog, GCAP_ERROR_INVALID_SOURCE, "NVRTC could not compile the source");
  if (r == NVRTC_INVALID_OPTION) return fail_with_log(prog, GCAP_ERROR_INVALID_VALUE, "NVRTC refused an option");
  return nvrtc_fail(r, "nvrtcCompileProgram");
}

static gcap_status take_ptx(nvrtc_program prog, char **ptx, size_t *ptx_size) {
  size_t size = 0;
  nvrtc_result r = api.nvrtcGetPTXSize(prog, &size);
  if (r != NVRTC_OK) return nvrtc_fail(r, "nvrtcGetPTXSize");
  /* One byte more than NVRTC asks for: the text is NUL-terminated whatever the size counts. */
  char *text = gcap__malloc(size + 1);
  if (!text) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the %zu bytes of PTX", size);
  r = api.nvrtcGetPTX(prog, text);
  if (r != NVRTC_OK) {
    gcap__free(text);
    return nvrtc_fail(r, "nvrtcGetPTX");
  }
  text[size] = '\0';
  *ptx = text;
  *ptx_size = strlen(text) + 1;
  return GCAP_SUCCESS;
}

/*
 * NVRTC writes a relative program name into the PTX's `.file` as <cwd>/name, a file that does not
 * exist: the PTX says name again, as the caller gave it, so that reports show that.
 */
static void unprefix_file_name(char *ptx, size_t *ptx_size, const char *name) {
  char cwd[PATH_MAX], quoted[2 * PATH_MAX + 4];
  if (name[0] == '/' || !getcwd(cwd, sizeof cwd)) return;
  int n = snprintf(quoted, sizeof quoted, "\"%s/%s\"", strcmp(cwd, "/") == 0 ? "" : cwd, name);
  if (n < 0 || (size_t)n >= sizeof quoted) return;
  size_t cut = strlen(cwd) + (strcmp(cwd, "/") == 0 ? 0 : 1), len = strlen(ptx);
  for (char *at = strstr(ptx, quoted); at; at = strstr(at + 1, quoted)) {
    memmove(at + 1, at + 1 + cut, len + 1 - (size_t)(at + 1 + cut - ptx));
    len -= cut;
  }
  *ptx_size = len + 1;
}

static gcap_status run_nvrtc(const char *source, const char *name, const char *const *options, size_t num_options,
                             char **ptx, size_t *ptx_size) {
  nvrtc_program prog = NULL;
  nvrtc_result r = api.nvrtcCreateProgram(&prog, source, name, 0, NULL, NULL);
  if (r != NVRTC_OK) return nvrtc_fail(r, "nvrtcCreateProgram");
  gcap_status st = compile(prog, options, num_options);
  if (st == GCAP_SUCCESS) st = take_ptx(prog, ptx, ptx_size);
  if (st == GCAP_SUCCESS) unprefix_file_name(*ptx, ptx_size, name);
  api.nvrtcDestroyProgram(&prog);
  return st;
}

gcap_status gcap__nvrtc_compile(const char *source, const char *name, const char *const *options, size_t num_options,
                                char **ptx, size_t *ptx_size) {
  if (ptx) *ptx = NULL;
  if (ptx_size) *ptx_size = 0;
  gcap_status st = check_arguments(source, options, num_options, ptx, ptx_size);
  if (st == GCAP_SUCCESS) st = nvrtc_api();
  if (st != GCAP_SUCCESS) return st;
  const char *const *all = NULL;
  const char **owned = NULL;
  st = with_default_arch(options, num_options, &all, &owned);
  if (st != GCAP_SUCCESS) return st;
  st = run_nvrtc(source, name ? name : DEFAULT_NAME, all, num_options + (owned ? 1 : 0), ptx, ptx_size);
  gcap__free(owned);
  return st;
}
