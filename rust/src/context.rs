//! Contexts: the backend (simulator or CUDA driver) and everything made from it.

use std::any::Any;
use std::collections::HashMap;
use std::ffi::CStr;
use std::ptr;
use std::cell::Cell;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::error::{check, GpuResult};
use crate::sys;

/// Which backend a context runs on.
///
/// Name the backend the program means: [`Backend::Sim`] for tests and machines without a GPU,
/// [`Backend::Cuda`] for a GPU, or [`Backend::Auto`] to let the environment (`GCAP_BACKEND`)
/// decide. The library never lands on the simulator by accident: where CUDA is built in but
/// cannot start, `Auto` fails rather than run on the CPU. A program that wants the simulator
/// where there is no GPU says so:
///
/// ```
/// use gcap::{Backend, Context, GpuError};
/// # fn main() -> gcap::GpuResult<()> {
/// let ctx = match Context::new(Backend::Auto) {
///     Err(GpuError::NotInitialized(why)) => {
///         eprintln!("no GPU here ({why}); running on the simulator");
///         Context::new(Backend::Sim)?
///     }
///     other => other?,
/// };
/// println!("running on {:?}", ctx.backend());
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The CPU simulator: copies and fills really run, kernels run from CPU code or their PTX.
    Sim,
    /// The CUDA driver (`libcuda.so.1`, loaded at run time). [`GpuError::NotInitialized`](crate::GpuError)
    /// without a driver or device, [`GpuError::NotSupported`](crate::GpuError) when the library
    /// was built without the CUDA backend. Never falls back to the simulator.
    Cuda,
    /// The C library's AUTO rule: `GCAP_BACKEND` from the environment (`sim`, `cuda` or `auto`;
    /// anything else is [`GpuError::InvalidValue`](crate::GpuError)); else CUDA when the library
    /// has the CUDA backend built in and it starts; else, when the library was built without
    /// CUDA, the simulator. Where CUDA is built in but cannot start (no driver, no device), the
    /// context is [`GpuError::NotInitialized`](crate::GpuError), whose message says why and that
    /// `GCAP_BACKEND=sim` selects the simulator. [`Backend::available`] tells ahead of time.
    Auto,
}

impl Backend {
    /// `Ok(())` where a context of this backend can start now (`gcap_backend_available`): always
    /// for [`Backend::Sim`]; for [`Backend::Cuda`], [`GpuError::NotSupported`](crate::GpuError)
    /// when the library was built without it, [`GpuError::NotInitialized`](crate::GpuError) with
    /// the reason (no `libcuda.so.1`, an old driver, no device) when it cannot start. For
    /// [`Backend::Auto`], the answer of the rule above (it makes a context and drops it).
    pub fn available(self) -> GpuResult<()> {
        match self {
            Backend::Sim => check(unsafe { sys::gcap_backend_available(sys::GCAP_BACKEND_SIM) }),
            Backend::Cuda => check(unsafe { sys::gcap_backend_available(sys::GCAP_BACKEND_CUDA) }),
            Backend::Auto => Context::new(Backend::Auto).map(drop),
        }
    }
}

/// How the simulator orders the nodes of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// A fixed topological order.
    Capture,
    /// A seeded random topological order per launch: finds missing edges.
    Shuffle,
}

/// When the simulator runs stream work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exec {
    /// When it is issued, on the calling thread.
    Immediate,
    /// Only when the host waits for it, interleaved across streams as a GPU may: finds a forgotten
    /// synchronize.
    Deferred,
}

