/*
 * gcap-run: runs an unmodified CUDA program with gcap's libcudart.so.13 in place of NVIDIA's.
 *
 *   gcap-run [--backend=sim|cuda] [--exec=immediate|deferred] [--order=fifo|shuffle] [--seed=N]
 *            [--threads=N] [--checks=none|all|memory,sync,shared,init] [--strict-memory]
 *            [--race-check] [--trace=FILE] [--graphs=DIR] [--report] [--] program [args]
 *
 * Each option sets the environment variable the simulator or the stand-in reads (GCAP_BACKEND,
 * GCAP_SIM_*, GCAP_CUDART_GRAPHS, GCAP_CUDART_REPORT); the
 * folder holding the stand-in is put first on LD_LIBRARY_PATH and the program is exec'd, so its
 * exit status is gcap-run's. Before that, the program's ELF file is read: a binary linked with
 * the static CUDA runtime (nvcc's default) cannot use any libcudart.so and is refused.
 *
 * Exit status: the program's; 2 for a usage error or when gcap-run refuses to run the program
 * (no such file, static runtime, malformed ELF file); 127 when libcudart.so.13 is not found;
 * 126 when the program cannot be executed.
 *
 * The stand-in's folder is $GCAP_CUDART_DIR when set; else, run from the build tree, the
 * build's src/cudart; else <libdir>/gcap/cudart relative to gcap-run's own installed path.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef GCAP_RUN_BUILD_TOOLS_DIR
#define GCAP_RUN_BUILD_TOOLS_DIR ""
#endif
#ifndef GCAP_RUN_BUILD_CUDART_DIR
#define GCAP_RUN_BUILD_CUDART_DIR ""
#endif
#ifndef GCAP_RUN_INSTALLED_CUDART_DIR /* absolute, or relative to gcap-run's folder */
#define GCAP_RUN_INSTALLED_CUDART_DIR "../lib/gcap/cudart"
#endif

#define EXIT_REFUSED 2
#define EXIT_NO_CUDART 127
#define CUDART_NAME "libcudart.so.13"

