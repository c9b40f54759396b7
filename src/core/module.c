#include <string.h>

#include "dispatch.h"
#include "ptx/ptx.h"
#include "ptx/ptx.h"
#include "capture.h"
#include "stream_race.h"

#define MAX_DYNAMIC_SHARED_MEM 49152u /* CUDA's default limit without an opt-in attribute */

static gcap_status check_def(const gcap_kernel_def *defs, size_t i) {
  const gcap_kernel_def *k = &defs[i];
  if (!k->name || !*k->name)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "desc->kernels[%zu].name is %s", i, k->name ? "empty" : "NULL");
  for (size_t j = 0; j < i; j++)
    if (strcmp(defs[j].name, k->name) == 0)
      return gcap__fail(GCAP_ERROR_INVALID_VALUE, "desc->kernels[%zu].name \"%s\" repeats kernels[%zu]", i, k->name, j);
  if (k->num_params > 0 && !k->param_sizes)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "desc->kernels[%zu] (\"%s\") has %zu params but param_sizes is NULL", i,
                      k->name, k->num_params);
  for (size_t p = 0; p < k->num_params; p++) {
    if (k->param_sizes[p] == 0 || k->param_sizes[p] > 4096)
      return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                        "desc->kernels[%zu] (\"%s\") param_sizes[%zu] is %zu (must be 1..4096)", i, k->name, p,
                        k->param_sizes[p]);
    if (k->param_access && (unsigned)k->param_access[p] > GCAP_ACCESS_READ_WRITE)
      return gcap__fail(GCAP_ERROR_INVALID_VALUE, "desc->kernels[%zu] (\"%s\") param_access[%zu] is %d", i, k->name, p,
                        (int)k->param_access[p]);
  }
  return GCAP_SUCCESS;
}

static gcap_status check_desc(const gcap_module_desc *d) {
  if (!d) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "desc is NULL");
  if (d->num_kernels > 0 && !d->kernels)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "desc->kernels is NULL but num_kernels is %zu", d->num_kernels);
  if (d->image_size > 0 && !d->image)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "desc->image is NULL but image_size > 0");
  if (d->image && d->source)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "desc->image and desc->source are both given (one or the other)");
  if (d->num_options > 0 && !d->options)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "desc->options is NULL but num_options is %zu", d->num_options);
  for (size_t i = 0; i < d->num_options; i++)
    if (!d->options[i]) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "desc->options[%zu] is NULL", i);
  if (d->num_options > 0 && !d->source)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "desc->options are given without desc->source (they are NVRTC's)");
  if (d->name && !d->source)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "desc->name is given without desc->source (it names the source)");
  if (d->name && !*d->name) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "desc->name is empty");
  for (size_t i = 0; i < d->num_kernels; i++) {
    gcap_status st = check_def(d->kernels, i);
    if (st != GCAP_SUCCESS) return st;
  }
  return GCAP_SUCCESS;
}

static size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* Copies one definition; argument values get slots aligned as the C ABI would align them. */
static int copy_def(struct gcap_kernel *k, const gcap_kernel_def *def) {
  size_t n = def->num_params;
  k->name = gcap__strdup(def->name);
  k->param_sizes = gcap__calloc(n, sizeof *k->param_sizes);
  k->param_offsets = gcap__calloc(n, sizeof *k->param_offsets);
  k->param_access = gcap__calloc(n, sizeof *k->param_access);
  if (!k->name || !k->param_sizes || !k->param_offsets || !k->param_access) return -1;
  size_t offset = 0;
  for (size_t p = 0; p < n; p++) {
    size_t size = def->param_sizes[p];
    size_t align = size >= 16 ? 16 : size >= 8 ? 8 : size >= 4 ? 4 : size >= 2 ? 2 : 1;
    offset = align_up(offset, align);
    k->param_sizes[p] = size;
    k->param_offsets[p] = offset;
    k->param_access[p] = def->param_access ? def->param_access[p] : GCAP_ACCESS_UNKNOWN;
    offset += size;
  }
  k->args_bytes = offset;
  k->info = (struct gcap__kernel_info){k->name, def->sim_fn, def->sim_block_fn, n, k->param_sizes, NULL};
  return 0;
}

static void free_kernel(struct gcap_kernel *k) {
  gcap__free(k->name);
  gcap__free(k->param_sizes);
  gcap__free(k->param_offsets);
  gcap__free(k->param_access);
}

static void free_kernels(struct gcap_module *m) {
  for (size_t i = 0; i < m->num_kernels; i++) free_kernel(&m->kernels[i]);
  gcap__free(m->kernels);
  while (m->found) {
    struct gcap_kernel *k = m->found;
    m->found = k->next_found;
    free_kernel(k);
    gcap__free(k);
  }
}