/// Simulator options ([`Context::sim`]). `SimOptions::default()` is what `Backend::Sim` uses
/// where no `GCAP_SIM_*` environment variable is set: [`Context::new`] reads them (e.g.
/// `GCAP_SIM_KERNEL_TIMEOUT`), [`Context::sim`] takes these options as they are.
///
/// ```
/// use gcap::{Context, SimOptions};
/// # fn main() -> gcap::GpuResult<()> {
/// // A runaway kernel fails its launch after 5 s instead of the default minute.
/// let ctx = Context::sim(&SimOptions { kernel_timeout_ms: 5_000, ..Default::default() })?;
/// # drop(ctx);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// Node order within a launch.
    pub order: Order,
    /// Seed of shuffled orders and DEFERRED interleavings.
    pub seed: u64,
    /// Instantiation fails when race analysis finds unordered nodes touching the same bytes.
    pub check_races: bool,
    /// When stream work runs.
    pub exec: Exec,
    /// Device memory faults when host code touches it.
    pub strict_memory: bool,
    /// Threads running a kernel's blocks (0 or 1: the calling thread).
    pub threads: u32,
    /// The watchdog: a kernel running longer than this many milliseconds (counted from its first
    /// block) is stopped, and its launch — or, under [`Exec::Deferred`], the wait that ran it —
    /// fails with [`GpuError::LaunchTimeout`](crate::GpuError), whose message names the kernel, the
    /// block and the PTX lines its warps were at. The fault is sticky: the context then fails every
    /// call but those that release. 0: no watchdog. Default
    /// [`GCAP_SIM_KERNEL_TIMEOUT_DEFAULT_MS`](crate::sys::GCAP_SIM_KERNEL_TIMEOUT_DEFAULT_MS) (one
    /// minute); `GCAP_SIM_KERNEL_TIMEOUT` sets it for [`Context::new`]. A PTX kernel is stopped
    /// within about a millisecond; a CPU kernel only between blocks. [`crate::sim::interrupt`]
    /// stops running kernels at once.
    pub kernel_timeout_ms: u32,
    /// PTX kernels: shared memory and each thread's local memory start every block as zeros,
    /// instead of the poison pattern (a 64-bit word drawn from the launch's seed) that stands for
    /// what a GPU leaves there. `GCAP_SIM_ZERO_BLOCK_MEMORY=1` sets it for [`Context::new`].
    pub zero_block_memory: bool,
    /// Fresh device allocations hold the seeded poison pattern, as a caching allocator's reused
    /// memory holds old data; off by default. `GCAP_SIM_POISON_ALLOCATIONS=1` sets it for
    /// [`Context::new`].
    pub poison_allocations: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            order: Order::Capture,
            seed: 0,
            check_races: false,
            exec: Exec::Immediate,
            strict_memory: false,
            threads: 0,
            kernel_timeout_ms: sys::GCAP_SIM_KERNEL_TIMEOUT_DEFAULT_MS,
            zero_block_memory: false,
            poison_allocations: false,
        }
    }
}

impl SimOptions {
    fn raw(&self) -> sys::gcap_sim_options {
        let mut o = unsafe { std::mem::zeroed::<sys::gcap_sim_options>() };
        unsafe { sys::gcap_sim_options_init(&mut o) };
        o.order = match self.order { Order::Capture => sys::GCAP_SIM_ORDER_CAPTURE, Order::Shuffle => sys::GCAP_SIM_ORDER_SHUFFLE };
        o.exec = match self.exec { Exec::Immediate => sys::GCAP_SIM_EXEC_IMMEDIATE, Exec::Deferred => sys::GCAP_SIM_EXEC_DEFERRED };
        o.seed = self.seed;
        o.check_races = self.check_races;
        o.strict_memory = self.strict_memory;
        o.threads = self.threads;
        o.kernel_timeout_ms = self.kernel_timeout_ms;
        o.zero_block_memory = self.zero_block_memory;
        o.poison_allocations = self.poison_allocations;
        o
    }
}

/// Something a stream's pending work or a graph's nodes use, kept alive as long as they may.
pub(crate) type Keep = Arc<dyn Any + Send + Sync>;

