//! Modules and kernels: PTX (run by the simulator's PTX interpreter or the CUDA driver), CUDA C
//! compiled with NVRTC at load, and CPU kernels for the simulator — Rust closures, or raw
//! `extern "C"` functions for code ported from C.
//!
//! # How a CPU closure reaches its launch
//!
//! The simulator calls a per-block C function with the launch's argument values and nothing else.
//! A closure kernel is therefore registered with one hidden, pointer-sized parameter after the
//! ones it declares, and every launch made through this crate appends the address of a *launch
//! record*: the closure, and what each argument was (a scalar, or which [`DeviceBuffer`] and its
//! extent). The record is kept alive as long as the launch may run (the stream's work until it is
//! synchronized, or the graph and its executables), which keeps the closure and the buffers
//! alive too. The trampoline looks the address up among the live records before it uses it, so
//! even a graph whose arguments did not come from this crate cannot make it follow a stale
//! pointer.
//!
//! # Soundness of the closure's memory access
//!
//! On the simulator device memory is host memory, and blocks may run on several threads at once
//! ([`SimOptions::threads`](crate::SimOptions)). A closure sees a buffer argument as a
//! [`DeviceSlice`]: its length is the buffer's (the launch checked the buffer is the argument),
//! and every element access is a relaxed atomic load or store, so blocks racing on one element
//! (a bug on a GPU too) read one of the values written, never undefined behaviour. Plain slices
//! are available through `unsafe` methods whose contract is spelled out.
//!
//! # What a closure may call
//!
//! A closure is device code: the context running it is in the middle of a gcap call. Each block
//! therefore runs inside a host function of a private, per-thread simulator context, and gcap
//! refuses, as in any host function, every call from the closure that would block, allocate, free
//! or issue work — on any context — with [`GpuError::IllegalState`] (so a closure cannot
//! synchronize, launch, or free memory behind the running launch; a buffer whose last handle it
//! drops leaks). Graph building is allowed.
//!
//! # Panics
//!
//! A closure that panics does not unwind into C: the panic is caught, the block ends, and the
//! simulator fails the launch with [`GpuError::Backend`] (the crate uses the simulator's rule that
//! a per-block function may not call `gcap_sim_syncthreads` to fail it, so the library's own
//! message speaks of that). The error comes from whatever call ran the kernel:
//! [`Stream::launch`](crate::Stream::launch), whose message then names the block and carries the
//! panic's message, a graph launch, or a synchronize under [`Exec::Deferred`](crate::Exec). The
//! panic hook prints the panic as usual. The context is not poisoned: later work runs normally.

use std::any::TypeId;
use std::collections::HashMap;
use std::ffi::{c_void, CStr, CString};
use std::marker::PhantomData;
use std::mem::{align_of, size_of};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use crate::context::{Backend, Context, Keep};
use crate::error::{check, invalid, GpuError, GpuResult};
use crate::memory::{DeviceBuffer, DeviceRepr};
use crate::sys;

/// The most parameters a closure kernel may declare.
pub const MAX_CLOSURE_PARAMS: usize = 32;

/// Bytes of zeros after the argument values of a kernel whose parameter sizes are unknown, so that
/// the library, copying each parameter's true size, never reads past the values (CUDA's parameter
/// space is at most 32,764 bytes).
const UNKNOWN_SIZES_PADDING: usize = 32 * 1024;

// ------------------------------------------------------------------------------------ Dim3

/// Grid or block dimensions (`dim3`). `From` conversions take `x`, `(x, y)` or `(x, y, z)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// The x extent (or index).
    pub x: u32,
    /// The y extent (or index).
    pub y: u32,
    /// The z extent (or index).
    pub z: u32,
}

impl Dim3 {
    /// `(x, y, z)`.
    pub const fn new(x: u32, y: u32, z: u32) -> Dim3 {
        Dim3 { x, y, z }
    }

    /// `x * y * z`.
    pub fn count(&self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }

    pub(crate) fn raw(self) -> sys::gcap_dim3 {
        sys::gcap_dim3 { x: self.x, y: self.y, z: self.z }
    }

    fn of(d: sys::gcap_dim3) -> Dim3 {
        Dim3 { x: d.x, y: d.y, z: d.z }
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Dim3 {
        Dim3::new(x, 1, 1)
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Dim3 {
        Dim3::new(x, y, 1)
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Dim3 {
        Dim3::new(x, y, z)
    }
}

// ------------------------------------------------------------------------------- modules

/// What a kernel of a module is.
enum CpuImpl {
    /// A Rust closure, with the hidden record parameter.
    Closure(Arc<ClosureKernel>),
    /// A raw `extern "C"` function: launched only through the `unsafe` launch methods.
    Raw,
}

pub(crate) struct ClosureKernel {
    name: String,
    params: Vec<usize>,
    #[allow(clippy::type_complexity)]
    f: Box<dyn Fn(&BlockInfo<'_>, &KernelArgs<'_>) + Send + Sync>,
}

pub(crate) struct ModuleInner {
    ctx: Context,
    raw: *mut sys::gcap_module,
    /// Parameter sizes as this crate knows them (declared, or read from the PTX and checked by the
    /// library at load); kernels not listed have unknown sizes.
    sizes: HashMap<String, Vec<usize>>,
    /// The CPU kernels, by name.
    cpu: HashMap<String, CpuImpl>,
    /// Names in declaration order, where known.
    names: Vec<String>,
}

// SAFETY: the module handle is used only through gcap calls, which take the context's lock; the
// CPU kernels are `Send + Sync` closures and plain data.
unsafe impl Send for ModuleInner {}
// SAFETY: as above: `&ModuleInner` only reads its tables and makes gcap calls.
unsafe impl Sync for ModuleInner {}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        // Graphs and executables using its kernels keep working (the library counts them). Where a
        // capture forbids the unload, it waits for the end of the capture (crate::release).
        crate::release::release(&self.ctx, crate::release::Release::Module(self.raw));
    }
}

/// A loaded module (`CUmodule`): kernels from PTX, from CUDA C, or CPU implementations for the
/// simulator. Cloning shares it; every [`Kernel`] taken from it, and every graph, executable and
/// pending launch using one, keeps it loaded. A module whose last handle is dropped while a capture
/// forbids unloading it (on the capturing thread, or on any thread during a GLOBAL capture) is
/// unloaded when that capture ends or is dropped: the drop neither invalidates the capture nor
/// leaks the module.
///
/// # CPU closures
///
/// A closure kernel ([`ModuleBuilder::cpu_kernel`]) is called once per block and reaches its
/// arguments through [`KernelArgs`]: scalars by index and type, buffers as [`DeviceSlice`]s whose
/// extent is the buffer the launch passed, read and written element by element with relaxed
/// atomics (blocks may run on several threads at once). Every launch keeps the closure and the
/// buffers alive as long as it, or the graph it is a node of, may run.
///
/// A closure is device code, run in the middle of a gcap call: gcap refuses its calls that block,
/// allocate, free or issue work, on any context, with [`GpuError::IllegalState`] (each block runs
/// inside a host function of a private per-thread context, where gcap's host-function rules
/// apply). A closure that panics does not unwind into C: the block ends and the launch fails with
/// [`GpuError::Backend`] — from [`Stream::launch`](crate::Stream::launch) (the message names the
/// block and the panic), a graph launch, or the synchronize that ran it under
/// [`Exec::Deferred`](crate::Exec); the library's part of the message mentions
/// `gcap_sim_syncthreads`, the simulator rule used to fail it. The context is not poisoned.
///
/// ```
/// use gcap::{Backend, Context, DeviceBuffer, Module, Stream};
/// # fn main() -> gcap::GpuResult<()> {
/// let ctx = Context::new(Backend::Sim)?;
/// let module = Module::builder(&ctx)
///     .cpu_kernel("fill", &[8, 4], |block, args| {
///         let out = args.buffer::<u32>(0);
///         let value = args.get::<u32>(1);
///         for t in block.threads() {
///             let i = block.global_x(t) as usize;
///             if i < out.len() {
///                 out.set(i, value);
///             }
///         }
///     })
///     .build()?;
/// let fill = module.kernel("fill")?;
/// let buf = DeviceBuffer::<u32>::new(&ctx, 100)?;
/// let stream = Stream::new(&ctx)?;
/// stream.launch(&fill, 4, 32, 0, &[&buf, &7u32])?;
/// stream.synchronize()?;
/// assert_eq!(buf.to_vec()?, vec![7; 100]);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Module {
    inner: Arc<ModuleInner>,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Module({:p}: {:?})", self.inner.raw, self.inner.names)
    }
}

