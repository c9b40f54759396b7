//! Streams and events.

use std::ptr;
use std::sync::{Arc, Mutex};

use crate::context::{Context, Keep};
use crate::error::{check, invalid, GpuError, GpuResult};
use crate::memory::{AllocKind, Allocation, DeviceBuffer, DeviceRepr};
use crate::sys;

pub(crate) struct StreamInner {
    pub(crate) ctx: Context,
    pub(crate) raw: *mut sys::gcap_stream,
    /// What work issued (not captured) since the last synchronize uses.
    keep: Mutex<Vec<Keep>>,
    /// False for the legacy and per-thread streams, which the context owns.
    owned: bool,
}

// SAFETY: gcap stream calls take the context's lock; a stream may be used from any thread (a
// ThreadLocal capture then belongs to the thread that began it, which gcap itself checks).
unsafe impl Send for StreamInner {}
// SAFETY: as above.
unsafe impl Sync for StreamInner {}

impl Drop for StreamInner {
    fn drop(&mut self) {
        if self.owned {
            unsafe { sys::gcap_stream_destroy(self.raw) };
        }
    }
}

/// A stream (`cudaStream_t`): work issued to it runs in order. Cloning shares the stream; a clone
/// is equal (`==`, and hashes alike) to the stream it was cloned from, and to no other.
///
/// ```
/// use gcap::{Backend, Context, Stream};
/// # fn main() -> gcap::GpuResult<()> {
/// let ctx = Context::new(Backend::Sim)?;
/// let (a, b) = (Stream::new(&ctx)?, Stream::new(&ctx)?);
/// assert_eq!(a, a.clone());
/// assert_ne!(a, b);
/// let set: std::collections::HashSet<Stream> = [a.clone(), a, b].into_iter().collect();
/// assert_eq!(set.len(), 2);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Stream {
    pub(crate) inner: Arc<StreamInner>,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stream({:p})", self.inner.raw)
    }
}

/// Two `Stream`s are equal when they are the same stream (clones of one another): the identity
/// of the handle, as `cudaStream_t` values compare.
impl PartialEq for Stream {
    fn eq(&self, other: &Stream) -> bool {
        self.inner.raw == other.inner.raw
    }
}

impl Eq for Stream {}

impl std::hash::Hash for Stream {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.raw.hash(state);
    }
}

/// Whether a stream is capturing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureStatus {
    /// Not capturing.
    None,
    /// Capturing: work is recorded, not run.
    Active,
    /// Capturing, but an error invalidated the capture: ending it fails.
    Invalidated,
}

/// How a stream orders itself with the legacy stream (`cudaStreamDefault`, `cudaStreamNonBlocking`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamFlags {
    /// Blocking: the legacy stream's work waits for its earlier work, and its later work waits for
    /// the legacy stream's.
    Default,
    /// Takes no part in the legacy stream's ordering: what [`Stream::new`] makes.
    NonBlocking,
}

impl Stream {
    fn wrap(ctx: &Context, raw: *mut sys::gcap_stream, owned: bool) -> Stream {
        Stream { inner: Arc::new(StreamInner { ctx: ctx.clone(), raw, keep: Mutex::new(Vec::new()), owned }) }
    }

