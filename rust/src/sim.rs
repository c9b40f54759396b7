//! The simulator's process-wide controls.

use crate::sys;

/// Stops every simulator kernel running in the process now, on any context, as the watchdog
/// ([`SimOptions::kernel_timeout_ms`](crate::SimOptions::kernel_timeout_ms)) does
/// (`gcap_sim_interrupt`): a PTX kernel at its next check (within a millisecond or so), a CPU
/// kernel between blocks. The call that ran it — [`Stream::launch`](crate::Stream::launch), a
/// graph launch, or under [`Exec::Deferred`](crate::Exec) the wait that ran it — fails with
/// [`GpuError::LaunchTimeout`](crate::GpuError), sticky, its message naming the kernel and saying
/// it was interrupted. Kernels that start later run normally; with no kernel running it does
/// nothing. CUDA contexts are not affected.
///
/// It takes no lock and allocates nothing, so it may be called from any thread, and from a
/// signal handler (it is async-signal-safe): a program can stop a runaway kernel on Ctrl-C, as
/// the Python package does.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use gcap::{Context, DeviceBuffer, Module, SimOptions, Stream, GpuError};
/// # fn main() -> gcap::GpuResult<()> {
/// // Sets *started, then waits for *flag, which nobody sets.
/// let ptx = r#"
/// .version 7.0
/// .target sm_70
/// .address_size 64
/// .visible .entry wait_for(.param .u64 flag, .param .u64 started)
/// {
///   .reg .pred %p<2>;
///   .reg .b32 %r<3>;
///   .reg .b64 %rd<3>;
///   ld.param.u64 %rd1, [flag];
///   ld.param.u64 %rd2, [started];
///   mov.u32 %r2, 1;
///   st.volatile.global.u32 [%rd2], %r2;
/// $L_wait:
///   ld.volatile.global.u32 %r1, [%rd1];
///   setp.eq.u32 %p1, %r1, 0;
///   @%p1 bra $L_wait;
///   ret;
/// }
/// "#;
/// let ctx = Context::sim(&SimOptions { kernel_timeout_ms: 0, ..Default::default() })?; // no watchdog
/// let kernel = Module::from_ptx(&ctx, ptx)?.kernel("wait_for")?;
/// let (flag, started) = (DeviceBuffer::<u32>::zeroed(&ctx, 1)?, DeviceBuffer::<u32>::zeroed(&ctx, 1)?);
/// // On the simulator device memory is host memory: the watcher sees the kernel start.
/// let started_at = started.device_ptr() as usize;
/// let watcher = std::thread::spawn(move || {
///     let started = unsafe { &*(started_at as *const AtomicU32) };
///     while started.load(Ordering::SeqCst) == 0 {
///         std::thread::sleep(std::time::Duration::from_millis(1));
///     }
///     gcap::sim::interrupt();
/// });
/// let err = Stream::new(&ctx)?.launch(&kernel, 1, 32, 0, &[&flag, &started]).unwrap_err();
/// watcher.join().unwrap();
/// assert!(matches!(err, GpuError::LaunchTimeout(_)));
/// assert!(err.message().contains("\"wait_for\""));
/// # Ok(()) }
/// ```
pub fn interrupt() {
    // SAFETY: gcap_sim_interrupt takes no arguments and only bumps an atomic counter.
    unsafe { sys::gcap_sim_interrupt() }
}
