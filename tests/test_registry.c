/* The registry of live handles: add/remove/has/size against a reference set, growth, shrinking, threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/registry.h"

#define NUM_HANDLES 100000u
#define NUM_TYPES 10 /* GCAP__H_CONTEXT .. GCAP__H_POOL */

/* Distinct fake addresses: never dereferenced, only used as keys. */
static char arena[NUM_HANDLES];

static const void *handle_at(size_t i) { return &arena[i]; }

/* Other library objects may be registered in this process: sizes are counted from the start. */
static unsigned long base_size;

static unsigned long live_count(void) { return gcap__registry_size() - base_size; }

static enum gcap__handle_type type_at(unsigned t) { return (enum gcap__handle_type)(GCAP__H_CONTEXT + (int)t); }

static enum gcap__handle_type other_type(enum gcap__handle_type t) {
  return t == GCAP__H_POOL ? GCAP__H_CONTEXT : (enum gcap__handle_type)(t + 1);
}

/* xorshift64*: a fixed seed makes every run the same sequence. */
static uint64_t next_random(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545f4914f6cdd1dULL;
}

/* The reference set: 0 = absent, else the handle type. */
struct reference {
  unsigned char *type;
  size_t live;
};

static void reference_init(struct reference *r) {
  r->type = calloc(NUM_HANDLES, 1);
  assert_non_null(r->type);
  r->live = 0;
}

static void reference_free(struct reference *r) { free(r->type); }

/* Every handle in [0, limit) answers has() exactly as the reference says, for every type. */
static void assert_registry_matches(const struct reference *r, size_t limit) {
  assert_int_equal(live_count(), r->live);
  for (unsigned t = 0; t < NUM_TYPES; t++) assert_false(gcap__registry_has(NULL, type_at(t))); /* NULL never live */
  for (size_t i = 0; i < limit; i++) {
    for (unsigned t = 0; t < NUM_TYPES; t++) {
      bool expected = r->type[i] == (unsigned char)type_at(t);
      if (gcap__registry_has(handle_at(i), type_at(t)) != expected) {
        print_error("handle %zu type %u: has() = %d, reference says %d\n", i, (unsigned)type_at(t), !expected,
                    expected);
        fail();
      }
    }
  }
}

static void ref_add(struct reference *r, size_t i, enum gcap__handle_type t) {
  assert_int_equal(gcap__registry_add(handle_at(i), t), 0);
  r->type[i] = (unsigned char)t;
  r->live++;
}

static void ref_remove(struct reference *r, size_t i) {
  gcap__registry_remove(handle_at(i));
  if (r->type[i]) r->live--;
  r->type[i] = 0;
}

static void remove_all(struct reference *r) {
  for (size_t i = 0; i < NUM_HANDLES; i++)
    if (r->type[i]) ref_remove(r, i);
  assert_int_equal(live_count(), 0);
}

/* -------------------------------------------------------------------- tests */

static void test_empty_registry(void **state) {
  (void)state;
  assert_int_equal(live_count(), 0);
  assert_false(gcap__registry_has(NULL, GCAP__H_CONTEXT));
  assert_false(gcap__registry_has(handle_at(0), GCAP__H_CONTEXT));
  /* Removing from an empty registry is harmless. */
  gcap__registry_remove(handle_at(0));
  assert_int_equal(live_count(), 0);
}

static void test_add_has_remove_one(void **state) {
  (void)state;
  const void *p = handle_at(7);
  assert_int_equal(gcap__registry_add(p, GCAP__H_GRAPH), 0);
  assert_int_equal(live_count(), 1);
  assert_true(gcap__registry_has(p, GCAP__H_GRAPH));
  for (unsigned t = 0; t < NUM_TYPES; t++)
    if (type_at(t) != GCAP__H_GRAPH) assert_false(gcap__registry_has(p, type_at(t)));
  assert_false(gcap__registry_has(handle_at(6), GCAP__H_GRAPH));
  assert_false(gcap__registry_has(handle_at(8), GCAP__H_GRAPH));
  assert_false(gcap__registry_has(NULL, GCAP__H_GRAPH));

  /* An absent handle: nothing changes. */
  gcap__registry_remove(handle_at(8));
  assert_int_equal(live_count(), 1);
  assert_true(gcap__registry_has(p, GCAP__H_GRAPH));

  gcap__registry_remove(p);
  assert_int_equal(live_count(), 0);
  assert_false(gcap__registry_has(p, GCAP__H_GRAPH));
  /* A second remove of the same handle is harmless. */
  gcap__registry_remove(p);
  assert_int_equal(live_count(), 0);
}