static void print_usage(FILE *out) {
  fputs("usage: gcap-run [--backend=sim|cuda] [--exec=immediate|deferred] [--order=fifo|shuffle]\n"
        "                [--seed=N] [--threads=N] [--checks=none|all|memory,sync,shared,init]\n"
        "                [--strict-memory] [--race-check] [--trace=FILE] [--graphs=DIR] [--report]\n"
        "                [--] program [args]\n",
        out);
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("gcap-run: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  print_usage(stderr);
  fputs("Try 'gcap-run --help' for more information.\n", stderr);
  return EXIT_REFUSED;
}

static int help(void) {
  print_usage(stdout);
  fputs("\n"
        "Runs a CUDA program built with the shared runtime (nvcc -cudart shared) with gcap's\n"
        "libcudart.so.13, on gcap's simulator or its CUDA backend.\n"
        "\n"
        "  --backend=sim|cuda         GCAP_BACKEND\n"
        "  --exec=immediate|deferred  GCAP_SIM_EXEC\n"
        "  --order=fifo|shuffle       GCAP_SIM_ORDER (fifo is the simulator's \"capture\" order)\n"
        "  --seed=N                   GCAP_SIM_SEED\n"
        "  --threads=N                GCAP_SIM_THREADS\n"
        "  --checks=LIST              GCAP_SIM_CHECKS\n"
        "  --strict-memory            GCAP_SIM_STRICT_MEMORY=1\n"
        "  --race-check               GCAP_SIM_CHECK_RACES=1\n"
        "  --trace=FILE               GCAP_SIM_TRACE\n"
        "  --help                     print this text and exit\n"
        "\n"
        "Exit status: the program's; 2 for a usage error or a program gcap-run will not run;\n"
        "127 when libcudart.so.13 is not found; 126 when the program cannot be executed.\n",
        stdout);
  return 0;
}

static bool is_decimal(const char *s) {
  if (!*s) return false;
  for (; *s; s++)
    if (*s < '0' || *s > '9') return false;
  return true;
}

static bool is_check_list(const char *s) {
  if (strcmp(s, "none") == 0 || strcmp(s, "all") == 0) return true;
  static const char *const names[] = {"memory", "sync", "shared", "init"};
  for (;;) {
    size_t n = strcspn(s, ",");
    bool known = false;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
      if (strlen(names[i]) == n && strncmp(s, names[i], n) == 0) known = true;
    if (!known) return false;
    if (!s[n]) return true;
    s += n + 1;
  }
}

static int set(const char *name, const char *value) {
  if (setenv(name, value, 1) == 0) return 0;
  fprintf(stderr, "gcap-run: cannot set %s: %s\n", name, strerror(errno));
  return EXIT_REFUSED;
}

/* Applies one option; returns 0, or the exit status for a bad one. */
static int apply_option(const char *arg) {
  const char *eq = strchr(arg, '=');
  size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
  const char *value = eq ? eq + 1 : NULL;
#define IS(name) (strlen(name) == name_len && strncmp(arg, name, name_len) == 0)
  if (IS("--strict-memory") || IS("--race-check") || IS("--report")) {
    if (value) return usage_error("option '%s' takes no value", arg);
    return set(IS("--strict-memory") ? "GCAP_SIM_STRICT_MEMORY"
               : IS("--race-check")  ? "GCAP_SIM_CHECK_RACES"
                                     : "GCAP_CUDART_REPORT",
               "1");
  }
  static const struct {
    const char *option, *variable, *what;
  } valued[] = {{"--backend", "GCAP_BACKEND", "sim or cuda"},
                {"--exec", "GCAP_SIM_EXEC", "immediate or deferred"},
                {"--order", "GCAP_SIM_ORDER", "fifo or shuffle"},
                {"--seed", "GCAP_SIM_SEED", "a decimal number"},
                {"--threads", "GCAP_SIM_THREADS", "a decimal number"},
                {"--checks", "GCAP_SIM_CHECKS", "none, all, or a comma list of memory, sync, shared, init"},
                {"--trace", "GCAP_SIM_TRACE", "a file name"},
                {"--graphs", "GCAP_CUDART_GRAPHS", "a folder"}};
  for (size_t i = 0; i < sizeof valued / sizeof valued[0]; i++) {
    if (!IS(valued[i].option)) continue;
    if (!value || !*value) return usage_error("option '%s' needs a value (--option=VALUE)", arg);
    bool ok;
    const char *v = value;
    switch (i) {
    case 0: ok = strcmp(v, "sim") == 0 || strcmp(v, "cuda") == 0; break;
    case 1: ok = strcmp(v, "immediate") == 0 || strcmp(v, "deferred") == 0; break;
    case 2:
      ok = strcmp(v, "fifo") == 0 || strcmp(v, "shuffle") == 0;
      if (strcmp(v, "fifo") == 0) v = "capture"; /* the simulator's name for it */
      break;
    case 3:
    case 4: ok = is_decimal(v); break;
    case 5: ok = is_check_list(v); break;
    default: ok = true; break;
    }
    if (!ok) {
      fprintf(stderr, "gcap-run: %.*s=\"%s\" is not %s\n", (int)name_len, arg, value, valued[i].what);
      print_usage(stderr);
      return EXIT_REFUSED;
    }
    return set(valued[i].variable, v);
  }
#undef IS
  return usage_error("unknown option '%s'", arg);
}

/* ---- The program's ELF file ---- */

struct elf {
  const unsigned char *data;
  size_t size;
  Elf64_Ehdr eh;
};

/* The bytes [off, off + len) when they lie in the file, else NULL. */
static const void *span(const struct elf *e, uint64_t off, uint64_t len) {
  if (off > e->size || len > e->size - off) return NULL;
  return e->data + off;
}

/* The NUL-terminated string at off in the table [tab_off, tab_off + tab_size), else NULL. */
static const char *str_at(const struct elf *e, uint64_t tab_off, uint64_t tab_size, uint64_t off) {
  const char *tab = span(e, tab_off, tab_size);
  if (!tab || off >= tab_size || !memchr(tab + off, '\0', tab_size - off)) return NULL;
  return tab + off;
}

/* Section header i copied into *out (the file's offsets need not be aligned); false when absent. */
static bool section(const struct elf *e, unsigned i, Elf64_Shdr *out) {
  if (i >= e->eh.e_shnum) return false;
  const void *p = span(e, e->eh.e_shoff + (uint64_t)i * sizeof(Elf64_Shdr), sizeof(Elf64_Shdr));
  if (p) memcpy(out, p, sizeof *out);
  return p != NULL;
}

static bool is_cudart_symbol(const char *name) {
  return strcmp(name, "cudaLaunchKernel") == 0 || strcmp(name, "cudaMalloc") == 0 ||
         strcmp(name, "__cudaRegisterFatBinary") == 0 || strcmp(name, "cudaGetErrorString") == 0;
}

/* What the ELF file says: whether it needs a libcudart.so.*, whether it holds device code or
 * defines the runtime's functions itself. Returns false for a malformed file. */
static bool read_elf(const struct elf *e, bool *needs_cudart, bool *has_runtime) {
  const Elf64_Ehdr *eh = &e->eh;
  *needs_cudart = *has_runtime = false;
  if (eh->e_shnum == 0) return true; /* no section headers: nothing more to learn */
  if (eh->e_shentsize != sizeof(Elf64_Shdr) || !span(e, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
    return false;
  Elf64_Shdr names, sh, strtab;
  bool have_names = section(e, eh->e_shstrndx, &names) && names.sh_type == SHT_STRTAB;
  for (unsigned i = 0; i < eh->e_shnum; i++) {
    section(e, i, &sh);
    if (sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL) continue;
    if (!span(e, sh.sh_offset, sh.sh_size)) return false;
    if (have_names) {
      const char *name = str_at(e, names.sh_offset, names.sh_size, sh.sh_name);
      if (name && (strcmp(name, ".nv_fatbin") == 0 || strcmp(name, ".nvFatBinSegment") == 0)) *has_runtime = true;
    }
    if (sh.sh_type != SHT_DYNAMIC && sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) continue;
    if (!section(e, sh.sh_link, &strtab) || strtab.sh_type != SHT_STRTAB || !span(e, strtab.sh_offset, strtab.sh_size))
      return false;
    const unsigned char *base = e->data + sh.sh_offset;
    if (sh.sh_type == SHT_DYNAMIC) {
      Elf64_Dyn dyn;
      for (uint64_t k = 0; k < sh.sh_size / sizeof dyn; k++) {
        memcpy(&dyn, base + k * sizeof dyn, sizeof dyn);
        if (dyn.d_tag == DT_NULL) break;
        if (dyn.d_tag != DT_NEEDED) continue;
        const char *lib = str_at(e, strtab.sh_offset, strtab.sh_size, dyn.d_un.d_val);
        if (!lib) return false;
        if (strncmp(lib, "libcudart.so", 12) == 0) *needs_cudart = true;
      }
    } else {
      Elf64_Sym sym;
      for (uint64_t k = 0; k < sh.sh_size / sizeof sym; k++) {
        memcpy(&sym, base + k * sizeof sym, sizeof sym);
        if (sym.st_shndx == SHN_UNDEF) continue;
        const char *name = str_at(e, strtab.sh_offset, strtab.sh_size, sym.st_name);
        if (name && is_cudart_symbol(name)) *has_runtime = true;
      }
    }
  }
  return true;
}

/* 0 when the program may run, else the exit status (the message printed). */
static int check_program(const char *path, const char *shown) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    fprintf(stderr, "gcap-run: %s: %s\n", shown, strerror(errno));
    return EXIT_REFUSED;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    fprintf(stderr, "gcap-run: %s: not a regular file\n", shown);
    close(fd);
    return EXIT_REFUSED;
  }
  size_t size = (size_t)st.st_size;
  unsigned char ident[EI_NIDENT] = {0};
  ssize_t got = pread(fd, ident, sizeof ident, 0);
  if (got < SELFMAG || memcmp(ident, ELFMAG, SELFMAG) != 0) {
    close(fd); /* not ELF (a script, say): nothing to check */
    return 0;
  }
  if (ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB) {
    close(fd); /* not a 64-bit little-endian program: no CUDA runtime to look for */
    return 0;
  }
  int status = 0;
  void *map = size >= sizeof(Elf64_Ehdr) ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  close(fd);
  bool needs_cudart = false, has_runtime = false;
  if (map == MAP_FAILED) {
    if (size >= sizeof(Elf64_Ehdr)) {
      fprintf(stderr, "gcap-run: %s: cannot read it: %s\n", shown, strerror(errno));
      return EXIT_REFUSED;
    }
    status = EXIT_REFUSED; /* shorter than an ELF header */
  } else {
    struct elf e = {.data = map, .size = size};
    memcpy(&e.eh, map, sizeof e.eh);
    if (!read_elf(&e, &needs_cudart, &has_runtime)) status = EXIT_REFUSED;
    munmap(map, size);
  }
  if (status) {
    fprintf(stderr, "gcap-run: %s: not a valid ELF file (truncated or malformed); not running it\n", shown);
    return status;
  }
  if (has_runtime && !needs_cudart) {
    fprintf(stderr,
            "gcap-run: %s was built with the static CUDA runtime (nvcc's default), which no\n"
            "libcudart.so can stand in for. Rebuild it with the shared runtime:\n"
            "  nvcc -cudart shared ...\n"
            "  CMake: -DCMAKE_CUDA_RUNTIME_LIBRARY=Shared\n",
            shown);
    return EXIT_REFUSED;
  }
  return 0;
}

/* The program's file as execvp would find it, in a malloc'd string; NULL when there is none. */
static char *find_program(const char *name) {
  if (strchr(name, '/')) return access(name, F_OK) == 0 ? strdup(name) : NULL;
  const char *path = getenv("PATH");
  if (!path) path = "/usr/local/bin:/usr/bin:/bin";
  for (;;) {
    size_t n = strcspn(path, ":");
    size_t len = (n ? n : 1) + 1 + strlen(name) + 1;
    char *full = malloc(len);
    if (!full) return NULL;
    snprintf(full, len, "%.*s/%s", (int)(n ? n : 1), n ? path : ".", name);
    struct stat st;
    if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0) return full;
    free(full);
    if (!path[n]) return NULL;
    path += n + 1;
  }
}