struct Desc<'a> {
    image: Option<&'a CStr>,
    source: Option<&'a CStr>,
    name: Option<&'a CStr>,
    options: &'a [CString],
    defs: &'a [DefSpec],
}

/// One kernel definition as the C library takes it.
struct DefSpec {
    name: CString,
    sizes: Vec<usize>,
    access: Vec<sys::gcap_param_access>,
    sim_fn: sys::gcap_sim_kernel_fn,
    sim_block_fn: sys::gcap_sim_block_fn,
}

fn load(ctx: &Context, d: &Desc<'_>) -> GpuResult<*mut sys::gcap_module> {
    let defs: Vec<sys::gcap_kernel_def> = d
        .defs
        .iter()
        .map(|s| sys::gcap_kernel_def {
            name: s.name.as_ptr(),
            sim_fn: s.sim_fn,
            num_params: s.sizes.len(),
            param_sizes: s.sizes.as_ptr(),
            param_access: if s.access.is_empty() { ptr::null() } else { s.access.as_ptr() },
            sim_block_fn: s.sim_block_fn,
        })
        .collect();
    let options: Vec<*const std::os::raw::c_char> = d.options.iter().map(|o| o.as_ptr()).collect();
    let desc = sys::gcap_module_desc {
        image: d.image.map_or(ptr::null(), |i| i.as_ptr().cast()),
        image_size: d.image.map_or(0, |i| i.to_bytes_with_nul().len()),
        kernels: if defs.is_empty() { ptr::null() } else { defs.as_ptr() },
        num_kernels: defs.len(),
        source: d.source.map_or(ptr::null(), |s| s.as_ptr()),
        options: if options.is_empty() { ptr::null() } else { options.as_ptr() },
        num_options: options.len(),
        name: d.name.map_or(ptr::null(), |n| n.as_ptr()),
    };
    let mut raw = ptr::null_mut();
    check(unsafe { sys::gcap_module_load(ctx.raw(), &desc, &mut raw) })?;
    Ok(raw)
}

fn c_string(what: &str, s: &str) -> GpuResult<CString> {
    CString::new(s).or_else(|_| invalid(format!("{what} contains a NUL byte")))
}

impl Module {
    /// Loads PTX text: its kernels are the PTX's `.visible .entry` functions, with parameter sizes
    /// from their `.param` lists. It runs on the simulator (which interprets the PTX, checking every
    /// memory access) and on CUDA (the driver JIT-compiles it).
    /// [`GpuError::InvalidPtx`] naming the line for PTX that does not parse or is not valid; a
    /// kernel whose PTX the simulator cannot run loads, and its launches fail with
    /// [`GpuError::NotSupported`] naming the instruction.
    pub fn from_ptx(ctx: &Context, ptx: &str) -> GpuResult<Module> {
        let image = c_string("the PTX", ptx)?;
        let entries = ptx_decl::entries(ptx);
        // Parameter sizes read here are handed to the library as the kernels' definitions, which it
        // checks against its own reading of the PTX (the simulator always, CUDA from driver 12.4):
        // a disagreement fails the load rather than a launch.
        let declared = entries.as_ref().filter(|e| e.iter().all(|(_, s)| s.iter().all(|&b| (1..=4096).contains(&b))));
        let defs: Vec<DefSpec> = match declared {
            Some(list) => list
                .iter()
                .map(|(name, sizes)| {
                    Ok(DefSpec {
                        name: c_string("a kernel name", name)?,
                        sizes: sizes.clone(),
                        access: Vec::new(),
                        sim_fn: None,
                        sim_block_fn: None,
                    })
                })
                .collect::<GpuResult<_>>()?,
            None => Vec::new(),
        };
        let raw = load(ctx, &Desc { image: Some(&image), source: None, name: None, options: &[], defs: &defs })?;
        let (sizes, names) = match declared {
            Some(list) => (list.iter().cloned().collect(), list.iter().map(|(n, _)| n.clone()).collect()),
            None => (HashMap::new(), entries.map(|e| e.into_iter().map(|(n, _)| n).collect()).unwrap_or_default()),
        };
        Ok(Module { inner: Arc::new(ModuleInner { ctx: ctx.clone(), raw, sizes, cpu: HashMap::new(), names }) })
    }

    /// Compiles CUDA C with NVRTC (loaded at run time) and loads the PTX, on either backend.
    /// `options` are NVRTC's (`"-DN=4"`, `"-arch=compute_80"`). Kernels need `extern "C"` to be
    /// found by their source names.
    ///
    /// [`GpuError::NotFound`] when no libnvrtc is found (`GCAP_NVRTC` may name one),
    /// [`GpuError::InvalidSource`] with NVRTC's log when it refuses the source.
    ///
    /// The compiled PTX stays inside the library, so this crate learns each kernel's parameter
    /// *count* but not the sizes: launches check the number of arguments only.
    ///
    /// Fault reports and NVRTC's log call the source `<nvrtc source>`;
    /// [`from_cuda_source_named`](Self::from_cuda_source_named) gives it a name.
    pub fn from_cuda_source(ctx: &Context, source: &str, options: &[&str]) -> GpuResult<Module> {
        Self::cuda_source(ctx, None, source, options)
    }

    /// [`from_cuda_source`](Self::from_cuda_source) with the source's `name` (`"kernels.cu"`,
    /// `gcap_module_desc.name`), as fault reports and NVRTC's log show it: compiled with
    /// `-lineinfo`, a kernel's fault names the line, `(kernels.cu:7)`.
    /// [`GpuError::InvalidValue`] for an empty name or one with a NUL byte.
    ///
    /// ```
    /// use gcap::{Backend, Context, GpuError, Module};
    /// # fn main() -> gcap::GpuResult<()> {
    /// let ctx = Context::new(Backend::Sim)?;
    /// match Module::from_cuda_source_named(&ctx, "broken.cu", "extern \"C\" __global__ void k() { x = 1; }", &[]) {
    ///     Err(GpuError::InvalidSource(log)) => assert!(log.contains("broken.cu(1): error")),
    ///     Err(GpuError::NotFound(_)) => {} // no NVRTC on this machine
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn from_cuda_source_named(ctx: &Context, name: &str, source: &str, options: &[&str]) -> GpuResult<Module> {
        Self::cuda_source(ctx, Some(name), source, options)
    }

    fn cuda_source(ctx: &Context, name: Option<&str>, source: &str, options: &[&str]) -> GpuResult<Module> {
        let src = c_string("the source", source)?;
        let name = name.map(|n| c_string("Module::from_cuda_source_named: the source name", n)).transpose()?;
        let options: Vec<CString> = options.iter().map(|o| c_string("an NVRTC option", o)).collect::<GpuResult<_>>()?;
        let desc = Desc { image: None, source: Some(&src), name: name.as_deref(), options: &options, defs: &[] };
        let raw = load(ctx, &desc)?;
        let inner = ModuleInner { ctx: ctx.clone(), raw, sizes: HashMap::new(), cpu: HashMap::new(), names: Vec::new() };
        Ok(Module { inner: Arc::new(inner) })
    }

    /// A builder for a module of CPU kernels (closures or raw functions), optionally with the PTX
    /// that replaces them on CUDA.
    pub fn builder(ctx: &Context) -> ModuleBuilder {
        ModuleBuilder { ctx: ctx.clone(), ptx: None, kernels: Vec::new() }
    }

    /// The kernel `name` (`cuModuleGetFunction`). [`GpuError::NotFound`] when the module has none.
    pub fn kernel(&self, name: &str) -> GpuResult<Kernel> {
        let cname = c_string("the kernel name", name)?;
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gcap_module_get_kernel(self.inner.raw, cname.as_ptr(), &mut raw) })?;
        let params = match self.inner.sizes.get(name) {
            Some(sizes) => Params::Known(sizes.clone()),
            None => probe_param_count(&self.inner.ctx, raw).map_or(Params::Unknown, Params::Count),
        };
        let kind = match self.inner.cpu.get(name) {
            Some(CpuImpl::Closure(c)) => Kind::Closure(c.clone()),
            Some(CpuImpl::Raw) => Kind::Raw,
            None => Kind::Device,
        };
        Ok(Kernel { module: self.inner.clone(), raw, name: cname, params, kind })
    }

    /// The names of the module's kernels, in the order of the PTX or the builder (empty for a
    /// module compiled from CUDA C, whose kernels this crate cannot list).
    pub fn kernel_names(&self) -> Vec<String> {
        self.inner.names.clone()
    }

    /// The module's context.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }
}

