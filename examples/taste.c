/* The README's example, built and run as a test so the README stays true. */
#include <gcap/gcap.h>

static void scale_sim(const gcap_sim_thread *t, void *const *args) {   /* CPU version of the kernel */
  float *y = *(float **)args[0];
  y[t->block_idx.x * t->block_dim.x + t->thread_idx.x] *= 2.0f;
}

int main(void) {

  static const size_t sizes[] = {sizeof(float *)};
  gcap_kernel_def def = {.name = "scale", .sim_fn = scale_sim, .num_params = 1, .param_sizes = sizes};
  gcap_module_desc desc = {.kernels = &def, .num_kernels = 1};
  gcap_context_options o; gcap_context_options_init(&o); o.backend = GCAP_BACKEND_SIM;
  gcap_context *ctx; gcap_module *mod; gcap_kernel *k; gcap_stream *s; gcap_graph *g; gcap_exec *x;
  float host[256] = {1}, *dev;
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
  gcap_exec_launch(x, s);            /* host[0] is now 2 */
  gcap_stream_synchronize(s);
  int ok = host[0] == 2.0f && host[1] == 0.0f;
  gcap_context_destroy(ctx);
  return ok ? 0 : 1;         /* frees everything the context owns */
}
