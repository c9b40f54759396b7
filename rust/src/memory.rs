//! Device memory: typed buffers that free themselves once nothing can still use them.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr;
use std::sync::Arc;

use crate::context::{Context, Keep};
use crate::error::{check, invalid, GpuResult};
use crate::sys;

mod sealed {
    pub trait Sealed {}
}

/// Element types of device buffers: plain numbers, for which every bit pattern is a value, so
/// bytes written by a device or a copy are always a valid `T`.
pub trait DeviceRepr: Copy + Send + Sync + 'static + sealed::Sealed {}

macro_rules! device_repr {
    ($($t:ty),*) => { $(impl sealed::Sealed for $t {} impl DeviceRepr for $t {})* };
}
device_repr!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64, usize, isize);

/// Who gives an allocation's memory back.
pub(crate) enum AllocKind {
    /// This handle: `gcap_mem_free` when the last user is gone.
    Device,
    /// The graph that allocated it (`Stream::alloc_async` during a capture): its free node, or a
    /// free after a launch. The handle keeps the capture's pool, so the address stays backed.
    Graph(#[allow(dead_code)] Arc<crate::CapturePool>),
}

pub(crate) struct Allocation {
    ctx: Context,
    pub(crate) ptr: *mut c_void,
    pub(crate) bytes: usize,
    kind: AllocKind,
    /// A stream-ordered free (`Stream::free_async`) has given it back.
    freed: std::sync::atomic::AtomicBool,
}

// SAFETY: the allocation is an address and a size; gcap_mem_free may run on any thread.
unsafe impl Send for Allocation {}
// SAFETY: shared references only read the address.
unsafe impl Sync for Allocation {}

impl Drop for Allocation {
    fn drop(&mut self) {
        match self.kind {
            AllocKind::Graph(_) => {
                self.ctx.inner.graph_buffers.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }
            _ if *self.freed.get_mut() => {}
            // Now, or where a capture refuses the free, when the capture ends (see release.rs).
            AllocKind::Device => crate::release::release(&self.ctx, crate::release::Release::Device(self.ptr)),
        }
    }
}

impl Allocation {
    pub(crate) fn new(ctx: &Context, ptr: *mut c_void, bytes: usize, kind: AllocKind) -> Allocation {
        if matches!(kind, AllocKind::Graph(_)) {
            ctx.inner.graph_buffers.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        Allocation { ctx: ctx.clone(), ptr, bytes, kind, freed: std::sync::atomic::AtomicBool::new(false) }
    }

    pub(crate) fn ctx_raw(&self) -> *mut sys::gcap_context {
        self.ctx.raw()
    }

    pub(crate) fn is_graph(&self) -> bool {
        matches!(self.kind, AllocKind::Graph(_))
    }

    pub(crate) fn mark_freed(&self) {
        self.freed.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// `len` elements of `T` in device memory (`cudaMalloc`), at least one: zero-sized buffers are
/// refused ([`DeviceBuffer::new`]).
///
/// A buffer's memory is freed when the buffer *and* everything that may still use it are gone:
/// pending stream work keeps it until that stream is synchronized, and graphs and executables
/// whose nodes name it keep it as long as they live. Dropping a buffer early is therefore never a
/// dangling pointer. A buffer dropped while a capture forbids freeing (on the capturing thread, or
/// on any thread during a GLOBAL capture) is freed when that capture ends or is dropped: the drop
/// neither invalidates the capture nor leaks the memory.
pub struct DeviceBuffer<T: DeviceRepr> {
    pub(crate) alloc: Arc<Allocation>,
    len: usize,
    managed: bool,
    _t: PhantomData<T>,
}

impl<T: DeviceRepr> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer<{}>({} at {:p})", std::any::type_name::<T>(), self.len, self.alloc.ptr)
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// `len` elements of uninitialized (but always valid: see [`DeviceRepr`]) device memory
    /// (`cudaMalloc`).
    ///
    /// A buffer holds at least one element: `len` 0 is [`GpuError::InvalidValue`](crate::GpuError),
    /// as `gcap_mem_alloc` refuses 0 bytes (and so are [`from_slice`](Self::from_slice) of an
    /// empty slice and [`zeroed`](Self::zeroed) of 0); so is a `len` whose bytes overflow `usize`.
    /// [`GpuError::OutOfMemory`](crate::GpuError) when the device has no room.
    ///
    /// ```
    /// use gcap::{Backend, Context, DeviceBuffer, GpuError};
    /// # fn main() -> gcap::GpuResult<()> {
    /// let ctx = Context::new(Backend::Sim)?;
    /// assert!(matches!(DeviceBuffer::<f32>::new(&ctx, 0), Err(GpuError::InvalidValue(_))));
    /// assert!(matches!(DeviceBuffer::<f32>::from_slice(&ctx, &[]), Err(GpuError::InvalidValue(_))));
    /// assert_eq!(DeviceBuffer::<f32>::new(&ctx, 1)?.size_bytes(), 4);
    /// # Ok(()) }
    /// ```
    pub fn new(ctx: &Context, len: usize) -> GpuResult<Self> {
        let bytes = len.checked_mul(size_of::<T>()).ok_or(()).or_else(|_| invalid(format!("{len} elements overflow")))?;
        crate::release::retry();
        let mut p = ptr::null_mut();
        check(unsafe { sys::gcap_mem_alloc(ctx.raw(), bytes, &mut p) })?;
        let alloc = Arc::new(Allocation::new(ctx, p, bytes, AllocKind::Device));
        Ok(DeviceBuffer { alloc, len, managed: false, _t: PhantomData })
    }

    /// `len` elements of managed memory (`cudaMallocManaged`): device memory for kernels, copies
    /// and graphs that the host may also read and write directly, through
    /// [`as_host_slice`](Self::as_host_slice) and [`as_host_slice_mut`](Self::as_host_slice_mut),
    /// even with the simulator's strict memory on. Errors as [`new`](Self::new).
    ///
    /// ```
    /// use gcap::{Backend, Context, DeviceBuffer};
    /// # fn main() -> gcap::GpuResult<()> {
    /// let ctx = Context::new(Backend::Sim)?;
    /// let mut m = DeviceBuffer::<u32>::new_managed(&ctx, 4)?;
    /// // SAFETY: no work that uses `m` is pending.
    /// unsafe { m.as_host_slice_mut()?.copy_from_slice(&[1, 2, 3, 4]) };
    /// assert_eq!(m.to_vec()?, [1, 2, 3, 4]);
    /// # Ok(()) }
    /// ```
    pub fn new_managed(ctx: &Context, len: usize) -> GpuResult<Self> {
        let bytes = len.checked_mul(size_of::<T>()).ok_or(()).or_else(|_| invalid(format!("{len} elements overflow")))?;
        crate::release::retry();
        let mut p = ptr::null_mut();
        check(unsafe { sys::gcap_mem_alloc_managed(ctx.raw(), bytes, &mut p) })?;
        let alloc = Arc::new(Allocation::new(ctx, p, bytes, AllocKind::Device));
        Ok(DeviceBuffer { alloc, len, managed: true, _t: PhantomData })
    }

    /// True for memory from [`new_managed`](Self::new_managed).
    pub fn is_managed(&self) -> bool {
        self.managed
    }

    /// The managed memory itself, for the host to read ([`GpuError::InvalidValue`](crate::GpuError)
    /// for a buffer that is not managed).
    ///
    /// # Safety
    /// No work that writes the buffer may be pending or running: synchronize it first.
    pub unsafe fn as_host_slice(&self) -> GpuResult<&[T]> {
        if !self.managed {
            return invalid("as_host_slice: the buffer is not managed memory (new_managed)");
        }
        // SAFETY: managed memory is host-accessible; the caller rules out concurrent device writes.
        Ok(unsafe { std::slice::from_raw_parts(self.alloc.ptr.cast::<T>(), self.len) })
    }

    /// The managed memory itself, for the host to write (see [`as_host_slice`](Self::as_host_slice)).
    ///
    /// # Safety
    /// No work that reads or writes the buffer may be pending or running: synchronize it first.
    pub unsafe fn as_host_slice_mut(&mut self) -> GpuResult<&mut [T]> {
        if !self.managed {
            return invalid("as_host_slice_mut: the buffer is not managed memory (new_managed)");
        }
        // SAFETY: as as_host_slice, and &mut self makes this the only view.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.alloc.ptr.cast::<T>(), self.len) })
    }

    pub(crate) fn from_allocation(alloc: Allocation, len: usize) -> Self {
        DeviceBuffer { alloc: Arc::new(alloc), len, managed: false, _t: PhantomData }
    }

    /// A buffer holding a copy of `data` ([`GpuError::InvalidValue`](crate::GpuError) for an empty
    /// slice: see [`new`](Self::new)).
    pub fn from_slice(ctx: &Context, data: &[T]) -> GpuResult<Self> {
        let mut b = Self::new(ctx, data.len())?;
        b.copy_from_slice(data)?;
        Ok(b)
    }

    /// A buffer of `len` zeros (`len` 0 is [`GpuError::InvalidValue`](crate::GpuError): see
    /// [`new`](Self::new)).
    pub fn zeroed(ctx: &Context, len: usize) -> GpuResult<Self> {
        let b = Self::new(ctx, len)?;
        let stream = crate::Stream::new(ctx)?;
        stream.memset(&b, 0)?;
        stream.synchronize()?;
        Ok(b)
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a buffer of no elements cannot be made (see [`new`](Self::new)); for code
    /// generic over collections.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.alloc.bytes
    }

    /// The device address, for kernel arguments and other libraries.
    pub fn device_ptr(&self) -> u64 {
        self.alloc.ptr as u64
    }

    pub(crate) fn raw(&self) -> *mut c_void {
        self.alloc.ptr
    }

    pub(crate) fn keep(&self) -> Keep {
        self.alloc.clone()
    }

    /// Copies `data` in, synchronously (`cudaMemcpy`). [`GpuError::InvalidValue`](crate::GpuError) when the
    /// lengths differ.
    pub fn copy_from_slice(&mut self, data: &[T]) -> GpuResult<()> {
        if data.len() != self.len {
            return invalid(format!("copy_from_slice: {} elements into a buffer of {}", data.len(), self.len));
        }
        let kind = sys::GCAP_MEMCPY_HOST_TO_DEVICE;
        check(unsafe { sys::gcap_memcpy(self.alloc.ctx.raw(), self.raw(), data.as_ptr().cast(), self.alloc.bytes, kind) })
    }

    /// Copies the buffer out, synchronously (`cudaMemcpy`).
    pub fn to_vec(&self) -> GpuResult<Vec<T>> {
        let mut out = Vec::<T>::with_capacity(self.len);
        let kind = sys::GCAP_MEMCPY_DEVICE_TO_HOST;
        check(unsafe { sys::gcap_memcpy(self.alloc.ctx.raw(), out.as_mut_ptr().cast(), self.raw(), self.alloc.bytes, kind) })?;
        // SAFETY: the copy wrote all len elements, and every bit pattern is a T (DeviceRepr).
        unsafe { out.set_len(self.len) };
        Ok(out)
    }

    /// The context the buffer belongs to.
    pub fn context(&self) -> &Context {
        &self.alloc.ctx
    }
}

/// The direction of a copy (oxicuda-driver's `MemcpyDirection`, C's `gcap_memcpy_kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemcpyDirection {
    /// From a page-locked [`HostBuffer`](crate::HostBuffer) into a [`DeviceBuffer`].
    HostToDevice,
    /// From a [`DeviceBuffer`] into a page-locked [`HostBuffer`](crate::HostBuffer).
    DeviceToHost,
    /// From a [`DeviceBuffer`] into a [`DeviceBuffer`].
    DeviceToDevice,
}

impl MemcpyDirection {
    pub(crate) fn raw(self) -> sys::gcap_memcpy_kind {
        match self {
            MemcpyDirection::HostToDevice => sys::GCAP_MEMCPY_HOST_TO_DEVICE,
            MemcpyDirection::DeviceToHost => sys::GCAP_MEMCPY_DEVICE_TO_HOST,
            MemcpyDirection::DeviceToDevice => sys::GCAP_MEMCPY_DEVICE_TO_DEVICE,
        }
    }

