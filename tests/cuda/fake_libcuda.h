/*
 * What the recording fake libcuda.so.1 (fake_libcuda.c) tells its tests: the calls it saw, the
 * documented preconditions those calls broke, the graphs it was given, and the handles still live.
 */
#ifndef GCAP_TESTS_FAKE_LIBCUDA_H
#define GCAP_TESTS_FAKE_LIBCUDA_H

#include <cuda.h>
#include <stddef.h>

/* Broken preconditions so far, one per line, into buf (NUL-terminated); returns how many. */
size_t fake_cuda_violations(char *buf, size_t size);
/* How many recorded calls contain `text` ("cuGraphLaunch(", "dst=UNIFIED"). */
size_t fake_cuda_calls(const char *text);
/* Forgets the recorded calls (not the violations). */
void fake_cuda_log_clear(void);
/* Handles created and not yet destroyed, retained primary contexts included; their names into buf. */
size_t fake_cuda_live(char *buf, size_t size);
/*
 * The executable's graph as sorted lines: one per node ("kernel k_8_4 grid=1,1,1 ...", "empty",
 * a " [disabled]" suffix) and one per edge ("<from node> -> <to node>"). Returns the node count.
 */
size_t fake_cuda_describe_exec(CUgraphExec x, char *buf, size_t size);
/* The same for a graph. */
size_t fake_cuda_describe_graph(CUgraph g, char *buf, size_t size);
/* Runs all queued work on the fake's device thread and returns when it is done. */
void fake_cuda_drain(void);
/* Kernel launches and kernel nodes the device thread has run. */
size_t fake_cuda_kernel_runs(void);

#endif