/* remove(NULL) is like free(NULL): nothing happens, whatever the table holds. */
/*
 * One address destroyed and made again over and over among live neighbours (a graph built and
 * freed in a loop): each incarnation is found with its own type, a removed one is not, and the
 * neighbours stay, however many times the address came back.
 */
static void test_same_address_made_again_and_again(void **state) {
  (void)state;
  enum { NEIGHBOURS = 200, ROUNDS = 20000 };
  for (size_t i = 0; i < NEIGHBOURS; i++) assert_int_equal(gcap__registry_add(handle_at(i), GCAP__H_STREAM), 0);
  const void *again = handle_at(NEIGHBOURS);
  for (unsigned r = 0; r < ROUNDS; r++) {
    enum gcap__handle_type t = type_at(r % NUM_TYPES);
    assert_int_equal(gcap__registry_add(again, t), 0);
    assert_true(gcap__registry_has(again, t));
    assert_false(gcap__registry_has(again, other_type(t)));
    assert_int_equal(live_count(), NEIGHBOURS + 1);
    gcap__registry_remove(again);
    assert_false(gcap__registry_has(again, t));
    assert_true(gcap__registry_has(handle_at(r % NEIGHBOURS), GCAP__H_STREAM));
  }
  for (size_t i = 0; i < NEIGHBOURS; i++) {
    assert_true(gcap__registry_has(handle_at(i), GCAP__H_STREAM));
    gcap__registry_remove(handle_at(i));
  }
  assert_int_equal(live_count(), 0);
}

/*
 * Handles made and destroyed for ever over a bounded set of addresses (what malloc hands out
 * again): the registry's tables, kept ones included, stop growing once every address was seen.
 */
static void test_churn_keeps_the_tables_bounded(void **state) {
  (void)state;
  enum { LIVE = 100, ADDRESSES = 1000, ROUNDS = 200000 };
  for (size_t i = 0; i < LIVE; i++) assert_int_equal(gcap__registry_add(handle_at(i), GCAP__H_GRAPH), 0);
  uint64_t seed = 7;
  unsigned long after_warmup = 0;
  for (unsigned r = 0; r < ROUNDS; r++) {
    const void *h = handle_at(LIVE + next_random(&seed) % ADDRESSES);
    assert_int_equal(gcap__registry_add(h, GCAP__H_EXEC), 0);
    assert_true(gcap__registry_has(h, GCAP__H_EXEC));
    gcap__registry_remove(h);
    if (r == ROUNDS / 2) after_warmup = gcap__registry_slots();
  }
  assert_int_equal(gcap__registry_slots(), after_warmup);
  assert_true(after_warmup <= 16 * (LIVE + ADDRESSES));
  for (size_t i = 0; i < LIVE; i++) gcap__registry_remove(handle_at(i));
  assert_int_equal(live_count(), 0);
}

static void test_remove_null_is_harmless(void **state) {
  (void)state;
  gcap__registry_remove(NULL);
  assert_int_equal(live_count(), 0);

  for (size_t i = 0; i < 20; i++) assert_int_equal(gcap__registry_add(handle_at(i * 3), GCAP__H_NODE), 0);
  assert_int_equal(live_count(), 20);
  gcap__registry_remove(NULL);
  assert_int_equal(live_count(), 20);
  assert_false(gcap__registry_has(NULL, GCAP__H_NODE));
  for (size_t i = 0; i < 20; i++) assert_true(gcap__registry_has(handle_at(i * 3), GCAP__H_NODE));
  for (size_t i = 0; i < 20; i++) gcap__registry_remove(handle_at(i * 3));
  assert_int_equal(live_count(), 0);
}