    /// A new non-blocking stream of `ctx`, of priority 0 (`cudaStreamCreate`).
    pub fn new(ctx: &Context) -> GpuResult<Stream> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gcap_stream_create(ctx.raw(), &mut raw) })?;
        Ok(Stream::wrap(ctx, raw, true))
    }

    /// A new stream of `ctx` with `flags` and `priority` (`cudaStreamCreateWithPriority`): lower
    /// is more urgent, and a priority outside [`Context::stream_priority_range`] is clamped.
    pub fn with_flags(ctx: &Context, flags: StreamFlags, priority: i32) -> GpuResult<Stream> {
        let bits = match flags {
            StreamFlags::Default => sys::GCAP_STREAM_DEFAULT,
            StreamFlags::NonBlocking => sys::GCAP_STREAM_NON_BLOCKING,
        };
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gcap_stream_create_with_flags(ctx.raw(), bits, priority, &mut raw) })?;
        Ok(Stream::wrap(ctx, raw, true))
    }

    /// The legacy (NULL) stream of `ctx`: its work waits for the earlier work of every blocking
    /// stream, and their later work waits for its work. It cannot be captured; the context owns
    /// it, so dropping the `Stream` leaves it.
    pub fn legacy(ctx: &Context) -> GpuResult<Stream> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gcap_context_legacy_stream(ctx.raw(), &mut raw) })?;
        Ok(Stream::wrap(ctx, raw, false))
    }

    /// The calling thread's per-thread default stream of `ctx`: a blocking stream of its own for
    /// each thread, owned by the context.
    pub fn per_thread(ctx: &Context) -> GpuResult<Stream> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gcap_context_per_thread_stream(ctx.raw(), &mut raw) })?;
        Ok(Stream::wrap(ctx, raw, false))
    }

    /// The flags it was made with (the legacy and per-thread streams: [`StreamFlags::Default`]).
    pub fn flags(&self) -> GpuResult<StreamFlags> {
        let mut bits = 0;
        check(unsafe { sys::gcap_stream_get_flags(self.raw(), &mut bits) })?;
        Ok(if bits & sys::GCAP_STREAM_NON_BLOCKING != 0 { StreamFlags::NonBlocking } else { StreamFlags::Default })
    }

    /// Its priority, after clamping.
    pub fn priority(&self) -> GpuResult<i32> {
        let mut p = 0;
        check(unsafe { sys::gcap_stream_get_priority(self.raw(), &mut p) })?;
        Ok(p)
    }

    /// The stream's context.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    pub(crate) fn raw(&self) -> *mut sys::gcap_stream {
        self.inner.raw
    }

    /// Waits for all work issued to the stream (`cudaStreamSynchronize`).
    /// [`GpuError::StreamCaptureUnsupported`](crate::GpuError) while it captures.
    pub fn synchronize(&self) -> GpuResult<()> {
        check(unsafe { sys::gcap_stream_synchronize(self.raw()) })?;
        self.inner.keep.lock().unwrap().clear();
        crate::release::retry();
        Ok(())
    }

    /// True when all its work is done (`cudaStreamQuery`).
    pub fn query(&self) -> GpuResult<bool> {
        match unsafe { sys::gcap_stream_query(self.raw()) } {
            sys::GCAP_ERROR_NOT_READY => Ok(false),
            st => check(st).map(|_| true),
        }
    }

    /// Whether the stream captures, and the id of its capture sequence.
    pub fn capture_status(&self) -> GpuResult<(CaptureStatus, u64)> {
        let mut info = unsafe { std::mem::zeroed::<sys::gcap_capture_info>() };
        check(unsafe { sys::gcap_stream_get_capture_info(self.raw(), &mut info) })?;
        let status = match info.status {
            sys::GCAP_CAPTURE_STATUS_ACTIVE => CaptureStatus::Active,
            sys::GCAP_CAPTURE_STATUS_INVALIDATED => CaptureStatus::Invalidated,
            _ => CaptureStatus::None,
        };
        Ok((status, info.id))
    }

    /// Keeps `items` alive while the work just issued may use them: until the next synchronize, or,
    /// while capturing, as long as the captured graph lives. Called under [`Context::issuing`], held
    /// since before the work was issued, so no capture began or ended in between.
    pub(crate) fn keep(&self, items: impl IntoIterator<Item = Keep>) -> GpuResult<()> {
        match self.capture_status()? {
            (CaptureStatus::None, _) => self.inner.keep.lock().unwrap().extend(items),
            (_, id) => self.inner.ctx.keep_for_capture(id, items),
        }
        Ok(())
    }

    /// Makes later work on this stream wait for `event`'s latest record (`cudaStreamWaitEvent`).
    pub fn wait_event(&self, event: &Event) -> GpuResult<()> {
        check(unsafe { sys::gcap_stream_wait_event(self.raw(), event.raw) })
    }

    /// Makes later work on this stream wait for all work issued to `other` so far (an event
    /// recorded there and waited for here). During a capture this forks `other` into it or joins
    /// it back.
    pub fn wait_stream(&self, other: &Stream) -> GpuResult<()> {
        let e = Event::new(&self.inner.ctx)?;
        e.record(other)?;
        self.wait_event(&e)
    }

    /// Fills every byte of `dst` with `value` (`cudaMemsetAsync`).
    pub fn memset<T: DeviceRepr>(&self, dst: &DeviceBuffer<T>, value: u8) -> GpuResult<()> {
        let _issuing = self.inner.ctx.issuing(); // the keeps go where the work went
        check(unsafe { sys::gcap_memset_async(self.raw(), dst.raw(), value as i32, dst.size_bytes()) })?;
        self.keep([dst.keep()])
    }

    /// Sets every 32-bit word of `dst` to `value` (`cuMemsetD32Async`); a buffer of 4-byte elements.
    pub fn memset_u32<T: DeviceRepr>(&self, dst: &DeviceBuffer<T>, value: u32) -> GpuResult<()> {
        if std::mem::size_of::<T>() != 4 {
            return invalid("memset_u32: the buffer's elements are not 4 bytes");
        }
        let _issuing = self.inner.ctx.issuing();
        check(unsafe { sys::gcap_memset_d32_async(self.raw(), dst.raw(), value, dst.len()) })?;
        self.keep([dst.keep()])
    }

    /// Copies all of `src` into `dst`, device to device (`cudaMemcpyAsync`).
    /// [`GpuError::InvalidValue`](crate::GpuError) when the lengths differ.
    pub fn copy<T: DeviceRepr>(&self, dst: &DeviceBuffer<T>, src: &DeviceBuffer<T>) -> GpuResult<()> {
        if dst.len() != src.len() {
            return invalid(format!("copy: {} elements into a buffer of {}", src.len(), dst.len()));
        }
        let kind = sys::GCAP_MEMCPY_DEVICE_TO_DEVICE;
        let _issuing = self.inner.ctx.issuing();
        check(unsafe { sys::gcap_memcpy_async(self.raw(), dst.raw(), src.raw(), dst.size_bytes(), kind) })?;
        self.keep([dst.keep(), src.keep()])
    }

    /// Copies `data` into `dst` when the stream gets there (`cudaMemcpyAsync`, host to device). The
    /// stream owns `data` until then (a captured copy: as long as the graph lives, and every replay
    /// copies it again).
    pub fn upload<T: DeviceRepr>(&self, dst: &DeviceBuffer<T>, data: Vec<T>) -> GpuResult<()> {
        if data.len() != dst.len() {
            return invalid(format!("upload: {} elements into a buffer of {}", data.len(), dst.len()));
        }
        let data: Arc<Vec<T>> = Arc::new(data);
        let _issuing = self.inner.ctx.issuing();
        let kind = sys::GCAP_MEMCPY_HOST_TO_DEVICE;
        check(unsafe { sys::gcap_memcpy_async(self.raw(), dst.raw(), data.as_ptr().cast(), dst.size_bytes(), kind) })?;
        self.keep([dst.keep(), data as Keep])
    }
}

