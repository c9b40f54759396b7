/*
 * CUDA C to PTX through NVRTC, the toolkit's run-time compiler. libnvrtc is loaded on first use
 * rather than linked: gcap builds and runs without the toolkit, and only this path needs it.
 */
#ifndef GCAP_PTX_NVRTC_H
#define GCAP_PTX_NVRTC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include <gcap/gcap.h>

/*
 * Compiles CUDA C `source` to PTX with NVRTC (loaded at run time), `name` (NULL: "<nvrtc source>")
 * its program name, which NVRTC's log and the PTX's `.file` show as given; *ptx is gcap__malloc'd, NUL-terminated,
 * *ptx_size its length + 1. NOT_FOUND (no libnvrtc: the message says how to get one: install the CUDA toolkit's
 * NVRTC, e.g. Debian's libnvrtc / the cuda-nvrtc package, or point GCAP_NVRTC at libnvrtc.so),
 * INVALID_SOURCE (300) with NVRTC's log in the message, OUT_OF_MEMORY, INVALID_VALUE for a NULL option.
 *
 * Without an -arch / --gpu-architecture option the PTX targets compute_75, the oldest the
 * simulator runs. The library is looked up once per process: $GCAP_NVRTC when set (nothing else
 * then), else $CUDA_PATH and $CUDA_HOME, pip's wheels in the Python environments in sight, the
 * toolkit's usual directories, the loader's search path.
 */
gcap_status gcap__nvrtc_compile(const char *source, const char *name, const char *const *options, size_t num_options,
                                char **ptx, size_t *ptx_size);

/*
 * The directories of NVRTC wheels installed with pip (nvidia/cu<N>/lib, nvidia/cuda_nvrtc/lib) in
 * the site-packages of $VIRTUAL_ENV, $CONDA_PREFIX, libgcap's own and the running Python's, in the
 * order they are searched: up to max into dirs; returns how many.
 */
size_t gcap__nvrtc_pip_dirs(char (*dirs)[PATH_MAX], size_t max);

/* True when libnvrtc was found and has every function gcap__nvrtc_compile calls. */
bool gcap__nvrtc_available(void);

#endif