pub(crate) struct ContextInner {
    pub(crate) raw: *mut sys::gcap_context,
    /// What the work recorded by each capture sequence (by its id) uses, until its graph takes it.
    pub(crate) capture_keeps: Mutex<HashMap<u64, Vec<Keep>>>,
    /// Held shared while work is issued and its keeps are placed, exclusively while a capture
    /// begins or ends: a stream cannot start or stop capturing between the two.
    captures_change: RwLock<()>,
    /// The pool of each capture sequence (by its id) while it captures, for Stream::alloc_async.
    pub(crate) capture_pools: Mutex<HashMap<u64, Arc<crate::CapturePool>>>,
    /// Buffers from Stream::alloc_async in a capture that are alive (trim would unback them).
    pub(crate) graph_buffers: std::sync::atomic::AtomicUsize,
}

thread_local! {
    /// How many issuing guards this thread holds (a host function may issue work from inside one).
    static ISSUING: Cell<u32> = const { Cell::new(0) };
}

/// Shared hold of a context's capture state while one operation is issued and its keeps placed.
pub(crate) struct Issuing<'a> {
    _guard: Option<RwLockReadGuard<'a, ()>>,
}

impl Drop for Issuing<'_> {
    fn drop(&mut self) {
        ISSUING.with(|d| d.set(d.get() - 1));
    }
}

// SAFETY: every gcap call on a context takes the context's lock, so the handle may be used and
// dropped from any thread.
unsafe impl Send for ContextInner {}
// SAFETY: as above: concurrent calls on one context are serialized by the C library.
unsafe impl Sync for ContextInner {}

impl Drop for ContextInner {
    fn drop(&mut self) {
        unsafe { sys::gcap_context_destroy(self.raw) };
    }
}

/// A gcap context. Cloning it is cheap (shared ownership): every object made from it holds a
/// clone, so the context lives until the last of them is dropped.
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<ContextInner>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Context({:p}, {})", self.inner.raw, self.backend_name())
    }
}

impl Context {
    /// A context on `backend`, with the simulator's default options.
    pub fn new(backend: Backend) -> GpuResult<Context> {
        Self::create(backend, None)
    }

    /// A simulator context with `options`.
    pub fn sim(options: &SimOptions) -> GpuResult<Context> {
        Self::create(Backend::Sim, Some(options.raw()))
    }

