//! Frees and unloads that a capture would refuse, done once the capture has ended.
//!
//! Dropping the last handle of a buffer frees its memory (`gcap_mem_free`, `gcap_host_free`), and
//! dropping the last handle of a module unloads it (`gcap_module_unload`). While a stream captures,
//! CUDA's rules forbid such a free or unload: on the capturing thread (GLOBAL and
//! ThreadLocal captures), and on every thread in GLOBAL mode during a GLOBAL capture; the C library
//! refuses it and invalidates the capture. A Rust drop cannot report that, so the crate keeps
//! track of the captures it began and defers the frees they would refuse: the memory goes back when
//! the capture ends (or is dropped), never by invalidating the capture, and is never leaked. A free
//! refused anyway (a capture begun through `gcap::sys`, or a drop inside a host function, where
//! gcap refuses frees with ILLEGAL_STATE) is deferred the same way and tried again when a capture of
//! the crate ends, or at the next synchronize or allocation.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::ThreadId;

use crate::context::Context;
use crate::sys;

/// What to give back.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Release {
    /// Device memory of `gcap_mem_alloc` (or `gcap_mem_alloc_async` outside a capture).
    Device(*mut c_void),
    /// Page-locked host memory of `gcap_host_alloc`.
    Host(*mut c_void),
    /// A module of `gcap_module_load`.
    Module(*mut sys::gcap_module),
}

struct Live {
    key: u64,
    mode: sys::gcap_capture_mode,
    thread: ThreadId,
}

/// The captures this crate began and has not ended.
static LIVE: Mutex<Vec<Live>> = Mutex::new(Vec::new());
static NEXT_KEY: AtomicU64 = AtomicU64::new(1);

struct Deferred {
    ctx: Context,
    what: Release,
}

// SAFETY: a deferred release is a context (Send + Sync) and an address or module handle gcap frees
// from any thread.
unsafe impl Send for Deferred {}

static DEFERRED: Mutex<Vec<Deferred>> = Mutex::new(Vec::new());
/// How many releases wait in DEFERRED (a cheap test before taking the lock).
static WAITING: AtomicUsize = AtomicUsize::new(0);

/// Notes a capture begun on this thread in `mode`; the key ends it ([`ended`]).
pub(crate) fn began(mode: sys::gcap_capture_mode) -> u64 {
    let key = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
    let live = Live { key, mode, thread: std::thread::current().id() };
    LIVE.lock().unwrap_or_else(|e| e.into_inner()).push(live);
    key
}

/// The capture of `key` has ended (or is gone): what it deferred is freed now, where nothing else
/// still refuses it.
pub(crate) fn ended(key: u64) {
    LIVE.lock().unwrap_or_else(|e| e.into_inner()).retain(|l| l.key != key);
    retry();
}

/// This thread's capture mode (`gcap_thread_exchange_capture_mode`, read and put back).
fn thread_mode() -> sys::gcap_capture_mode {
    let mut mode = sys::GCAP_CAPTURE_MODE_GLOBAL;
    unsafe {
        if sys::gcap_thread_exchange_capture_mode(&mut mode) != sys::GCAP_SUCCESS {
            return sys::GCAP_CAPTURE_MODE_GLOBAL;
        }
        let mut back = mode;
        sys::gcap_thread_exchange_capture_mode(&mut back);
    }
    mode
}

/// True when a capture this crate began would refuse a free on this thread now (the C library's
/// rule: its own thread's capture unless RELAXED; another thread's GLOBAL capture while this thread
/// is in GLOBAL mode).
fn refused_now() -> bool {
    let me = std::thread::current().id();
    let live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if live.is_empty() {
        return false;
    }
    let mine = thread_mode();
    if mine == sys::GCAP_CAPTURE_MODE_RELAXED {
        return false;
    }
    live.iter().any(|l| {
        if l.thread == me {
            l.mode != sys::GCAP_CAPTURE_MODE_RELAXED
        } else {
            mine == sys::GCAP_CAPTURE_MODE_GLOBAL && l.mode == sys::GCAP_CAPTURE_MODE_GLOBAL
        }
    })
}

/// Frees `what` of `ctx` now, or, where a capture refuses it, once the capture has ended.
pub(crate) fn release(ctx: &Context, what: Release) {
    if !refused_now() {
        let st = unsafe {
            match what {
                Release::Device(p) => sys::gcap_mem_free(ctx.raw(), p),
                Release::Host(p) => sys::gcap_host_free(ctx.raw(), p),
                Release::Module(m) => sys::gcap_module_unload(m),
            }
        };
        if st != sys::GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED && st != sys::GCAP_ERROR_ILLEGAL_STATE {
            return; // freed (or an error a retry would not change)
        }
    }
    let mut deferred = DEFERRED.lock().unwrap_or_else(|e| e.into_inner());
    deferred.push(Deferred { ctx: ctx.clone(), what });
    WAITING.store(deferred.len(), Ordering::Relaxed);
}

/// Tries the deferred releases again.
pub(crate) fn retry() {
    if WAITING.load(Ordering::Relaxed) == 0 {
        return;
    }
    let waiting = {
        let mut deferred = DEFERRED.lock().unwrap_or_else(|e| e.into_inner());
        WAITING.store(0, Ordering::Relaxed);
        std::mem::take(&mut *deferred)
    };
    for d in waiting {
        release(&d.ctx, d.what);
    }
}

/// How many releases wait (for tests).
#[cfg(test)]
pub(crate) fn waiting() -> usize {
    WAITING.load(Ordering::Relaxed)
}

/// Held by the tests that capture in GLOBAL mode or count deferred releases: one at a time.
#[cfg(test)]
pub(crate) static SERIAL: Mutex<()> = Mutex::new(());