/* Every type is its own namespace for has(), but one address is one entry. */
static void test_types_distinguished(void **state) {
  (void)state;
  for (unsigned t = 0; t < NUM_TYPES; t++) assert_int_equal(gcap__registry_add(handle_at(100 + t), type_at(t)), 0);
  assert_int_equal(live_count(), NUM_TYPES);
  for (unsigned t = 0; t < NUM_TYPES; t++) {
    for (unsigned u = 0; u < NUM_TYPES; u++) {
      bool expected = t == u;
      assert_int_equal(gcap__registry_has(handle_at(100 + t), type_at(u)), expected);
    }
    assert_false(gcap__registry_has(handle_at(100 + t), other_type(type_at(t))));
  }
  for (unsigned t = 0; t < NUM_TYPES; t++) gcap__registry_remove(handle_at(100 + t));
  assert_int_equal(live_count(), 0);
  for (unsigned t = 0; t < NUM_TYPES; t++) assert_false(gcap__registry_has(handle_at(100 + t), type_at(t)));
}

/* 100000 handles in, checked, then out in a shuffled order, checked after every step of 1000. */
static void test_many_handles(void **state) {
  (void)state;
  struct reference r;
  reference_init(&r);
  for (size_t i = 0; i < NUM_HANDLES; i++) {
    ref_add(&r, i, type_at((unsigned)(i % NUM_TYPES)));
    if (i % 10007 == 0) assert_int_equal(live_count(), i + 1);
  }
  assert_int_equal(live_count(), NUM_HANDLES);
  assert_registry_matches(&r, NUM_HANDLES);

  size_t *order = malloc(NUM_HANDLES * sizeof *order);
  assert_non_null(order);
  for (size_t i = 0; i < NUM_HANDLES; i++) order[i] = i;
  uint64_t rng = 0x9e3779b97f4a7c15ULL;
  for (size_t i = NUM_HANDLES - 1; i > 0; i--) {
    size_t j = (size_t)(next_random(&rng) % (i + 1));
    size_t tmp = order[i];
    order[i] = order[j];
    order[j] = tmp;
  }
  for (size_t i = 0; i < NUM_HANDLES; i++) {
    size_t h = order[i];
    enum gcap__handle_type t = (enum gcap__handle_type)r.type[h];
    assert_true(gcap__registry_has(handle_at(h), t));
    ref_remove(&r, h);
    assert_false(gcap__registry_has(handle_at(h), t));
    if (i % 25000 == 24999) assert_registry_matches(&r, NUM_HANDLES);
  }
  free(order);
  assert_int_equal(live_count(), 0);
  assert_registry_matches(&r, NUM_HANDLES);
  reference_free(&r);
}

/*
 * Random add/remove/has against the reference. Phase one keeps few handles live in a small table
 * (long probe runs that wrap around the end, many backward shifts); phase two uses all 100000.
 */
static void random_ops(struct reference *r, size_t universe, size_t ops, uint64_t seed, size_t check_every) {
  uint64_t rng = seed;
  for (size_t op = 0; op < ops; op++) {
    uint64_t x = next_random(&rng);
    size_t i = (size_t)((x >> 8) % universe);
    enum gcap__handle_type t = type_at((unsigned)((x >> 40) % NUM_TYPES));
    switch (x % 4) {
    case 0:
    case 1:
      if (!r->type[i]) ref_add(r, i, t);
      break;
    case 2: ref_remove(r, i); break; /* absent handles included: must be harmless */
    default: break;
    }
    bool expected = r->type[i] == (unsigned char)t;
    if (gcap__registry_has(handle_at(i), t) != expected) {
      print_error("op %zu: handle %zu type %u: has() disagrees with the reference (%d)\n", op, i, (unsigned)t,
                  expected);
      fail();
    }
    if (r->type[i]) assert_true(gcap__registry_has(handle_at(i), (enum gcap__handle_type)r->type[i]));
    if (r->type[i]) assert_false(gcap__registry_has(handle_at(i), other_type((enum gcap__handle_type)r->type[i])));
    assert_int_equal(live_count(), r->live);
    if (op % check_every == check_every - 1) assert_registry_matches(r, universe);
  }
  assert_registry_matches(r, universe);
}