/// The parameter count of a kernel whose sizes are unknown: a kernel node without arguments is
/// refused with a message naming the count (or made, in a scratch graph, for a kernel without
/// parameters). `None` when the message does not say.
fn probe_param_count(ctx: &Context, kernel: *mut sys::gcap_kernel) -> Option<usize> {
    let mut g = ptr::null_mut();
    check(unsafe { sys::gcap_graph_create(ctx.raw(), &mut g) }).ok()?;
    let one = sys::gcap_dim3 { x: 1, y: 1, z: 1 };
    let p = sys::gcap_kernel_node_params { kernel, grid: one, block: one, shared_mem_bytes: 0, args: ptr::null_mut() };
    let mut node = ptr::null_mut();
    let result = check(unsafe { sys::gcap_graph_add_kernel_node(g, ptr::null(), 0, &p, &mut node) });
    unsafe { sys::gcap_graph_destroy(g) };
    match result {
        Ok(()) => Some(0),
        Err(GpuError::InvalidValue(m)) => {
            let end = m.rfind(" parameters")?;
            let digits = m[..end].rsplit(' ').next()?;
            digits.parse().ok()
        }
        Err(_) => None,
    }
}

// ------------------------------------------------------------------------------ builder

/// A CPU kernel for [`ModuleBuilder`].
enum CpuDef {
    Closure(Arc<ClosureKernel>),
    Thread(String, Vec<usize>, unsafe extern "C" fn(*const sys::gcap_sim_thread, *const *mut c_void)),
    Block(String, Vec<usize>, unsafe extern "C" fn(*const sys::gcap_sim_block, *const *mut c_void)),
}

impl CpuDef {
    fn name(&self) -> &str {
        match self {
            CpuDef::Closure(c) => &c.name,
            CpuDef::Thread(n, _, _) | CpuDef::Block(n, _, _) => n,
        }
    }

    fn params(&self) -> &[usize] {
        match self {
            CpuDef::Closure(c) => &c.params,
            CpuDef::Thread(_, p, _) | CpuDef::Block(_, p, _) => p,
        }
    }
}

/// Builds a [`Module`] of CPU kernels for the simulator ([`Module::builder`]).
///
/// On a CUDA context CPU kernels cannot run: given [`ptx`](Self::ptx), the module is that PTX
/// instead (each CPU kernel must have an entry of the same name and parameter sizes there), else
/// [`build`](Self::build) is [`GpuError::NotSupported`]. On the simulator the PTX is only checked
/// against the CPU kernels; the CPU kernels run.
pub struct ModuleBuilder {
    ctx: Context,
    ptx: Option<String>,
    kernels: Vec<CpuDef>,
}

impl std::fmt::Debug for ModuleBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.kernels.iter().map(|k| k.name()).collect();
        write!(f, "ModuleBuilder({names:?}, ptx: {})", self.ptx.is_some())
    }
}

impl ModuleBuilder {
    /// Adds a kernel implemented by `f`, called once per block of every launch (possibly from
    /// several threads at once, and during a synchronize under [`Exec::Deferred`](crate::Exec));
    /// it loops over the block's threads itself ([`BlockInfo::threads`]) and reaches its arguments
    /// through [`KernelArgs`]. `param_sizes` are the bytes of each parameter (4 for `f32`/`u32`, 8
    /// for a buffer or `u64`), at most [`MAX_CLOSURE_PARAMS`]; launches are checked against them.
    ///
    /// `f` runs as device code: gcap refuses its calls that block, allocate, free or issue work
    /// ([`GpuError::IllegalState`]), and a panic fails the launch ([`GpuError::Backend`]) without
    /// unwinding into C.
    pub fn cpu_kernel<F>(mut self, name: &str, param_sizes: &[usize], f: F) -> Self
    where
        F: Fn(&BlockInfo<'_>, &KernelArgs<'_>) + Send + Sync + 'static,
    {
        let kernel = ClosureKernel { name: name.to_string(), params: param_sizes.to_vec(), f: Box::new(f) };
        self.kernels.push(CpuDef::Closure(Arc::new(kernel)));
        self
    }

    /// Adds a kernel implemented by a C-style per-thread function (`gcap_sim_kernel_fn`), called
    /// once per thread with `args[i]` pointing at parameter `i` (as `examples/quickstart.c`'s
    /// `saxpy_sim`). It may call `sys::gcap_sim_syncthreads`. Such a kernel is launched only
    /// through the `unsafe` methods ([`Stream::launch_unchecked`](crate::Stream::launch_unchecked),
    /// ...), whose contract covers what the function does with its arguments.
    pub fn raw_thread_kernel(
        mut self,
        name: &str,
        param_sizes: &[usize],
        f: unsafe extern "C" fn(*const sys::gcap_sim_thread, *const *mut c_void),
    ) -> Self {
        self.kernels.push(CpuDef::Thread(name.to_string(), param_sizes.to_vec(), f));
        self
    }

    /// Adds a kernel implemented by a C-style per-block function (`gcap_sim_block_fn`), which
    /// loops over the block's threads itself. Launched only through the `unsafe` methods, as
    /// [`raw_thread_kernel`](Self::raw_thread_kernel).
    pub fn raw_block_kernel(
        mut self,
        name: &str,
        param_sizes: &[usize],
        f: unsafe extern "C" fn(*const sys::gcap_sim_block, *const *mut c_void),
    ) -> Self {
        self.kernels.push(CpuDef::Block(name.to_string(), param_sizes.to_vec(), f));
        self
    }

    /// The same kernels as PTX, loaded instead of the CPU kernels on CUDA.
    pub fn ptx(mut self, ptx: &str) -> Self {
        self.ptx = Some(ptx.to_string());
        self
    }

    /// Loads the module. [`GpuError::InvalidValue`] for a repeated or empty name, a parameter size
    /// of 0 or over 4096, a closure with more than [`MAX_CLOSURE_PARAMS`] parameters, no kernels,
    /// or PTX whose entries disagree with the CPU kernels; [`GpuError::NotSupported`] on CUDA
    /// without PTX.
    pub fn build(self) -> GpuResult<Module> {
        self.check()?;
        if self.ctx.backend() == Backend::Cuda {
            let Some(ptx) = &self.ptx else {
                return Err(GpuError::NotSupported(
                    "ModuleBuilder::build: CPU kernels run only on the simulator; give the kernels' PTX with \
                     ModuleBuilder::ptx for CUDA"
                        .into(),
                ));
            };
            return Module::from_ptx(&self.ctx, ptx);
        }
        let mut specs = Vec::new();
        for k in &self.kernels {
            let name = c_string("a kernel name", k.name())?;
            specs.push(match k {
                CpuDef::Closure(c) => {
                    let mut sizes = c.params.clone();
                    sizes.push(size_of::<usize>());
                    let mut access = vec![sys::GCAP_ACCESS_UNKNOWN; c.params.len()];
                    access.push(sys::GCAP_ACCESS_NONE);
                    DefSpec { name, sizes, access, sim_fn: None, sim_block_fn: trampoline(c.params.len()) }
                }
                CpuDef::Thread(_, p, f) => {
                    DefSpec { name, sizes: p.clone(), access: Vec::new(), sim_fn: Some(*f), sim_block_fn: None }
                }
                CpuDef::Block(_, p, f) => {
                    DefSpec { name, sizes: p.clone(), access: Vec::new(), sim_fn: None, sim_block_fn: Some(*f) }
                }
            });
        }
        let raw = load(&self.ctx, &Desc { image: None, source: None, name: None, options: &[], defs: &specs })?;
        let mut sizes = HashMap::new();
        let mut cpu = HashMap::new();
        let mut names = Vec::new();
        for k in self.kernels {
            names.push(k.name().to_string());
            sizes.insert(k.name().to_string(), k.params().to_vec());
            let imp = match k {
                CpuDef::Closure(c) => CpuImpl::Closure(c),
                _ => CpuImpl::Raw,
            };
            cpu.insert(names.last().unwrap().clone(), imp);
        }
        Ok(Module { inner: Arc::new(ModuleInner { ctx: self.ctx, raw, sizes, cpu, names }) })
    }

