//! Stream capture in the two shapes Rust GPU code already uses: oxicuda-driver's [`StreamCapture`]
//! and ferrotorch-gpu's [`GraphCaptureGuard`], over gcap's capture object.

use std::ptr;
use std::sync::Arc;

use crate::context::{Context, Keep};
use crate::error::{check, GpuResult};
use crate::graph::{Graph, GraphExec, Node, NodeType};
use crate::memory::{copy_operands, CopyEnd, DeviceBuffer, DeviceRepr, MemcpyDirection};
use crate::stream::{CaptureStatus, Stream};
use crate::sys;

/// How a capture treats potentially unsafe calls from other threads (`cudaStreamCaptureMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureMode {
    /// Unsafe calls from any thread invalidate the capture.
    Global,
    /// Only this thread's unsafe calls do (the mode for one capture per thread).
    ThreadLocal,
    /// Nothing is refused for safety.
    Relaxed,
}

impl CaptureMode {
    fn raw(self) -> sys::gcap_capture_mode {
        match self {
            CaptureMode::Global => sys::GCAP_CAPTURE_MODE_GLOBAL,
            CaptureMode::ThreadLocal => sys::GCAP_CAPTURE_MODE_THREAD_LOCAL,
            CaptureMode::Relaxed => sys::GCAP_CAPTURE_MODE_RELAXED,
        }
    }

    fn of(raw: sys::gcap_capture_mode) -> CaptureMode {
        match raw {
            sys::GCAP_CAPTURE_MODE_THREAD_LOCAL => CaptureMode::ThreadLocal,
            sys::GCAP_CAPTURE_MODE_RELAXED => CaptureMode::Relaxed,
            _ => CaptureMode::Global,
        }
    }
}

/// Sets this thread's capture mode to `mode` and returns the one it had
/// (`cudaThreadExchangeStreamCaptureMode`, `gcap_thread_exchange_capture_mode`). The mode decides
/// which *other* threads' captures this thread's potentially unsafe calls (an allocation, a
/// synchronize) invalidate: in [`CaptureMode::Relaxed`] none, in `Global` (every thread's start)
/// the GLOBAL-mode captures of any thread. Put the old mode back when done:
///
/// ```
/// use gcap::{thread_exchange_capture_mode, Backend, CaptureMode, Context, DeviceBuffer};
/// # fn main() -> gcap::GpuResult<()> {
/// # let ctx = Context::new(Backend::Sim)?;
/// let old = thread_exchange_capture_mode(CaptureMode::Relaxed)?;
/// let scratch = DeviceBuffer::<u8>::new(&ctx, 64)?; // breaks no other thread's GLOBAL capture
/// assert_eq!(thread_exchange_capture_mode(old)?, CaptureMode::Relaxed);
/// assert_eq!(old, CaptureMode::Global);
/// # drop(scratch);
/// # Ok(()) }
/// ```
pub fn thread_exchange_capture_mode(mode: CaptureMode) -> GpuResult<CaptureMode> {
    let mut m = mode.raw();
    check(unsafe { sys::gcap_thread_exchange_capture_mode(&mut m) })?;
    Ok(CaptureMode::of(m))
}

/// A private memory pool for the graph allocations of captures (PyTorch's graph pools): the
/// memory of [`Stream::alloc_async`](crate::Stream::alloc_async) during a capture begun with it
/// ([`GraphCaptureGuard::begin_with_pool`]) comes from it, so several graphs can share it. The
/// finished graph, and buffers allocated from it, keep it alive. A capture begun without one draws
/// from a pool of its own.
pub struct CapturePool {
    ctx: Context,
    raw: *mut sys::gcap_pool,
}

// SAFETY: pool calls take the context's lock.
unsafe impl Send for CapturePool {}
// SAFETY: as above.
unsafe impl Sync for CapturePool {}

impl Drop for CapturePool {
    fn drop(&mut self) {
        unsafe { sys::gcap_pool_release(self.raw) };
    }
}