    /// Whether the destination and the source are device memory.
    fn device_ends(self) -> (bool, bool) {
        match self {
            MemcpyDirection::HostToDevice => (true, false),
            MemcpyDirection::DeviceToHost => (false, true),
            MemcpyDirection::DeviceToDevice => (true, true),
        }
    }
}

/// One end of a copy that takes a size ([`StreamCapture::record_memcpy`](crate::StreamCapture::record_memcpy)):
/// a [`DeviceBuffer`] or a page-locked [`HostBuffer`](crate::HostBuffer), from its start
/// (`&buffer`) or from an element offset (`buffer.at(i)`). The copy is checked to lie inside the
/// buffer, and keeps it allocated as long as the copy may run.
pub struct CopyEnd<'a> {
    device: bool,
    base: *mut c_void,
    /// The offset in bytes, `None` when it overflows.
    offset: Option<usize>,
    size: usize,
    ctx: *mut sys::gcap_context,
    keep: Keep,
    _l: PhantomData<&'a ()>,
}

impl std::fmt::Debug for CopyEnd<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let side = if self.device { "device" } else { "host" };
        write!(f, "CopyEnd({side} {:p} + {:?} of {} bytes)", self.base, self.offset, self.size)
    }
}

impl<'a, T: DeviceRepr> From<&'a DeviceBuffer<T>> for CopyEnd<'a> {
    fn from(b: &'a DeviceBuffer<T>) -> CopyEnd<'a> {
        b.at(0)
    }
}