static void unregister_kernels(struct gcap_module *m, size_t count) {
  for (size_t i = 0; i < count; i++) gcap__registry_remove(&m->kernels[i]);
  for (struct gcap_kernel *k = m->found; k; k = k->next_found) gcap__registry_remove(k);
}

/* A defined kernel on a backend that finds kernels by name: its handle, and sizes that agree. */
static gcap_status bind_defined(struct gcap_module *m, struct gcap_kernel *k) {
  struct gcap__kernel_found f = {0};
  gcap_status st = gcap__backend_kernel_find(m->ctx, m->impl, k->name, &f);
  if (st == GCAP_ERROR_NOT_FOUND && m->ctx->ops->runs_definitions) return GCAP_SUCCESS; /* its CPU version runs */
  if (st == GCAP_ERROR_NOT_FOUND)
    return gcap__fail_context(st, "desc->kernels names \"%s\", which the image does not contain", k->name);
  if (st != GCAP_SUCCESS) return st;
  k->info.impl = f.fn;
  if (f.sizes_known && f.num_params != k->info.num_params)
    st = gcap__fail(GCAP_ERROR_INVALID_VALUE,
                    "kernel \"%s\" takes %zu parameters in the image but desc->kernels gives %zu", k->name,
                    f.num_params, k->info.num_params);
  for (size_t p = 0; st == GCAP_SUCCESS && f.sizes_known && p < f.num_params; p++)
    if (f.param_sizes[p] != k->param_sizes[p])
      st = gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "kernel \"%s\" parameter %zu is %zu bytes in the image but desc->kernels says %zu", k->name, p,
                      f.param_sizes[p], k->param_sizes[p]);
  gcap__free(f.param_sizes);
  return st;
}

static gcap_status bind_all_defined(struct gcap_module *m) {
  gcap_status st = GCAP_SUCCESS;
  for (size_t i = 0; st == GCAP_SUCCESS && m->ctx->ops->kernel_find && i < m->num_kernels; i++)
    st = bind_defined(m, &m->kernels[i]);
  return st;
}

/* A kernel the desc did not define, found by the backend (CUDA): the driver's sizes, no CPU version. */
static gcap_status adopt_found(struct gcap_module *m, const char *name, struct gcap_kernel **out) {
  struct gcap__kernel_found f = {0};
  gcap_status st = gcap__backend_kernel_find(m->ctx, m->impl, name, &f);
  if (st != GCAP_SUCCESS) return st;
  struct gcap_kernel *k = NULL;
  if (!f.sizes_known)
    st = gcap__fail(GCAP_ERROR_NOT_SUPPORTED,
                    "the driver cannot tell the parameter sizes of kernel \"%s\" (cuFuncGetParamInfo needs CUDA 12.4); "
                    "define it in desc->kernels",
                    name);
  gcap_kernel_def def = {name, NULL, f.num_params, f.param_sizes, NULL};
  if (st == GCAP_SUCCESS && (!(k = gcap__calloc(1, sizeof *k)) || copy_def(k, &def) != 0))
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for kernel \"%s\"", name);
  if (st == GCAP_SUCCESS && gcap__registry_add(k, GCAP__H_KERNEL) != 0)
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to register kernel \"%s\"", name);
  gcap__free(f.param_sizes);
  if (st != GCAP_SUCCESS) {
    if (k) free_kernel(k);
    gcap__free(k);
    return st;
  }
  k->module = m;
  k->info.impl = f.fn;
  k->next_found = m->found;
  m->found = k;
  *out = k;
  return GCAP_SUCCESS;
}

static gcap_status build_module(struct gcap_module *m, const gcap_module_desc *d) {
  m->kernels = d->num_kernels ? gcap__calloc(d->num_kernels, sizeof *m->kernels) : NULL;
  if (d->num_kernels && !m->kernels) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the module's kernels");
  m->num_kernels = d->num_kernels;
  for (size_t i = 0; i < d->num_kernels; i++) {
    m->kernels[i].module = m;
    if (copy_def(&m->kernels[i], &d->kernels[i]) != 0)
      return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to copy kernel \"%s\"", d->kernels[i].name);
  }
  for (size_t i = 0; i < d->num_kernels; i++) {
    if (gcap__registry_add(&m->kernels[i], GCAP__H_KERNEL) != 0) {
      unregister_kernels(m, i);
      return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to register the kernels");
    }
  }
  return GCAP_SUCCESS;
}

