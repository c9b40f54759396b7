/* Per-thread last-error message and per-thread call state. */
#ifndef GCAP_CORE_ERROR_H
#define GCAP_CORE_ERROR_H

#include <gcap/gcap.h>
#include <stdbool.h>

/* The longest message a call leaves (what gcap_last_error_message returns), with its NUL: room for
 * a kernel fault that names two places in the PTX, each with its source line and inlining chain. */
#define GCAP__MESSAGE_BYTES 2048

/*
 * Every public entry point starts with GCAP_ENTER(): it clears this thread's message and
 * remembers the public function's name, which every later failure message starts with.
 */
#define GCAP_ENTER() gcap__enter(__func__)
void gcap__enter(const char *api_function);
/* For the calls that destroy, free or unload: they still work on a context with a sticky fault. */
#define GCAP_ENTER_RELEASE() gcap__enter_release(__func__)
void gcap__enter_release(const char *api_function);
bool gcap__call_releases(void);

/* Sets the message "<api function>: <fmt...>" and returns `status`. */
gcap_status gcap__fail(gcap_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Rewrites the current message as "<api function>: <fmt...>: <old detail>" and returns `status`. */
gcap_status gcap__fail_context(gcap_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/*
 * `s` as it may stand between quotes in a message: one line, with backslash escapes for quotes,
 * backslashes and control characters, cut after 200 bytes. The text lives in a per-thread buffer
 * until the second next call (two may appear in one message).
 */
const char *gcap__quoted(const char *s);

/* Puts back a message saved earlier (for calls that run unseen, at scope exit). */
void gcap__restore_message(const char *saved);

/* The public function this thread is in (for messages that name it). */
const char *gcap__api_function(void);

/* Host callbacks: run `fn` while marking this thread as inside a callback. */
void gcap__run_host_fn(gcap_host_fn fn, void *user_data);
/* True while this thread runs a host callback: blocking calls must refuse. */
int gcap__in_host_callback(void);
/*
 * ILLEGAL_STATE (with the message) inside a host callback, SUCCESS elsewhere. Every call that
 * blocks, allocates, frees, or reaches the device checks it before taking any lock: on CUDA the
 * callback runs on a driver thread while another thread may hold the lock waiting for the device.
 */
gcap_status gcap__refuse_in_host_callback(void);

/* A small number naming this thread in messages (1 for the first thread that calls gcap). */
unsigned gcap__thread_number(void);

/* This thread's capture mode (cuThreadExchangeStreamCaptureMode). */
gcap_capture_mode *gcap__thread_capture_mode(void);

#endif