/* The stand-in's folder in a malloc'd string; NULL (message printed) when it lacks the library. */
static char *cudart_dir(void) {
  char *dir = NULL;
  const char *env = getenv("GCAP_CUDART_DIR");
  if (env && *env) {
    dir = strdup(env);
  } else {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
      fprintf(stderr, "gcap-run: cannot find its own path (/proc/self/exe): %s; set GCAP_CUDART_DIR\n",
              n < 0 ? strerror(errno) : "empty");
      return NULL;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    char here[PATH_MAX], build[PATH_MAX];
    bool in_build = GCAP_RUN_BUILD_TOOLS_DIR[0] && realpath(exe, here) && realpath(GCAP_RUN_BUILD_TOOLS_DIR, build) &&
                    strcmp(here, build) == 0;
    const char *installed = GCAP_RUN_INSTALLED_CUDART_DIR;
    size_t len = strlen(exe) + 1 + strlen(installed) + strlen(GCAP_RUN_BUILD_CUDART_DIR) + 1;
    dir = malloc(len);
    if (dir) {
      if (in_build) snprintf(dir, len, "%s", GCAP_RUN_BUILD_CUDART_DIR);
      else if (installed[0] == '/') snprintf(dir, len, "%s", installed);
      else snprintf(dir, len, "%s/%s", exe, installed);
    }
  }
  if (!dir) {
    fputs("gcap-run: out of memory\n", stderr);
    return NULL;
  }
  size_t len = strlen(dir) + 1 + sizeof CUDART_NAME;
  char *lib = malloc(len);
  if (!lib) {
    fputs("gcap-run: out of memory\n", stderr);
    free(dir);
    return NULL;
  }
  snprintf(lib, len, "%s/%s", dir, CUDART_NAME);
  bool found = access(lib, F_OK) == 0;
  free(lib);
  if (!found) {
    fprintf(stderr,
            "gcap-run: %s not found in %s (gcap built without -Dcudart? GCAP_CUDART_DIR names "
            "the folder that holds it)\n",
            CUDART_NAME, dir);
    free(dir);
    return NULL;
  }
  return dir;
}