    fn check(&self) -> GpuResult<()> {
        if self.kernels.is_empty() {
            return invalid("ModuleBuilder::build: no kernels");
        }
        for (i, k) in self.kernels.iter().enumerate() {
            let name = k.name();
            if name.is_empty() {
                return invalid(format!("ModuleBuilder::build: kernel {i} has an empty name"));
            }
            if self.kernels[..i].iter().any(|o| o.name() == name) {
                return invalid(format!("ModuleBuilder::build: kernel \"{name}\" is defined twice"));
            }
            if let Some(p) = k.params().iter().position(|&s| s == 0 || s > 4096) {
                return invalid(format!(
                    "ModuleBuilder::build: kernel \"{name}\" parameter {p} is {} bytes (must be 1..4096)",
                    k.params()[p]
                ));
            }
            if matches!(k, CpuDef::Closure(_)) && k.params().len() > MAX_CLOSURE_PARAMS {
                return invalid(format!(
                    "ModuleBuilder::build: closure kernel \"{name}\" declares {} parameters (at most {MAX_CLOSURE_PARAMS})",
                    k.params().len()
                ));
            }
        }
        if let Some(ptx) = &self.ptx {
            let Some(entries) = ptx_decl::entries(ptx) else {
                return Err(GpuError::InvalidPtx(
                    "ModuleBuilder::build: the PTX's .visible .entry declarations could not be read".into(),
                ));
            };
            for k in &self.kernels {
                match entries.iter().find(|(n, _)| n == k.name()) {
                    None => return invalid(format!("ModuleBuilder::build: the PTX has no entry \"{}\"", k.name())),
                    Some((_, sizes)) if sizes.as_slice() != k.params() => {
                        return invalid(format!(
                            "ModuleBuilder::build: kernel \"{}\" has parameter sizes {:?} in the PTX but {:?} as a CPU kernel",
                            k.name(),
                            sizes,
                            k.params()
                        ))
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(())
    }
}

// ------------------------------------------------------------------------------- kernels

#[derive(Clone, Debug)]
enum Params {
    /// Every parameter's size.
    Known(Vec<usize>),
    /// Only how many there are.
    Count(usize),
    /// Nothing.
    Unknown,
}

#[derive(Clone)]
enum Kind {
    Device,
    Closure(Arc<ClosureKernel>),
    Raw,
}

/// A kernel of a [`Module`] (`CUfunction`); it keeps its module loaded. Launch it with
/// [`Stream::launch`](crate::Stream::launch), add it to a graph with
/// [`Graph::add_kernel`](crate::Graph::add_kernel), or record it with
/// [`StreamCapture::record_kernel`](crate::StreamCapture::record_kernel).
#[derive(Clone)]
pub struct Kernel {
    module: Arc<ModuleInner>,
    pub(crate) raw: *mut sys::gcap_kernel,
    name: CString,
    params: Params,
    kind: Kind,
}

// SAFETY: the kernel handle is validated by the library on every use and stays valid while the
// module (held by the `Arc`) is loaded; the rest is immutable data and `Send + Sync` closures.
unsafe impl Send for Kernel {}
// SAFETY: as above; `&Kernel` only reads.
unsafe impl Sync for Kernel {}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            Kind::Device => "device",
            Kind::Closure(_) => "CPU closure",
            Kind::Raw => "raw CPU function",
        };
        write!(f, "Kernel({:?}, {kind}, params {:?})", self.name, self.params)
    }
}

impl Kernel {
    /// The kernel's entry name.
    pub fn name(&self) -> &str {
        self.name.to_str().unwrap_or("")
    }

    pub(crate) fn c_name(&self) -> &CStr {
        &self.name
    }

    /// Each parameter's size in bytes, where known (PTX and CPU kernels; not kernels compiled from
    /// CUDA C).
    pub fn param_sizes(&self) -> Option<&[usize]> {
        match &self.params {
            Params::Known(s) => Some(s),
            _ => None,
        }
    }

    /// How many parameters the kernel takes, where known.
    pub fn param_count(&self) -> Option<usize> {
        match &self.params {
            Params::Known(s) => Some(s.len()),
            Params::Count(n) => Some(*n),
            Params::Unknown => None,
        }
    }

    /// True for a kernel implemented by a Rust closure (simulator only).
    pub fn is_closure(&self) -> bool {
        matches!(self.kind, Kind::Closure(_))
    }

    /// True for a kernel implemented by a raw `extern "C"` function, which only the `unsafe`
    /// launch methods launch.
    pub fn is_raw(&self) -> bool {
        matches!(self.kind, Kind::Raw)
    }

    /// The kernel's context.
    pub fn context(&self) -> &Context {
        &self.module.ctx
    }

    /// The module the kernel belongs to.
    pub fn module(&self) -> Module {
        Module { inner: self.module.clone() }
    }

    /// One figure of the kernel's code (`gcap_kernel_get_attribute`): on CUDA the driver's, on
    /// the simulator what its PTX says (a CPU kernel has no shared, constant or local memory and
    /// versions 0).
    pub fn attribute(&self, attr: KernelAttr) -> GpuResult<i32> {
        let mut value = 0;
        // SAFETY: the handle stays valid while `self.module` is held; `value` outlives the call.
        check(unsafe { sys::gcap_kernel_get_attribute(self.raw, attr.raw(), &mut value) })?;
        Ok(value)
    }

    /// Sets an attribute of the kernel (`gcap_kernel_set_attribute`, `cudaFuncSetAttribute`).
    /// Only [`KernelAttr::MaxDynamicSharedSize`] may be set: the kernel opts into more than 48 KiB
    /// of dynamic shared memory, up to the device's limit less its static shared memory (227 KiB
    /// a block on the simulator), and launches and kernel nodes are checked against it.
    /// `GpuError::InvalidValue` for another attribute or a value past the limit; nothing changes.
    pub fn set_attribute(&self, attr: KernelAttr, value: i32) -> GpuResult<()> {
        // SAFETY: the handle stays valid while `self.module` is held.
        check(unsafe { sys::gcap_kernel_set_attribute(self.raw, attr.raw(), value) })
    }
}

impl KernelAttr {
    fn raw(self) -> sys::gcap_kernel_attr {
        match self {
            KernelAttr::MaxThreadsPerBlock => sys::GCAP_KERNEL_ATTR_MAX_THREADS_PER_BLOCK,
            KernelAttr::SharedSizeBytes => sys::GCAP_KERNEL_ATTR_SHARED_SIZE_BYTES,
            KernelAttr::ConstSizeBytes => sys::GCAP_KERNEL_ATTR_CONST_SIZE_BYTES,
            KernelAttr::LocalSizeBytes => sys::GCAP_KERNEL_ATTR_LOCAL_SIZE_BYTES,
            KernelAttr::NumRegs => sys::GCAP_KERNEL_ATTR_NUM_REGS,
            KernelAttr::PtxVersion => sys::GCAP_KERNEL_ATTR_PTX_VERSION,
            KernelAttr::BinaryVersion => sys::GCAP_KERNEL_ATTR_BINARY_VERSION,
            KernelAttr::MaxDynamicSharedSize => sys::GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE,
        }
    }
}

/// What [`Kernel::attribute`] reports (and [`Kernel::set_attribute`] sets); CUDA's
/// `CUfunction_attribute` of the same name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelAttr {
    /// The most threads a block may have: `.reqntid`, `.maxntid` (`__launch_bounds__`) or 1024.
    MaxThreadsPerBlock,
    /// Bytes of static shared memory (`__shared__` variables).
    SharedSizeBytes,
    /// Bytes of constant memory (the module's `__constant__` variables).
    ConstSizeBytes,
    /// Bytes of local memory a thread.
    LocalSizeBytes,
    /// Registers a thread (the simulator: `.maxnreg`, else 32).
    NumRegs,
    /// The PTX's target: 80 for `.target sm_80`.
    PtxVersion,
    /// The code's architecture (the simulator: the PTX's target).
    BinaryVersion,
    /// The most dynamic shared memory a launch may ask for: 48 KiB less the static until
    /// [`Kernel::set_attribute`] sets it.
    MaxDynamicSharedSize,
}

// -------------------------------------------------------------------- kernel arguments

pub(crate) mod sealed {
    use std::any::TypeId;

    use crate::context::Keep;
    use crate::sys;

    /// One argument's value as a launch passes it.
    pub enum ArgValue {
        /// A scalar: its bytes (the first `size` of `bytes`).
        Scalar { bytes: [u8; 8], size: usize, type_name: &'static str },
        /// A device buffer: its address, extent and element type, and what keeps it allocated.
        Buffer {
            addr: u64,
            len: usize,
            elem: TypeId,
            elem_name: &'static str,
            ctx: *mut sys::gcap_context,
            keep: Keep,
        },
    }

