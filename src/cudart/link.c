/* -rdc programs: one PTX module per translation unit, whose kernels call each other's functions.
 * The units are linked by name into one module before gcap loads it. */
#include "cudart.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *gcap__cudart_link_ptx(const char *const *texts, const size_t *lens, size_t n, size_t *len, char *err,
                            size_t err_size) {
  if (n != 1) {
    snprintf(err, err_size, "linking the PTX of %zu -rdc units is not supported yet", n);
    return NULL;
  }
  char *out = malloc(lens[0] + 1);
  if (!out) {
    snprintf(err, err_size, "out of memory");
    return NULL;
  }
  memcpy(out, texts[0], lens[0]);
  out[lens[0]] = '\0';
  *len = lens[0];
  return out;
}
