#include "error.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

struct thread_state {
  const char *api_function;
  bool releases; /* the public function destroys, frees or unloads: a sticky fault lets it */
  int callback_depth;
  gcap_capture_mode capture_mode; /* GLOBAL (0) by default, as CUDA */
  unsigned number;
  char message[GCAP__MESSAGE_BYTES];
};

static _Thread_local struct thread_state thread_state;

void gcap__enter(const char *api_function) {
  if (thread_state.number == 0) gcap__thread_number(); /* numbered in the order threads first call gcap */
  thread_state.api_function = api_function;
  thread_state.releases = false;
  thread_state.message[0] = '\0';
}

void gcap__enter_release(const char *api_function) {
  gcap__enter(api_function);
  thread_state.releases = true;
}

bool gcap__call_releases(void) { return thread_state.releases; }

const char *gcap__quoted(const char *s) {
  static _Thread_local char bufs[2][220 * 4 + 8];
  static _Thread_local unsigned next;
  char *out = bufs[next++ % 2];
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p && n < 800; p++) {
    if (p - (const unsigned char *)s >= 200) {
      n += (size_t)snprintf(out + n, 8, "...");
      break;
    }
    static const char escapes[] = "\nn\tt\rr\"\"\\\\"; /* each character, then what follows its backslash */
    const char *e = *p ? strchr(escapes, *p) : NULL;
    if (e && (e - escapes) % 2 == 0) {
      out[n++] = '\\';
      out[n++] = e[1];
    } else if (*p < 0x20 || *p == 0x7f) {
      n += (size_t)snprintf(out + n, 5, "\\x%02x", *p);
    } else {
      out[n++] = (char)*p;
    }
  }
  out[n] = '\0';
  return out;
}

const char *gcap__api_function(void) { return thread_state.api_function ? thread_state.api_function : "gcap"; }

gcap_status gcap__fail(gcap_status status, const char *fmt, ...) {
  char *out = thread_state.message;
  size_t cap = sizeof thread_state.message;
  int n = snprintf(out, cap, "%s: ", gcap__api_function());
  if (n < 0 || (size_t)n >= cap) return status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out + n, cap - (size_t)n, fmt, ap);
  va_end(ap);
  return status;
}

gcap_status gcap__fail_context(gcap_status status, const char *fmt, ...) {
  char detail[sizeof thread_state.message];
  const char *msg = thread_state.message;
  size_t prefix = strlen(gcap__api_function());
  if (strncmp(msg, gcap__api_function(), prefix) == 0 && msg[prefix] == ':') msg += prefix + 2;
  snprintf(detail, sizeof detail, "%s", msg);
  char where[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(where, sizeof where, fmt, ap);
  va_end(ap);
  return gcap__fail(status, "%s: %s", where, detail);
}

void gcap__restore_message(const char *saved) {
  snprintf(thread_state.message, sizeof thread_state.message, "%s", saved);
}

void gcap__run_host_fn(gcap_host_fn fn, void *user_data) {
  /*
   * The callback may call gcap: keep the outer call's name and message, so that what a
   * refused call inside it said never outlives the callback.
   */
  const char *outer = thread_state.api_function;
  char outer_message[sizeof thread_state.message];
  memcpy(outer_message, thread_state.message, sizeof outer_message);
  thread_state.callback_depth++;
  fn(user_data);
  thread_state.callback_depth--;
  thread_state.api_function = outer;
  memcpy(thread_state.message, outer_message, sizeof outer_message);
}

int gcap__in_host_callback(void) { return thread_state.callback_depth > 0; }

gcap_status gcap__refuse_in_host_callback(void) {
  if (thread_state.callback_depth == 0) return GCAP_SUCCESS;
  return gcap__fail(GCAP_ERROR_ILLEGAL_STATE,
                    "not allowed in a host callback: a callback may not block, allocate, free or issue device work "
                    "(CUDA forbids API calls there); nothing was done");
}

unsigned gcap__thread_number(void) {
  static atomic_uint next = 1;
  if (thread_state.number == 0) thread_state.number = atomic_fetch_add(&next, 1);
  return thread_state.number;
}

gcap_capture_mode *gcap__thread_capture_mode(void) { return &thread_state.capture_mode; }

const char *gcap_last_error_message(void) { return thread_state.message; }

const char *gcap_status_name(gcap_status s) {
  switch (s) {
#define GCAP_STATUS_NAME_(name, value, text)                                                                           \
  case name: return #name;
    GCAP_STATUS_MAP(GCAP_STATUS_NAME_)
#undef GCAP_STATUS_NAME_
  }
  return "GCAP_UNKNOWN_STATUS";
}

const char *gcap_status_string(gcap_status s) {
  switch (s) {
#define GCAP_STATUS_TEXT_(name, value, text)                                                                           \
  case name: return text;
    GCAP_STATUS_MAP(GCAP_STATUS_TEXT_)
#undef GCAP_STATUS_TEXT_
  }
  return "unknown status code";
}

void gcap_version(int *major, int *minor, int *patch) {
  if (major) *major = GCAP_VERSION_MAJOR;
  if (minor) *minor = GCAP_VERSION_MINOR;
  if (patch) *patch = GCAP_VERSION_PATCH;
}