/// Stream-ordered allocation (`cudaMallocAsync`, `cudaFreeAsync`): outside a capture, ordinary
/// device memory; during one, allocation and free nodes whose memory the graph owns.
impl Stream {
    /// `len` elements of device memory, allocated in stream order (`gcap_mem_alloc_async`).
    ///
    /// Outside a capture this is an ordinary [`DeviceBuffer`], freed when it is dropped (once
    /// nothing uses it) or by [`free_async`](Self::free_async). During a capture it records an
    /// allocation node: the address is fixed from now on for the graph and its executables, and
    /// each launch allocates the memory there; the capture's work may use the buffer like any
    /// other. Free it in the same capture with [`free_async`](Self::free_async) (a free node), or,
    /// after a launch, with `free_async` outside the capture; otherwise the next launch of the
    /// executable fails with [`GpuError::InvalidValue`](crate::GpuError) while the memory is still
    /// allocated (CUDA's rule). The memory comes from the capture's pool
    /// ([`GraphCaptureGuard::begin_with_pool`](crate::GraphCaptureGuard::begin_with_pool), else one
    /// of its own), which the buffer keeps: dropping the buffer gives nothing back by itself, the
    /// graph owns the memory. `len` 0 is [`GpuError::InvalidValue`](crate::GpuError).
    ///
    /// ```
    /// use gcap::{Backend, CapturePool, Context, GraphCaptureGuard, Stream};
    /// # fn main() -> gcap::GpuResult<()> {
    /// let ctx = Context::new(Backend::Sim)?;
    /// let (s, pool) = (Stream::new(&ctx)?, CapturePool::new(&ctx)?);
    /// let out = gcap::DeviceBuffer::<u32>::zeroed(&ctx, 256)?;
    /// let guard = GraphCaptureGuard::begin_with_pool(&s, pool.clone())?;
    /// let scratch = s.alloc_async::<u32>(256)?;   // an allocation node, from the pool
    /// s.memset_u32(&scratch, 7)?;
    /// s.copy(&out, &scratch)?;
    /// s.free_async(scratch)?;                     // a free node
    /// let graph = guard.finish()?;
    /// assert_eq!(pool.stats()?.reserved_bytes, 1024);
    /// graph.launch()?;
    /// graph.launch()?;
    /// s.synchronize()?;
    /// assert_eq!(out.to_vec()?, vec![7; 256]);
    /// assert_eq!(pool.stats()?.used_bytes, 0);      // each launch freed what it allocated
    /// # Ok(()) }
    /// ```
    pub fn alloc_async<T: DeviceRepr>(&self, len: usize) -> GpuResult<DeviceBuffer<T>> {
        let Some(bytes) = len.checked_mul(std::mem::size_of::<T>()) else {
            return invalid(format!("Stream::alloc_async: {len} elements overflow"));
        };
        let ctx = &self.inner.ctx;
        let _issuing = ctx.issuing(); // no capture begins or ends meanwhile
        let (status, id) = self.capture_status()?;
        let mut p = ptr::null_mut();
        check(unsafe { sys::gcap_mem_alloc_async(self.raw(), bytes, &mut p) })?;
        let kind = match status {
            CaptureStatus::None => AllocKind::Device,
            _ => {
                let pool = ctx.inner.capture_pools.lock().unwrap_or_else(|e| e.into_inner()).get(&id).cloned();
                match pool {
                    Some(pool) => AllocKind::Graph(pool),
                    None => {
                        // A capture the crate did not begin (through `sys`): no pool keeps the address.
                        return Err(GpuError::NotSupported(
                            "Stream::alloc_async: the stream captures for a capture begun outside this crate".into(),
                        ));
                    }
                }
            }
        };
        Ok(DeviceBuffer::from_allocation(Allocation::new(ctx, p, bytes, kind), len))
    }