static void test_random_small_universe(void **state) {
  (void)state;
  struct reference r;
  reference_init(&r);
  random_ops(&r, 97, 200000, 12345, 1000);
  remove_all(&r);
  assert_registry_matches(&r, 97);
  reference_free(&r);
}

static void test_random_large_universe(void **state) {
  (void)state;
  struct reference r;
  reference_init(&r);
  random_ops(&r, NUM_HANDLES, 400000, 987654321, 100000);
  remove_all(&r);
  assert_registry_matches(&r, NUM_HANDLES);
  reference_free(&r);
}

/* Grow and shrink repeatedly: the table empties completely each time and regrows. */
static void test_fill_and_drain_cycles(void **state) {
  (void)state;
  struct reference r;
  reference_init(&r);
  for (unsigned cycle = 0; cycle < 5; cycle++) {
    size_t n = (size_t)1000 << cycle;
    for (size_t i = 0; i < n; i++) ref_add(&r, (i * 7 + cycle) % NUM_HANDLES, type_at(cycle % NUM_TYPES));
    assert_int_equal(live_count(), n);
    assert_registry_matches(&r, NUM_HANDLES < n * 8 ? NUM_HANDLES : n * 8);
    remove_all(&r);
    assert_false(gcap__registry_has(handle_at(cycle), type_at(cycle % NUM_TYPES)));
  }
  reference_free(&r);
}

/* Once the last handle goes the table is freed: the next add has to allocate a new one. */
static void test_table_shrinks_to_nothing(void **state) {
  (void)state;
  if (base_size != 0) skip(); /* the table only empties when nothing else is registered */
  for (size_t i = 0; i < 1000; i++) assert_int_equal(gcap__registry_add(handle_at(i), GCAP__H_EVENT), 0);
  for (size_t i = 0; i < 1000; i++) gcap__registry_remove(handle_at(i));
  assert_int_equal(live_count(), 0);

  gcap__alloc_fail_after(0); /* any allocation now fails */
  int rc = gcap__registry_add(handle_at(5), GCAP__H_EVENT);
  long made = gcap__alloc_fail_after(-1);
  assert_int_equal(rc, -1);
  assert_int_equal(made, 1);
  assert_int_equal(live_count(), 0);
  assert_false(gcap__registry_has(handle_at(5), GCAP__H_EVENT));

  /* With a table, adds below the load limit do not allocate at all. */
  assert_int_equal(gcap__registry_add(handle_at(5), GCAP__H_EVENT), 0);
  gcap__alloc_fail_after(-1);
  assert_int_equal(gcap__registry_add(handle_at(6), GCAP__H_EVENT), 0);
  assert_int_equal(gcap__alloc_fail_after(-1), 0);
  gcap__registry_remove(handle_at(5));
  gcap__registry_remove(handle_at(6));
  assert_int_equal(live_count(), 0);
}

/* A failed growth keeps every handle already registered and adds nothing. */
static void test_add_fails_cleanly_when_table_cannot_grow(void **state) {
  (void)state;
  struct reference r;
  reference_init(&r);
  size_t next = 0;
  int rc = 0;
  /* Keep adding with allocation failing until an add needs a bigger table. */
  gcap__alloc_fail_after(-1);
  ref_add(&r, next++, GCAP__H_STREAM); /* the first table exists */
  gcap__alloc_fail_after(0);
  for (; next < 10000; next++) {
    rc = gcap__registry_add(handle_at(next), GCAP__H_STREAM);
    if (rc != 0) break;
    r.type[next] = GCAP__H_STREAM;
    r.live++;
  }
  gcap__alloc_fail_after(-1);
  assert_int_equal(rc, -1);
  assert_true(next > 1 && next < 10000);
  assert_false(gcap__registry_has(handle_at(next), GCAP__H_STREAM));
  assert_registry_matches(&r, next + 10);
  /* Without injection the same add succeeds. */
  ref_add(&r, next, GCAP__H_STREAM);
  assert_registry_matches(&r, next + 10);
  remove_all(&r);
  reference_free(&r);
}

