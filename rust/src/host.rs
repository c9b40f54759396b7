//! The host side of stream work: host functions (`cudaLaunchHostFunc`, host nodes) and
//! page-locked host memory for asynchronous downloads and uploads.
//!
//! # Host functions and panics
//!
//! A host function runs on a thread of the library's choosing, inside a gcap call (the launch
//! itself under [`Exec::Immediate`](crate::Exec), a synchronize under
//! [`Exec::Deferred`](crate::Exec), a graph launch, ...), and may be called again on every replay
//! of a graph it was captured or added into — hence `Fn + Send + Sync + 'static`. As in CUDA it
//! must not use the device: gcap calls from it that block, allocate, free or issue work return
//! [`GpuError::IllegalState`](crate::GpuError). Graph building is allowed.
//!
//! The C callback cannot report an error, so a panic inside a host function is caught (it never
//! unwinds into C), its message is printed to stderr, and the process **aborts** — the same thing
//! Rust does for a panic escaping any `extern "C"` function. Code that may fail should record the
//! failure (an atomic, a mutex) and let the host thread look at it after a synchronize.

use std::ffi::c_void;
use std::io::Write;
use std::marker::PhantomData;
use std::mem::size_of;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::Arc;

use crate::context::{Context, Keep};
use crate::error::{check, invalid, GpuResult};
use crate::memory::DeviceRepr;
use crate::module::{drop_payload, elem};
use crate::sys;

// ------------------------------------------------------------------------ host functions

/// A host function, kept alive (by a stream's or graph's keep list) as long as it may be called.
pub(crate) struct HostFn {
    f: Box<dyn Fn() + Send + Sync>,
}

/// The C callback of every host function: `user_data` is a live `HostFn`.
unsafe extern "C" fn host_trampoline(user_data: *mut c_void) {
    // SAFETY: user_data is the address of a HostFn that the stream's or graph's keep list holds
    // while the library may call this.
    let f = unsafe { &*(user_data as *const HostFn) };
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| (f.f)())) {
        let message = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "a panic with a non-string payload".to_string()
        };
        drop_payload(payload);
        let _ = writeln!(
            std::io::stderr(),
            "gcap: a host function panicked ({message}); aborting, because a host function runs inside the \
             stream's work and cannot return an error"
        );
        std::process::abort();
    }
}

/// The C function and user data of a host function, and what keeps it alive.
pub(crate) fn host_fn<F: Fn() + Send + Sync + 'static>(f: F) -> (sys::gcap_host_fn, *mut c_void, Keep) {
    let keep = Arc::new(HostFn { f: Box::new(f) });
    let user_data = Arc::as_ptr(&keep) as *mut c_void;
    (Some(host_trampoline), user_data, keep as Keep)
}

// -------------------------------------------------------------------- page-locked memory

pub(crate) struct HostAllocation {
    ctx: Context,
    pub(crate) ptr: *mut c_void,
}

// SAFETY: the allocation is an address; gcap_host_free may run on any thread, and the memory is
// only read and written through atomics (HostBuffer) or by the library.
unsafe impl Send for HostAllocation {}
// SAFETY: as above.
unsafe impl Sync for HostAllocation {}

impl Drop for HostAllocation {
    fn drop(&mut self) {
        // Now, or where a capture refuses the free, when the capture ends (see release.rs).
        crate::release::release(&self.ctx, crate::release::Release::Host(self.ptr));
    }
}

/// `len` elements of `T` in page-locked host memory (`cudaHostAlloc`), the host end of
/// asynchronous copies: [`Stream::download`](crate::Stream::download),
/// [`Stream::upload_from_host`](crate::Stream::upload_from_host) and the graph nodes
/// [`Graph::add_download`](crate::Graph::add_download) and
/// [`Graph::add_upload`](crate::Graph::add_upload). Like a [`DeviceBuffer`](crate::DeviceBuffer),
/// its memory lives as long as pending work or a graph may copy to or from it.
///
/// # Reading and writing it
///
/// The device writes the buffer asynchronously, so the host never gets a Rust reference into
/// it: [`to_vec`](Self::to_vec), [`get`](Self::get), [`set`](Self::set) and
/// [`copy_from_slice`](Self::copy_from_slice) access one element at a time with relaxed atomic
/// loads and stores. What they see is the buffer **as of the last synchronization** that covered
/// the copies into it (a stream or event synchronize, or, inside a host function, the download
/// nodes the host node depends on): read before that, it shows old values — the "forgotten
/// synchronize" bug, which [`Exec::Deferred`](crate::Exec) makes visible on the simulator. Host
/// threads may use it concurrently; a copy running at the same moment as a host access to the
/// same element is a race as it is on CUDA (torn or stale values), never a dangling reference.
pub struct HostBuffer<T: DeviceRepr> {
    pub(crate) alloc: Arc<HostAllocation>,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: DeviceRepr> std::fmt::Debug for HostBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostBuffer<{}>({} at {:p})", std::any::type_name::<T>(), self.len, self.alloc.ptr)
    }
}

