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

/* ---- Fatbins: the device code nvcc embeds (fatbin.c) ---- */

/* The wrapper nvcc passes to __cudaRegisterFatBinary (section .nvFatBinSegment). */
#define GCAP__FATBIN_WRAPPER_MAGIC 0x466243b1u
/* A fatbin container's magic. */
#define GCAP__FATBIN_MAGIC 0xba55ed50u

enum gcap__fatbin_kind { GCAP__FATBIN_PTX = 1, GCAP__FATBIN_ELF = 2 };
enum gcap__fatbin_compression { GCAP__FATBIN_PLAIN, GCAP__FATBIN_LZ4, GCAP__FATBIN_ZSTD };

struct gcap__fatbin_entry {
  unsigned kind;      /* GCAP__FATBIN_PTX, GCAP__FATBIN_ELF, or another kind, listed as is */
  unsigned arch;      /* 75 for sm_75 (ELF) or compute_75 (PTX) */
  unsigned ptx_major; /* the PTX ISA version nvcc records */
  unsigned ptx_minor;
  uint64_t flags;
  enum gcap__fatbin_compression compression;
  const unsigned char *payload; /* inside the caller's fatbin */
  size_t stored_size;           /* bytes of payload that hold the (compressed) code */
  size_t uncompressed_size;     /* when compressed: the size of the code once decompressed */
  unsigned unit;                /* 0: the main fatbin; i + 1: relocatable fatbin i (wrapper version 2) */
};

/* The entries of one registered fatbin; points into the caller's memory, which must outlive it. */
struct gcap__fatbin {
  struct gcap__fatbin_entry *entries;
  size_t count;
  size_t capacity;
  unsigned units; /* 1 + the number of relocatable fatbins */
};

/* Appends the entries of the containers laid back to back in [data, data + size) to *fb, as
 * unit `unit`; trailing zero padding is allowed. Returns 0, or -1 with a message in err (nothing
 * appended) when the bytes are not a well-formed fatbin: nothing outside the range is read.
 * Either way *fb may hold memory: gcap__fatbin_free releases it. */
int gcap__fatbin_parse(struct gcap__fatbin *fb, const void *data, size_t size, unsigned unit, char *err,
                       size_t err_size);

/* Reads what __cudaRegisterFatBinary receives: the wrapper (magic, version 1 or 2) and the
 * container it points to (its size taken from the container's header), and with version 2 also
 * each relocatable fatbin of its NULL-terminated list. Fills *fb (zeroed first); 0 or -1 with err. */
int gcap__fatbin_from_wrapper(struct gcap__fatbin *fb, const void *wrapper, char *err, size_t err_size);

void gcap__fatbin_free(struct gcap__fatbin *fb);

/* The PTX entry that best fits compute capability cc (major * 10 + minor, 90 for 9.0): the
 * highest architecture not above cc, in unit `unit` (any unit when unit < 0). NULL with a
 * message in err when there is none (the message says what the fatbin holds). */
const struct gcap__fatbin_entry *gcap__fatbin_pick_ptx(const struct gcap__fatbin *fb, unsigned cc, int unit, char *err,
                                                       size_t err_size);

/* The text of a PTX entry, decompressed with libzstd or liblz4 loaded at run time when needed:
 * malloc'ed and NUL-terminated, its length without the NUL in *len; NULL with err when the
 * library is missing, the data do not decompress, or memory runs out. */
char *gcap__fatbin_ptx_text(const struct gcap__fatbin_entry *e, size_t *len, char *err, size_t err_size);

/* "PTX compute_80 (zstd)", "ELF sm_90", "ELF sm_80 (zstd)" and the like, into buf. */
void gcap__fatbin_describe(const struct gcap__fatbin_entry *e, char *buf, size_t size);

/* Tests: the shared library dlopen'ed for a compression (NULL restores "libzstd.so.1" /
 * "liblz4.so.1"). */
void gcap__fatbin_set_library(enum gcap__fatbin_compression c, const char *soname);

/* ---- Registration (register.c) ---- */

/* One registered fatbin; __cudaRegisterFatBinary returns &handle. */
struct gcap__cudart_module {
  void *handle; /* first: the handle nvcc keeps points here */
  const void *wrapper;
  struct gcap__fatbin fatbin;
  int bad; /* the fatbin could not be read: error says why */
  char error[256];
  int ended; /* __cudaRegisterFatBinaryEnd was called */
  struct gcap__cudart_module *next;
};

enum gcap__cudart_symbol_kind { GCAP__CUDART_FUNCTION, GCAP__CUDART_VARIABLE, GCAP__CUDART_MANAGED };

/* A kernel (by its host stub) or a variable (by its host shadow) of a module. */
struct gcap__cudart_symbol {
  enum gcap__cudart_symbol_kind kind;
  struct gcap__cudart_module *module;
  const void *host; /* the host stub, the shadow variable, or (managed) the address of its pointer */
  const char *name; /* the PTX name, owned by the program */
  size_t size;      /* variables */
  int constant;     /* __constant__ */
  struct gcap__cudart_symbol *next;
};

/* The kernel or variable registered with this host address; NULL when there is none. */
const struct gcap__cudart_symbol *gcap__cudart_symbol_of(const void *host);

/* The simulated compute capability (major * 10 + minor) from GCAP_CUDART_CC, 90 ("9.0") when it
 * is unset; a value that is not "M.m" is said once on stderr and 9.0 used. */
unsigned gcap__cudart_cc(void);

#endif
