/* The runtime stand-in's one header: what its files share. src/cudart uses gcap only through
 * the public headers (include/gcap), as the Python and Rust bindings do. */
#ifndef GCAP_CUDART_CUDART_H
#define GCAP_CUDART_CUDART_H

#include <stddef.h>
#include <stdint.h>

/* Says once per name on stderr "gcap-cudart: NAME is not supported by gcap" (*said records
 * that it was said) and returns cudaErrorNotSupported. The stubs of every runtime function
 * not implemented yet call it. */
int gcap__cudart_unsupported(unsigned char *said, const char *name);

#endif
