/*
 * What dot.c shares with debug_dot.c: both write DOT text about a graph.
 */
#ifndef GCAP_IO_DOT_H
#define GCAP_IO_DOT_H

#include <stdio.h>

#include "core/core.h"

/* A host function by symbol name (else address), and a string escaped for "...". */
void gcap__dot_put_host_fn(FILE *out, gcap_host_fn fn);
void gcap__dot_put_escaped(FILE *out, const char *s);

#endif
