/*
 * CUDA C to PTX through NVRTC (src/ptx/nvrtc.c). The tests that compile skip themselves where no
 * libnvrtc is found. Run with the argument "missing" and GCAP_NVRTC naming a file that is not
 * there (Meson does both), it checks what a program without NVRTC is told instead; with "pip" and
 * the path of a fake libnvrtc, that NVRTC installed with pip into a Python environment is found.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <dlfcn.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ptx/ptx.h"
#include "base/alloc.h"
#include "base/error.h"

#define MAX_STEPS 100 /* allocation points one compile may have */

static const char add_one_source[] = "extern \"C\" __global__ void add_one(int *p) {\n"
                                     "  p[threadIdx.x] += 1;\n"
                                     "}\n";

static const char fill_source[] = "#ifndef N\n"
                                  "#define N 1\n"
                                  "#endif\n"
                                  "extern \"C\" __global__ void fill(int *p) { p[threadIdx.x] = N * 1000 + 7; }\n";

/* The ';' after `int x = 1` is missing on line 3. */
static const char broken_source[] = "extern \"C\" __global__ void broken(int *p) {\n"
                                    "  int x = 1\n"
                                    "  p[0] = x;\n"
                                    "}\n";

/* The compile as a gcap API call does it, so that messages have their prefix. */
static gcap_status compile(const char *source, const char *const *options, size_t n, char **ptx, size_t *size) {
  gcap__enter("gcap_module_load");
  return gcap__nvrtc_compile(source, NULL, options, n, ptx, size);
}

static gcap_status compile_named(const char *source, const char *name, const char *const *options, size_t n, char **ptx,
                                 size_t *size) {
  gcap__enter("gcap_module_load");
  return gcap__nvrtc_compile(source, name, options, n, ptx, size);
}

static void require_nvrtc(void) {
  if (gcap__nvrtc_available()) return;
  char *ptx = NULL;
  size_t size = 0;
  compile("", NULL, 0, &ptx, &size);
  print_message("NVRTC is not available, skipping: %s\n", gcap_last_error_message());
  skip();
}

/* Compiles source (asserted to succeed) and returns the PTX, checking its size. */
static char *compile_ok(const char *source, const char *const *options, size_t n) {
  char *ptx = NULL;
  size_t size = 0;
  assert_ok(compile(source, options, n, &ptx, &size));
  test_assert_message_empty();
  assert_non_null(ptx);
  assert_int_equal(size, strlen(ptx) + 1);
  return ptx;
}

static void assert_contains(const char *text, const char *needle) {
  if (text && strstr(text, needle)) return;
  print_error("the PTX does not contain \"%s\":\n%s\n", needle, text ? text : "(no PTX)");
  fail();
}

static void test_kernel_compiles_to_an_entry(void **state) {
  (void)state;
  require_nvrtc();
  char *ptx = compile_ok(add_one_source, NULL, 0);
  assert_contains(ptx, ".visible .entry add_one(");
  assert_contains(ptx, ".target sm_75"); /* the default architecture */
  gcap__free(ptx);
}

static void test_options_reach_nvrtc(void **state) {
  (void)state;
  require_nvrtc();
  const char *const define[] = {"-DN=4"};
  char *plain = compile_ok(fill_source, NULL, 0);
  char *four = compile_ok(fill_source, define, 1);
  assert_string_not_equal(plain, four);
  assert_contains(plain, "1007");
  assert_contains(four, "4007");
  gcap__free(plain);
  gcap__free(four);
}

static void test_architecture_options(void **state) {
  (void)state;
  require_nvrtc();
  const char *const short_form[] = {"-arch=compute_80"};
  char *ptx = compile_ok(add_one_source, short_form, 1);
  assert_contains(ptx, ".target sm_80");
  gcap__free(ptx);
  const char *const long_form[] = {"-DN=2", "--gpu-architecture=compute_90"};
  ptx = compile_ok(add_one_source, long_form, 2);
  assert_contains(ptx, ".target sm_90");
  gcap__free(ptx);
}