    /// Frees `buf` in stream order (`gcap_mem_free_async`): after the work issued to this stream
    /// before it.
    ///
    /// During a capture it records a free node for a buffer [`alloc_async`](Self::alloc_async)
    /// allocated in a capture (any other is refused by the library, which invalidates the capture;
    /// the buffer is then freed as if dropped). Outside a capture it frees an ordinary buffer, or the
    /// memory a graph's launch left allocated. An ordinary buffer that a graph, an executable or
    /// work issued to *another* stream still uses is not freed: that is
    /// [`GpuError::IllegalState`](crate::GpuError), and the buffer is let go as by a drop (freed
    /// when they are done).
    pub fn free_async<T: DeviceRepr>(&self, buf: DeviceBuffer<T>) -> GpuResult<()> {
        let ctx = &self.inner.ctx;
        let _issuing = ctx.issuing();
        let alloc = buf.alloc;
        if alloc.ctx_raw() != ctx.raw() {
            return invalid("Stream::free_async: the buffer belongs to another context");
        }
        let (status, _) = self.capture_status()?;
        if status == CaptureStatus::None && !alloc.is_graph() {
            // Work issued to this stream runs before the free; any other user would not.
            let target = Arc::as_ptr(&alloc) as *const ();
            let ours = self.inner.keep.lock().unwrap().iter().filter(|k| Arc::as_ptr(*k) as *const () == target).count();
            let others = Arc::strong_count(&alloc) - 1 - ours;
            if others > 0 {
                return Err(GpuError::IllegalState(format!(
                    "Stream::free_async: the buffer is still used by {others} graph(s), executable(s) or operation(s) \
                     of other streams; it is freed when they are done"
                )));
            }
        }
        check(unsafe { sys::gcap_mem_free_async(self.raw(), alloc.ptr) })?;
        alloc.mark_freed();
        Ok(())
    }
}

/// An event (`cudaEvent_t`), with timing.
pub struct Event {
    ctx: Context,
    pub(crate) raw: *mut sys::gcap_event,
}

// SAFETY: gcap event calls take the context's lock.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Event({:p})", self.raw)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        unsafe { sys::gcap_event_destroy(self.raw) };
    }
}