bool gcap__image_is_ptx(const void *image, size_t size) {
  const char *text = image;
  if (!text) return false;
  size_t n = size ? strnlen(text, size) : strlen(text);
  if (size && n + 1 < size) return false; /* a NUL inside: a binary image */
  for (size_t i = 0; i + 8 <= n; i++)
    if (text[i] == '.' && memcmp(text + i, ".version", 8) == 0) return true;
  return false;
}

/* A cubin (ELF) or a fatbin: what CUDA's driver does not take for PTX text. */
static bool image_is_binary(const void *image, size_t size) {
  static const unsigned char elf[4] = {0x7f, 'E', 'L', 'F'}, fatbin[4] = {0x50, 0xed, 0x55, 0xba};
  if (!image || (size ? size : strnlen(image, 4)) < 4) return false;
  return memcmp(image, elf, 4) == 0 || memcmp(image, fatbin, 4) == 0;
}

/* The PTX text a desc gives: its image, or NVRTC's output for its source (kept in m). */
static gcap_status ptx_text(struct gcap_module *m, const gcap_module_desc *d, const char **text, size_t *size) {
  *text = NULL;
  *size = 0;
  if (d->source) {
    gcap_status st = gcap__nvrtc_compile(d->source, d->name, d->options, d->num_options, &m->compiled, size);
    if (st == GCAP_SUCCESS) *text = m->compiled;
    return st;
  }
  /* The driver reads any other image as PTX: without kernel definitions to fall back on, one that
   * is not PTX text is bad PTX on either backend. */
  if (d->image && d->num_kernels == 0 && !image_is_binary(d->image, d->image_size) &&
      !gcap__image_is_ptx(d->image, d->image_size))
    return gcap__fail(GCAP_ERROR_INVALID_PTX,
                      "desc->image is not PTX text (no .version directive before a NUL), a cubin (ELF) or a fatbin");
  if (!gcap__image_is_ptx(d->image, d->image_size)) return GCAP_SUCCESS;
  *text = d->image;
  *size = d->image_size ? d->image_size : strlen(d->image) + 1;
  return GCAP_SUCCESS;
}

/* The declarations of the PTX (on every backend: kernels and variables are listed from them). */
static gcap_status parse_decls(struct gcap_module *m, const char *text, size_t size) {
  struct ptx_error err;
  m->decls = ptx_parse(text, size, PTX_PARSE_DECLS, &err);
  if (m->decls) return GCAP_SUCCESS;
  if (strcmp(err.message, "out of memory") == 0)
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to read the PTX's declarations");
  return gcap__fail(GCAP_ERROR_INVALID_PTX, "PTX line %u, column %u: %s", err.line, err.column, err.message);
}

/* How each entry of the PTX uses its pointer parameters (race analysis), read from its body
 * (ptx_param_access); left UNKNOWN where the body cannot be read in full or memory runs out. */
static void infer_access(const char *text, size_t size, const struct ptx_module *decls, gcap_param_access *access) {
  struct ptx_error err;
  struct ptx_module *full = ptx_parse(text, size, PTX_PARSE_FULL, &err);
  if (!full) return;
  size_t p = 0;
  for (size_t i = 0; i < decls->num_funcs; i++) {
    const struct ptx_func *d = &decls->funcs[i];
    if (!d->is_entry || !d->is_visible) continue;
    const struct ptx_func *f = ptx_find_func(full, d->name);
    if (f && f->is_entry && f->num_params == d->num_params) (void)ptx_param_access(full, f, access + p);
    p += d->num_params;
  }
  ptx_module_free(full);
}

/* Definitions for the PTX's .visible .entry functions, for a desc that gives none; their
 * param_access is inferred (gcap_kernel.access_inferred). */
static gcap_status defs_from_ptx(const char *text, size_t size, const struct ptx_module *pm, gcap_kernel_def **defs,
                                 size_t **sizes, gcap_param_access **access, size_t *count) {
  size_t n = 0, params = 0;
  for (size_t i = 0; i < pm->num_funcs; i++)
    if (pm->funcs[i].is_entry && pm->funcs[i].is_visible) n++, params += pm->funcs[i].num_params;
  *defs = gcap__calloc(n + 1, sizeof **defs);
  *sizes = gcap__calloc(params + 1, sizeof **sizes);
  *access = gcap__calloc(params + 1, sizeof **access); /* zeros: UNKNOWN */
  if (!*defs || !*sizes || !*access) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the PTX's kernels");
  if (n > 0) infer_access(text, size, pm, *access);
  size_t k = 0, p = 0;
  for (size_t i = 0; i < pm->num_funcs; i++) {
    const struct ptx_func *f = &pm->funcs[i];
    if (!f->is_entry || !f->is_visible) continue;
    (*defs)[k] = (gcap_kernel_def){f->name, NULL, f->num_params, *sizes + p, *access + p, NULL};
    for (size_t j = 0; j < f->num_params; j++) (*sizes)[p++] = f->params[j].size ? f->params[j].size : 1;
    k++;
  }
  *count = n;
  return GCAP_SUCCESS;
}