int main(int argc, char **argv) {
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (a[0] != '-' || a[1] == '\0') break;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return help();
    int st = apply_option(a);
    if (st) return st;
  }
  if (i >= argc) return usage_error("no program to run");
  const char *program = argv[i];
  char *file = find_program(program);
  if (!file) {
    fprintf(stderr, "gcap-run: %s: no such file%s\n", program, strchr(program, '/') ? "" : " on PATH");
    return EXIT_REFUSED;
  }
  int st = check_program(file, program);
  if (st) {
    free(file);
    return st;
  }
  char *dir = cudart_dir();
  if (!dir) {
    free(file);
    return EXIT_NO_CUDART;
  }
  const char *old = getenv("LD_LIBRARY_PATH");
  size_t len = strlen(dir) + 1 + (old ? strlen(old) : 0) + 1;
  char *path = malloc(len);
  if (!path) {
    fputs("gcap-run: out of memory\n", stderr);
    free(dir);
    free(file);
    return EXIT_REFUSED;
  }
  snprintf(path, len, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
  free(dir);
  st = set("LD_LIBRARY_PATH", path);
  free(path);
  if (st) {
    free(file);
    return st;
  }
  execv(file, argv + i);
  int err = errno;
  fprintf(stderr, "gcap-run: cannot run %s: %s\n", program, strerror(err));
  free(file);
  return err == ENOENT ? EXIT_REFUSED : 126;
}