    /// What a [`KernelArg`](super::KernelArg) gives a launch.
    pub trait ArgSource {
        fn arg_value(&self) -> ArgValue;
    }
}

use sealed::ArgValue;

/// A kernel argument: a scalar (`u8` to `u64`, `i8` to `i64`, `usize`, `isize`, `f32`, `f64`)
/// passed by value, or a [`DeviceBuffer`] passed as its device address — the launch, graph or
/// captured graph then keeps the buffer allocated as long as it may run. References to
/// arguments are arguments too, so `&[&x, &2.0f32]` and `&[&&x]` both work.
///
/// The trait is sealed: a CPU kernel's safe buffer access relies on knowing exactly which
/// arguments are buffers.
pub trait KernelArg: sealed::ArgSource {}

macro_rules! scalar_args {
    ($($t:ty),*) => {$(
        impl sealed::ArgSource for $t {
            fn arg_value(&self) -> ArgValue {
                let mut bytes = [0u8; 8];
                bytes[..size_of::<$t>()].copy_from_slice(&self.to_ne_bytes());
                ArgValue::Scalar { bytes, size: size_of::<$t>(), type_name: stringify!($t) }
            }
        }
        impl KernelArg for $t {}
    )*};
}
scalar_args!(u8, u16, u32, u64, i8, i16, i32, i64, usize, isize, f32, f64);

impl<T: DeviceRepr> sealed::ArgSource for DeviceBuffer<T> {
    fn arg_value(&self) -> ArgValue {
        ArgValue::Buffer {
            addr: self.device_ptr(),
            len: self.len(),
            elem: TypeId::of::<T>(),
            elem_name: std::any::type_name::<T>(),
            ctx: self.context().raw(),
            keep: self.keep(),
        }
    }
}
impl<T: DeviceRepr> KernelArg for DeviceBuffer<T> {}

impl<A: KernelArg + ?Sized> sealed::ArgSource for &A {
    fn arg_value(&self) -> ArgValue {
        (**self).arg_value()
    }
}
impl<A: KernelArg + ?Sized> KernelArg for &A {}

/// What a closure launch's arguments were, for its closure.
enum RecParam {
    Scalar,
    Buffer { addr: u64, len: usize, elem: TypeId, elem_name: &'static str },
}

/// One launch (or kernel node) of a closure kernel: found by its address, the hidden argument.
pub(crate) struct LaunchRecord {
    kernel: Arc<ClosureKernel>,
    params: Vec<RecParam>,
    shared_bytes: usize,
    /// The first panic of the closure in this launch (its block and message), for the launch's error.
    panic: Mutex<Option<(Dim3, String)>>,
}

impl Drop for LaunchRecord {
    fn drop(&mut self) {
        let addr = self as *const LaunchRecord as usize;
        let mut live = RECORDS.write().unwrap_or_else(|e| e.into_inner());
        if let Some(map) = live.as_mut() {
            map.remove(&addr);
        }
    }
}

/// The live launch records, by address: the trampoline uses only an address found here.
static RECORDS: RwLock<Option<HashMap<usize, Weak<LaunchRecord>>>> = RwLock::new(None);

fn register(record: &Arc<LaunchRecord>) {
    let mut live = RECORDS.write().unwrap_or_else(|e| e.into_inner());
    live.get_or_insert_with(HashMap::new).insert(Arc::as_ptr(record) as usize, Arc::downgrade(record));
}

fn live_record(addr: usize) -> Option<Arc<LaunchRecord>> {
    let live = RECORDS.read().unwrap_or_else(|e| e.into_inner());
    live.as_ref()?.get(&addr)?.upgrade()
}

/// A launch's argument values, ready for the C library: `ptrs[i]` points at argument `i`.
pub(crate) struct PreparedLaunch {
    _values: Vec<u64>,
    ptrs: Vec<*mut c_void>,
    /// What the launch uses: buffers, the module, the launch record.
    pub(crate) keeps: Vec<Keep>,
    record: Option<Arc<LaunchRecord>>,
    pub(crate) grid: sys::gcap_dim3,
    pub(crate) block: sys::gcap_dim3,
    pub(crate) shared_mem: u32,
}

impl PreparedLaunch {
    /// The `void **args` of the C calls (NULL for a kernel without parameters).
    pub(crate) fn args(&mut self) -> *mut *mut c_void {
        if self.ptrs.is_empty() {
            ptr::null_mut()
        } else {
            self.ptrs.as_mut_ptr()
        }
    }

    /// `e`, with the closure's panic message when the kernel panicked in this launch.
    pub(crate) fn explain(&self, e: GpuError) -> GpuError {
        let panic = self.record.as_ref().and_then(|r| r.panic.lock().unwrap_or_else(|p| p.into_inner()).clone());
        match (e, panic, &self.record) {
            (GpuError::Backend(_), Some((b, p)), Some(r)) => GpuError::Backend(format!(
                "gcap_launch_kernel: kernel \"{}\" block ({},{},{}): its closure panicked: {p}",
                r.kernel.name, b.x, b.y, b.z
            )),
            (e, _, _) => e,
        }
    }
}

/// Checks a launch of `kernel` on `ctx` with `args` and lays the argument values out. `unchecked`
/// (the `unsafe` launch methods) also lets raw CPU kernels and kernels of unknown parameter count
/// through.
#[allow(clippy::too_many_arguments)]
pub(crate) fn prepare_launch(
    what: &str,
    ctx: &Context,
    kernel: &Kernel,
    grid: Dim3,
    block: Dim3,
    shared_mem: u32,
    args: &[&dyn KernelArg],
    unchecked: bool,
) -> GpuResult<PreparedLaunch> {
    let name = kernel.name();
    if kernel.module.ctx.raw() != ctx.raw() {
        // As C's handle checks say it (gcap_launch_kernel, gcap_graph_add_kernel_node): INVALID_HANDLE.
        return Err(GpuError::InvalidHandle(format!(
            "{what}: kernel \"{name}\" belongs to another context ({:p}, not {:p})",
            kernel.module.ctx.raw(),
            ctx.raw()
        )));
    }
    if kernel.is_raw() && !unchecked {
        return invalid(format!(
            "{what}: kernel \"{name}\" is a raw CPU function: launch it with the unsafe *_unchecked methods"
        ));
    }
    let values: Vec<ArgValue> = args.iter().map(|a| a.arg_value()).collect();
    let count_known = match &kernel.params {
        Params::Known(s) => Some(s.len()),
        Params::Count(n) => Some(*n),
        Params::Unknown if unchecked => None,
        Params::Unknown => {
            return invalid(format!(
                "{what}: the parameters of kernel \"{name}\" are unknown: launch it with the unsafe *_unchecked methods"
            ))
        }
    };
    if let Some(n) = count_known {
        if n != values.len() {
            return invalid(format!("{what}: kernel \"{name}\" takes {n} arguments but {} were given", values.len()));
        }
    }
    for (i, v) in values.iter().enumerate() {
        let (size, type_name) = match v {
            ArgValue::Scalar { size, type_name, .. } => (*size, *type_name),
            ArgValue::Buffer { ctx: c, .. } => {
                if *c != ctx.raw() {
                    return invalid(format!("{what}: argument {i} of kernel \"{name}\" is a buffer of another context"));
                }
                (size_of::<u64>(), "a device buffer")
            }
        };
        if let Params::Known(sizes) = &kernel.params {
            if sizes[i] != size {
                return invalid(format!(
                    "{what}: argument {i} of kernel \"{name}\" is {size} bytes ({type_name}) but parameter {i} is {} bytes",
                    sizes[i]
                ));
            }
        }
    }
    let closure = match &kernel.kind {
        Kind::Closure(c) => Some(c.clone()),
        _ => None,
    };
    let hidden = usize::from(closure.is_some());
    let padding = if matches!(kernel.params, Params::Known(_)) { 0 } else { UNKNOWN_SIZES_PADDING / 8 };
    let mut slots = vec![0u64; values.len() + hidden + padding];
    let mut keeps: Vec<Keep> = vec![kernel.module.clone() as Keep];
    let mut rec_params = Vec::new();
    for (i, v) in values.into_iter().enumerate() {
        match v {
            ArgValue::Scalar { bytes, .. } => {
                slots[i] = u64::from_ne_bytes(bytes);
                rec_params.push(RecParam::Scalar);
            }
            ArgValue::Buffer { addr, len, elem, elem_name, keep, .. } => {
                slots[i] = addr;
                rec_params.push(RecParam::Buffer { addr, len, elem, elem_name });
                keeps.push(keep);
            }
        }
    }
    let record = closure.map(|kernel| {
        let record = Arc::new(LaunchRecord {
            kernel,
            params: rec_params,
            shared_bytes: shared_mem as usize,
            panic: Mutex::new(None),
        });
        register(&record);
        record
    });
    if let Some(r) = &record {
        slots[args.len()] = Arc::as_ptr(r) as usize as u64;
        keeps.push(r.clone() as Keep);
    }
    let mut ptrs: Vec<*mut c_void> = Vec::with_capacity(args.len() + hidden);
    let base = slots.as_mut_ptr();
    for i in 0..args.len() + hidden {
        // Each value starts its own 8-byte slot; for unknown sizes zeros follow the last one.
        ptrs.push(unsafe { base.add(i) }.cast());
    }
    Ok(PreparedLaunch { _values: slots, ptrs, keeps, record, grid: grid.raw(), block: block.raw(), shared_mem })
}

// ------------------------------------------------------------------- closure trampolines

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}

/// Drops a panic payload without letting a panic in its destructor escape.
pub(crate) fn drop_payload(p: Box<dyn std::any::Any + Send>) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(p))) {
        std::mem::forget(again);
    }
}