/* Module variables enter the allocation table, so that copies and kernels may use them. */
static gcap_status register_vars(struct gcap_module *m) {
  const struct ptx_module *pm = m->decls;
  if (!pm || !m->ctx->ops->module_global) return GCAP_SUCCESS;
  m->vars = gcap__calloc(pm->num_vars + 1, sizeof *m->vars);
  if (!m->vars) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the module's variables");
  for (size_t i = 0; i < pm->num_vars; i++) {
    const struct ptx_var *v = &pm->vars[i];
    if ((v->space != PTX_SPACE_GLOBAL && v->space != PTX_SPACE_CONST) || v->is_extern) continue;
    void *addr = NULL;
    size_t bytes = 0;
    gcap_status st = m->ctx->ops->module_global(m->ctx->backend, m->impl, v->name, &addr, &bytes);
    if (st == GCAP_ERROR_NOT_FOUND) continue;
    if (st != GCAP_SUCCESS) return st;
    if (gcap__alloc_table_insert_module(m->ctx, addr, bytes ? bytes : 1, v->is_managed) != 0)
      return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to enter module variable \"%s\"", v->name);
    m->vars[m->num_vars++] = addr;
  }
  return GCAP_SUCCESS;
}

static void forget_vars(struct gcap_module *m) {
  for (size_t i = 0; i < m->num_vars; i++) gcap__alloc_table_erase(m->ctx, m->vars[i]);
  gcap__free(m->vars);
  m->vars = NULL;
  m->num_vars = 0;
}

static void free_module(struct gcap_module *m) {
  free_kernels(m);
  ptx_module_free(m->decls);
  gcap__free(m->compiled);
  gcap__free(m);
}

/* The desc the backend sees: the PTX compiled from a source, the PTX's kernels when none are defined. */
static gcap_status prepare_desc(struct gcap_module *m, const gcap_module_desc *d, gcap_module_desc *out,
                                gcap_kernel_def **defs, size_t **sizes, gcap_param_access **access) {
  const char *text = NULL;
  size_t size = 0;
  *out = *d;
  gcap_status st = ptx_text(m, d, &text, &size);
  if (st == GCAP_SUCCESS && text) {
    st = parse_decls(m, text, size);
    /* PTX whose declarations gcap cannot read is still the driver's to load (it finds kernels by name). */
    if (st == GCAP_ERROR_INVALID_PTX && !m->ctx->ops->runs_definitions) {
      gcap__restore_message("");
      st = GCAP_SUCCESS;
    }
  }
  if (st != GCAP_SUCCESS) return st;
  if (text) {
    out->image = text;
    out->image_size = size;
    out->source = NULL;
    out->options = NULL;
    out->num_options = 0;
  }
  if (d->num_kernels == 0 && m->decls) {
    st = defs_from_ptx(text, size, m->decls, defs, sizes, access, &out->num_kernels);
    out->kernels = *defs;
  }
  return st;
}

gcap_status gcap_module_load(gcap_context *ctx, const gcap_module_desc *d, gcap_module **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st == GCAP_SUCCESS) st = check_desc(d);
  if (st == GCAP_SUCCESS && !out) st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  struct gcap_module *m = gcap__calloc(1, sizeof *m);
  if (!m) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the module");
  m->ctx = ctx;
  m->refs = 1;
  gcap_module_desc desc;
  gcap_kernel_def *defs = NULL;
  size_t *sizes = NULL;
  gcap_param_access *access = NULL;
  st = prepare_desc(m, d, &desc, &defs, &sizes, &access); /* NVRTC may take a while: before the lock */
  gcap__lock(ctx);
  if (st == GCAP_SUCCESS) st = gcap__capture_prohibit("ctx", ctx);
  if (st == GCAP_SUCCESS) st = build_module(m, &desc);
  for (size_t i = 0; st == GCAP_SUCCESS && defs && i < m->num_kernels; i++) m->kernels[i].access_inferred = true;
  bool loaded = false;
  if (st == GCAP_SUCCESS) loaded = (st = gcap__backend_module_load(ctx, &desc, &m->impl)) == GCAP_SUCCESS;
  if (st == GCAP_SUCCESS) st = bind_all_defined(m);
  if (st == GCAP_SUCCESS) st = register_vars(m);
  if (st == GCAP_SUCCESS && gcap__registry_add(m, GCAP__H_MODULE) != 0)
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to register the module");
  if (st == GCAP_SUCCESS) {
    gcap__list_push(&ctx->modules, &m->link);
  } else {
    forget_vars(m);
    if (loaded) gcap__backend_module_unload(ctx, m->impl);
    if (m->kernels && gcap__registry_has(&m->kernels[0], GCAP__H_KERNEL)) unregister_kernels(m, m->num_kernels);
    free_module(m);
    m = NULL;
  }
  gcap__unlock(ctx);
  gcap__free(defs);
  gcap__free(sizes);
  gcap__free(access);
  if (m) *out = m;
  return st;
}

