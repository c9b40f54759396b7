// User objects, as CUDA's programming guide shows them: a C++ resource whose lifetime a graph
// and its executables share. The destructor runs once the last reference (the caller's, a
// graph's, a clone's, an executable's) is gone.
#include "check.h"

struct Resource {
  int *destroyed;
  int *d_buf;
};

static void CUDART_CB destroy_resource(void *p) {
  Resource *r = static_cast<Resource *>(p);
  (*r->destroyed)++;
  delete r;
}

__global__ void fill(int *buf, int v) { buf[threadIdx.x] = v; }

int main() {
  int destroyed = 0;
  int *d_buf;
  CHECK(cudaMalloc(&d_buf, 32 * sizeof(int)));

  // The caller's references: created with 1, retained to 3, released to 0.
  cudaUserObject_t obj;
  CHECK(cudaUserObjectCreate(&obj, new Resource{&destroyed, d_buf}, destroy_resource, 1,
                             cudaUserObjectNoDestructorSync));
  CHECK(cudaUserObjectRetain(obj, 2));
  CHECK(cudaUserObjectRelease(obj, 2));
  EXPECT(destroyed == 0);
  CHECK(cudaUserObjectRelease(obj));
  CHECK(cudaDeviceSynchronize());
  EXPECT(destroyed == 1);

  // A graph takes the caller's reference over (move); a clone holds its own; an executable too.
  cudaGraph_t g;
  CHECK(cudaGraphCreate(&g, 0));
  int value = 7;
  void *args[] = {&d_buf, &value};
  cudaKernelNodeParams kp = {};
  kp.func = (void *)fill;
  kp.gridDim = dim3(1);
  kp.blockDim = dim3(32);
  kp.kernelParams = args;
  cudaGraphNode_t k;
  CHECK(cudaGraphAddKernelNode(&k, g, nullptr, 0, &kp));
  CHECK(cudaUserObjectCreate(&obj, new Resource{&destroyed, d_buf}, destroy_resource, 1,
                             cudaUserObjectNoDestructorSync));
  CHECK(cudaGraphRetainUserObject(g, obj, 1, cudaGraphUserObjectMove));
  cudaGraph_t copy;
  CHECK(cudaGraphClone(&copy, g));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, g, 0));
  CHECK(cudaGraphDestroy(g));
  CHECK(cudaGraphDestroy(copy));
  CHECK(cudaDeviceSynchronize());
  EXPECT(destroyed == 1);  // the executable still holds it
  CHECK(cudaGraphLaunch(exec, 0));
  CHECK(cudaDeviceSynchronize());
  int h[32];
  CHECK(cudaMemcpy(h, d_buf, sizeof h, cudaMemcpyDeviceToHost));
  for (int x : h) EXPECT(x == 7);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaDeviceSynchronize());
  EXPECT(destroyed == 2);

  // A graph's own references: retained (new ones, the caller keeps its), released by the graph.
  CHECK(cudaGraphCreate(&g, 0));
  CHECK(cudaUserObjectCreate(&obj, new Resource{&destroyed, d_buf}, destroy_resource, 1,
                             cudaUserObjectNoDestructorSync));
  CHECK(cudaGraphRetainUserObject(g, obj, 3));
  CHECK(cudaUserObjectRelease(obj));
  EXPECT(destroyed == 2);
  CHECK(cudaGraphReleaseUserObject(g, obj, 2));
  EXPECT(destroyed == 2);
  CHECK(cudaGraphReleaseUserObject(g, obj));
  CHECK(cudaDeviceSynchronize());
  EXPECT(destroyed == 3);

  // What is refused: no destructor, flags, counts of 0, NULL handles.
  cudaUserObject_t bad = nullptr;
  CHECK_ERROR(cudaUserObjectCreate(&bad, nullptr, nullptr, 1, cudaUserObjectNoDestructorSync), cudaErrorInvalidValue);
  CHECK_ERROR(cudaUserObjectCreate(&bad, nullptr, destroy_resource, 1, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaUserObjectCreate(&bad, nullptr, destroy_resource, 0, cudaUserObjectNoDestructorSync),
              cudaErrorInvalidValue);
  EXPECT(bad == nullptr);
  CHECK_ERROR(cudaUserObjectRetain(nullptr, 1), cudaErrorInvalidValue);
  CHECK(cudaUserObjectCreate(&obj, new Resource{&destroyed, d_buf}, destroy_resource, 1,
                             cudaUserObjectNoDestructorSync));
  CHECK_ERROR(cudaUserObjectRetain(obj, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphRetainUserObject(g, obj, 1, 2), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphRetainUserObject(nullptr, obj, 1, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGraphReleaseUserObject(g, obj, 1), cudaErrorInvalidValue);  // the graph holds none
  EXPECT(destroyed == 3);
  CHECK(cudaUserObjectRelease(obj));
  CHECK(cudaDeviceSynchronize());
  EXPECT(destroyed == 4);

  CHECK(cudaGraphDestroy(g));
  CHECK(cudaFree(d_buf));
  return passed();
}