static void test_syntax_error_gives_the_log(void **state) {
  (void)state;
  require_nvrtc();
  char *ptx = (char *)add_one_source; /* must be overwritten */
  size_t size = 99;
  assert_status(compile(broken_source, NULL, 0, &ptx, &size), GCAP_ERROR_INVALID_SOURCE);
  assert_null(ptx);
  assert_int_equal(size, 0);
  test_assert_message_contains("gcap_module_load: NVRTC could not compile the source: ");
  test_assert_message_contains("<nvrtc source>(3): error: expected a \";\"");
  const char *msg = gcap_last_error_message();
  size_t n = strlen(msg);
  assert_true(n > 0 && msg[n - 1] != '\n' && msg[n - 1] != ' '); /* trimmed */
}

static void test_long_log_is_cut(void **state) {
  (void)state;
  require_nvrtc();
  /* Many errors (NVRTC reports each undefined name once): a log far longer than a message holds. */
  char source[4096] = "extern \"C\" __global__ void many(int *p) {\n";
  size_t used = strlen(source);
  for (int i = 0; i < 40; i++)
    used += (size_t)snprintf(source + used, sizeof source - used, "  p[0] = undeclared_name_%02d;\n", i);
  snprintf(source + used, sizeof source - used, "}\n");
  char *ptx = NULL;
  size_t size = 0;
  assert_status(compile(source, NULL, 0, &ptx, &size), GCAP_ERROR_INVALID_SOURCE);
  test_assert_message_contains("identifier \"undeclared_name_00\" is undefined");
  test_assert_message_contains("[log cut]");
}

static void test_unknown_option_is_invalid_value(void **state) {
  (void)state;
  require_nvrtc();
  const char *const options[] = {"--no-such-option-here"};
  char *ptx = NULL;
  size_t size = 0;
  assert_status(compile(add_one_source, options, 1, &ptx, &size), GCAP_ERROR_INVALID_VALUE);
  assert_null(ptx);
  test_assert_message_contains("NVRTC refused an option");
  test_assert_message_contains("no-such-option-here");
}