void gcap__module_retain(struct gcap_module *m) { m->refs++; }

void gcap__module_release(struct gcap_module *m) {
  if (--m->refs > 0) return;
  gcap__list_unlink(&m->link);
  forget_vars(m);
  gcap__backend_module_unload(m->ctx, m->impl);
  free_module(m);
}

void gcap__module_unload_locked(struct gcap_module *m) {
  if (m->unloaded) return;
  m->unloaded = true;
  gcap__registry_remove(m);
  unregister_kernels(m, m->num_kernels);
  gcap__module_release(m);
}

gcap_status gcap_module_unload(gcap_module *m) {
  GCAP_ENTER_RELEASE();
  gcap_status st = GCAP_SUCCESS;
  if (!m || !gcap__registry_has(m, GCAP__H_MODULE))
    return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "module %p is NULL or already unloaded", (void *)m);
  if ((st = gcap__refuse_in_host_callback()) != GCAP_SUCCESS) return st;
  struct gcap_context *ctx = m->ctx;
  gcap__lock(ctx);
  st = gcap__capture_prohibit("module", m);
  if (st == GCAP_SUCCESS) st = gcap__backend_before_release(ctx); /* queued kernels may still run its code */
  if (st == GCAP_SUCCESS) gcap__module_unload_locked(m);
  gcap__unlock(ctx);
  return st;
}

static struct gcap_kernel *find_in(struct gcap_module *m, const char *name) {
  for (size_t i = 0; i < m->num_kernels; i++)
    if (strcmp(m->kernels[i].name, name) == 0) return &m->kernels[i];
  for (struct gcap_kernel *k = m->found; k; k = k->next_found)
    if (strcmp(k->name, name) == 0) return k;
  return NULL;
}

/* A kernel of m by name: already known, or found by the backend now. */
static gcap_status lookup(struct gcap_module *m, const char *name, struct gcap_kernel **out) {
  *out = find_in(m, name);
  if (*out) return GCAP_SUCCESS;
  if (!m->ctx->ops->kernel_find) return GCAP_ERROR_NOT_FOUND;
  return adopt_found(m, name, out);
}

gcap_status gcap__find_kernel(struct gcap_context *ctx, const char *name, struct gcap_kernel **out) {
  for (struct gcap__link *l = ctx->modules.next; l != &ctx->modules; l = l->next) {
    struct gcap_module *m = GCAP__CONTAINER(l, struct gcap_module, link);
    gcap_status st = m->unloaded ? GCAP_ERROR_NOT_FOUND : lookup(m, name, out);
    if (st != GCAP_ERROR_NOT_FOUND) return st;
  }
  return gcap__fail(GCAP_ERROR_NOT_FOUND, "no loaded module has a kernel \"%s\"", name);
}

gcap_status gcap_module_get_kernel(gcap_module *m, const char *name, gcap_kernel **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  if (!m || !gcap__registry_has(m, GCAP__H_MODULE))
    return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "module %p is NULL or unloaded", (void *)m);
  if (!name) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "name is NULL");
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  gcap__lock(m->ctx);
  struct gcap_kernel *k = NULL;
  gcap_status st = lookup(m, name, &k);
  gcap__unlock(m->ctx);
  if (st == GCAP_ERROR_NOT_FOUND)
    return gcap__fail(GCAP_ERROR_NOT_FOUND, "module %p has no kernel \"%s\"", (void *)m, name);
  if (st == GCAP_SUCCESS) *out = k;
  return st;
}

gcap_status gcap_context_find_kernel(gcap_context *ctx, const char *name, gcap_kernel **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st != GCAP_SUCCESS) return st;
  if (!name) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "name is NULL");
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  gcap__lock(ctx);
  struct gcap_kernel *k = NULL;
  st = gcap__find_kernel(ctx, name, &k);
  gcap__unlock(ctx);
  if (st == GCAP_SUCCESS) *out = k;
  return st;
}