impl<'a, T: DeviceRepr> From<&'a crate::HostBuffer<T>> for CopyEnd<'a> {
    fn from(b: &'a crate::HostBuffer<T>) -> CopyEnd<'a> {
        b.at(0)
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// The buffer from element `offset` on, as one end of a copy that takes a size (an offset past
    /// the end is refused by the copy).
    pub fn at(&self, offset: usize) -> CopyEnd<'_> {
        CopyEnd {
            device: true,
            base: self.raw(),
            offset: offset.checked_mul(size_of::<T>()),
            size: self.size_bytes(),
            ctx: self.context().raw(),
            keep: self.keep(),
            _l: PhantomData,
        }
    }
}

impl<T: DeviceRepr> crate::HostBuffer<T> {
    /// The buffer from element `offset` on, as one end of a copy that takes a size (an offset past
    /// the end is refused by the copy).
    pub fn at(&self, offset: usize) -> CopyEnd<'_> {
        CopyEnd {
            device: false,
            base: self.raw(),
            offset: offset.checked_mul(size_of::<T>()),
            size: self.size_bytes(),
            ctx: self.context().raw(),
            keep: self.keep(),
            _l: PhantomData,
        }
    }
}

/// The addresses of a copy of `bytes` from `src` to `dst` in `direction` on `ctx`, and what it
/// keeps, after the checks C cannot make (the ends' kinds, extents and context); `what` names the
/// caller in messages.
pub(crate) fn copy_operands(
    what: &str,
    ctx: &Context,
    dst: &CopyEnd<'_>,
    src: &CopyEnd<'_>,
    bytes: usize,
    direction: MemcpyDirection,
) -> GpuResult<(*mut c_void, *const c_void, [Keep; 2])> {
    let (dst_device, src_device) = direction.device_ends();
    let side = |device: bool| if device { "a device buffer" } else { "a host buffer" };
    let mut ends = [("dst", dst, dst_device), ("src", src, src_device)].into_iter().map(|(name, end, device)| {
        if end.device != device {
            return invalid(format!("{what}: {name} is {} but {direction:?} needs {} there", side(end.device), side(device)));
        }
        if end.ctx != ctx.raw() {
            return invalid(format!("{what}: {name} belongs to another context"));
        }
        match end.offset {
            Some(off) if off.checked_add(bytes).is_some_and(|e| e <= end.size) => {
                // SAFETY: off + bytes lies inside the buffer's allocation.
                Ok(unsafe { end.base.cast::<u8>().add(off) }.cast::<c_void>())
            }
            _ => invalid(format!(
                "{what}: {name}: {bytes} bytes at byte offset {} exceed the buffer's {} bytes",
                end.offset.map_or("(overflow)".to_string(), |o| o.to_string()),
                end.size
            )),
        }
    });
    let d = ends.next().unwrap()?;
    let s = ends.next().unwrap()?;
    Ok((d, s.cast_const(), [dst.keep.clone(), src.keep.clone()]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Backend, CaptureMode, CaptureStatus, GraphCaptureGuard, HostBuffer, Stream};

    use crate::release::SERIAL;

    /// True while `addr` is the start of a live device allocation of `ctx` (a one-byte copy from it
    /// works).
    fn live(ctx: &Context, addr: u64) -> bool {
        let mut byte = 0u8;
        let kind = sys::GCAP_MEMCPY_DEVICE_TO_HOST;
        unsafe { sys::gcap_memcpy(ctx.raw(), (&mut byte as *mut u8).cast(), addr as *const c_void, 1, kind) == 0 }
    }

    /// A buffer dropped while its thread captures (its free would be refused, and would invalidate
    /// the capture) is freed when the capture ends: not leaked, and the capture goes on.
    #[test]
    fn a_buffer_dropped_during_a_capture_is_freed_when_it_ends() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        for mode in [CaptureMode::Global, CaptureMode::ThreadLocal] {
            let ctx = Context::new(Backend::Sim).unwrap();
            let s = Stream::new(&ctx).unwrap();
            let used = DeviceBuffer::<u8>::new(&ctx, 64).unwrap();
            let (scratch, host) = (DeviceBuffer::<u32>::new(&ctx, 1024).unwrap(), HostBuffer::<u8>::new(&ctx, 64).unwrap());
            let addr = scratch.device_ptr();
            assert!(live(&ctx, addr));
            let guard = GraphCaptureGuard::begin_with_mode(&s, mode).unwrap();
            s.memset(&used, 1).unwrap();
            drop(scratch); // nothing captured uses it: its free waits for the end of the capture
            drop(host);
            assert_eq!(guard.status(), CaptureStatus::Active, "{mode:?}: the drop invalidated the capture");
            assert_eq!(crate::release::waiting(), 2, "{mode:?}");
            let g = guard.finish().unwrap();
            assert_eq!(crate::release::waiting(), 0, "{mode:?}");
            assert!(!live(&ctx, addr), "{mode:?}: the buffer was not freed when the capture ended");
            g.launch().unwrap();
            s.synchronize().unwrap();
            assert_eq!(used.to_vec().unwrap(), vec![1; 64]);
        }
    }

    /// A capture that is dropped unfinished frees what was dropped during it, too; a drop on another
    /// thread (GLOBAL mode, the default) during a GLOBAL capture waits as well.
    #[test]
    fn a_drop_on_another_thread_or_an_abandoned_capture() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let ctx = Context::new(Backend::Sim).unwrap();
        let s = Stream::new(&ctx).unwrap();
        let scratch = DeviceBuffer::<u8>::new(&ctx, 256).unwrap();
        let addr = scratch.device_ptr();
        let guard = GraphCaptureGuard::begin_with_mode(&s, CaptureMode::Global).unwrap();
        std::thread::spawn(move || drop(scratch)).join().unwrap();
        assert_eq!(guard.status(), CaptureStatus::Active, "the other thread's drop invalidated the capture");
        drop(guard);
        assert!(!live(&ctx, addr), "freed when the abandoned capture ended");
    }
}