/// The per-block C function of closure kernels with `N` declared parameters: argument `N` is the
/// launch record's address.
unsafe extern "C" fn closure_block<const N: usize>(b: *const sys::gcap_sim_block, args: *const *mut c_void) {
    // SAFETY: the library passes the kernel's N + 1 argument pointers, each to its value.
    let addr = unsafe { ptr::read_unaligned(*args.add(N) as *const usize) };
    if !run_block(N, addr, b, args) {
        // Fails the launch (GCAP_ERROR_BACKEND) once this block returns, and stops its other blocks.
        unsafe { sys::gcap_sim_syncthreads(ptr::null()) };
    }
}

/// Runs one block of a closure kernel as a host function of this thread's guard context, so that
/// gcap refuses, as it does in host functions, every call from the closure that blocks, allocates,
/// frees or issues work ([`GpuError::IllegalState`]): the context running the kernel is in the middle
/// of a call, and such a call would re-enter it. False when the block failed.
fn run_block(n: usize, addr: usize, b: *const sys::gcap_sim_block, args: *const *mut c_void) -> bool {
    let mut ok = false;
    let mut body = || ok = run_block_inner(n, addr, b, args);
    let mut call: &mut dyn FnMut() = &mut body;
    let ran = match guard::stream() {
        Some(s) => {
            let user_data = &mut call as *mut &mut dyn FnMut() as *mut c_void;
            unsafe { sys::gcap_launch_host_func(s, Some(guard::call), user_data) == sys::GCAP_SUCCESS }
        }
        None => false,
    };
    if !ran {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "gcap: a closure kernel's block could not run in its guard");
    }
    ran && ok
}

/// The per-thread simulator context whose host functions run closure blocks (see [`run_block`]).
mod guard {
    use std::cell::RefCell;
    use std::ffi::c_void;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::ptr;

    use crate::sys;

    struct Guard {
        ctx: *mut sys::gcap_context,
        stream: *mut sys::gcap_stream,
    }

    impl Guard {
        fn new() -> Option<Guard> {
            unsafe {
                let mut sim = std::mem::zeroed::<sys::gcap_sim_options>();
                sys::gcap_sim_options_init(&mut sim); // explicit options: IMMEDIATE whatever GCAP_SIM_* say
                let mut o = std::mem::zeroed::<sys::gcap_context_options>();
                sys::gcap_context_options_init(&mut o);
                o.backend = sys::GCAP_BACKEND_SIM;
                o.sim = &sim;
                let mut ctx = ptr::null_mut();
                if sys::gcap_context_create(&o, &mut ctx) != sys::GCAP_SUCCESS {
                    return None;
                }
                let mut stream = ptr::null_mut();
                if sys::gcap_stream_create(ctx, &mut stream) != sys::GCAP_SUCCESS {
                    sys::gcap_context_destroy(ctx);
                    return None;
                }
                Some(Guard { ctx, stream })
            }
        }
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            unsafe {
                sys::gcap_stream_destroy(self.stream);
                sys::gcap_context_destroy(self.ctx);
            }
        }
    }

    thread_local! {
        static GUARD: RefCell<Option<Guard>> = const { RefCell::new(None) };
    }

    /// This thread's guard stream, made on first use.
    pub(super) fn stream() -> Option<*mut sys::gcap_stream> {
        GUARD
            .try_with(|g| {
                let mut g = g.try_borrow_mut().ok()?;
                if g.is_none() {
                    *g = Guard::new();
                }
                g.as_ref().map(|g| g.stream)
            })
            .ok()
            .flatten()
    }

    /// The host function: `user_data` points at a `&mut dyn FnMut()` on the caller's stack.
    pub(super) unsafe extern "C" fn call(user_data: *mut c_void) {
        // SAFETY: run_block passes its `call`, alive for the whole (synchronous) host function.
        let f = unsafe { &mut *(user_data as *mut &mut dyn FnMut()) };
        if let Err(p) = catch_unwind(AssertUnwindSafe(f)) {
            super::drop_payload(p);
        }
    }
}

/// One block of a closure kernel, inside its guard; false when it failed (a panic or a bad record).
fn run_block_inner(n: usize, addr: usize, b: *const sys::gcap_sim_block, args: *const *mut c_void) -> bool {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let Some(record) = live_record(addr) else {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "gcap: a closure kernel was launched without a live launch record");
            return None;
        };
        if record.params.len() != n || record.kernel.params.len() != n {
            return None;
        }
        // SAFETY: the library passes the block's description, valid during this call.
        let b = unsafe { &*b };
        let shared = if b.shared_mem.is_null() { 0 } else { record.shared_bytes };
        if shared > 0 {
            // The block's dynamic shared memory starts as zeros here (it is uninitialized on a GPU).
            unsafe { ptr::write_bytes(b.shared_mem.cast::<u8>(), 0, shared) };
        }
        let block = BlockInfo {
            grid_dim: Dim3::of(b.grid_dim),
            block_dim: Dim3::of(b.block_dim),
            block_idx: Dim3::of(b.block_idx),
            shared: b.shared_mem.cast(),
            shared_bytes: shared,
            _l: PhantomData,
        };
        let kargs = KernelArgs { record: &record, args, _l: PhantomData };
        Some(catch_unwind(AssertUnwindSafe(|| (record.kernel.f)(&block, &kargs))).map_err(|p| (record.clone(), block.block_idx, p)))
    }));
    match outcome {
        Ok(Some(Ok(()))) => true,
        Ok(Some(Err((record, block, payload)))) => {
            let message = panic_message(payload.as_ref());
            drop_payload(payload);
            let mut slot = record.panic.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                *slot = Some((block, message));
            }
            false
        }
        Ok(None) => false,
        Err(payload) => {
            drop_payload(payload);
            false
        }
    }
}

macro_rules! trampolines {
    ($($n:literal)*) => {
        /// The trampoline for closures of `n` parameters.
        fn trampoline(n: usize) -> sys::gcap_sim_block_fn {
            match n {
                $($n => Some(closure_block::<$n>),)*
                _ => None,
            }
        }
    };
}
trampolines!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);

// ----------------------------------------------------------------- what a closure sees

/// The block a CPU closure kernel runs: the launch's dimensions, this block's index, and its
/// dynamic shared memory.
pub struct BlockInfo<'a> {
    grid_dim: Dim3,
    block_dim: Dim3,
    block_idx: Dim3,
    shared: *mut u8,
    shared_bytes: usize,
    _l: PhantomData<&'a ()>,
}

impl std::fmt::Debug for BlockInfo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockInfo")
            .field("grid_dim", &self.grid_dim)
            .field("block_dim", &self.block_dim)
            .field("block_idx", &self.block_idx)
            .field("shared_bytes", &self.shared_bytes)
            .finish()
    }
}

impl<'a> BlockInfo<'a> {
    /// The grid's dimensions, in blocks (`gridDim`).
    pub fn grid_dim(&self) -> Dim3 {
        self.grid_dim
    }

    /// The block's dimensions, in threads (`blockDim`).
    pub fn block_dim(&self) -> Dim3 {
        self.block_dim
    }

    /// This block's index in the grid (`blockIdx`).
    pub fn block_idx(&self) -> Dim3 {
        self.block_idx
    }

    /// The block's thread indices (`threadIdx`), x fastest, then y, then z.
    pub fn threads(&self) -> impl Iterator<Item = Dim3> {
        let d = self.block_dim;
        (0..d.z).flat_map(move |z| (0..d.y).flat_map(move |y| (0..d.x).map(move |x| Dim3::new(x, y, z))))
    }

    /// Threads per block.
    pub fn thread_count(&self) -> u64 {
        self.block_dim.count()
    }

    /// `blockIdx.x * blockDim.x + thread.x`.
    pub fn global_x(&self, thread: Dim3) -> u64 {
        self.block_idx.x as u64 * self.block_dim.x as u64 + thread.x as u64
    }

    /// `blockIdx.y * blockDim.y + thread.y`.
    pub fn global_y(&self, thread: Dim3) -> u64 {
        self.block_idx.y as u64 * self.block_dim.y as u64 + thread.y as u64
    }

    /// `blockIdx.z * blockDim.z + thread.z`.
    pub fn global_z(&self, thread: Dim3) -> u64 {
        self.block_idx.z as u64 * self.block_dim.z as u64 + thread.z as u64
    }