impl std::fmt::Debug for CapturePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CapturePool({:p})", self.raw)
    }
}

/// A pool's figures in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolStats {
    /// Reserved for the pool's allocations, spare blocks included.
    pub reserved_bytes: usize,
    /// Allocated now.
    pub used_bytes: usize,
    /// The most ever allocated at once.
    pub peak_bytes: usize,
    /// Executables drawing from the pool.
    pub attached_execs: usize,
}

impl CapturePool {
    /// A new pool of `ctx`.
    pub fn new(ctx: &Context) -> GpuResult<Arc<CapturePool>> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gcap_pool_create(ctx.raw(), &mut raw) })?;
        Ok(Arc::new(CapturePool { ctx: ctx.clone(), raw }))
    }

    /// The pool's figures.
    pub fn stats(&self) -> GpuResult<PoolStats> {
        let mut s = unsafe { std::mem::zeroed::<sys::gcap_pool_stats>() };
        check(unsafe { sys::gcap_pool_get_stats(self.raw, &mut s) })?;
        Ok(PoolStats { reserved_bytes: s.reserved_bytes, used_bytes: s.used_bytes, peak_bytes: s.peak_bytes, attached_execs: s.attached_execs })
    }

    /// The pool's context.
    pub fn context(&self) -> &Context {
        &self.ctx
    }
}

/// A capture object: the stream's work from `begin` to `end` is recorded, not run.
struct RawCapture {
    raw: *mut sys::gcap_capture,
    stream: Stream,
    id: u64,
    /// Its key among the live captures whose refused frees wait (release.rs), until it ends.
    live: Option<u64>,
}

impl RawCapture {
    fn begin(stream: &Stream, mode: CaptureMode, pool: Option<&Arc<CapturePool>>) -> GpuResult<RawCapture> {
        // Every capture draws its graph allocations (Stream::alloc_async) from a pool, a private one
        // when none is given: a buffer allocated in the capture keeps the pool, so its address stays
        // backed by memory as long as the buffer lives, whatever becomes of the graph.
        let pool = match pool {
            Some(p) => p.clone(),
            None => CapturePool::new(stream.context())?,
        };
        let mut o = unsafe { std::mem::zeroed::<sys::gcap_capture_options>() };
        unsafe { sys::gcap_capture_options_init(&mut o) };
        o.mode = mode.raw();
        o.pool = pool.raw;
        let _changing = stream.context().changing_captures();
        let mut raw = ptr::null_mut();
        // Noted before it begins, so that no drop in between frees what it would refuse.
        let live = crate::release::began(o.mode);
        if let Err(e) = check(unsafe { sys::gcap_capture_begin(stream.raw(), &o, &mut raw) }) {
            crate::release::ended(live);
            return Err(e);
        }
        let id = stream.capture_status().map(|s| s.1).unwrap_or(0);
        let ctx = stream.context();
        ctx.keep_for_capture(id, [pool.clone() as Keep]); // the graph and its executables keep the pool
        ctx.inner.capture_pools.lock().unwrap_or_else(|e| e.into_inner()).insert(id, pool);
        Ok(RawCapture { raw, stream: stream.clone(), id, live: Some(live) })
    }

    /// The capture has ended: the frees it refused happen now.
    fn ended(&mut self) {
        if let Some(key) = self.live.take() {
            self.stream.context().inner.capture_pools.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
            crate::release::ended(key);
        }
    }

    fn status(&self) -> CaptureStatus {
        let mut s = sys::GCAP_CAPTURE_STATUS_NONE;
        unsafe { sys::gcap_capture_get_status(self.raw, &mut s) };
        match s {
            sys::GCAP_CAPTURE_STATUS_ACTIVE => CaptureStatus::Active,
            sys::GCAP_CAPTURE_STATUS_INVALIDATED => CaptureStatus::Invalidated,
            _ => CaptureStatus::None,
        }
    }

