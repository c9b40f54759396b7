/*
 * The registry of live handles. A handle is checked by looking its address up here, never by
 * reading the object, so a destroyed or foreign pointer gives INVALID_HANDLE instead of a crash.
 */
#ifndef GCAP_CORE_REGISTRY_H
#define GCAP_CORE_REGISTRY_H

#include <stdbool.h>

enum gcap__handle_type {
  GCAP__H_CONTEXT = 1,
  GCAP__H_STREAM,
  GCAP__H_EVENT,
  GCAP__H_MODULE,
  GCAP__H_KERNEL,
  GCAP__H_GRAPH,
  GCAP__H_NODE,
  GCAP__H_EXEC,
  GCAP__H_CAPTURE,
  GCAP__H_POOL,
  GCAP__H_USER_OBJECT,
  GCAP__H_COND,       /* a conditional handle (the simulator's gcap_sim_set_conditional checks it) */
  GCAP__H_NODE_CHUNK, /* storage of a graph's nodes: checked like a handle, not counted as one */
};

/* 0 on success, -1 when the table cannot grow. */
int gcap__registry_add(const void *handle, enum gcap__handle_type type);
void gcap__registry_remove(const void *handle);
bool gcap__registry_has(const void *handle, enum gcap__handle_type type);
/* Live handles of every type but node chunks (for tests). */
unsigned long gcap__registry_size(void);
/* Slots of the current table and of the older ones kept readable, all together (for tests). */
unsigned long gcap__registry_slots(void);

#endif
