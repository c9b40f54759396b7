/* The README's example (its C block quotes this file), built and run as a test; the test
 * "use_build_tree" also compiles it as a user's program would and checks what it prints. */
#include <gcap/gcap.h>
#include <stdio.h>

/* The kernel, as `nvcc -ptx` writes it for
 *   extern "C" __global__ void scale(float *y) { y[blockIdx.x * blockDim.x + threadIdx.x] *= 2.0f; } */
static const char scale_ptx[] =
    ".version 7.5\n.target sm_75\n.address_size 64\n"
    ".visible .entry scale(.param .u64 y)\n{\n"
    "  .reg .f32 %f<3>;\n  .reg .b32 %r<5>;\n  .reg .b64 %rd<5>;\n"
    "  ld.param.u64 %rd1, [y];\n  cvta.to.global.u64 %rd2, %rd1;\n"
    "  mov.u32 %r1, %ctaid.x;\n  mov.u32 %r2, %ntid.x;\n  mov.u32 %r3, %tid.x;\n"
    "  mad.lo.s32 %r4, %r1, %r2, %r3;\n  mul.wide.u32 %rd3, %r4, 4;\n  add.s64 %rd4, %rd2, %rd3;\n"
    "  ld.global.f32 %f1, [%rd4];\n  add.f32 %f2, %f1, %f1;\n  st.global.f32 [%rd4], %f2;\n  ret;\n}\n";

int main(void) {
  gcap_module_desc desc = {.image = scale_ptx, .image_size = sizeof scale_ptx};  /* kernels: its entries */
  gcap_context_options o; gcap_context_options_init(&o); o.backend = GCAP_BACKEND_SIM;  /* or CUDA, same PTX */
  gcap_context *ctx; gcap_module *mod; gcap_kernel *k; gcap_stream *s; gcap_graph *g; gcap_exec *x;
  float host[256], *dev;
  for (int i = 0; i < 256; i++) host[i] = (float)i;
  gcap_context_create(&o, &ctx);
  gcap_module_load(ctx, &desc, &mod);
  gcap_module_get_kernel(mod, "scale", &k);
  gcap_stream_create(ctx, &s);
  gcap_mem_alloc(ctx, sizeof host, (void **)&dev);
  gcap_graph_create(ctx, &g);
  gcap_node *up, *run, *down;
  gcap_memcpy_node_params cp = {dev, host, sizeof host, GCAP_MEMCPY_HOST_TO_DEVICE};
  gcap_graph_add_memcpy_node(g, NULL, 0, &cp, &up);
  void *args[] = {&dev};
  gcap_kernel_node_params kp = {k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(256, 1, 1), 0, args};
  gcap_graph_add_kernel_node(g, &up, 1, &kp, &run);
  gcap_memcpy_node_params back = {host, dev, sizeof host, GCAP_MEMCPY_DEVICE_TO_HOST};
  gcap_graph_add_memcpy_node(g, &run, 1, &back, &down);
  gcap_graph_instantiate(g, 0, &x);
  gcap_exec_launch(x, s);            /* copy in, y[i] *= 2 on 256 threads, copy back */
  gcap_stream_synchronize(s);
  printf("%zu-node graph on the %s backend: y = 0, 1, ..., 255 doubled into %g, %g, ..., %g\n",
         gcap_graph_node_count(g), gcap_backend_name(gcap_context_backend(ctx)), host[0], host[1], host[255]);
  gcap_context_destroy(ctx);         /* frees everything the context owns */
  return host[255] == 510.0f ? 0 : 1;
}
