//! Stream flags and priorities, the legacy stream's implicit ordering, and per-thread streams.

use std::sync::{Arc, Mutex};
use std::thread;

use gcap::{Backend, Context, Exec, GpuError, Order, SimOptions, Stream, StreamCapture, StreamFlags};

fn sim(exec: Exec, seed: u64) -> Context {
    Context::sim(&SimOptions { exec, order: Order::Shuffle, seed, ..Default::default() }).unwrap()
}

fn log_to(stream: &Stream, log: &Arc<Mutex<Vec<&'static str>>>, tag: &'static str) {
    let log = Arc::clone(log);
    stream.host_fn(move || log.lock().unwrap().push(tag)).unwrap();
}

#[test]
fn flags_priorities_and_range() {
    let ctx = Context::new(Backend::Sim).unwrap();
    assert_eq!(ctx.stream_priority_range().unwrap(), (0, -5));
    let plain = Stream::new(&ctx).unwrap();
    assert_eq!(plain.flags().unwrap(), StreamFlags::NonBlocking);
    assert_eq!(plain.priority().unwrap(), 0);
    let blocking = Stream::with_flags(&ctx, StreamFlags::Default, -3).unwrap();
    assert_eq!(blocking.flags().unwrap(), StreamFlags::Default);
    assert_eq!(blocking.priority().unwrap(), -3);
    assert_eq!(Stream::with_flags(&ctx, StreamFlags::NonBlocking, -40).unwrap().priority().unwrap(), -5);
}

#[test]
fn priorities_order_deferred_work() {
    for seed in 1..6 {
        let ctx = sim(Exec::Deferred, seed);
        let lo = Stream::with_flags(&ctx, StreamFlags::NonBlocking, 0).unwrap();
        let hi = Stream::with_flags(&ctx, StreamFlags::NonBlocking, -5).unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        log_to(&lo, &log, "lo 1");
        log_to(&lo, &log, "lo 2");
        log_to(&hi, &log, "hi 1");
        log_to(&hi, &log, "hi 2");
        ctx.synchronize().unwrap();
        assert_eq!(*log.lock().unwrap(), ["hi 1", "hi 2", "lo 1", "lo 2"]);
    }
}

#[test]
fn legacy_stream_orders_blocking_streams() {
    for exec in [Exec::Immediate, Exec::Deferred] {
        let ctx = sim(exec, 4);
        let legacy = Stream::legacy(&ctx).unwrap();
        assert_eq!(legacy, Stream::legacy(&ctx).unwrap());
        let a = Stream::with_flags(&ctx, StreamFlags::Default, 0).unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        log_to(&a, &log, "a");
        log_to(&legacy, &log, "legacy");
        legacy.synchronize().unwrap(); // runs a's earlier work first
        assert_eq!(*log.lock().unwrap(), ["a", "legacy"]);
        log_to(&legacy, &log, "legacy 2");
        log_to(&a, &log, "a 2");
        a.synchronize().unwrap(); // runs the legacy work first
        assert_eq!(*log.lock().unwrap(), ["a", "legacy", "legacy 2", "a 2"]);
        drop(legacy); // the context owns it: it stays
        Stream::legacy(&ctx).unwrap().synchronize().unwrap();
    }
}

#[test]
fn legacy_stream_capture_rules() {
    let ctx = Context::new(Backend::Sim).unwrap();
    let legacy = Stream::legacy(&ctx).unwrap();
    assert!(matches!(StreamCapture::begin_with_mode(&legacy, gcap::CaptureMode::Relaxed), Err(GpuError::InvalidValue(_))));
    let b = Stream::with_flags(&ctx, StreamFlags::Default, 0).unwrap();
    let mut cap = StreamCapture::begin_with_mode(&b, gcap::CaptureMode::Relaxed).unwrap();
    assert!(matches!(legacy.host_fn(|| ()), Err(GpuError::StreamCaptureImplicit(_))));
    assert!(matches!(cap.end(), Err(GpuError::StreamCaptureInvalidated(_))));
}

#[test]
fn per_thread_streams() {
    let ctx = Context::new(Backend::Sim).unwrap();
    let mine = Stream::per_thread(&ctx).unwrap();
    assert_eq!(mine, Stream::per_thread(&ctx).unwrap());
    assert_eq!(mine.flags().unwrap(), StreamFlags::Default);
    let c2 = ctx.clone();
    let other = thread::spawn(move || Stream::per_thread(&c2).unwrap()).join().unwrap();
    assert_ne!(other, mine);
    drop(mine);
    Stream::per_thread(&ctx).unwrap().synchronize().unwrap();
}
