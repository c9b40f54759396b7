/* GCAP_CUDART_GRAPHS=DIR (gcap-run --graphs): every graph the program instantiates is written to
 * DIR as DOT, named by the instantiation's order and the graph's node count; a directory that
 * cannot be written is said once and does not fail the instantiation. The tests run in order:
 * the order counts the process's instantiations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "stderr_capture.h"

#include <cuda_runtime_api.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];

static void make_dir(void) {
  snprintf(dir, sizeof dir, "%s/gcap-graphs-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  assert_non_null(mkdtemp(dir));
  assert_int_equal(setenv("GCAP_CUDART_GRAPHS", dir, 1), 0);
}

/* The files of dir, sorted, joined by spaces; each removed, then dir. */
static void list_and_remove(char *out, size_t size) {
  struct dirent **names;
  int n = scandir(dir, &names, NULL, alphasort);
  assert_true(n >= 0);
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    if (names[i]->d_name[0] != '.') {
      if (out[0]) strncat(out, " ", size - strlen(out) - 1);
      strncat(out, names[i]->d_name, size - strlen(out) - 1);
      char path[600];
      snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
      assert_int_equal(unlink(path), 0);
    }
    free(names[i]);
  }
  free(names);
  assert_int_equal(rmdir(dir), 0);
}

/* A chain of n empty nodes. */
static cudaGraph_t chain(int n) {
  cudaGraph_t g;
  assert_int_equal(cudaGraphCreate(&g, 0), cudaSuccess);
  cudaGraphNode_t prev = NULL, node;
  for (int i = 0; i < n; i++) {
    assert_int_equal(cudaGraphAddEmptyNode(&node, g, prev ? &prev : NULL, prev ? 1 : 0), cudaSuccess);
    prev = node;
  }
  return g;
}

static void instantiate_and_destroy(cudaGraph_t g) {
  cudaGraphExec_t x;
  assert_int_equal(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
  assert_int_equal(cudaGraphExecDestroy(x), cudaSuccess);
}

static void test_graphs_written(void **state) {
  (void)state;
  make_dir();
  cudaGraph_t three = chain(3), one = chain(1);
  instantiate_and_destroy(three);
  cudaGraphExec_t x;
  assert_int_equal(cudaGraphInstantiate(&x, one, 0x100), cudaErrorInvalidValue); /* refused: not written, not counted */
  cudaGraphInstantiateParams p = {0};
  assert_int_equal(cudaGraphInstantiateWithParams(&x, one, &p), cudaSuccess);
  assert_int_equal(cudaGraphExecDestroy(x), cudaSuccess);

  char path[600];
  snprintf(path, sizeof path, "%s/graph-001-3nodes.dot", dir);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char text[4096];
  size_t len = fread(text, 1, sizeof text - 1, f);
  text[len] = '\0';
  fclose(f);
  assert_non_null(strstr(text, "digraph"));
  assert_non_null(strstr(text, "->"));

  char files[1024];
  list_and_remove(files, sizeof files);
  assert_string_equal(files, "graph-001-3nodes.dot graph-002-1nodes.dot");
  assert_int_equal(cudaGraphDestroy(three), cudaSuccess);
  assert_int_equal(cudaGraphDestroy(one), cudaSuccess);
}

static const char *said = "";

static void instantiate_twice_said(cudaGraph_t g) {
  stderr_listen();
  instantiate_and_destroy(g);
  instantiate_and_destroy(g);
  said = stderr_heard();
}

static void test_unwritable_said_once(void **state) {
  (void)state;
  assert_int_equal(setenv("GCAP_CUDART_GRAPHS", "/nonexistent/gcap-graphs", 1), 0);
  cudaGraph_t g = chain(2);
  instantiate_twice_said(g);
  const char *first =
      strstr(said, "gcap-cudart: GCAP_CUDART_GRAPHS: cannot write /nonexistent/gcap-graphs/graph-003-2nodes.dot");
  assert_non_null(first);
  assert_null(strstr(first + strlen("gcap-cudart: GCAP_CUDART_GRAPHS"), "GCAP_CUDART_GRAPHS")); /* once */
  assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
}

static cudaGraph_t shared_graph;

static void *instantiate_five(void *arg) {
  (void)arg;
  for (int i = 0; i < 5; i++) instantiate_and_destroy(shared_graph);
  return NULL;
}

static void test_orders_unique_across_threads(void **state) {
  (void)state;
  make_dir();
  shared_graph = chain(4);
  pthread_t t[4];
  for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&t[i], NULL, instantiate_five, NULL), 0);
  for (int i = 0; i < 4; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
  char files[4096];
  list_and_remove(files, sizeof files);
  /* orders 5 to 24, each once */
  char expected[4096] = "";
  for (int i = 5; i <= 24; i++) {
    char name[64];
    snprintf(name, sizeof name, "%sgraph-%03d-4nodes.dot", i > 5 ? " " : "", i);
    strcat(expected, name);
  }
  assert_string_equal(files, expected);
  assert_int_equal(cudaGraphDestroy(shared_graph), cudaSuccess);
  unsetenv("GCAP_CUDART_GRAPHS");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_graphs_written),
      cmocka_unit_test(test_unwritable_said_once),
      cmocka_unit_test(test_orders_unique_across_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