    /// What the recorded work uses, for the graph or executable that replays it.
    fn take_keeps(&self) -> Vec<Keep> {
        self.stream.context().take_capture_keeps(self.id)
    }
}

impl Drop for RawCapture {
    fn drop(&mut self) {
        let changing = self.stream.context().changing_captures();
        unsafe { sys::gcap_capture_destroy(self.raw) }; // ends a live capture, discards its graph
        drop(changing);
        drop(self.take_keeps());
        self.ended();
    }
}

// SAFETY: capture calls take the context's lock; gcap itself refuses to end a ThreadLocal capture
// on another thread (StreamCaptureWrongThread).
unsafe impl Send for RawCapture {}

/// oxicuda-driver's `StreamCapture`: begin capturing a stream, record work, end with a [`Graph`].
///
/// Unlike oxicuda's recorder, which only counts what it is told, gcap records real work, so the
/// record methods take the buffers they use (and keep them alive as long as the graph); work
/// issued on the stream itself (or on streams joined to it) while the capture is active is
/// recorded too.
///
/// ```
/// use gcap::{Backend, Context, DeviceBuffer, MemcpyDirection, Stream, StreamCapture};
/// # fn main() -> gcap::CudaResult<()> {
/// let ctx = Context::new(Backend::Sim)?;
/// let stream = Stream::new(&ctx)?;
/// let (a, b) = (DeviceBuffer::<u32>::new(&ctx, 256)?, DeviceBuffer::<u32>::new(&ctx, 256)?);
/// let mut capture = StreamCapture::begin(&stream)?;
/// capture.record_memset(&a, 7)?;
/// capture.record_memcpy(&b, &a, a.size_bytes(), MemcpyDirection::DeviceToDevice)?;
/// assert_eq!(capture.recorded_count(), 2);
/// let graph = capture.end()?;
/// assert_eq!(graph.node_count(), 2);
/// assert!(matches!(capture.end(), Err(gcap::CudaError::StreamCaptureUnmatched(_))));
/// graph.instantiate()?.launch(&stream)?;
/// stream.synchronize()?;
/// assert!(b.to_vec()?.iter().all(|&x| x == 0x07070707));
/// # Ok(()) }
/// ```
pub struct StreamCapture {
    cap: RawCapture,
}

impl StreamCapture {
    /// Begins a GLOBAL-mode capture on `stream`.
    pub fn begin(stream: &Stream) -> GpuResult<StreamCapture> {
        Self::begin_with_mode(stream, CaptureMode::Global)
    }

    /// Begins a capture on `stream` in `mode`.
    pub fn begin_with_mode(stream: &Stream, mode: CaptureMode) -> GpuResult<StreamCapture> {
        Ok(StreamCapture { cap: RawCapture::begin(stream, mode, None)? })
    }

    /// The stream being captured.
    pub fn stream(&self) -> &Stream {
        &self.cap.stream
    }

    /// Records a fill of every byte of `dst` with `value`.
    pub fn record_memset<T: DeviceRepr>(&mut self, dst: &DeviceBuffer<T>, value: u8) -> GpuResult<()> {
        let _issuing = self.cap.stream.context().issuing();
        check(unsafe { sys::gcap_capture_record_memset(self.cap.raw, dst.raw(), value, dst.size_bytes()) })?;
        self.cap.stream.keep([dst.keep()])
    }