impl Event {
    /// A new event of `ctx` (`cudaEventCreate`).
    pub fn new(ctx: &Context) -> GpuResult<Event> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gcap_event_create(ctx.raw(), &mut raw) })?;
        Ok(Event { ctx: ctx.clone(), raw })
    }

    /// The event's context.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Records the event at this point of `stream` (`cudaEventRecord`); during a capture it marks a
    /// node other streams may wait for (fork and join).
    pub fn record(&self, stream: &Stream) -> GpuResult<()> {
        check(unsafe { sys::gcap_event_record(self.raw, stream.raw()) })
    }

    /// Waits for the work before the latest record (`cudaEventSynchronize`).
    pub fn synchronize(&self) -> GpuResult<()> {
        check(unsafe { sys::gcap_event_synchronize(self.raw) })
    }

    /// True when the work before the latest record is done (`cudaEventQuery`).
    pub fn query(&self) -> GpuResult<bool> {
        match unsafe { sys::gcap_event_query(self.raw) } {
            sys::GCAP_ERROR_NOT_READY => Ok(false),
            st => check(st).map(|_| true),
        }
    }

    /// Milliseconds from this event's record to `end`'s (`cudaEventElapsedTime`).
    pub fn elapsed_time(&self, end: &Event) -> GpuResult<f32> {
        let mut ms = 0f32;
        check(unsafe { sys::gcap_event_elapsed_time(self.raw, end.raw, &mut ms) })?;
        Ok(ms)
    }
}

/// Kernels, host functions and page-locked copies (see [`crate::Module`] and [`crate::HostBuffer`]).
impl Stream {
    /// Launches `kernel` on the stream (`cuLaunchKernel`): `grid` blocks of `block` threads, with
    /// `shared_mem` bytes of dynamic shared memory per block. The arguments are checked against the
    /// kernel's parameters ([`GpuError::InvalidValue`](crate::GpuError) naming the argument when the
    /// count or a size differs); buffers among them stay allocated until the stream is synchronized
    /// (during a capture: as long as the graph lives). On the simulator under
    /// [`Exec::Immediate`](crate::Exec) the kernel runs before this returns, and its failure (a
    /// closure's panic, a PTX kernel's bad access) is this call's error.
    ///
    /// Raw CPU kernels, and kernels whose parameter count is unknown, need
    /// [`launch_unchecked`](Self::launch_unchecked).
    pub fn launch(
        &self,
        kernel: &crate::Kernel,
        grid: impl Into<crate::Dim3>,
        block: impl Into<crate::Dim3>,
        shared_mem: u32,
        args: &[&dyn crate::KernelArg],
    ) -> GpuResult<()> {
        let mut l = crate::module::prepare_launch(
            "Stream::launch",
            self.context(),
            kernel,
            grid.into(),
            block.into(),
            shared_mem,
            args,
            false,
        )?;
        self.launch_prepared(kernel, &mut l)
    }

    /// [`launch`](Self::launch) for raw CPU kernels and kernels of unknown parameter count (the
    /// checks that can be made are still made).
    ///
    /// # Safety
    /// For a raw CPU kernel, its function must be sound for these arguments, grid and block
    /// whenever the launch runs (the buffers passed stay allocated meanwhile). For a kernel whose
    /// parameter count is unknown, `args` must match its parameters in number (and, to compute the
    /// right thing, in size).
    pub unsafe fn launch_unchecked(
        &self,
        kernel: &crate::Kernel,
        grid: impl Into<crate::Dim3>,
        block: impl Into<crate::Dim3>,
        shared_mem: u32,
        args: &[&dyn crate::KernelArg],
    ) -> GpuResult<()> {
        let mut l = crate::module::prepare_launch(
            "Stream::launch_unchecked",
            self.context(),
            kernel,
            grid.into(),
            block.into(),
            shared_mem,
            args,
            true,
        )?;
        self.launch_prepared(kernel, &mut l)
    }

