// What the runtime stand-in adds to a launch: the same kernel launched with <<<>>> through
// libcudart.so.13 (gcap's stand-in) and with gcap_launch_kernel through gcap's C API, and the
// same one-kernel graph replayed with cudaGraphLaunch and gcap_exec_launch, each pair timed in
// alternating regions of one run on the simulator (IMMEDIATE: the kernel runs inside the call).
//
// usage: bench_cudart KERNEL.ptx [regions]   (KERNEL.ptx: nvcc -ptx of this file)
// Prints, per pair, ns per call of each and their ratio (stand-in / C API).
#include <cuda_runtime.h>
#include <gcap/gcap.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

extern "C" {
#include "../timing.h"
}

extern "C" __global__ void touch(int *p) {
  if (threadIdx.x == 0) p[blockIdx.x] += 1;
}

namespace {

struct fixture {
  cudaStream_t stream;
  cudaGraphExec_t graph;
  int *dev;
  gcap_stream *gs;
  gcap_kernel *kernel;
  gcap_exec *exec;
  int *gdev;
};

void die(const char *what, const char *why) {
  std::fprintf(stderr, "bench_cudart: %s: %s\n", what, why);
  std::exit(1);
}

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) die(what, cudaGetErrorString(e));
}

void check(gcap_status s, const char *what) {
  if (s != GCAP_SUCCESS) die(what, gcap_last_error_message());
}

void stand_in_launch(void *arg) {
  fixture *f = static_cast<fixture *>(arg);
  touch<<<1, 32, 0, f->stream>>>(f->dev);
}

void c_api_launch(void *arg) {
  fixture *f = static_cast<fixture *>(arg);
  void *args[] = {&f->gdev};
  check(gcap_launch_kernel(f->gs, f->kernel, gcap_dim3{1, 1, 1}, gcap_dim3{32, 1, 1}, 0, args), "gcap_launch_kernel");
}

void stand_in_replay(void *arg) {
  fixture *f = static_cast<fixture *>(arg);
  check(cudaGraphLaunch(f->graph, f->stream), "cudaGraphLaunch");
}

void c_api_replay(void *arg) {
  fixture *f = static_cast<fixture *>(arg);
  check(gcap_exec_launch(f->exec, f->gs), "gcap_exec_launch");
}

std::vector<char> read_file(const char *path) {
  FILE *in = std::fopen(path, "rb");
  if (!in) die(path, "cannot open");
  std::vector<char> text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, in)) > 0;) text.insert(text.end(), buf, buf + n);
  std::fclose(in);
  text.push_back('\0');
  return text;
}

void setup_stand_in(fixture *f) {
  check(cudaStreamCreateWithFlags(&f->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  check(cudaMalloc(&f->dev, sizeof(int)), "cudaMalloc");
  check(cudaMemset(f->dev, 0, sizeof(int)), "cudaMemset");
  cudaGraph_t g;
  check(cudaStreamBeginCapture(f->stream, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
  touch<<<1, 32, 0, f->stream>>>(f->dev);
  check(cudaStreamEndCapture(f->stream, &g), "cudaStreamEndCapture");
  check(cudaGraphInstantiate(&f->graph, g, 0), "cudaGraphInstantiate");
  check(cudaGraphDestroy(g), "cudaGraphDestroy");
}

void setup_c_api(fixture *f, gcap_context **ctx, const char *ptx_path) {
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  check(gcap_context_create(&o, ctx), "gcap_context_create");
  std::vector<char> ptx = read_file(ptx_path);
  gcap_module_desc d = {};
  d.image = ptx.data();
  d.image_size = ptx.size();
  gcap_module *m;
  check(gcap_module_load(*ctx, &d, &m), "gcap_module_load");
  check(gcap_module_get_kernel(m, "touch", &f->kernel), "gcap_module_get_kernel");
  check(gcap_stream_create(*ctx, &f->gs), "gcap_stream_create");
  check(gcap_mem_alloc(*ctx, sizeof(int), reinterpret_cast<void **>(&f->gdev)), "gcap_mem_alloc");
  check(gcap_memset_async(f->gs, f->gdev, 0, sizeof(int)), "gcap_memset_async");
  gcap_graph *g;
  check(gcap_stream_begin_capture(f->gs, GCAP_CAPTURE_MODE_GLOBAL), "gcap_stream_begin_capture");
  c_api_launch(f);
  check(gcap_stream_end_capture(f->gs, &g), "gcap_stream_end_capture");
  check(gcap_graph_instantiate(g, 0, &f->exec), "gcap_graph_instantiate");
  gcap_graph_destroy(g);
}

void report(const char *what, work_fn subject, work_fn baseline, fixture *f, int regions) {
  double stand_in = 0, c_api = 0;
  median_pair_of(subject, f, baseline, f, regions, nullptr, &stand_in, &c_api);
  std::printf("%-28s stand-in %9.1f ns   C API %9.1f ns   ratio %.3f\n", what, stand_in, c_api, stand_in / c_api);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) die("usage", "bench_cudart KERNEL.ptx [regions]");
  int regions = argc > 2 ? std::atoi(argv[2]) : 5;
  if (regions < 1 || regions > BENCH_MAX_REPS) regions = 5;
  fixture f = {};
  gcap_context *ctx = nullptr;
  setup_stand_in(&f);
  setup_c_api(&f, &ctx, argv[1]);
  report("kernel launch (<<<>>>)", stand_in_launch, c_api_launch, &f, regions);
  report("graph launch (1 kernel)", stand_in_replay, c_api_replay, &f, regions);
  check(cudaStreamSynchronize(f.stream), "cudaStreamSynchronize");
  check(gcap_stream_synchronize(f.gs), "gcap_stream_synchronize");
  gcap_exec_destroy(f.exec);
  gcap_context_destroy(ctx);
  check(cudaGraphExecDestroy(f.graph), "cudaGraphExecDestroy");
  check(cudaFree(f.dev), "cudaFree");
  check(cudaStreamDestroy(f.stream), "cudaStreamDestroy");
  return 0;
}
