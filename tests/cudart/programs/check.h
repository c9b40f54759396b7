// What every test program uses: CHECK a runtime call's result, EXPECT a condition, and finish
// with PASSED as the last line of output (run-program.sh requires it).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                                                    \
  do {                                                                                                                 \
    cudaError_t check_e_ = (call);                                                                                     \
    if (check_e_ != cudaSuccess) {                                                                                     \
      std::fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, cudaGetErrorName(check_e_),              \
                   cudaGetErrorString(check_e_));                                                                      \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

// A call that must fail with a given error.
#define CHECK_ERROR(call, expected)                                                                                    \
  do {                                                                                                                 \
    cudaError_t check_e_ = (call);                                                                                     \
    if (check_e_ != (expected)) {                                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s, expected %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(check_e_),      \
                   cudaGetErrorName(expected));                                                                        \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

#define EXPECT(cond)                                                                                                   \
  do {                                                                                                                 \
    if (!(cond)) {                                                                                                     \
      std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);                                         \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

static inline int passed() {
  std::printf("PASSED\n");
  return 0;
}