    /// The launch's dynamic shared memory in bytes.
    pub fn shared_bytes(&self) -> usize {
        self.shared_bytes
    }

    /// The block's dynamic shared memory as elements of `T` (zeros when the block starts; empty
    /// for a launch without shared memory). Only this block sees it.
    pub fn shared<T: DeviceRepr>(&self) -> DeviceSlice<'_, T> {
        let aligned = (self.shared as usize) % elem::align::<T>() == 0;
        let len = if self.shared.is_null() || !aligned { 0 } else { self.shared_bytes / size_of::<T>() };
        // SAFETY: the simulator gives the block `shared_bytes` of memory (16-byte aligned) for this
        // call, zeroed above, so every element is a valid T.
        unsafe { DeviceSlice::new(if len == 0 { ptr::NonNull::dangling().as_ptr() } else { self.shared.cast() }, len) }
    }
}

/// The arguments of a CPU closure kernel's launch, by parameter index.
pub struct KernelArgs<'a> {
    record: &'a LaunchRecord,
    args: *const *mut c_void,
    _l: PhantomData<&'a ()>,
}

impl std::fmt::Debug for KernelArgs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KernelArgs({} of kernel \"{}\")", self.len(), self.record.kernel.name)
    }
}

impl<'a> KernelArgs<'a> {
    /// The number of (declared) parameters.
    pub fn len(&self) -> usize {
        self.record.params.len()
    }

    /// True for a kernel without parameters.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Parameter `i`'s value as a `T`, when `i` is a parameter of `T`'s size (a buffer argument
    /// reads as its device address, a `u64`).
    pub fn try_get<T: DeviceRepr>(&self, i: usize) -> Option<T> {
        let size = *self.record.kernel.params.get(i)?;
        if size != size_of::<T>() {
            return None;
        }
        // SAFETY: args[i] points at the launch's copy of parameter i, `size` bytes; every bit pattern
        // is a T (DeviceRepr).
        Some(unsafe { ptr::read_unaligned(*self.args.add(i) as *const T) })
    }

    /// Parameter `i`'s value as a `T`. Panics (failing the launch) when `i` is out of range or its
    /// size is not `T`'s.
    pub fn get<T: DeviceRepr>(&self, i: usize) -> T {
        match self.try_get(i) {
            Some(v) => v,
            None => panic!(
                "kernel \"{}\": parameter {i} is not a {} (declared sizes {:?})",
                self.record.kernel.name,
                std::any::type_name::<T>(),
                self.record.kernel.params
            ),
        }
    }

    /// The device address parameter `i` holds, when it was a buffer argument.
    pub fn address(&self, i: usize) -> Option<u64> {
        match self.record.params.get(i)? {
            RecParam::Buffer { addr, .. } => Some(*addr),
            RecParam::Scalar => None,
        }
    }

    /// Buffer argument `i` as a [`DeviceSlice`] of its elements, when argument `i` was a
    /// `DeviceBuffer<T>` (and still holds its address).
    pub fn try_buffer<T: DeviceRepr>(&self, i: usize) -> Option<DeviceSlice<'a, T>> {
        let RecParam::Buffer { addr, len, elem, .. } = self.record.params.get(i)? else {
            return None;
        };
        let value: u64 = self.try_get(i)?;
        if *elem != TypeId::of::<T>() || value != *addr || (*addr as usize) % elem::align::<T>() != 0 {
            return None;
        }
        // SAFETY: the launch record keeps the buffer (len elements of T, allocated by gcap, 256-byte
        // aligned) allocated while the launch can run, and it holds only valid Ts (DeviceRepr).
        Some(unsafe { DeviceSlice::new(*addr as usize as *mut T, *len) })
    }

    /// Buffer argument `i` as a [`DeviceSlice`]. Panics (failing the launch) when argument `i` was
    /// not a `DeviceBuffer<T>`.
    pub fn buffer<T: DeviceRepr>(&self, i: usize) -> DeviceSlice<'a, T> {
        match self.try_buffer(i) {
            Some(s) => s,
            None => {
                let was = match self.record.params.get(i) {
                    Some(RecParam::Buffer { elem_name, .. }) => format!("a buffer of {elem_name}"),
                    Some(RecParam::Scalar) => "a scalar".to_string(),
                    None => "out of range".to_string(),
                };
                panic!(
                    "kernel \"{}\": argument {i} is {was}, not a buffer of {}",
                    self.record.kernel.name,
                    std::any::type_name::<T>()
                )
            }
        }
    }
}

/// Device memory a CPU closure kernel may touch: a buffer argument, or the block's shared memory.
///
/// Every element access is a relaxed atomic load or store, so blocks running at once on several
/// threads may share a buffer (racing writes leave one of the values, as on a GPU). Plain slices
/// come from the `unsafe` [`as_slice`](Self::as_slice) and [`as_mut_slice`](Self::as_mut_slice).
/// Work of *other* nodes or streams that runs at the same time on the same bytes (an unordered
/// copy, say) is a race as on a GPU, which the simulator's race check finds.
pub struct DeviceSlice<'a, T: DeviceRepr> {
    ptr: *mut T,
    len: usize,
    _l: PhantomData<&'a T>,
}

// SAFETY: a DeviceSlice only reads and writes its elements through atomic operations.
unsafe impl<T: DeviceRepr> Send for DeviceSlice<'_, T> {}
// SAFETY: as above.
unsafe impl<T: DeviceRepr> Sync for DeviceSlice<'_, T> {}

impl<T: DeviceRepr> Clone for DeviceSlice<'_, T> {
    fn clone(&self) -> Self {
        DeviceSlice { ptr: self.ptr, len: self.len, _l: PhantomData }
    }
}

impl<T: DeviceRepr> std::fmt::Debug for DeviceSlice<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceSlice<{}>({} at {:p})", std::any::type_name::<T>(), self.len, self.ptr)
    }
}