    /// [`launch`](Self::launch) as a cooperative launch (`cuLaunchCooperativeKernel`): every block
    /// of the grid is resident at once, so the blocks may wait for each other (a grid-wide barrier,
    /// `cooperative_groups::this_grid().sync()`). A grid with more blocks than the device holds at
    /// once is [`GpuError::CooperativeLaunchTooLarge`](crate::GpuError), and nothing runs. A
    /// capture records a kernel node that runs cooperatively on every replay.
    pub fn launch_cooperative(
        &self,
        kernel: &crate::Kernel,
        grid: impl Into<crate::Dim3>,
        block: impl Into<crate::Dim3>,
        shared_mem: u32,
        args: &[&dyn crate::KernelArg],
    ) -> GpuResult<()> {
        let mut l = crate::module::prepare_launch(
            "Stream::launch_cooperative",
            self.context(),
            kernel,
            grid.into(),
            block.into(),
            shared_mem,
            args,
            false,
        )?;
        self.launch_as(kernel, &mut l, true)
    }

    fn launch_prepared(&self, kernel: &crate::Kernel, l: &mut crate::module::PreparedLaunch) -> GpuResult<()> {
        self.launch_as(kernel, l, false)
    }

    fn launch_as(&self, kernel: &crate::Kernel, l: &mut crate::module::PreparedLaunch, cooperative: bool) -> GpuResult<()> {
        let _issuing = self.inner.ctx.issuing();
        let args = l.args();
        let st = unsafe {
            if cooperative {
                sys::gcap_launch_cooperative_kernel(self.raw(), kernel.raw, l.grid, l.block, l.shared_mem, args)
            } else {
                sys::gcap_launch_kernel(self.raw(), kernel.raw, l.grid, l.block, l.shared_mem, args)
            }
        };
        let result = check(st).map_err(|e| l.explain(e)); // before any other gcap call replaces the message
        // What the kernel may still use is kept whether or not it failed: a failure found while it ran
        // comes after it started.
        let kept = self.keep(l.keeps.drain(..));
        result.and(kept)
    }

    /// Runs `f` on a host thread when the stream gets there (`cudaLaunchHostFunc`); during a capture
    /// it becomes a host node, called on every replay. `f` must not use the device (gcap refuses
    /// such calls with [`GpuError::IllegalState`](crate::GpuError)). A panic in `f` is caught, printed
    /// to stderr, and aborts the process: the C callback has no way to report an error, and
    /// unwinding into C is undefined behaviour. `f` is dropped after the next synchronize (or with
    /// the captured graph).
    pub fn host_fn<F: Fn() + Send + Sync + 'static>(&self, f: F) -> GpuResult<()> {
        let (func, user_data, keep) = crate::host::host_fn(f);
        let _issuing = self.inner.ctx.issuing();
        let result = check(unsafe { sys::gcap_launch_host_func(self.raw(), func, user_data) });
        let kept = self.keep([keep]);
        result.and(kept)
    }

    /// Copies all of `src` into the page-locked `dst` when the stream gets there (`cudaMemcpyAsync`,
    /// device to host). `dst` shows the values after a synchronize: see [`crate::HostBuffer`].
    /// [`GpuError::InvalidValue`](crate::GpuError) when the lengths differ.
    pub fn download<T: DeviceRepr>(&self, src: &DeviceBuffer<T>, dst: &crate::HostBuffer<T>) -> GpuResult<()> {
        if dst.len() != src.len() {
            return invalid(format!("download: {} elements into a host buffer of {}", src.len(), dst.len()));
        }
        let kind = sys::GCAP_MEMCPY_DEVICE_TO_HOST;
        let _issuing = self.inner.ctx.issuing();
        check(unsafe { sys::gcap_memcpy_async(self.raw(), dst.raw(), src.raw(), src.size_bytes(), kind) })?;
        self.keep([src.keep(), dst.keep()])
    }

    /// Copies all of the page-locked `src` into `dst` when the stream gets there
    /// (`cudaMemcpyAsync`, host to device): the values `src` holds then, not now.
    /// [`GpuError::InvalidValue`](crate::GpuError) when the lengths differ.
    pub fn upload_from_host<T: DeviceRepr>(&self, dst: &DeviceBuffer<T>, src: &crate::HostBuffer<T>) -> GpuResult<()> {
        if dst.len() != src.len() {
            return invalid(format!("upload_from_host: {} elements into a buffer of {}", src.len(), dst.len()));
        }
        let kind = sys::GCAP_MEMCPY_HOST_TO_DEVICE;
        let _issuing = self.inner.ctx.issuing();
        check(unsafe { sys::gcap_memcpy_async(self.raw(), dst.raw(), src.raw(), dst.size_bytes(), kind) })?;
        self.keep([dst.keep(), src.keep()])
    }
}