    /// Records a copy of `bytes` bytes from `src` to `dst` in `direction`, as oxicuda-driver's
    /// `record_memcpy(dst, src, size, direction)`: each end is a buffer (`&buf`, from its start) or
    /// a buffer from an element offset (`buf.at(i)`); device ends are [`DeviceBuffer`]s, host ends
    /// page-locked [`HostBuffer`](crate::HostBuffer)s (a host-to-device copy reads the host buffer
    /// at every replay, a device-to-host copy writes it). [`CudaError::InvalidValue`](crate::CudaError)
    /// naming the end when an end is not of the side `direction` says, lies partly outside its
    /// buffer, or belongs to another context; the library's own checks follow. The graph keeps
    /// both buffers allocated.
    pub fn record_memcpy<'d, 's>(
        &mut self,
        dst: impl Into<CopyEnd<'d>>,
        src: impl Into<CopyEnd<'s>>,
        bytes: usize,
        direction: MemcpyDirection,
    ) -> GpuResult<()> {
        let ctx = self.cap.stream.context().clone();
        let (d, s, keep) = copy_operands("StreamCapture::record_memcpy", &ctx, &dst.into(), &src.into(), bytes, direction)?;
        let _issuing = ctx.issuing();
        check(unsafe { sys::gcap_capture_record_memcpy(self.cap.raw, d, s, bytes, direction.raw()) })?;
        self.cap.stream.keep(keep)
    }

    /// Nodes recorded so far, from every joined stream.
    pub fn recorded_count(&self) -> usize {
        unsafe { sys::gcap_capture_recorded_count(self.cap.raw) }
    }

    /// True until the capture is ended.
    pub fn is_active(&self) -> bool {
        unsafe { sys::gcap_capture_is_active(self.cap.raw) }
    }

    /// Whether the capture is active or invalidated (`None` once ended).
    pub fn status(&self) -> CaptureStatus {
        self.cap.status()
    }

    /// Ends the capture and returns its graph. A second call is
    /// [`CudaError::StreamCaptureUnmatched`](crate::CudaError); a capture that failed returns its
    /// error (`StreamCaptureInvalidated`, `StreamCaptureUnjoined`, ...) with the C message naming the
    /// first offending call, and the stream is usable again.
    pub fn end(&mut self) -> GpuResult<Graph> {
        let mut g = ptr::null_mut();
        let changing = self.cap.stream.context().changing_captures();
        let st = unsafe { sys::gcap_capture_end(self.cap.raw, &mut g) };
        let keeps = self.cap.take_keeps();
        drop(changing);
        self.cap.ended();
        check(st)?;
        Ok(Graph::from_raw(self.cap.stream.context(), g, keeps))
    }
}

/// ferrotorch-gpu's `GraphCaptureGuard`: a scoped capture whose [`finish`](Self::finish) returns an
/// instantiated [`CapturedGraph`]. Dropped before `finish` (an early `?` return), it ends the
/// capture best-effort and discards the graph, so the stream is usable again.
///
/// ```
/// use gcap::{Backend, Context, DeviceBuffer, GraphCaptureGuard, Stream};
/// # fn run_kernels(stream: &Stream, buf: &DeviceBuffer<f32>) -> gcap::GpuResult<()> { stream.memset(buf, 0) }
/// # fn main() -> gcap::GpuResult<()> {
/// # let ctx = Context::new(Backend::Sim)?;
/// # let stream = Stream::new(&ctx)?;
/// # let buf = DeviceBuffer::<f32>::new(&ctx, 1024)?;
/// let guard = GraphCaptureGuard::begin(&stream)?;
/// run_kernels(&stream, &buf)?;               // launched on the stream: recorded
/// let graph = guard.finish()?;
/// graph.upload()?;
/// for _ in 0..1000 { graph.launch()?; }
/// # stream.synchronize()?;
/// # Ok(()) }
/// ```
pub struct GraphCaptureGuard {
    cap: RawCapture,
    pool: Option<Arc<CapturePool>>,
}

impl GraphCaptureGuard {
    /// Begins a ThreadLocal-mode capture on `stream`.
    pub fn begin(stream: &Stream) -> GpuResult<GraphCaptureGuard> {
        Self::begin_with_mode(stream, CaptureMode::ThreadLocal)
    }

    /// Begins a capture on `stream` in `mode`.
    pub fn begin_with_mode(stream: &Stream, mode: CaptureMode) -> GpuResult<GraphCaptureGuard> {
        Ok(GraphCaptureGuard { cap: RawCapture::begin(stream, mode, None)?, pool: None })
    }