    fn create(backend: Backend, sim: Option<sys::gcap_sim_options>) -> GpuResult<Context> {
        let mut o = unsafe { std::mem::zeroed::<sys::gcap_context_options>() };
        unsafe { sys::gcap_context_options_init(&mut o) };
        o.backend = match backend {
            Backend::Sim => sys::GCAP_BACKEND_SIM,
            Backend::Cuda => sys::GCAP_BACKEND_CUDA,
            Backend::Auto => sys::GCAP_BACKEND_AUTO,
        };
        o.sim = sim.as_ref().map_or(ptr::null(), |s| s as *const _);
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gcap_context_create(&o, &mut raw) })?;
        let inner = ContextInner {
            raw,
            capture_keeps: Mutex::new(HashMap::new()),
            captures_change: RwLock::new(()),
            capture_pools: Mutex::new(HashMap::new()),
            graph_buffers: std::sync::atomic::AtomicUsize::new(0),
        };
        Ok(Context { inner: Arc::new(inner) })
    }

    /// The backend the context runs on ([`Backend::Sim`] or [`Backend::Cuda`], never `Auto`).
    pub fn backend(&self) -> Backend {
        match unsafe { sys::gcap_context_backend(self.inner.raw) } {
            sys::GCAP_BACKEND_CUDA => Backend::Cuda,
            _ => Backend::Sim,
        }
    }

    fn backend_name(&self) -> String {
        let kind = unsafe { sys::gcap_context_backend(self.inner.raw) };
        unsafe { CStr::from_ptr(sys::gcap_backend_name(kind)) }.to_string_lossy().into_owned()
    }

    /// Waits for all work of the context (`cudaDeviceSynchronize`).
    /// [`GpuError::StreamCaptureUnsupported`](crate::GpuError) while a stream captures.
    pub fn synchronize(&self) -> GpuResult<()> {
        check(unsafe { sys::gcap_context_synchronize(self.inner.raw) })?;
        crate::release::retry();
        Ok(())
    }

    /// `(least, greatest)` stream priorities (`cudaDeviceGetStreamPriorityRange`): `(0, -5)`,
    /// CUDA's numbers; lower is more urgent.
    pub fn stream_priority_range(&self) -> GpuResult<(i32, i32)> {
        let (mut least, mut greatest) = (0, 0);
        check(unsafe { sys::gcap_context_stream_priority_range(self.inner.raw, &mut least, &mut greatest) })?;
        Ok((least, greatest))
    }

    /// The simulator's counters (launches, nodes and kernels run, bytes copied, ...).
    /// [`GpuError::NotSupported`](crate::GpuError) on CUDA.
    pub fn sim_stats(&self) -> GpuResult<sys::gcap_sim_stats> {
        let mut s = unsafe { std::mem::zeroed::<sys::gcap_sim_stats>() };
        check(unsafe { sys::gcap_sim_get_stats(self.inner.raw, &mut s) })?;
        Ok(s)
    }

    /// Graph memory in bytes: (used now, used at most, reserved now, reserved at most).
    pub fn graph_memory(&self) -> GpuResult<(u64, u64, u64, u64)> {
        let mut v = [0u64; 4];
        for (attr, slot) in v.iter_mut().enumerate() {
            check(unsafe { sys::gcap_context_get_graph_mem_attribute(self.inner.raw, attr as sys::gcap_graph_mem_attribute, slot) })?;
        }
        Ok((v[0], v[1], v[2], v[3]))
    }

    /// Gives back reserved graph memory no executable needs (`cudaDeviceGraphMemTrim`).
    /// [`GpuError::IllegalState`](crate::GpuError) while a buffer allocated by
    /// [`Stream::alloc_async`](crate::Stream::alloc_async) during a capture is alive, or a graph,
    /// executable or pending work that uses one: trimming could take the memory behind its address
    /// away.
    pub fn trim_graph_memory(&self) -> GpuResult<()> {
        let alive = self.inner.graph_buffers.load(std::sync::atomic::Ordering::SeqCst);
        if alive > 0 {
            return Err(crate::GpuError::IllegalState(format!(
                "Context::trim_graph_memory: {alive} buffer(s) allocated in a capture (Stream::alloc_async) are alive, \
                 or graphs or work that use them; drop them first"
            )));
        }
        check(unsafe { sys::gcap_context_graph_mem_trim(self.inner.raw) })
    }

    pub(crate) fn raw(&self) -> *mut sys::gcap_context {
        self.inner.raw
    }

    /// Held while an operation is issued and what it uses is kept: no capture begins or ends
    /// meanwhile, so the keeps go where the work went (to the stream, or to its capture).
    pub(crate) fn issuing(&self) -> Issuing<'_> {
        let nested = ISSUING.with(|d| {
            d.set(d.get() + 1);
            d.get() > 1
        });
        let guard = (!nested).then(|| self.inner.captures_change.read().unwrap_or_else(|e| e.into_inner()));
        Issuing { _guard: guard }
    }

    /// Held while a capture begins or ends. None on a thread already issuing (a host function
    /// running inside an operation), where waiting would deadlock.
    pub(crate) fn changing_captures(&self) -> Option<RwLockWriteGuard<'_, ()>> {
        let issuing = ISSUING.with(|d| d.get() > 0);
        (!issuing).then(|| self.inner.captures_change.write().unwrap_or_else(|e| e.into_inner()))
    }

    /// Keeps `items` alive with the capture sequence `id` until its graph takes them.
    pub(crate) fn keep_for_capture(&self, id: u64, items: impl IntoIterator<Item = Keep>) {
        self.inner.capture_keeps.lock().unwrap().entry(id).or_default().extend(items);
    }

    /// What the capture sequence `id` recorded uses.
    pub(crate) fn take_capture_keeps(&self, id: u64) -> Vec<Keep> {
        self.inner.capture_keeps.lock().unwrap().remove(&id).unwrap_or_default()
    }
}
