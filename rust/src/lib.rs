//! # gcap
//!
//! Record the work of GPU streams (copies, fills, kernels, host functions) into CUDA graphs,
//! instantiate them and replay them — on the CUDA driver, or on gcap's CPU simulator, which
//! really runs the work and enforces CUDA's capture rules, so `cargo test` proves graph code on
//! any machine.
//!
//! This crate is the safe Rust face of the gcap C library. It offers the two capture shapes Rust
//! GPU code already uses: oxicuda-driver's [`StreamCapture`] and ferrotorch-gpu's
//! [`GraphCaptureGuard`].
//!
//! ```
//! use gcap::{Backend, Context, DeviceBuffer, GraphCaptureGuard, Stream};
//! # fn main() -> gcap::GpuResult<()> {
//! let ctx = Context::new(Backend::Sim)?;
//! let (main, side) = (Stream::new(&ctx)?, Stream::new(&ctx)?);
//! let (a, b) = (DeviceBuffer::<u32>::new(&ctx, 64)?, DeviceBuffer::<u32>::new(&ctx, 64)?);
//! let guard = GraphCaptureGuard::begin(&main)?;
//! main.memset(&a, 1)?;
//! side.wait_stream(&main)?;   // fork: side joins the capture
//! side.memset(&b, 2)?;
//! main.wait_stream(&side)?;   // join
//! let graph = guard.finish()?;
//! graph.launch()?;
//! main.synchronize()?;
//! assert_eq!(b.to_vec()?[0], 0x02020202);
//! # Ok(()) }
//! ```
//!
//! ## Ownership and threads
//!
//! A [`Context`] is shared ownership (cloning it is cheap): every stream, event, buffer, graph
//! and executable holds a clone, so nothing outlives its context. A [`DeviceBuffer`] used by
//! pending stream work or named by a graph's nodes stays allocated until that work is
//! synchronized and those graphs and executables are gone, so dropping a buffer early is never
//! a dangling pointer. The C library serializes calls on one context, so contexts, streams,
//! events, buffers, graphs and executables are `Send` and `Sync`; changing a graph takes `&mut`.
#![warn(missing_docs)]

mod capture;
mod context;
mod error;
mod graph;
mod host;
mod memory;
mod module;
mod release;
pub mod sim;
mod stream;
pub mod sys;

pub use capture::{
    thread_exchange_capture_mode, CaptureMode, CapturePool, CapturedGraph, GraphCaptureGuard, PoolStats, StreamCapture,
};
pub use context::{Backend, Context, Exec, Order, SimOptions};
pub use error::{CudaError, CudaResult, GpuError, GpuResult};
pub use graph::{Graph, GraphExec, KernelNodeInfo, Node, NodeType, Race, UpdateResult};
pub use host::HostBuffer;
pub use memory::{CopyEnd, DeviceBuffer, DeviceRepr, MemcpyDirection};
pub use module::{
    BlockInfo, DeviceSlice, Dim3, Kernel, KernelArg, KernelArgs, KernelAttr, Module, ModuleBuilder, MAX_CLOSURE_PARAMS,
};
pub use stream::{CaptureStatus, Event, Stream, StreamFlags};

// The guide's and the README's examples run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/rust.md")]
pub struct DocsRustMd;

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeMd;

/// The C library's version (major, minor, patch).
pub fn version() -> (i32, i32, i32) {
    let (mut major, mut minor, mut patch) = (0, 0, 0);
    unsafe { sys::gcap_version(&mut major, &mut minor, &mut patch) };
    (major, minor, patch)
}
