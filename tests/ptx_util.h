/*
 * Helpers of the tests that run the PTX corpus (tests/ptx) on the simulator: test_ptx_corpus
 * and test_ptx_bugs. Include after <setjmp.h>, <stdarg.h>, <stddef.h> and <cmocka.h>.
 * PTX_CORPUS_DIR (a string define) is the corpus directory.
 */
#ifndef GCAP_TESTS_PTX_UTIL_H
#define GCAP_TESTS_PTX_UTIL_H

#include <gcap/gcap.h>
#include <gcap/sim.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PTX_CHECKS_ALL (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT)
#define PTX_CHECKS_DEFAULT (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC)

/* tests/ptx/<rel> as a NUL-terminated string (free it); fails the test when it cannot be read. */
char *ptx_read_text(const char *rel, size_t *len);

/*
 * A simulator context that runs every kernel from its PTX, with the check bits `checks`, in
 * IMMEDIATE mode on the calling thread (so a launch returns its kernel's fault). When
 * GCAP_BACKEND selects CUDA, a context there instead: the same PTX and references then run on
 * a GPU, which checks the references themselves.
 */
gcap_context *ptx_context(unsigned checks);

/*
 * The simulator options ptx_context uses (PTX kernels, `checks`, IMMEDIATE, the calling thread),
 * for a test that changes some before test_sim_context_create; ptx_sim_context makes that context
 * (simulator-only tests: it skips on CUDA).
 */
void ptx_sim_options(gcap_sim_options *so, unsigned checks);
gcap_context *ptx_sim_context(unsigned checks);

/* PTX text loaded on ctx without kernel definitions; fails the test when it does not load. */
gcap_module *ptx_load_text(gcap_context *ctx, const char *text);

/* gcap_launch_kernel of the module's kernel `name` on a new stream of ctx (it goes with the context). */
gcap_status ptx_launch_on(gcap_context *ctx, gcap_module *m, const char *name, gcap_dim3 grid, gcap_dim3 block,
                          uint32_t shared, void **args);

/* tests/ptx/<rel> loaded on ctx without kernel definitions: the kernels are the PTX's entries. */
gcap_module *ptx_load(gcap_context *ctx, const char *rel);

/* What the fixture functions below make: a context with all checks, a stream, one module. */
struct ptx_fixture {
  gcap_context *ctx;
  gcap_stream *s;
  gcap_module *m;
  const char *file; /* the module's path under tests/ptx */
};

/*
 * cmocka setup and teardown of a struct ptx_fixture in *state. The setup takes the file from
 * the prestate (cmocka_unit_test_prestate_setup_teardown(fn, ptx_setup, ptx_teardown, "x.ptx")).
 * The teardown destroys the context, and with it every allocation the test made.
 */
int ptx_setup(void **state);
int ptx_teardown(void **state);

/* A device allocation holding a copy of `bytes` bytes at host (all zero when host is NULL). */
void *ptx_dev(gcap_context *ctx, const void *host, size_t bytes);
/* Copies `bytes` bytes of device memory at dev into host. */
void ptx_get(gcap_context *ctx, void *host, const void *dev, size_t bytes);
/* Copies `bytes` bytes of host into device memory at dev. */
void ptx_put(gcap_context *ctx, void *dev, const void *host, size_t bytes);

/* gcap_launch_kernel of the module's kernel `name`; returns its status. */
gcap_status ptx_launch(struct ptx_fixture *f, const char *name, gcap_dim3 grid, gcap_dim3 block, uint32_t shared,
                       void **args);
/* ptx_launch that must succeed, then a synchronisation of the stream. */
void ptx_run(struct ptx_fixture *f, const char *name, gcap_dim3 grid, gcap_dim3 block, uint32_t shared, void **args);
/* Blocks of `block` threads covering n threads. */
gcap_dim3 ptx_grid_for(size_t n, uint32_t block);

/* A deterministic generator of test inputs (xorshift64*). */
uint32_t ptx_rand32(uint64_t *state);
uint64_t ptx_rand64(uint64_t *state);

/* Bit patterns and their values. */
uint32_t ptx_f32_bits(float x);
float ptx_f32_from(uint32_t bits);
uint64_t ptx_f64_bits(double x);
double ptx_f64_from(uint64_t bits);

/* True when got and want are the same float: the same bits, or both NaN (PTX may change a NaN's payload). */
bool ptx_same_f32(float got, float want);
bool ptx_same_f64(double got, double want);

/* The spacing of floats at |x| (the ulp of a float of that magnitude); denormal spacing below FLT_MIN. */
double ptx_ulp_f32(double x);

/*
 * Fails the test, with a message naming the kernel, what was compared, the element index and
 * the values (fmt), when `ok` is false.
 */
void ptx_expect(bool ok, const char *kernel, const char *what, size_t index, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* Each 1-based line of tests/ptx/<rel> that holds "// BUG" (where a planted bug sits); returns the count. */
size_t ptx_marked_lines(const char *rel, int *lines, size_t max);

#endif
