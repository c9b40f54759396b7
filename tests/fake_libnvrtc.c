/*
 * A stand-in for libnvrtc, for the tests of how gcap finds NVRTC (test_nvrtc "pip"): every
 * function gcap resolves, version 99.7, and for any source the same small PTX, whose `.file`
 * is the program's name and whose kernel `fake_nvrtc_poke` stores past its pointer's element
 * at the line .loc names (line 2 of the program).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define FAKE_API __attribute__((visibility("default")))
#else
#define FAKE_API
#endif

struct program {
  char ptx[1024];
};

FAKE_API int nvrtcVersion(int *major, int *minor);
FAKE_API int nvrtcCreateProgram(struct program **prog, const char *src, const char *name, int num_headers,
                                const char *const *headers, const char *const *include_names);
FAKE_API int nvrtcCompileProgram(struct program *prog, int num_options, const char *const *options);
FAKE_API int nvrtcGetPTXSize(struct program *prog, size_t *size);
FAKE_API int nvrtcGetPTX(struct program *prog, char *ptx);
FAKE_API int nvrtcGetProgramLogSize(struct program *prog, size_t *size);
FAKE_API int nvrtcGetProgramLog(struct program *prog, char *log);
FAKE_API int nvrtcDestroyProgram(struct program **prog);
FAKE_API const char *nvrtcGetErrorString(int result);

int nvrtcVersion(int *major, int *minor) {
  *major = 99;
  *minor = 7;
  return 0;
}

int nvrtcCreateProgram(struct program **prog, const char *src, const char *name, int num_headers,
                       const char *const *headers, const char *const *include_names) {
  (void)src, (void)num_headers, (void)headers, (void)include_names;
  struct program *p = malloc(sizeof *p);
  if (!p) return 1;
  snprintf(p->ptx, sizeof p->ptx,
           "// made by the fake NVRTC\n.version 8.0\n.target sm_75\n.address_size 64\n"
           ".visible .entry fake_nvrtc_poke(.param .u64 p)\n{\n  .reg .b32 %%r<2>;\n  .reg .b64 %%rd<3>;\n"
           "  .loc 1 2 3\n  ld.param.u64 %%rd1, [p];\n  cvta.to.global.u64 %%rd2, %%rd1;\n"
           "  mov.u32 %%r1, 1;\n  st.global.u32 [%%rd2+4], %%r1;\n  ret;\n}\n.file 1 \"%s\"\n",
           name ? name : "(NULL)");
  *prog = p;
  return 0;
}

int nvrtcCompileProgram(struct program *prog, int num_options, const char *const *options) {
  (void)prog, (void)num_options, (void)options;
  return 0;
}

int nvrtcGetPTXSize(struct program *prog, size_t *size) {
  *size = strlen(prog->ptx) + 1;
  return 0;
}

int nvrtcGetPTX(struct program *prog, char *ptx) {
  memcpy(ptx, prog->ptx, strlen(prog->ptx) + 1);
  return 0;
}

int nvrtcGetProgramLogSize(struct program *prog, size_t *size) {
  (void)prog;
  *size = 1;
  return 0;
}

int nvrtcGetProgramLog(struct program *prog, char *log) {
  (void)prog;
  log[0] = '\0';
  return 0;
}

int nvrtcDestroyProgram(struct program **prog) {
  free(*prog);
  *prog = NULL;
  return 0;
}

const char *nvrtcGetErrorString(int result) { return result ? "NVRTC_ERROR (fake)" : "NVRTC_SUCCESS"; }
