/* What every runtime function that gcap does not implement (yet) does. */
#include "cudart.h"

#include <driver_types.h>
#include <stdio.h>

int gcap__cudart_unsupported(unsigned char *said, const char *name) {
  if (!__atomic_exchange_n(said, (unsigned char)1, __ATOMIC_RELAXED)) {
    fprintf(stderr, "gcap-cudart: %s is not supported by gcap\n", name);
    gcap__rt_report_unsupported(name);
  }
  return cudaErrorNotSupported;
}
