/* Fatbins: the wrapper nvcc hands __cudaRegisterFatBinary, the containers it points to, and the
 * entries (PTX or ELF, one per architecture, maybe compressed) inside them. Every size read from
 * the bytes is checked against what encloses it before it is used. */
#include "cudart.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONTAINER_HEADER 16u
#define ENTRY_HEADER_MIN 64u
#define FLAG_LZ4 0x2000u
#define FLAG_ZSTD 0x8000u
/* Relocatable fatbins in one wrapper (version 2), at most: the list has no length of its own. */
#define MAX_UNITS 65536u
/* Decompressed PTX, at most: a size above it is a corrupt header, not a program. */
#define MAX_TEXT ((size_t)1 << 30)

static const char *library_name[3];

__attribute__((format(printf, 3, 4))) static void fail(char *err, size_t size, const char *fmt, ...) {
  if (!err || !size) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, size, fmt, ap);
  va_end(ap);
}

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) { return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static int push(struct gcap__fatbin *fb, const struct gcap__fatbin_entry *e) {
  if (fb->count == fb->capacity) {
    size_t cap = fb->capacity ? fb->capacity * 2 : 8;
    struct gcap__fatbin_entry *n = realloc(fb->entries, cap * sizeof *n);
    if (!n) return -1;
    fb->entries = n;
    fb->capacity = cap;
  }
  fb->entries[fb->count++] = *e;
  return 0;
}

/* The entries of one container whose payload is [p, p + size); `at` is its offset, for messages. */
static int parse_entries(struct gcap__fatbin *fb, const unsigned char *p, size_t size, size_t at, unsigned unit,
                         char *err, size_t err_size) {
  size_t off = 0;
  while (off < size) {
    size_t left = size - off;
    if (left < ENTRY_HEADER_MIN) {
      fail(err, err_size, "fatbin: entry at offset %zu: %zu bytes left, less than an entry header (%u)", at + off, left,
           ENTRY_HEADER_MIN);
      return -1;
    }
    const unsigned char *h = p + off;
    uint32_t header = rd32(h + 4);
    uint64_t payload = rd64(h + 8);
    if (header < ENTRY_HEADER_MIN || header > left) {
      fail(err, err_size, "fatbin: entry at offset %zu: header size %" PRIu32 " is outside [%u, %zu]", at + off, header,
           ENTRY_HEADER_MIN, left);
      return -1;
    }
    if (payload > left - header) {
      fail(err, err_size,
           "fatbin: entry at offset %zu: payload size %" PRIu64 " runs past its container (%zu bytes left)", at + off,
           payload, left - header);
      return -1;
    }
    struct gcap__fatbin_entry e = {
        .kind = rd16(h),
        .arch = rd32(h + 28),
        .ptx_minor = rd16(h + 24),
        .ptx_major = rd16(h + 26),
        .flags = rd64(h + 40),
        .payload = h + header,
        .stored_size = (size_t)payload,
        .unit = unit,
    };
    uint32_t compressed = rd32(h + 16);
    uint64_t full = rd64(h + 56);
    if ((e.flags & FLAG_LZ4) && (e.flags & FLAG_ZSTD)) {
      fail(err, err_size, "fatbin: entry at offset %zu: flags 0x%" PRIx64 " name both LZ4 and zstd", at + off, e.flags);
      return -1;
    }
    if (e.flags & (FLAG_LZ4 | FLAG_ZSTD)) {
      e.compression = e.flags & FLAG_LZ4 ? GCAP__FATBIN_LZ4 : GCAP__FATBIN_ZSTD;
      if (compressed == 0 || compressed > payload) {
        fail(err, err_size, "fatbin: entry at offset %zu: compressed size %" PRIu32 " is outside [1, %" PRIu64 "]",
             at + off, compressed, payload);
        return -1;
      }
      if (full == 0 || full > MAX_TEXT) {
        fail(err, err_size, "fatbin: entry at offset %zu: uncompressed size %" PRIu64 " is outside [1, %zu]", at + off,
             full, MAX_TEXT);
        return -1;
      }
      e.stored_size = compressed;
      e.uncompressed_size = (size_t)full;
    }
    if (push(fb, &e)) {
      fail(err, err_size, "fatbin: out of memory listing the entries");
      return -1;
    }
    off += header + (size_t)payload;
  }
  return 0;
}

static int parse(struct gcap__fatbin *fb, const unsigned char *p, size_t size, unsigned unit, char *err,
                 size_t err_size) {
  size_t off = 0;
  int containers = 0;
  while (off < size) {
    size_t left = size - off;
    if (containers) { /* after a container: zeros up to 8-byte alignment, or to the end */
      while (off < size && off % 8 && p[off] == 0) off++;
      size_t z = off;
      while (z < size && p[z] == 0) z++;
      if (z == size) break;
      left = size - off;
    }
    if (left < CONTAINER_HEADER) {
      fail(err, err_size, "fatbin: container at offset %zu: %zu bytes, less than a container header (%u)", off, left,
           CONTAINER_HEADER);
      return -1;
    }
    const unsigned char *h = p + off;
    uint32_t magic = rd32(h);
    uint16_t version = rd16(h + 4), header = rd16(h + 6);
    uint64_t payload = rd64(h + 8);
    if (magic != GCAP__FATBIN_MAGIC) {
      fail(err, err_size, "fatbin: container at offset %zu: bad magic 0x%08" PRIx32 " (expected 0x%08x)", off, magic,
           GCAP__FATBIN_MAGIC);
      return -1;
    }
    if (version != 1) {
      fail(err, err_size, "fatbin: container at offset %zu: version %u is not supported (expected 1)", off,
           (unsigned)version);
      return -1;
    }
    if (header < CONTAINER_HEADER || header > left) {
      fail(err, err_size, "fatbin: container at offset %zu: header size %u is outside [%u, %zu]", off, (unsigned)header,
           CONTAINER_HEADER, left);
      return -1;
    }
    if (payload > left - header) {
      fail(err, err_size,
           "fatbin: container at offset %zu: payload size %" PRIu64 " runs past the end (%zu bytes left)", off, payload,
           left - header);
      return -1;
    }
    if (parse_entries(fb, h + header, (size_t)payload, off + header, unit, err, err_size)) return -1;
    off += header + (size_t)payload;
    containers++;
  }
  if (!containers) {
    fail(err, err_size, "fatbin: empty (0 bytes)");
    return -1;
  }
  return 0;
}

int gcap__fatbin_parse(struct gcap__fatbin *fb, const void *data, size_t size, unsigned unit, char *err,
                       size_t err_size) {
  if (!fb || (!data && size)) {
    fail(err, err_size, "fatbin: %s is NULL", fb ? "data" : "fb");
    return -1;
  }
  size_t before = fb->count;
  if (parse(fb, data, size, unit, err, err_size)) {
    fb->count = before; /* nothing appended */
    return -1;
  }
  if (fb->units <= unit) fb->units = unit + 1;
  return 0;
}

/* One container given by its address alone: its size comes from its own header. */
static int parse_one(struct gcap__fatbin *fb, const unsigned char *p, unsigned unit, char *err, size_t err_size) {
  if (rd32(p) != GCAP__FATBIN_MAGIC) {
    fail(err, err_size, "fatbin: %s at %p: bad magic 0x%08" PRIx32 " (expected 0x%08x)",
         unit ? "relocatable fatbin" : "container", (const void *)p, rd32(p), GCAP__FATBIN_MAGIC);
    return -1;
  }
  uint64_t size = (uint64_t)rd16(p + 6) + rd64(p + 8);
  if (size > SIZE_MAX / 2) {
    fail(err, err_size, "fatbin: container at %p: payload size %" PRIu64 " is impossible", (const void *)p,
         rd64(p + 8));
    return -1;
  }
  return gcap__fatbin_parse(fb, p, (size_t)size, unit, err, err_size);
}

int gcap__fatbin_from_wrapper(struct gcap__fatbin *fb, const void *wrapper, char *err, size_t err_size) {
  if (!fb) {
    fail(err, err_size, "fatbin: fb is NULL");
    return -1;
  }
  memset(fb, 0, sizeof *fb);
  if (!wrapper) {
    fail(err, err_size, "fatbin: the wrapper is NULL");
    return -1;
  }
  struct wrapper {
    uint32_t magic;
    uint32_t version;
    const void *data;
    const void *const *fatbins;
  } w;
  memcpy(&w, wrapper, sizeof w);
  if (w.magic != GCAP__FATBIN_WRAPPER_MAGIC) {
    fail(err, err_size, "fatbin: wrapper at %p: bad magic 0x%08" PRIx32 " (expected 0x%08x)", wrapper, w.magic,
         GCAP__FATBIN_WRAPPER_MAGIC);
    return -1;
  }
  if (w.version != 1 && w.version != 2) {
    fail(err, err_size, "fatbin: wrapper at %p: version %" PRIu32 " is not supported (expected 1 or 2)", wrapper,
         w.version);
    return -1;
  }
  if (!w.data) {
    fail(err, err_size, "fatbin: wrapper at %p: its data pointer is NULL", wrapper);
    return -1;
  }
  if (parse_one(fb, w.data, 0, err, err_size)) goto bad;
  if (w.version == 2 && w.fatbins) {
    for (unsigned i = 0; w.fatbins[i]; i++) {
      if (i == MAX_UNITS) {
        fail(err, err_size, "fatbin: wrapper at %p: more than %u relocatable fatbins", wrapper, MAX_UNITS);
        goto bad;
      }
      if (parse_one(fb, w.fatbins[i], i + 1, err, err_size)) goto bad;
    }
  }
  return 0;
bad:
  gcap__fatbin_free(fb);
  return -1;
}

void gcap__fatbin_free(struct gcap__fatbin *fb) {
  if (!fb) return;
  free(fb->entries);
  memset(fb, 0, sizeof *fb);
}

static const char *compression_name(enum gcap__fatbin_compression c) {
  return c == GCAP__FATBIN_LZ4 ? "LZ4" : c == GCAP__FATBIN_ZSTD ? "zstd" : "plain";
}

void gcap__fatbin_describe(const struct gcap__fatbin_entry *e, char *buf, size_t size) {
  if (e->kind == GCAP__FATBIN_PTX)
    snprintf(buf, size, "PTX compute_%u (%s)", e->arch, compression_name(e->compression));
  else if (e->kind == GCAP__FATBIN_ELF && e->compression == GCAP__FATBIN_PLAIN)
    snprintf(buf, size, "ELF sm_%u", e->arch);
  else if (e->kind == GCAP__FATBIN_ELF)
    snprintf(buf, size, "ELF sm_%u (%s)", e->arch, compression_name(e->compression));
  else snprintf(buf, size, "kind %u arch %u", e->kind, e->arch);
}

/* Appends ", what" to the list in buf (used for messages). */
static void list_add(char *buf, size_t size, const char *what) {
  size_t n = strlen(buf);
  if (n < size) snprintf(buf + n, size - n, "%s%s", n ? ", " : "", what);
}

const struct gcap__fatbin_entry *gcap__fatbin_pick_ptx(const struct gcap__fatbin *fb, unsigned cc, int unit, char *err,
                                                       size_t err_size) {
  const struct gcap__fatbin_entry *best = NULL;
  char ptx[256] = "", elf[256] = "", one[64];
  for (size_t i = 0; fb && i < fb->count; i++) {
    const struct gcap__fatbin_entry *e = &fb->entries[i];
    if (unit >= 0 && e->unit != (unsigned)unit) continue;
    if (e->kind == GCAP__FATBIN_PTX) {
      snprintf(one, sizeof one, "compute_%u", e->arch);
      list_add(ptx, sizeof ptx, one);
      if (e->arch <= cc && (!best || e->arch > best->arch)) best = e;
    } else if (e->kind == GCAP__FATBIN_ELF) {
      snprintf(one, sizeof one, "sm_%u", e->arch);
      list_add(elf, sizeof elf, one);
    }
  }
  if (best) return best;
  if (ptx[0])
    fail(err, err_size, "fatbin: its PTX is for %s; none runs on compute capability %u.%u", ptx, cc / 10, cc % 10);
  else
    fail(err, err_size,
         "fatbin: no PTX, only machine code (ELF: %s); gcap runs kernels from PTX: build with -arch=sm_XX or "
         "-gencode arch=compute_XX,code=compute_XX",
         elf[0] ? elf : "none");
  return NULL;
}

void gcap__fatbin_set_library(enum gcap__fatbin_compression c, const char *soname) {
  if (c == GCAP__FATBIN_LZ4 || c == GCAP__FATBIN_ZSTD) library_name[c] = soname;
}

typedef size_t (*zstd_decompress_fn)(void *, size_t, const void *, size_t);
typedef unsigned (*zstd_is_error_fn)(size_t);
typedef const char *(*zstd_error_name_fn)(size_t);
typedef int (*lz4_decompress_fn)(const char *, char *, int, int);

/* Decompresses e's code into out (e->uncompressed_size bytes); 0 or -1 with err. */
static int decompress(const struct gcap__fatbin_entry *e, char *out, char *err, size_t err_size) {
  const char *name = library_name[e->compression];
  if (!name) name = e->compression == GCAP__FATBIN_LZ4 ? "liblz4.so.1" : "libzstd.so.1";
  const char *what = compression_name(e->compression);
  void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fail(err, err_size,
         "fatbin: the PTX for compute_%u is %s-compressed and %s cannot be loaded (%s); install it (Debian: %s) "
         "or build with -compress-mode=none",
         e->arch, what, name, dlerror(), e->compression == GCAP__FATBIN_LZ4 ? "liblz4-1" : "libzstd1");
    return -1;
  }
  int rc = -1;
  if (e->compression == GCAP__FATBIN_ZSTD) {
    zstd_decompress_fn dec;
    zstd_is_error_fn is_error;
    zstd_error_name_fn error_name;
    *(void **)&dec = dlsym(lib, "ZSTD_decompress");
    *(void **)&is_error = dlsym(lib, "ZSTD_isError");
    *(void **)&error_name = dlsym(lib, "ZSTD_getErrorName");
    if (!dec || !is_error || !error_name) {
      fail(err, err_size, "fatbin: %s lacks ZSTD_decompress, ZSTD_isError or ZSTD_getErrorName", name);
    } else {
      size_t n = dec(out, e->uncompressed_size, e->payload, e->stored_size);
      if (is_error(n))
        fail(err, err_size, "fatbin: the zstd-compressed PTX for compute_%u does not decompress: %s", e->arch,
             error_name(n));
      else if (n != e->uncompressed_size)
        fail(err, err_size, "fatbin: the zstd-compressed PTX for compute_%u gave %zu bytes, not %zu", e->arch, n,
             e->uncompressed_size);
      else rc = 0;
    }
  } else {
    lz4_decompress_fn dec;
    *(void **)&dec = dlsym(lib, "LZ4_decompress_safe");
    if (!dec) {
      fail(err, err_size, "fatbin: %s lacks LZ4_decompress_safe", name);
    } else if (e->stored_size > INT32_MAX || e->uncompressed_size > INT32_MAX) {
      fail(err, err_size, "fatbin: the LZ4-compressed PTX for compute_%u is too large for LZ4", e->arch);
    } else {
      int n = dec((const char *)e->payload, out, (int)e->stored_size, (int)e->uncompressed_size);
      if (n < 0 || (size_t)n != e->uncompressed_size)
        fail(err, err_size, "fatbin: the LZ4-compressed PTX for compute_%u does not decompress (%d)", e->arch, n);
      else rc = 0;
    }
  }
  dlclose(lib);
  return rc;
}

char *gcap__fatbin_ptx_text(const struct gcap__fatbin_entry *e, size_t *len, char *err, size_t err_size) {
  if (!e || e->kind != GCAP__FATBIN_PTX) {
    fail(err, err_size, "fatbin: %s", e ? "the entry is not PTX" : "the entry is NULL");
    return NULL;
  }
  size_t n = e->compression == GCAP__FATBIN_PLAIN ? e->stored_size : e->uncompressed_size;
  char *text = malloc(n + 1);
  if (!text) {
    fail(err, err_size, "fatbin: out of memory for %zu bytes of PTX", n + 1);
    return NULL;
  }
  if (e->compression == GCAP__FATBIN_PLAIN) {
    memcpy(text, e->payload, n);
  } else if (decompress(e, text, err, err_size)) {
    free(text);
    return NULL;
  }
  text[n] = '\0';
  n = strlen(text); /* the text ends at its first NUL: the padding after it is not PTX */
  if (n == 0) {
    fail(err, err_size, "fatbin: the PTX for compute_%u is empty", e->arch);
    free(text);
    return NULL;
  }
  if (len) *len = n;
  return text;
}