/* Checked before NVRTC is looked for: these hold with or without it. */
static void test_invalid_arguments(void **state) {
  (void)state;
  const char *const options[] = {"-DN=1", NULL};
  char *ptx = (char *)add_one_source;
  size_t size = 99;
  assert_status(compile(add_one_source, options, 2, &ptx, &size), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_module_load: options[1] is NULL");
  assert_null(ptx);
  assert_int_equal(size, 0);
  assert_status(compile(add_one_source, NULL, 1, &ptx, &size), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("options is NULL");
  assert_status(compile(NULL, NULL, 0, &ptx, &size), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("source is NULL");
  assert_status(compile(add_one_source, NULL, 0, NULL, &size), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("ptx is NULL");
  assert_status(compile(add_one_source, NULL, 0, &ptx, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("ptx_size is NULL");
}

/*
 * Allocation n fails, for n = 0, 1, ... until the compile gets through: each step is
 * OUT_OF_MEMORY with a message and no output (leaks show under valgrind and ASan).
 */
static void compile_under_faults(const char *source, const char *const *options, size_t n, gcap_status done) {
  for (long step = 0;; step++) {
    assert_true(step < MAX_STEPS);
    char *ptx = (char *)add_one_source;
    size_t size = 99;
    gcap__alloc_fail_after(-1);
    gcap__alloc_fail_after(step);
    gcap_status st = compile(source, options, n, &ptx, &size);
    gcap__alloc_fail_after(-1);
    if (st == done) {
      gcap__free(ptx);
      assert_true(step > 0); /* every path allocates at least once */
      return;
    }
    assert_status(st, GCAP_ERROR_OUT_OF_MEMORY);
    test_assert_message_contains("gcap_module_load: ");
    assert_null(ptx);
    assert_int_equal(size, 0);
  }
}

static void test_allocation_failures(void **state) {
  (void)state;
  require_nvrtc();
  const char *const arch[] = {"-arch=compute_80"};
  const char *const define[] = {"-DN=3"};
  compile_under_faults(add_one_source, NULL, 0, GCAP_SUCCESS);
  compile_under_faults(add_one_source, arch, 1, GCAP_SUCCESS);
  compile_under_faults(fill_source, define, 1, GCAP_SUCCESS);
  compile_under_faults(broken_source, NULL, 0, GCAP_ERROR_INVALID_SOURCE);
}

static int reset_injection(void **state) {
  (void)state;
  gcap__alloc_fail_after(-1);
  return 0;
}

struct thread_job {
  const char *arch;
  const char *want;
  bool ok;
};

static void *compile_in_thread(void *arg) {
  struct thread_job *job = arg;
  const char *const options[] = {job->arch};
  char *ptx = NULL;
  size_t size = 0;
  job->ok = compile(add_one_source, options, 1, &ptx, &size) == GCAP_SUCCESS && strstr(ptx, job->want) != NULL;
  gcap__free(ptx);
  return NULL;
}

static void test_threads_compile_at_once(void **state) {
  (void)state;
  require_nvrtc();
  struct thread_job jobs[4] = {{"-arch=compute_75", ".target sm_75", false},
                               {"-arch=compute_80", ".target sm_80", false},
                               {"-arch=compute_86", ".target sm_86", false},
                               {"-arch=compute_90", ".target sm_90", false}};
  pthread_t threads[4];
  for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&threads[i], NULL, compile_in_thread, &jobs[i]), 0);
  for (int i = 0; i < 4; i++) assert_int_equal(pthread_join(threads[i], NULL), 0);
  for (int i = 0; i < 4; i++) assert_true(jobs[i].ok);
}

/*
 * The kernel `name` of a module compiled from source (desc->name: name), launched on a 4-byte
 * buffer where it stores past the end: the report's message must hold `shows` and not `hides`.
 */
static void fault_names(const char *source, const char *kernel, const char *name, const char *shows,
                        const char *hides) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.kernels = GCAP_SIM_KERNELS_PTX;
  gcap_context *ctx = test_sim_context_create(&so);
  const char *const options[] = {"-lineinfo"};
  gcap_module_desc d = {.source = source, .options = options, .num_options = 1, .name = name};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  gcap_stream *s = test_stream_create(ctx);
  void *p = test_dev_alloc(ctx, 4);
  void *args[] = {&p};
  assert_status(gcap_launch_kernel(s, test_kernel_of(m, kernel), GCAP_DIM3(1, 1, 1), GCAP_DIM3(2, 1, 1), 0, args),
                GCAP_ERROR_ILLEGAL_ADDRESS);
  test_assert_message_contains(shows);
  if (hides && strstr(gcap_last_error_message(), hides)) fail_msg("\"%s\" in: %s", hides, gcap_last_error_message());
  gcap_context_destroy(ctx);
}

/* Reports name the source as the caller did (desc->name), "<nvrtc source>" when it gave none. */
static void test_reports_name_the_source(void **state) {
  (void)state;
  require_nvrtc();
  char cwd[PATH_MAX];
  assert_non_null(getcwd(cwd, sizeof cwd));
  fault_names(add_one_source, "add_one", "mykernels.cu", "(mykernels.cu:2)", cwd);
  fault_names(add_one_source, "add_one", NULL, "(<nvrtc source>:2)", cwd);
  fault_names(add_one_source, "add_one", "/abs/dir/k.cu", "(/abs/dir/k.cu:2)", NULL);
  /* NVRTC's log and the PTX say the name too. */
  char *ptx = NULL;
  size_t size = 0;
  assert_status(compile_named(broken_source, "mykernels.cu", NULL, 0, &ptx, &size), GCAP_ERROR_INVALID_SOURCE);
  test_assert_message_contains("mykernels.cu(3): error");
  const char *const lineinfo[] = {"-lineinfo"};
  assert_ok(compile_named(add_one_source, "sub/dir.cu", lineinfo, 1, &ptx, &size));
  assert_contains(ptx, ".file\t1 \"sub/dir.cu\"");
  assert_int_equal(size, strlen(ptx) + 1);
  gcap__free(ptx);
}

/* desc->name names a source: without one, or empty, it is refused. */
static void test_name_needs_a_source(void **state) {
  (void)state;
  gcap_context *ctx = test_sim_context_create(NULL);
  static const char ptx[] = ".version 8.0\n.target sm_75\n.address_size 64\n.visible .entry k()\n{\n  ret;\n}\n";
  gcap_module_desc d = {.image = ptx, .image_size = sizeof ptx, .name = "k.cu"};
  gcap_module *m = NULL;
  assert_status(gcap_module_load(ctx, &d, &m), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("desc->name is given without desc->source");
  gcap_module_desc empty = {.source = add_one_source, .name = ""};
  assert_status(gcap_module_load(ctx, &empty, &m), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("desc->name is empty");
  assert_null(m);
  gcap_context_destroy(ctx);
}

/* ---------------------------------------------------- without NVRTC ("missing") */

static void test_missing_library_is_not_found(void **state) {
  (void)state;
  const char *given = getenv("GCAP_NVRTC");
  assert_non_null(given);
  assert_false(gcap__nvrtc_available());
  for (int i = 0; i < 2; i++) { /* the second call answers from the cached lookup */
    char *ptx = (char *)add_one_source;
    size_t size = 99;
    assert_status(compile(add_one_source, NULL, 0, &ptx, &size), GCAP_ERROR_NOT_FOUND);
    assert_null(ptx);
    assert_int_equal(size, 0);
    test_assert_message_contains("gcap_module_load: GCAP_NVRTC=");
    test_assert_message_contains(given);
    test_assert_message_contains("install the CUDA toolkit's NVRTC");
    test_assert_message_contains("cuda-nvrtc");
    test_assert_message_contains("point GCAP_NVRTC at libnvrtc.so");
    test_assert_message_contains("pip: nvidia-cuda-nvrtc, into the Python environment that runs gcap or $VIRTUAL_ENV");
  }
}

/* ---------------------------------------------------- NVRTC from pip ("pip") */

/*
 * A fake tree of Python environments, each with the directories NVRTC's wheels make: the fake
 * NVRTC (tests/fake_libnvrtc.c, its path the second argument) as a CUDA 13 wheel's in
 * $VIRTUAL_ENV, empty wheel directories elsewhere, and two "running Python" folders that the
 * process maps a file from (a package in site-packages, an extension module in lib-dynload).
 */
static const char *fake_nvrtc;
static char tree[64];

static void make_dirs(const char *path) {
  char buf[PATH_MAX];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(buf, 0700);
      *p = '/';
    }
  mkdir(buf, 0700);
}

/* tree/rel, its directories made; a copy of the fake NVRTC when copy is true. */
static void put(const char *rel, bool copy, char *out, size_t cap) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", tree, rel);
  if (out) snprintf(out, cap, "%s", path);
  if (!copy) {
    make_dirs(path);
    return;
  }
  *strrchr(path, '/') = '\0';
  make_dirs(path);
  path[strlen(path)] = '/';
  FILE *in = fopen(fake_nvrtc, "rb"), *to = fopen(path, "wb");
  assert_non_null(in);
  assert_non_null(to);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) assert_int_equal(fwrite(buf, 1, n, to), n);
  fclose(in);
  assert_int_equal(fclose(to), 0);
}

static void *mapped[2];

static int make_tree(void **state) {
  (void)state;
  snprintf(tree, sizeof tree, "/tmp/gcap-nvrtc-XXXXXX");
  if (!mkdtemp(tree)) return -1;
  char path[PATH_MAX];
  put("venv/lib/python3.11/site-packages/nvidia/cu13/lib/libnvrtc.so.13", true, NULL, 0);
  put("venv/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib", false, NULL, 0);
  put("conda/lib/python3.10/site-packages/nvidia/cuda_nvrtc/lib", false, NULL, 0);
  put("py/lib/python3.12/site-packages/nvidia/cu14/lib", false, NULL, 0);
  put("py/lib/python3.12/site-packages/somepkg/_native.so", true, path, sizeof path);
  mapped[0] = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  put("py2/lib/python3.9/site-packages/nvidia/cu13/lib", false, NULL, 0);
  put("py2/lib/python3.9/lib-dynload/_ext.so", true, path, sizeof path);
  mapped[1] = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!mapped[0] || !mapped[1]) return -1;
  snprintf(path, sizeof path, "%s/venv", tree);
  setenv("VIRTUAL_ENV", path, 1);
  snprintf(path, sizeof path, "%s/conda", tree);
  setenv("CONDA_PREFIX", path, 1);
  /* Nothing found before the Python environments. */
  unsetenv("GCAP_NVRTC");
  unsetenv("CUDA_PATH");
  unsetenv("CUDA_HOME");
  return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static int remove_tree(void **state) {
  (void)state;
  for (int i = 0; i < 2; i++)
    if (mapped[i]) dlclose(mapped[i]);
  return nftw(tree, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static bool listed(char (*dirs)[PATH_MAX], size_t n, const char *rel) {
  char want[PATH_MAX];
  snprintf(want, sizeof want, "%s/%s", tree, rel);
  for (size_t i = 0; i < n; i++)
    if (strcmp(dirs[i], want) == 0) return true;
  return false;
}

/* Each environment's wheel directories, $VIRTUAL_ENV's first, CUDA 13's before CUDA 12's. */
static void test_pip_wheel_directories(void **state) {
  (void)state;
  char dirs[16][PATH_MAX];
  size_t n = gcap__nvrtc_pip_dirs(dirs, 16);
  for (size_t i = 0; i < n; i++) print_message("%s\n", dirs[i]);
  assert_true(n >= 5);
  char want[PATH_MAX];
  snprintf(want, sizeof want, "%s/venv/lib/python3.11/site-packages/nvidia/cu13/lib", tree);
  assert_string_equal(dirs[0], want);
  snprintf(want, sizeof want, "%s/venv/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib", tree);
  assert_string_equal(dirs[1], want);
  snprintf(want, sizeof want, "%s/conda/lib/python3.10/site-packages/nvidia/cuda_nvrtc/lib", tree);
  assert_string_equal(dirs[2], want);
  assert_true(listed(dirs, n, "py/lib/python3.12/site-packages/nvidia/cu14/lib"));
  assert_true(listed(dirs, n, "py2/lib/python3.9/site-packages/nvidia/cu13/lib"));
  assert_int_equal(gcap__nvrtc_pip_dirs(dirs, 1), 1);
}

/* NVRTC installed with pip, as the message advises, is the one used. */
static void test_pip_wheel_is_loaded(void **state) {
  (void)state;
  assert_true(gcap__nvrtc_available());
  char *ptx = compile_ok(add_one_source, NULL, 0);
  assert_contains(ptx, "made by the fake NVRTC");
  gcap__free(ptx);
}

/* The fake writes the program's name into .file as it is: reports name it. */
static void test_pip_reports_name_the_source(void **state) {
  (void)state;
  fault_names("any source", "fake_nvrtc_poke", "mykernels.cu", "(mykernels.cu:2)", NULL);
  fault_names("any source", "fake_nvrtc_poke", NULL, "(<nvrtc source>:2)", NULL);
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "pip") == 0) {
    fake_nvrtc = argv[2];
    const struct CMUnitTest pip[] = {
        cmocka_unit_test(test_pip_wheel_directories),
        cmocka_unit_test(test_pip_wheel_is_loaded),
        cmocka_unit_test(test_pip_reports_name_the_source),
    };
    return cmocka_run_group_tests(pip, make_tree, remove_tree);
  }
  if (argc > 1 && strcmp(argv[1], "missing") == 0) {
    const struct CMUnitTest missing[] = {
        cmocka_unit_test(test_missing_library_is_not_found),
        cmocka_unit_test(test_invalid_arguments),
    };
    return cmocka_run_group_tests(missing, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_invalid_arguments),
      cmocka_unit_test(test_kernel_compiles_to_an_entry),
      cmocka_unit_test(test_options_reach_nvrtc),
      cmocka_unit_test(test_architecture_options),
      cmocka_unit_test(test_syntax_error_gives_the_log),
      cmocka_unit_test(test_long_log_is_cut),
      cmocka_unit_test(test_unknown_option_is_invalid_value),
      cmocka_unit_test_teardown(test_allocation_failures, reset_injection),
      cmocka_unit_test(test_threads_compile_at_once),
      cmocka_unit_test(test_reports_name_the_source),
      cmocka_unit_test(test_name_needs_a_source),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