    /// Begins a ThreadLocal capture whose graph allocations come from `pool`; the finished graph
    /// keeps the pool alive.
    pub fn begin_with_pool(stream: &Stream, pool: Arc<CapturePool>) -> GpuResult<GraphCaptureGuard> {
        let cap = RawCapture::begin(stream, CaptureMode::ThreadLocal, Some(&pool))?;
        Ok(GraphCaptureGuard { cap, pool: Some(pool) })
    }

    /// Whether the capture is active or invalidated.
    pub fn status(&self) -> CaptureStatus {
        self.cap.status()
    }

    /// Ends the capture and instantiates its graph. A capture that failed returns its error, and the
    /// stream is usable again.
    pub fn finish(mut self) -> GpuResult<CapturedGraph> {
        // gcap_capture_end, then instantiate: gcap_capture_finish would release the graph, which
        // the CapturedGraph keeps to show (nodes, DOT).
        let mut g = ptr::null_mut();
        let changing = self.cap.stream.context().changing_captures();
        let st = unsafe { sys::gcap_capture_end(self.cap.raw, &mut g) };
        let keeps = self.cap.take_keeps();
        drop(changing);
        self.cap.ended();
        check(st)?;
        let graph = Graph::from_raw(self.cap.stream.context(), g, keeps);
        let exec = graph.instantiate()?;
        Ok(CapturedGraph { exec, graph, stream: self.cap.stream.clone(), pool: self.pool.clone() })
    }
}

/// ferrotorch-gpu's `CapturedGraph`: an instantiated capture, launched on the stream it was
/// captured from.
///
/// It keeps the captured [`Graph`] too, to show what was recorded: [`graph`](Self::graph),
/// [`nodes`](Self::nodes) with their [`NodeType`]s, and [`to_dot`](Self::to_dot).
pub struct CapturedGraph {
    exec: GraphExec,
    graph: Graph,
    stream: Stream,
    pool: Option<Arc<CapturePool>>,
}

impl std::fmt::Debug for CapturedGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CapturedGraph({:?}, {:?} on {:?})", self.graph, self.exec, self.stream)
    }
}

impl CapturedGraph {
    /// The captured graph the executable was made from (its nodes name the executable's nodes
    /// for the [`GraphExec`] setters).
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The captured nodes in creation order, each with its type.
    ///
    /// ```
    /// use gcap::{Backend, Context, DeviceBuffer, GraphCaptureGuard, NodeType, Stream};
    /// # fn main() -> gcap::GpuResult<()> {
    /// let ctx = Context::new(Backend::Sim)?;
    /// let s = Stream::new(&ctx)?;
    /// let (a, b) = (DeviceBuffer::<u8>::new(&ctx, 16)?, DeviceBuffer::<u8>::new(&ctx, 16)?);
    /// let guard = GraphCaptureGuard::begin(&s)?;
    /// s.memset(&a, 1)?;
    /// s.copy(&b, &a)?;
    /// let graph = guard.finish()?;
    /// let types: Vec<NodeType> = graph.nodes()?.into_iter().map(|(_, t)| t).collect();
    /// assert_eq!(types, [NodeType::Memset, NodeType::Memcpy]);
    /// assert!(graph.to_dot(false)?.contains("n0 -> n1;"));
    /// # Ok(()) }
    /// ```
    pub fn nodes(&self) -> GpuResult<Vec<(Node, NodeType)>> {
        self.graph.nodes()?.into_iter().map(|n| Ok((n, self.graph.node_type(n)?))).collect()
    }

    /// The captured graph as Graphviz DOT text ([`Graph::to_dot`]; `verbose`: node parameters in
    /// the labels).
    pub fn to_dot(&self, verbose: bool) -> GpuResult<String> {
        self.graph.to_dot(verbose)
    }

    /// Uploads the executable ahead of its first launch (`cudaGraphUpload`).
    pub fn upload(&self) -> GpuResult<()> {
        self.exec.upload(&self.stream)
    }

