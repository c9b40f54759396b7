//! The simulator's watchdog (`SimOptions::kernel_timeout_ms`) and `gcap::sim::interrupt`.
//!
//! Its own test binary: an interrupt stops every kernel running in the process, so these tests run
//! apart from the others, and one at a time.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use gcap::{Context, DeviceBuffer, Exec, GpuError, Kernel, Module, SimOptions, Stream};

/// Sets *started, then waits for *flag, which nobody sets: it never ends.
const SPIN: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry spin(.param .u64 flag, .param .u64 started)
{
  .reg .pred %p<2>;
  .reg .b32 %r<3>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [flag];
  ld.param.u64 %rd2, [started];
  mov.u32 %r2, 1;
  st.volatile.global.u32 [%rd2], %r2;
$L:
  ld.volatile.global.u32 %r1, [%rd1];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra $L;
  ret;
}
"#;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

struct Spin {
    stream: Stream,
    kernel: Kernel,
    flag: DeviceBuffer<u32>,
    started: DeviceBuffer<u32>,
}

fn spin(exec: Exec, kernel_timeout_ms: u32) -> Spin {
    let ctx = Context::sim(&SimOptions { exec, kernel_timeout_ms, ..Default::default() }).unwrap();
    let stream = Stream::new(&ctx).unwrap();
    let kernel = Module::from_ptx(&ctx, SPIN).unwrap().kernel("spin").unwrap();
    let flag = DeviceBuffer::<u32>::zeroed(&ctx, 1).unwrap();
    let started = DeviceBuffer::<u32>::zeroed(&ctx, 1).unwrap();
    Spin { stream, kernel, flag, started }
}

impl Spin {
    /// Launches the kernel and, under DEFERRED, waits for it: the error of the call that ran it.
    fn run(&self) -> GpuError {
        let launched = self.stream.launch(&self.kernel, 1, 32, 0, &[&self.flag, &self.started]);
        match launched.and_then(|()| self.stream.synchronize()) {
            Ok(()) => panic!("the endless kernel ended"),
            Err(e) => e,
        }
    }
}

#[test]
fn the_watchdog_stops_an_endless_kernel() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for exec in [Exec::Immediate, Exec::Deferred] {
        let sp = spin(exec, 200);
        let err = sp.run();
        assert!(matches!(err, GpuError::LaunchTimeout(_)), "{exec:?}: {err}");
        let m = err.message();
        assert!(m.contains("kernel \"spin\""), "{exec:?}: the message names the kernel: {m}");
        assert!(m.contains("watchdog (200 ms"), "{exec:?}: the message names the limit: {m}");
        // Sticky, as on a GPU: the context then fails what does not release.
        let later = sp.stream.synchronize().unwrap_err();
        assert!(matches!(later, GpuError::LaunchTimeout(_)), "{exec:?}: {later}");
    }
}

#[test]
fn interrupt_from_another_thread_stops_a_running_kernel() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for exec in [Exec::Immediate, Exec::Deferred] {
        // A watchdog long enough that only the interrupt ends the kernel (with none at all a broken
        // interrupt would hang the test).
        let sp = spin(exec, 120_000);
        // Device memory is host memory on the simulator (no strict memory): the watcher sees the
        // kernel's first store, so it interrupts a kernel that is running.
        let started_at = sp.started.device_ptr() as usize;
        let watcher = std::thread::spawn(move || {
            let started = unsafe { &*(started_at as *const AtomicU32) };
            while started.load(Ordering::SeqCst) == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            gcap::sim::interrupt();
        });
        let err = sp.run();
        watcher.join().unwrap();
        assert!(matches!(err, GpuError::LaunchTimeout(_)), "{exec:?}: {err}");
        let m = err.message();
        assert!(m.contains("kernel \"spin\""), "{exec:?}: the message names the kernel: {m}");
        assert!(m.contains("gcap_sim_interrupt"), "{exec:?}: the message says it was interrupted: {m}");
    }
}

/// Kernels that start after an interrupt run normally.
#[test]
fn an_interrupt_with_nothing_running_changes_nothing() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    gcap::sim::interrupt();
    let sp = spin(Exec::Immediate, 0);
    let (flag, started) = (&sp.flag, &sp.started);
    sp.stream.memset(flag, 1).unwrap(); // the kernel's wait ends at once
    sp.stream.launch(&sp.kernel, 1, 32, 0, &[flag, started]).unwrap();
    sp.stream.synchronize().unwrap();
    assert_eq!(started.to_vec().unwrap(), vec![1]);
}
