/*
 * Native CUDA handles of gcap objects, for mixing gcap with cuBLAS, NCCL and other CUDA code.
 *
 * Usable only when gcap was built with the CUDA backend (gcap/config.h: GCAP_HAS_CUDA) and the
 * program includes the CUDA toolkit's cuda.h. On a simulator context every getter returns NULL.
 */
#ifndef GCAP_CUDA_H
#define GCAP_CUDA_H

#include <cuda.h>
#include <gcap/config.h>
#include <gcap/gcap.h>

#if !GCAP_HAS_CUDA
#error "gcap/cuda.h: this gcap was built without the CUDA backend (-Dcuda=disabled or no toolkit found)"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The CUstream behind s, or NULL on the simulator or for a bad handle (the message says which).
 * gcap keeps ownership. Work issued on it while s is capturing is not part of gcap's graph: the
 * end of that capture fails with GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED and says so.
 */
GCAP_API CUstream gcap_cuda_stream(gcap_stream *s);

/** The primary CUcontext ctx uses, or NULL on the simulator or for a bad handle. gcap keeps its reference. */
GCAP_API CUcontext gcap_cuda_context(gcap_context *ctx);

/**
 * The CUgraphExec behind x, or NULL on the simulator or for a bad handle. gcap owns it; it is
 * valid until gcap_exec_destroy(x). Changing it behind gcap's back makes gcap's view of x wrong.
 */
GCAP_API CUgraphExec gcap_cuda_graph_exec(gcap_exec *x);

/**
 * Adds a child-graph node to g that runs `native`, a graph made with the CUDA API (a cuBLAS
 * capture, for instance), after deps. The graph is cloned (cuGraphClone): the caller keeps
 * `native`. The node reports type GCAP_NODE_GRAPH; gcap_node_get_child_graph on it is
 * NOT_SUPPORTED, because its contents are not a gcap graph.
 * Returns INVALID_HANDLE (g), INVALID_VALUE (native or out NULL, deps as for every add
 * function), NOT_SUPPORTED on a simulator context, or the driver's error from the clone.
 */
GCAP_API gcap_status gcap_cuda_graph_add_native_child(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                                      CUgraph native, gcap_node **out);

#ifdef __cplusplus
}
#endif

#endif /* GCAP_CUDA_H */