gcap_status gcap_module_get_global(gcap_module *m, const char *name, void **dptr, size_t *bytes) {
  GCAP_ENTER(); /* outputs are written only on success */
  if (!m || !gcap__registry_has(m, GCAP__H_MODULE))
    return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "module %p is NULL or unloaded", (void *)m);
  if (!name) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "name is NULL");
  if (!dptr) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "dptr is NULL");
  gcap__lock(m->ctx);
  gcap_status st = GCAP_ERROR_NOT_FOUND;
  void *addr = NULL;
  size_t size = 0;
  if (m->ctx->ops->module_global) st = m->ctx->ops->module_global(m->ctx->backend, m->impl, name, &addr, &size);
  gcap__unlock(m->ctx);
  if (st == GCAP_ERROR_NOT_FOUND)
    return gcap__fail(st, "module %p has no .global or .const variable \"%s\"", (void *)m, name);
  if (st != GCAP_SUCCESS) return st;
  *dptr = addr;
  if (bytes) *bytes = size;
  return GCAP_SUCCESS;
}

const char *gcap_kernel_name(const gcap_kernel *k) {
  GCAP_ENTER();
  if (gcap__check_kernel(k, "kernel") != GCAP_SUCCESS) return NULL;
  return k->name;
}

#define DEFAULT_NUM_REGS 32 /* with 2048 threads an SM, 64 Ki registers never bind before threads do */

/* The product of a .maxntid or .reqntid triple; 0 when it is not given. */
static int ntid_product(const unsigned n[3]) {
  if (!n[0]) return 0;
  unsigned long long p = (unsigned long long)n[0] * (n[1] ? n[1] : 1) * (n[2] ? n[2] : 1);
  return p > 1024 ? 1024 : (int)p;
}

/* What the PTX's declarations say of attribute `attr` (the core's answer, which a backend may
 * correct); MAX_DYNAMIC_SHARED_SIZE is left to the caller. */
static int declared_attribute(const struct gcap_kernel *k, gcap_kernel_attr attr) {
  const struct ptx_module *d = k->module->decls;
  const struct ptx_func *f = d ? ptx_find_func(d, k->name) : NULL;
  size_t bytes = 0;
  switch (attr) {
  case GCAP_KERNEL_ATTR_MAX_THREADS_PER_BLOCK: {
    int req = f ? ntid_product(f->reqntid) : 0, max = f ? ntid_product(f->maxntid) : 0;
    return req ? req : max ? max : 1024;
  }
  case GCAP_KERNEL_ATTR_SHARED_SIZE_BYTES:
  case GCAP_KERNEL_ATTR_CONST_SIZE_BYTES: {
    uint8_t space = attr == GCAP_KERNEL_ATTR_CONST_SIZE_BYTES ? PTX_SPACE_CONST : PTX_SPACE_SHARED;
    for (size_t i = 0; d && i < d->num_vars; i++)
      if (d->vars[i].space == space && !d->vars[i].is_extern) bytes += d->vars[i].size;
    return bytes > INT32_MAX ? INT32_MAX : (int)bytes;
  }
  case GCAP_KERNEL_ATTR_NUM_REGS: return f && f->maxnreg ? (int)f->maxnreg : DEFAULT_NUM_REGS;
  case GCAP_KERNEL_ATTR_PTX_VERSION:
  case GCAP_KERNEL_ATTR_BINARY_VERSION: return d ? (int)d->target_sm : 0;
  default: return 0; /* LOCAL_SIZE_BYTES: the backend's to say */
  }
}

/* Under the context's lock. */
static gcap_status kernel_attribute(struct gcap_kernel *k, gcap_kernel_attr attr, int *value) {
  struct gcap_context *ctx = k->module->ctx;
  if (attr == GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE && k->max_dynamic_set)
    return *value = (int)k->max_dynamic_shared, GCAP_SUCCESS;
  int v = attr == GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE ? 0 : declared_attribute(k, attr);
  gcap_status st = gcap__backend_kernel_attribute(ctx, &k->info, attr, &v);
  if (st == GCAP_ERROR_NOT_FOUND && attr == GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE) {
    /* CUDA's default: what the 48 KiB a block may have without opting in leaves beside static */
    int shared = 0;
    st = kernel_attribute(k, GCAP_KERNEL_ATTR_SHARED_SIZE_BYTES, &shared);
    v = shared < (int)MAX_DYNAMIC_SHARED_MEM ? (int)MAX_DYNAMIC_SHARED_MEM - shared : 0;
  }
  if (st == GCAP_ERROR_NOT_FOUND) st = GCAP_SUCCESS;
  if (st == GCAP_SUCCESS) *value = v;
  return st;
}