impl<'a, T: DeviceRepr> DeviceSlice<'a, T> {
    /// # Safety
    /// `ptr` holds `len` valid `T`s, aligned for atomic access, for `'a`.
    unsafe fn new(ptr: *mut T, len: usize) -> Self {
        DeviceSlice { ptr, len, _l: PhantomData }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first element's device address.
    pub fn device_ptr(&self) -> u64 {
        self.ptr as u64
    }

    /// Element `i`, or `None` past the end.
    pub fn try_get(&self, i: usize) -> Option<T> {
        // SAFETY: in bounds, aligned and valid (new's contract).
        (i < self.len).then(|| unsafe { elem::load(self.ptr.add(i)) })
    }

    /// Element `i`. Panics past the end.
    pub fn get(&self, i: usize) -> T {
        match self.try_get(i) {
            Some(v) => v,
            None => panic!("index {i} is past the end of a device slice of {} elements", self.len),
        }
    }

    /// Sets element `i`; false (nothing written) past the end.
    pub fn try_set(&self, i: usize, value: T) -> bool {
        if i >= self.len {
            return false;
        }
        // SAFETY: in bounds and aligned (new's contract).
        unsafe { elem::store(self.ptr.add(i), value) };
        true
    }

    /// Sets element `i`. Panics past the end.
    pub fn set(&self, i: usize, value: T) {
        if !self.try_set(i, value) {
            panic!("index {i} is past the end of a device slice of {} elements", self.len);
        }
    }

    /// A copy of every element.
    pub fn to_vec(&self) -> Vec<T> {
        (0..self.len).map(|i| self.get(i)).collect()
    }

    /// The elements as a plain slice.
    ///
    /// # Safety
    /// While the returned slice lives, nothing may write these elements: no other block of the
    /// launch (they may run at the same time on other threads), no `set` or
    /// [`as_mut_slice`](Self::as_mut_slice) through this or another `DeviceSlice` of the same
    /// memory, and no other work of the device.
    pub unsafe fn as_slice(&self) -> &'a [T] {
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The elements as a plain mutable slice.
    ///
    /// # Safety
    /// While the returned slice lives, nothing else may read or write these elements: no other
    /// block of the launch, no other access through this or another `DeviceSlice` of the same
    /// memory (another argument may be the same buffer), and no other work of the device.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn as_mut_slice(&self) -> &'a mut [T] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// Element access through atomics of the element's size (every `DeviceRepr` is 1, 2, 4 or 8 bytes,
/// and every bit pattern is a value).
pub(crate) mod elem {
    use super::*;

    /// # Safety
    /// `p` points at a `T` aligned for an atomic of its size, valid for reads.
    pub(crate) unsafe fn load<T: DeviceRepr>(p: *const T) -> T {
        unsafe {
            match size_of::<T>() {
                1 => std::mem::transmute_copy(&(*(p as *const AtomicU8)).load(Ordering::Relaxed)),
                2 => std::mem::transmute_copy(&(*(p as *const AtomicU16)).load(Ordering::Relaxed)),
                4 => std::mem::transmute_copy(&(*(p as *const AtomicU32)).load(Ordering::Relaxed)),
                8 => std::mem::transmute_copy(&(*(p as *const AtomicU64)).load(Ordering::Relaxed)),
                _ => unreachable!("DeviceRepr types are 1, 2, 4 or 8 bytes"),
            }
        }
    }

    /// # Safety
    /// `p` points at a `T` aligned for an atomic of its size, valid for writes.
    pub(crate) unsafe fn store<T: DeviceRepr>(p: *mut T, v: T) {
        unsafe {
            match size_of::<T>() {
                1 => (*(p as *const AtomicU8)).store(std::mem::transmute_copy(&v), Ordering::Relaxed),
                2 => (*(p as *const AtomicU16)).store(std::mem::transmute_copy(&v), Ordering::Relaxed),
                4 => (*(p as *const AtomicU32)).store(std::mem::transmute_copy(&v), Ordering::Relaxed),
                8 => (*(p as *const AtomicU64)).store(std::mem::transmute_copy(&v), Ordering::Relaxed),
                _ => unreachable!("DeviceRepr types are 1, 2, 4 or 8 bytes"),
            }
        }
    }

    /// The alignment `load` and `store` need for a `T`.
    pub(crate) fn align<T: DeviceRepr>() -> usize {
        match size_of::<T>() {
            1 => align_of::<AtomicU8>(),
            2 => align_of::<AtomicU16>(),
            4 => align_of::<AtomicU32>(),
            _ => align_of::<AtomicU64>(),
        }
    }
}

// ------------------------------------------------------------------- PTX declarations

/// The `.visible .entry` functions of PTX text and their parameter sizes, read as the C library
/// reads them (its load checks the result). `None` when a declaration cannot be read.
pub(crate) mod ptx_decl {
    /// Tokens of PTX without comments and strings.
    fn tokens(ptx: &str) -> Vec<String> {
        let b = ptx.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c == b'/' && b.get(i + 1) == Some(&b'/') {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 2;
            } else if c == b'"' {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push("\"\"".to_string());
            } else if c.is_ascii_whitespace() {
                i += 1;
            } else if c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'$' | b'%') {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'.' | b'_' | b'$' | b'%')) {
                    i += 1;
                }
                out.push(ptx[start..i].to_string());
            } else {
                out.push((c as char).to_string());
                i += 1;
            }
        }
        out
    }

    fn type_size(t: &str) -> Option<usize> {
        Some(match t {
            ".b8" | ".u8" | ".s8" => 1,
            ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
            ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" => 4,
            ".b64" | ".u64" | ".s64" | ".f64" => 8,
            ".b128" => 16,
            _ => return None,
        })
    }

    /// One `.param` declaration's size, from its tokens.
    fn param_size(toks: &[String]) -> Option<usize> {
        if toks.first().map(String::as_str) != Some(".param") {
            return None;
        }
        let mut size = None;
        let mut i = 1;
        let mut dims = 1usize;
        while i < toks.len() {
            let t = toks[i].as_str();
            if t == ".align" {
                i += 2;
                continue;
            }
            if let Some(s) = type_size(t) {
                size = Some(s);
            } else if t == "[" {
                let n: usize = toks.get(i + 1)?.parse().ok()?;
                if toks.get(i + 2).map(String::as_str) != Some("]") {
                    return None;
                }
                dims = dims.checked_mul(n)?;
                i += 3;
                continue;
            }
            i += 1;
        }
        size?.checked_mul(dims).map(|s| s.max(1))
    }

    pub(crate) fn entries(ptx: &str) -> Option<Vec<(String, Vec<usize>)>> {
        let toks = tokens(ptx);
        let mut out = Vec::new();
        let mut depth = 0usize;
        let mut statement_start = 0usize; // first token of the current top-level statement
        let mut i = 0;
        while i < toks.len() {
            let t = toks[i].as_str();
            match t {
                "{" => depth += 1,
                "}" => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        statement_start = i + 1;
                    }
                }
                ";" if depth == 0 => statement_start = i + 1,
                ".entry" if depth == 0 => {
                    let visible = toks[statement_start..i].iter().any(|t| t == ".visible");
                    let name = toks.get(i + 1)?.clone();
                    let mut sizes = Vec::new();
                    let mut j = i + 2;
                    if toks.get(j).map(String::as_str) == Some("(") {
                        j += 1;
                        let mut current: Vec<String> = Vec::new();
                        loop {
                            let t = toks.get(j)?.as_str();
                            j += 1;
                            match t {
                                "," | ")" => {
                                    if !current.is_empty() {
                                        sizes.push(param_size(&current)?);
                                        current.clear();
                                    } else if t == "," {
                                        return None;
                                    }
                                    if t == ")" {
                                        break;
                                    }
                                }
                                _ => current.push(t.to_string()),
                            }
                        }
                    }
                    if visible {
                        if out.iter().any(|(n, _): &(String, Vec<usize>)| *n == name) {
                            return None;
                        }
                        out.push((name, sizes));
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        Some(out)
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn reads_entries() {
            let ptx = r#"
                .version 7.5 // a comment with .visible .entry fake(
                .file 1 "a//b.cu"
                /* .visible .entry hidden() */
                .global .align 4 .u32 counter;
                .visible .entry saxpy(.param .f32 a, .param .u64 .ptr .global .align 4 x,
                    .param .u64 y, .param .u32 n) .maxntid 256, 1, 1
                { ret; }
                .entry internal(.param .u32 n) { ret; }
                .visible .entry none() { { ret; } }
                .visible .entry bare { ret; }
                .visible .entry arr(.param .align 8 .b8 s[12], .param .u16 h) { ret; }
            "#;
            let e = super::entries(ptx).unwrap();
            assert_eq!(
                e,
                vec![
                    ("saxpy".to_string(), vec![4, 8, 8, 4]),
                    ("none".to_string(), vec![]),
                    ("bare".to_string(), vec![]),
                    ("arr".to_string(), vec![12, 2]),
                ]
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::SERIAL;
    use crate::{CaptureMode, CaptureStatus, GraphCaptureGuard, Stream};

    /// True while a loaded module of `ctx` has a kernel `name` (`gcap_context_find_kernel`).
    fn loaded(ctx: &Context, name: &str) -> bool {
        let name = CString::new(name).unwrap();
        let mut k = ptr::null_mut();
        match unsafe { sys::gcap_context_find_kernel(ctx.raw(), name.as_ptr(), &mut k) } {
            sys::GCAP_SUCCESS => true,
            sys::GCAP_ERROR_NOT_FOUND => false,
            st => panic!("gcap_context_find_kernel: status {st}"),
        }
    }

    /// A module dropped while a capture refuses its unload (on the capturing thread, or on another
    /// thread during a GLOBAL capture) is unloaded when the capture ends: not leaked, and the
    /// capture goes on.
    #[test]
    fn a_module_dropped_during_a_capture_is_unloaded_when_it_ends() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let ptx = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry dropped_in_capture() { ret; }\n";
        for (mode, other_thread) in [(CaptureMode::Global, false), (CaptureMode::ThreadLocal, false), (CaptureMode::Global, true)] {
            let what = format!("{mode:?}, dropped on another thread: {other_thread}");
            let ctx = Context::new(Backend::Sim).unwrap();
            let s = Stream::new(&ctx).unwrap();
            let buf = DeviceBuffer::<u8>::new(&ctx, 16).unwrap();
            let module = Module::from_ptx(&ctx, ptx).unwrap();
            assert!(loaded(&ctx, "dropped_in_capture"));
            let guard = GraphCaptureGuard::begin_with_mode(&s, mode).unwrap();
            s.memset(&buf, 3).unwrap();
            if other_thread {
                std::thread::spawn(move || drop(module)).join().unwrap();
            } else {
                drop(module);
            }
            assert_eq!(guard.status(), CaptureStatus::Active, "{what}: the drop invalidated the capture");
            assert!(loaded(&ctx, "dropped_in_capture"), "{what}: unloaded during the capture");
            assert_eq!(crate::release::waiting(), 1, "{what}");
            let g = guard.finish().unwrap();
            assert_eq!(crate::release::waiting(), 0, "{what}");
            assert!(!loaded(&ctx, "dropped_in_capture"), "{what}: the module was not unloaded when the capture ended");
            g.launch().unwrap();
            s.synchronize().unwrap();
            assert_eq!(buf.to_vec().unwrap(), vec![3; 16]);
        }
    }
}