    /// Replays the graph on its stream (`cudaGraphLaunch`).
    pub fn launch(&self) -> GpuResult<()> {
        self.exec.launch(&self.stream)
    }

    /// Replays the graph on another stream of the context.
    pub fn launch_on(&self, stream: &Stream) -> GpuResult<()> {
        self.exec.launch(stream)
    }

    /// The stream the graph was captured from.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The executable.
    pub fn exec(&self) -> &GraphExec {
        &self.exec
    }

    /// The pool the capture drew its allocations from, kept alive by this graph.
    pub fn pool(&self) -> Option<&Arc<CapturePool>> {
        self.pool.as_ref()
    }
}

/// Kernel launches recorded by name, as oxicuda-driver's `StreamCapture::record_kernel`.
impl StreamCapture {
    /// Records a launch of `kernel` (`gcap_capture_record_kernel`, which finds the kernel by name
    /// among the context's modules, earliest loaded first). Arguments are checked and kept as by
    /// [`Stream::launch`]. [`CudaError::InvalidValue`](crate::CudaError) when an earlier-loaded
    /// module has another kernel of the same name (the name would record that one); a capture that
    /// has ended is [`CudaError::StreamCaptureUnmatched`](crate::CudaError).
    pub fn record_kernel(
        &mut self,
        kernel: &crate::Kernel,
        grid: impl Into<crate::Dim3>,
        block: impl Into<crate::Dim3>,
        shared_mem: u32,
        args: &[&dyn crate::KernelArg],
    ) -> GpuResult<()> {
        let ctx = self.cap.stream.context().clone();
        let l = crate::module::prepare_launch(
            "StreamCapture::record_kernel",
            &ctx,
            kernel,
            grid.into(),
            block.into(),
            shared_mem,
            args,
            false,
        )?;
        self.record_prepared(kernel, l)
    }

    /// [`record_kernel`](Self::record_kernel) for raw CPU kernels and kernels of unknown parameter
    /// count.
    ///
    /// # Safety
    /// As for [`Stream::launch_unchecked`], for every launch of the captured graph's executables.
    pub unsafe fn record_kernel_unchecked(
        &mut self,
        kernel: &crate::Kernel,
        grid: impl Into<crate::Dim3>,
        block: impl Into<crate::Dim3>,
        shared_mem: u32,
        args: &[&dyn crate::KernelArg],
    ) -> GpuResult<()> {
        let ctx = self.cap.stream.context().clone();
        let l = crate::module::prepare_launch(
            "StreamCapture::record_kernel_unchecked",
            &ctx,
            kernel,
            grid.into(),
            block.into(),
            shared_mem,
            args,
            true,
        )?;
        self.record_prepared(kernel, l)
    }

    fn record_prepared(&mut self, kernel: &crate::Kernel, mut l: crate::module::PreparedLaunch) -> GpuResult<()> {
        let ctx = self.cap.stream.context();
        // The name must find this very kernel: another one's parameters would not match the values.
        // Modules load at the end of the context's list, so the first kernel of a name stays first
        // while this one (kept loaded by `kernel`) lives.
        let mut found = ptr::null_mut();
        check(unsafe { sys::gcap_context_find_kernel(ctx.raw(), kernel.c_name().as_ptr(), &mut found) })?;
        if found != kernel.raw {
            return crate::error::invalid(format!(
                "StreamCapture::record_kernel: a module loaded earlier has another kernel named \"{}\", which the \
                 name would record; launch this one on the stream instead",
                kernel.name()
            ));
        }
        let _issuing = self.cap.stream.context().issuing();
        let args = l.args();
        let st = unsafe {
            sys::gcap_capture_record_kernel(self.cap.raw, kernel.c_name().as_ptr(), l.grid, l.block, l.shared_mem, args)
        };
        let result = check(st); // before any other gcap call replaces the message
        let kept = self.cap.stream.keep(l.keeps.drain(..));
        result.and(kept)
    }
}