gcap_status gcap_kernel_get_attribute(gcap_kernel *k, gcap_kernel_attr attr, int *value) {
  GCAP_ENTER();
  gcap_status st = gcap__check_kernel(k, "k");
  if (st != GCAP_SUCCESS) return st;
  if (!value) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "value is NULL");
  switch (attr) {
  case GCAP_KERNEL_ATTR_MAX_THREADS_PER_BLOCK:
  case GCAP_KERNEL_ATTR_SHARED_SIZE_BYTES:
  case GCAP_KERNEL_ATTR_CONST_SIZE_BYTES:
  case GCAP_KERNEL_ATTR_LOCAL_SIZE_BYTES:
  case GCAP_KERNEL_ATTR_NUM_REGS:
  case GCAP_KERNEL_ATTR_PTX_VERSION:
  case GCAP_KERNEL_ATTR_BINARY_VERSION:
  case GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE: break;
  default: return gcap__fail(GCAP_ERROR_INVALID_VALUE, "attr %d is no gcap_kernel_attr", (int)attr);
  }
  gcap__lock(k->module->ctx);
  st = kernel_attribute(k, attr, value);
  gcap__unlock(k->module->ctx);
  return st;
}

gcap_status gcap_kernel_set_attribute(gcap_kernel *k, gcap_kernel_attr attr, int value) {
  GCAP_ENTER();
  gcap_status st = gcap__check_kernel(k, "k");
  if (st != GCAP_SUCCESS) return st;
  if (attr != GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "attr %d cannot be set (only GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE can)", (int)attr);
  if (value < 0)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "value %d of GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE is negative",
                      value);
  struct gcap_context *ctx = k->module->ctx;
  gcap__lock(ctx);
  if (!ctx->ops->kernel_set_attribute)
    st = gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "the %s backend cannot set attributes of kernel \"%s\"", ctx->ops->name,
                    k->name);
  else st = gcap__backend_kernel_set_attribute(ctx, &k->info, attr, value);
  if (st == GCAP_SUCCESS) {
    k->max_dynamic_shared = (uint32_t)value;
    k->max_dynamic_set = true;
  }
  gcap__unlock(ctx);
  return st;
}

static gcap_status check_dims(gcap_dim3 d, const char *what) {
  if (d.x == 0 || d.y == 0 || d.z == 0)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s (%u, %u, %u) has a zero dimension", what, d.x, d.y, d.z);
  return GCAP_SUCCESS;
}

/*
 * CUDA's rule: the dynamic shared memory a launch asks for is at most the kernel's
 * MAX_DYNAMIC_SHARED_SIZE, 48 KiB less its static shared memory until set. The backend checks
 * what the device can give a block (static and dynamic).
 */
static gcap_status check_dynamic_shared(const struct gcap_kernel *k, uint32_t bytes) {
  if (k->max_dynamic_set) {
    if (bytes <= k->max_dynamic_shared) return GCAP_SUCCESS;
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "shared_mem_bytes %u exceeds the %u bytes kernel \"%s\" opted into "
                      "(GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE)",
                      bytes, k->max_dynamic_shared, k->name);
  }
  if (bytes > MAX_DYNAMIC_SHARED_MEM)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "shared_mem_bytes %u exceeds %u (more needs GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, "
                      "gcap_kernel_set_attribute)",
                      bytes, MAX_DYNAMIC_SHARED_MEM);
  if (bytes == 0) return GCAP_SUCCESS;
  int limit = 0; /* 48 KiB less the static */
  gcap_status st = kernel_attribute((struct gcap_kernel *)k, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, &limit);
  if (st != GCAP_SUCCESS) return st;
  if (limit < 0 || bytes > (uint32_t)limit)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "shared_mem_bytes %u exceeds the %d bytes kernel \"%s\" may ask for beside its static shared "
                      "memory without GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE (48 KiB in all)",
                      bytes, limit, k->name);
  return GCAP_SUCCESS;
}