impl<T: DeviceRepr> HostBuffer<T> {
    /// `len` zeros in page-locked memory (`cudaHostAlloc`). [`GpuError::InvalidValue`](crate::GpuError)
    /// for 0 elements (`gcap_host_alloc` refuses 0 bytes; so does [`from_slice`](Self::from_slice) of
    /// an empty slice) and for a `len` whose bytes overflow `usize`.
    pub fn new(ctx: &Context, len: usize) -> GpuResult<Self> {
        let Some(bytes) = len.checked_mul(size_of::<T>()) else {
            return invalid(format!("HostBuffer::new: {len} elements overflow"));
        };
        crate::release::retry();
        let mut p = ptr::null_mut();
        check(unsafe { sys::gcap_host_alloc(ctx.raw(), bytes, &mut p) })?;
        let alloc = Arc::new(HostAllocation { ctx: ctx.clone(), ptr: p });
        if (p as usize) % elem::align::<T>() != 0 {
            return invalid(format!("HostBuffer::new: gcap_host_alloc returned {p:p}, misaligned for {}", std::any::type_name::<T>()));
        }
        // SAFETY: the allocation holds `bytes` bytes, which no one else uses yet.
        unsafe { ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
        Ok(HostBuffer { alloc, len, _t: PhantomData })
    }

    /// A page-locked copy of `data`.
    pub fn from_slice(ctx: &Context, data: &[T]) -> GpuResult<Self> {
        let b = Self::new(ctx, data.len())?;
        b.copy_from_slice(data)?;
        Ok(b)
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a buffer of no elements cannot be made (see [`new`](Self::new)).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// The host address (for other libraries; this crate never makes a reference from it).
    pub fn as_ptr(&self) -> *const T {
        self.alloc.ptr as *const T
    }

    pub(crate) fn raw(&self) -> *mut c_void {
        self.alloc.ptr
    }

    pub(crate) fn keep(&self) -> Keep {
        self.alloc.clone()
    }

    /// Element `i` as of the last synchronization (see the type's documentation), or `None` past
    /// the end.
    pub fn get(&self, i: usize) -> Option<T> {
        // SAFETY: in bounds; the allocation is aligned for atomic access (checked in new) and holds
        // valid Ts (zeros, or what copies and set wrote; every bit pattern is a T).
        (i < self.len).then(|| unsafe { elem::load(self.as_ptr().add(i)) })
    }

    /// Sets element `i`; false (nothing written) past the end.
    pub fn set(&self, i: usize, value: T) -> bool {
        if i >= self.len {
            return false;
        }
        // SAFETY: in bounds and aligned (checked in new).
        unsafe { elem::store((self.alloc.ptr as *mut T).add(i), value) };
        true
    }

    /// Every element as of the last synchronization (see the type's documentation).
    pub fn to_vec(&self) -> Vec<T> {
        (0..self.len).map(|i| self.get(i).unwrap()).collect()
    }

    /// Writes `data` into the buffer. Copies already issued from it that have not run yet will
    /// copy the new values (on the simulator under [`Exec::Deferred`](crate::Exec), and on a GPU,
    /// where they run later). [`GpuError::InvalidValue`](crate::GpuError) when the lengths differ.
    pub fn copy_from_slice(&self, data: &[T]) -> GpuResult<()> {
        if data.len() != self.len {
            return invalid(format!("HostBuffer::copy_from_slice: {} elements into a buffer of {}", data.len(), self.len));
        }
        for (i, &v) in data.iter().enumerate() {
            self.set(i, v);
        }
        Ok(())
    }

    /// The context the buffer belongs to.
    pub fn context(&self) -> &Context {
        &self.alloc.ctx
    }
}
