/* The bench's peer (peer.h): chain and fork/join graphs of 1000 fills, run three times each,
   leave the first 4096 bytes of a buffer pre-filled with 0xff all zero. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"

#define TASKS 1000
#define WIDTH 4
#define RUNS 3

static unsigned char buf[2 * 4096];

static int check(int fork_join, int width) {
  memset(buf, 0xff, sizeof buf);
  peer_graph *g = peer_build(TASKS, fork_join, width, buf);
  if (!g) {
    fprintf(stderr, "peer_check: %s: peer_build failed\n", fork_join ? "fork/join" : "chain");
    return 1;
  }
  for (int r = 0; r < RUNS; r++) peer_run(g);
  peer_destroy(g);
  int bad = 0;
  for (size_t i = 0; i < 4096; i++) bad |= buf[i] != 0;
  for (size_t i = 4096; i < sizeof buf; i++) bad |= buf[i] != 0xff; /* nothing past the 64 slots */
  if (bad) fprintf(stderr, "peer_check: %s of width %d: wrong buffer contents\n", fork_join ? "fork/join" : "chain", width);
  return bad;
}

int main(void) {
  int fails = 0;
  fails += check(0, 1);
  fails += check(1, WIDTH);
  fails += check(1, 1);
  fails += check(1, 7);
  if (peer_build(TASKS, 1, 0, buf) != NULL) {
    fprintf(stderr, "peer_check: width 0 accepted\n");
    fails++;
  }
  /* Fewer tasks than chains, and no tasks at all: every run still ends. */
  memset(buf, 0xff, sizeof buf);
  peer_graph *small = peer_build(2, 1, WIDTH, buf);
  peer_graph *empty = peer_build(0, 0, 1, buf);
  if (!small || !empty) {
    fprintf(stderr, "peer_check: small graphs failed to build\n");
    return 1;
  }
  for (int r = 0; r < RUNS; r++) {
    peer_run(small);
    peer_run(empty);
  }
  peer_destroy(small);
  peer_destroy(empty);
  peer_destroy(NULL);
  for (size_t i = 0; i < 4096; i++)
    if (buf[i] != (i < 128 ? 0 : 0xff)) {
      fprintf(stderr, "peer_check: 2 tasks of width %d: wrong byte %zu\n", WIDTH, i);
      return 1;
    }
  if (fails) return 1;
  printf("%s: chain and fork/join of %d tasks, %d runs each: ok\n", peer_name(), TASKS, RUNS);
  return 0;
}