gcap_status gcap__check_launch(const struct gcap_kernel *k, gcap_dim3 grid, gcap_dim3 block, uint32_t shared_mem_bytes,
                               void *const *args) {
  gcap_status st = check_dims(grid, "grid");
  if (st == GCAP_SUCCESS) st = check_dims(block, "block");
  if (st != GCAP_SUCCESS) return st;
  if (block.x > 1024 || block.y > 1024 || block.z > 64 || (uint64_t)block.x * block.y * block.z > 1024)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "block (%u, %u, %u) exceeds the limits (x, y <= 1024, z <= 64, x*y*z <= 1024 threads)", block.x,
                      block.y, block.z);
  if (grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "grid (%u, %u, %u) exceeds the limits (x < 2^31, y, z <= 65535)",
                      grid.x, grid.y, grid.z);
  st = check_dynamic_shared(k, shared_mem_bytes);
  if (st != GCAP_SUCCESS) return st;
  if (k->info.num_params > 0 && !args)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "args is NULL but kernel \"%s\" takes %zu parameters", k->name,
                      k->info.num_params);
  for (size_t i = 0; i < k->info.num_params; i++)
    if (!args[i]) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "args[%zu] of kernel \"%s\" is NULL", i, k->name);
  const struct gcap_context *ctx = k->module->ctx;
  return ctx->ops->kernel_check ? ctx->ops->kernel_check(ctx->backend, &k->info) : GCAP_SUCCESS;
}

/*
 * Whether a cooperative launch of k fits on the device at once (under the context's lock):
 * COOPERATIVE_LAUNCH_TOO_LARGE, with the numbers, when the backend says it does not.
 */
gcap_status gcap__check_cooperative(const struct gcap_kernel *k, gcap_dim3 grid, gcap_dim3 block,
                                    uint32_t shared_mem_bytes) {
  const struct gcap_context *ctx = k->module->ctx;
  if (!ctx->ops->cooperative_check) return GCAP_SUCCESS; /* the driver checks at launch */
  int regs = 0, shared = 0;
  gcap_status st = kernel_attribute((struct gcap_kernel *)k, GCAP_KERNEL_ATTR_NUM_REGS, &regs);
  if (st == GCAP_SUCCESS) st = kernel_attribute((struct gcap_kernel *)k, GCAP_KERNEL_ATTR_SHARED_SIZE_BYTES, &shared);
  if (st != GCAP_SUCCESS) return st;
  struct gcap__launch l = {&k->info, grid, block, shared_mem_bytes, 0, NULL, true};
  return ctx->ops->cooperative_check(ctx->backend, &l, regs, shared);
}

static gcap_status launch(struct gcap_stream *s, struct gcap_kernel *k, gcap_dim3 grid, gcap_dim3 block,
                          uint32_t shared_mem_bytes, void **args, bool cooperative) {
  gcap_status st = gcap__check_stream(s, "stream");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(s->ctx);
  st = gcap__check_kernel(k, "kernel");
  if (st == GCAP_SUCCESS) st = gcap__check_same_context(s->ctx, k->module->ctx, "kernel");
  if (st == GCAP_SUCCESS) st = gcap__check_launch(k, grid, block, shared_mem_bytes, args);
  if (st == GCAP_SUCCESS && cooperative) st = gcap__check_cooperative(k, grid, block, shared_mem_bytes);
  if (st == GCAP_SUCCESS) st = gcap__check_kernel_pointers(s->ctx, k, args);
  bool record = false;
  st = gcap__capture_route(s, st, &record);
  if (st == GCAP_SUCCESS && record) {
    gcap_kernel_node_params p = {k, grid, block, shared_mem_bytes, args};
    st = gcap__capture_record_kernel(s, &p, cooperative);
  } else if (st == GCAP_SUCCESS) {
    struct gcap__launch l = {&k->info, grid, block, shared_mem_bytes, 0, args, cooperative};
    st = gcap__sr_kernel(s, k, args);
    if (st == GCAP_SUCCESS) st = gcap__backend_launch_kernel(s->ctx, s->impl, &l);
    gcap__sr_done(s->ctx, st);
  }
  gcap__unlock(s->ctx);
  return st;
}

gcap_status gcap__launch_kernel(struct gcap_stream *s, struct gcap_kernel *k, gcap_dim3 grid, gcap_dim3 block,
                                uint32_t shared_mem_bytes, void **args) {
  return launch(s, k, grid, block, shared_mem_bytes, args, false);
}

gcap_status gcap_launch_kernel(gcap_stream *s, gcap_kernel *k, gcap_dim3 grid, gcap_dim3 block,
                               uint32_t shared_mem_bytes, void **args) {
  GCAP_ENTER();
  return launch(s, k, grid, block, shared_mem_bytes, args, false);
}

gcap_status gcap_launch_cooperative_kernel(gcap_stream *s, gcap_kernel *k, gcap_dim3 grid, gcap_dim3 block,
                                           uint32_t shared_mem_bytes, void **args) {
  GCAP_ENTER();
  return launch(s, k, grid, block, shared_mem_bytes, args, true);
}