/* ------------------------------------------------------------------ threads */

#define NUM_THREADS 4
#define PER_THREAD (NUM_HANDLES / NUM_THREADS)

struct worker {
  size_t first; /* this thread's handles: [first, first + PER_THREAD) */
  uint64_t seed;
  unsigned char live[PER_THREAD];
  unsigned long mismatches;
};

static void *worker_main(void *arg) {
  struct worker *w = arg;
  uint64_t rng = w->seed;
  for (size_t op = 0; op < 200000; op++) {
    uint64_t x = next_random(&rng);
    size_t i = (size_t)((x >> 8) % PER_THREAD);
    const void *h = handle_at(w->first + i);
    enum gcap__handle_type t = type_at((unsigned)(w->first / PER_THREAD % NUM_TYPES));
    switch (x % 3) {
    case 0:
      if (!w->live[i]) {
        if (gcap__registry_add(h, t) != 0) w->mismatches++;
        w->live[i] = 1;
      }
      break;
    case 1:
      gcap__registry_remove(h);
      w->live[i] = 0;
      break;
    default: break;
    }
    if (gcap__registry_has(h, t) != (w->live[i] != 0)) w->mismatches++;
    if (gcap__registry_has(h, other_type(t))) w->mismatches++;
  }
  for (size_t i = 0; i < PER_THREAD; i++)
    if (gcap__registry_has(handle_at(w->first + i), type_at((unsigned)(w->first / PER_THREAD % NUM_TYPES))) !=
        (w->live[i] != 0))
      w->mismatches++;
  return NULL;
}

static void test_concurrent_disjoint_sets(void **state) {
  (void)state;
  static struct worker workers[NUM_THREADS];
  pthread_t threads[NUM_THREADS];
  for (size_t t = 0; t < NUM_THREADS; t++) {
    memset(&workers[t], 0, sizeof workers[t]);
    workers[t].first = t * PER_THREAD;
    workers[t].seed = 0x1234567ULL * (t + 1);
    assert_int_equal(pthread_create(&threads[t], NULL, worker_main, &workers[t]), 0);
  }
  for (size_t t = 0; t < NUM_THREADS; t++) assert_int_equal(pthread_join(threads[t], NULL), 0);

  unsigned long live = 0;
  for (size_t t = 0; t < NUM_THREADS; t++) {
    assert_int_equal(workers[t].mismatches, 0);
    for (size_t i = 0; i < PER_THREAD; i++) live += workers[t].live[i];
  }
  assert_int_equal(live_count(), live);
  for (size_t t = 0; t < NUM_THREADS; t++) {
    enum gcap__handle_type type = type_at((unsigned)(t % NUM_TYPES));
    for (size_t i = 0; i < PER_THREAD; i++) {
      assert_int_equal(gcap__registry_has(handle_at(t * PER_THREAD + i), type), workers[t].live[i] != 0);
      gcap__registry_remove(handle_at(t * PER_THREAD + i));
    }
  }
  assert_int_equal(live_count(), 0);
}

int main(void) {
  test_require_backend();
  base_size = gcap__registry_size();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_empty_registry),
      cmocka_unit_test(test_add_has_remove_one),
      cmocka_unit_test(test_types_distinguished),
      cmocka_unit_test(test_many_handles),
      cmocka_unit_test(test_random_small_universe),
      cmocka_unit_test(test_random_large_universe),
      cmocka_unit_test(test_fill_and_drain_cycles),
      cmocka_unit_test(test_table_shrinks_to_nothing),
      cmocka_unit_test(test_add_fails_cleanly_when_table_cannot_grow),
      cmocka_unit_test(test_concurrent_disjoint_sets),
      /* Last: when it fails the table's count is corrupt, and every later test would fail too. */
      cmocka_unit_test(test_same_address_made_again_and_again),
      cmocka_unit_test(test_churn_keeps_the_tables_bounded),
      cmocka_unit_test(test_remove_null_is_harmless),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
