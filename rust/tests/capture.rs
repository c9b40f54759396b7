//! The capture shapes and their error paths, drop behaviour, threads, pools, and the simulator
//! modes that catch what a GPU would do differently.

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread;

use gcap::{
    thread_exchange_capture_mode, Backend, CaptureMode, CapturePool, CaptureStatus, Context, CudaError, DeviceBuffer, Event, Exec, GpuError,
    GraphCaptureGuard, HostBuffer, MemcpyDirection, NodeType, SimOptions, Stream, StreamCapture,
};

fn sim() -> Context {
    Context::new(Backend::Sim).expect("a simulator context")
}

/// A GLOBAL-mode capture is invalidated by an unsafe call (an allocation, a synchronize) from any
/// thread of the process, as in CUDA, and the test harness runs tests on parallel threads: tests
/// capturing in GLOBAL mode run alone, the others together.
static MODE_LOCK: RwLock<()> = RwLock::new(());

fn alone() -> RwLockWriteGuard<'static, ()> {
    MODE_LOCK.write().unwrap_or_else(|e| e.into_inner())
}

fn together() -> RwLockReadGuard<'static, ()> {
    MODE_LOCK.read().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn stream_capture_records_and_ends_once() {
    let _mode = alone();
    let ctx = sim();
    let s = Stream::new(&ctx).unwrap();
    let (a, b) = (DeviceBuffer::<u8>::new(&ctx, 64).unwrap(), DeviceBuffer::<u8>::zeroed(&ctx, 64).unwrap());
    let mut cap = StreamCapture::begin(&s).unwrap();
    assert!(cap.is_active());
    assert_eq!(cap.status(), CaptureStatus::Active);
    cap.record_memset(&a, 9).unwrap();
    s.copy(&b, &a).unwrap(); // work on the stream itself is recorded too
    assert_eq!(cap.recorded_count(), 2);
    let g = cap.end().unwrap();
    assert!(!cap.is_active());
    assert_eq!((g.node_count(), g.edge_count()), (2, 1));
    let types: Vec<NodeType> = g.nodes().unwrap().into_iter().map(|n| g.node_type(n).unwrap()).collect();
    assert_eq!(types, [NodeType::Memset, NodeType::Memcpy]);
    match cap.end() {
        Err(CudaError::StreamCaptureUnmatched(m)) => assert!(m.contains("gcap_capture_end"), "{m}"),
        other => panic!("a second end gave {other:?}"),
    }
    assert_eq!(b.to_vec().unwrap(), vec![0; 64]); // nothing ran during the capture
    let x = g.instantiate().unwrap();
    x.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![9; 64]);
}

#[test]
fn no_driver_is_not_initialized() {
    let _mode = together();
    match Context::new(Backend::Cuda) {
        Err(GpuError::NotInitialized(m)) | Err(GpuError::NotSupported(m)) => assert!(!m.is_empty()),
        Ok(ctx) => assert_eq!(ctx.backend(), Backend::Cuda), // a machine with a GPU
        Err(e) => panic!("unexpected {e}"),
    }
}

/// The child of `auto_follows_the_c_rule_and_never_falls_back_by_accident`: what `Backend::Auto`
/// gives under the `GCAP_BACKEND` its parent chose.
#[test]
fn auto_child_reports_its_backend() {
    if std::env::var("GCAP_CAPTURE_CHILD").ok().as_deref() != Some("auto") {
        return; // only as the child
    }
    match Context::new(Backend::Auto) {
        Ok(ctx) => println!("AUTO=ok {:?}", ctx.backend()),
        Err(e) => println!("AUTO=err {}", e.to_string().replace('\n', " ")),
    }
}

/// `Backend::Auto` is C's AUTO: `GCAP_BACKEND` first; then CUDA when built in and usable; the
/// simulator only when the library has no CUDA backend; where CUDA is built in but cannot start,
/// `NotInitialized` naming `GCAP_BACKEND=sim` — never the simulator by accident.
#[test]
fn auto_follows_the_c_rule_and_never_falls_back_by_accident() {
    let _mode = together();
    let run = |value: Option<&str>| {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", "auto_child_reports_its_backend", "--nocapture", "--test-threads=1"])
            .env("GCAP_CAPTURE_CHILD", "auto");
        match value {
            Some(v) => cmd.env("GCAP_BACKEND", v),
            None => cmd.env_remove("GCAP_BACKEND"),
        };
        let out = String::from_utf8_lossy(&cmd.output().unwrap().stdout).into_owned();
        out.lines().find_map(|l| l.split_once("AUTO=").map(|p| p.1)).unwrap_or_else(|| panic!("no answer: {out}")).to_string()
    };
    assert_eq!(run(Some("sim")), "ok Sim");
    let bad = run(Some("gpu"));
    assert!(bad.starts_with("err GCAP_ERROR_INVALID_VALUE") && bad.contains("GCAP_BACKEND"), "{bad}");
    let (auto, cuda) = (run(None), run(Some("cuda")));
    match Backend::Cuda.available() {
        Ok(()) => assert_eq!((auto.as_str(), cuda.as_str()), ("ok Cuda", "ok Cuda")),
        Err(GpuError::NotSupported(_)) => {
            // A library built without CUDA: AUTO is the simulator, an explicit cuda is refused.
            assert_eq!(auto, "ok Sim");
            assert!(cuda.starts_with("err GCAP_ERROR_NOT_SUPPORTED"), "{cuda}");
        }
        Err(GpuError::NotInitialized(why)) => {
            assert!(auto.starts_with("err GCAP_ERROR_NOT_INITIALIZED"), "AUTO fell back: {auto}");
            assert!(auto.contains("GCAP_BACKEND=sim"), "says how to choose the simulator: {auto}");
            assert!(cuda.starts_with("err GCAP_ERROR_NOT_INITIALIZED"), "{cuda}");
            assert!(!why.is_empty());
        }
        Err(e) => panic!("Backend::Cuda.available(): {e}"),
    }
    assert_eq!(Backend::Sim.available(), Ok(()));
}

#[test]
fn an_unjoined_fork_fails_the_end_and_the_streams_work_again() {
    let _mode = alone();
    let ctx = sim();
    let (s, side) = (Stream::new(&ctx).unwrap(), Stream::new(&ctx).unwrap());
    let buf = DeviceBuffer::<u32>::new(&ctx, 16).unwrap();
    let mut cap = StreamCapture::begin(&s).unwrap();
    side.wait_stream(&s).unwrap();
    side.memset(&buf, 1).unwrap();
    let err = cap.end().unwrap_err();
    assert!(matches!(err, GpuError::StreamCaptureUnjoined(_)), "{err}");
    assert!(err.to_string().starts_with("GCAP_ERROR_STREAM_CAPTURE_UNJOINED: "), "{err}");
    assert!(err.message().contains("never joined back"), "{err}");
    side.memset(&buf, 3).unwrap();
    s.memset(&buf, 2).unwrap();
    ctx.synchronize().unwrap();
    assert_eq!(s.capture_status().unwrap().0, CaptureStatus::None);
}

#[test]
fn a_forbidden_call_invalidates_the_capture() {
    let _mode = alone();
    let ctx = sim();
    let s = Stream::new(&ctx).unwrap();
    let buf = DeviceBuffer::<u8>::new(&ctx, 8).unwrap();
    let guard = GraphCaptureGuard::begin_with_mode(&s, CaptureMode::Global).unwrap();
    s.memset(&buf, 1).unwrap();
    let sync = s.synchronize().unwrap_err();
    assert!(matches!(sync, GpuError::StreamCaptureUnsupported(_)), "{sync}");
    assert_eq!(guard.status(), CaptureStatus::Invalidated);
    let end = guard.finish().unwrap_err();
    assert!(matches!(end, GpuError::StreamCaptureInvalidated(_)), "{end}");
    assert!(end.message().contains("gcap_stream_synchronize"), "names the first offending call: {end}");
    s.memset(&buf, 5).unwrap();
    s.synchronize().unwrap();
    assert_eq!(buf.to_vec().unwrap(), vec![5; 8]);
}

fn fails_half_way(s: &Stream, buf: &DeviceBuffer<u8>) -> gcap::GpuResult<()> {
    let _guard = GraphCaptureGuard::begin(s)?;
    s.memset(buf, 1)?;
    Err(GpuError::InvalidValue("the caller gave up".into()))?; // an early `?` return drops the guard
    unreachable!()
}

#[test]
fn a_guard_dropped_mid_capture_leaves_the_stream_usable() {
    let _mode = together();
    let ctx = sim();
    let s = Stream::new(&ctx).unwrap();
    let buf = DeviceBuffer::<u8>::new(&ctx, 32).unwrap();
    assert!(matches!(fails_half_way(&s, &buf), Err(GpuError::InvalidValue(_))));
    assert_eq!(s.capture_status().unwrap().0, CaptureStatus::None);
    s.memset(&buf, 4).unwrap(); // runs now: the capture is gone
    s.synchronize().unwrap();
    assert_eq!(buf.to_vec().unwrap(), vec![4; 32]);
    let guard = GraphCaptureGuard::begin(&s).unwrap(); // and the stream captures again
    s.memset(&buf, 6).unwrap();
    let g = guard.finish().unwrap();
    g.launch().unwrap();
    s.synchronize().unwrap();
    assert_eq!(buf.to_vec().unwrap(), vec![6; 32]);
}

#[test]
fn a_capture_per_thread_in_thread_local_mode() {
    let _mode = together();
    let ctx = sim();
    let results: Vec<Vec<u8>> = thread::scope(|scope| {
        let handles: Vec<_> = (1..=4u8)
            .map(|v| {
                let ctx = ctx.clone();
                scope.spawn(move || {
                    let s = Stream::new(&ctx).unwrap();
                    let buf = DeviceBuffer::<u8>::new(&ctx, 128).unwrap();
                    let guard = GraphCaptureGuard::begin(&s).unwrap();
                    s.memset(&buf, v).unwrap();
                    let g = guard.finish().unwrap();
                    for _ in 0..10 {
                        g.launch().unwrap();
                    }
                    s.synchronize().unwrap();
                    buf.to_vec().unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r, &vec![i as u8 + 1; 128]);
    }
}

#[test]
fn the_finished_graph_keeps_its_pool() {
    let _mode = together();
    let ctx = sim();
    let s = Stream::new(&ctx).unwrap();
    let pool = CapturePool::new(&ctx).unwrap();
    let buf = DeviceBuffer::<u8>::new(&ctx, 16).unwrap(); // allocating during a capture is refused
    let guard = GraphCaptureGuard::begin_with_pool(&s, pool.clone()).unwrap();
    s.memset(&buf, 1).unwrap();
    let g = guard.finish().unwrap();
    let weak = Arc::downgrade(&pool);
    drop(pool);
    assert!(weak.upgrade().is_some(), "the graph holds the pool");
    assert_eq!(g.pool().unwrap().stats().unwrap().attached_execs, 0);
    g.launch().unwrap();
    s.synchronize().unwrap();
    drop(g);
    assert!(weak.upgrade().is_none(), "the pool goes with its last graph");
}

#[test]
fn a_buffer_dropped_while_a_graph_uses_it_stays_allocated() {
    let _mode = alone();
    let ctx = sim();
    let s = Stream::new(&ctx).unwrap();
    let out = DeviceBuffer::<u32>::new(&ctx, 256).unwrap();
    let graph = {
        let scratch = DeviceBuffer::<u32>::from_slice(&ctx, &[7u32; 256]).unwrap();
        let mut cap = StreamCapture::begin(&s).unwrap();
        cap.record_memcpy(&out, &scratch, out.size_bytes(), MemcpyDirection::DeviceToDevice).unwrap();
        cap.end().unwrap()
        // scratch is dropped here: the graph keeps its memory
    };
    let x = graph.instantiate().unwrap();
    drop(graph);
    for _ in 0..3 {
        x.launch(&s).unwrap();
    }
    s.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![7; 256]);
}

#[test]
fn deferred_streams_catch_a_forgotten_synchronize() {
    let _mode = together();
    let deferred = Context::sim(&SimOptions { exec: Exec::Deferred, ..Default::default() }).unwrap();
    let immediate = sim();
    for (ctx, expect_without_sync) in [(&immediate, 5u8), (&deferred, 0u8)] {
        let s = Stream::new(ctx).unwrap();
        let buf = DeviceBuffer::<u8>::zeroed(ctx, 64).unwrap();
        s.memset(&buf, 5).unwrap();
        assert_eq!(buf.to_vec().unwrap()[0], expect_without_sync, "read without synchronize");
        s.synchronize().unwrap();
        assert_eq!(buf.to_vec().unwrap()[0], 5);
    }
}

#[test]
fn strict_memory_and_deferred_shuffled_replays_agree() {
    let _mode = together();
    let opts = SimOptions { exec: Exec::Deferred, strict_memory: true, seed: 3, ..Default::default() };
    let ctx = Context::sim(&opts).unwrap();
    let (s, side) = (Stream::new(&ctx).unwrap(), Stream::new(&ctx).unwrap());
    let (a, b) = (DeviceBuffer::<u16>::new(&ctx, 100).unwrap(), DeviceBuffer::<u16>::new(&ctx, 100).unwrap());
    let guard = GraphCaptureGuard::begin(&s).unwrap();
    s.memset(&a, 0x11).unwrap();
    side.wait_stream(&s).unwrap();
    side.copy(&b, &a).unwrap();
    s.wait_stream(&side).unwrap();
    let g = guard.finish().unwrap();
    g.upload().unwrap();
    for _ in 0..20 {
        g.launch().unwrap();
    }
    s.synchronize().unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![0x1111; 100]);
}

#[test]
fn events_order_streams_and_time_them() {
    let _mode = together();
    let ctx = sim();
    let (s, other) = (Stream::new(&ctx).unwrap(), Stream::new(&ctx).unwrap());
    let (start, end) = (Event::new(&ctx).unwrap(), Event::new(&ctx).unwrap());
    let buf = DeviceBuffer::<u8>::new(&ctx, 1 << 20).unwrap();
    start.record(&s).unwrap();
    s.memset(&buf, 1).unwrap();
    end.record(&s).unwrap();
    other.wait_event(&end).unwrap();
    other.memset(&buf, 2).unwrap();
    other.synchronize().unwrap();
    assert!(end.query().unwrap());
    assert!(start.elapsed_time(&end).unwrap() >= 0.0);
    assert_eq!(buf.to_vec().unwrap()[0], 2);
}

#[test]
fn graphs_by_hand_dot_races_and_clones() {
    let _mode = together();
    let ctx = sim();
    let (a, b) = (DeviceBuffer::<u8>::new(&ctx, 64).unwrap(), DeviceBuffer::<u8>::new(&ctx, 64).unwrap());
    let mut g = gcap::Graph::new(&ctx).unwrap();
    let fill = g.add_memset(&[], &a, 3).unwrap();
    let copy = g.add_copy(&[], &b, &a).unwrap(); // no edge: the copy races the fill
    let races = g.find_races().unwrap();
    assert_eq!(races.len(), 1);
    assert_eq!((races[0].first, races[0].second), (fill, copy));
    g.add_dependencies(&[(fill, copy)]).unwrap();
    assert!(g.find_races().unwrap().is_empty());
    let dot = g.to_dot(false).unwrap();
    assert!(dot.starts_with("digraph") && dot.contains("->"), "{dot}");
    let clone = g.try_clone().unwrap();
    assert_eq!((clone.node_count(), clone.edge_count()), (2, 1));
    let s = Stream::new(&ctx).unwrap();
    clone.instantiate().unwrap().launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![3; 64]);
    let err = g.add_dependencies(&[(fill, copy)]).unwrap_err();
    assert!(matches!(err, GpuError::InvalidValue(_)), "an edge twice: {err}");
}

/// The child of `strict_memory_faults_host_reads_of_device_memory`: reads device memory from host
/// code, as a program that assumes unified memory and forgets to copy and synchronize does.
#[test]
fn strict_memory_child_reads_device_memory() {
    if std::env::var("GCAP_CAPTURE_CHILD").ok().as_deref() != Some("strict") {
        return; // only as the child
    }
    let ctx = Context::sim(&SimOptions { strict_memory: true, exec: Exec::Deferred, ..Default::default() }).unwrap();
    let s = Stream::new(&ctx).unwrap();
    let buf = DeviceBuffer::<u8>::zeroed(&ctx, 4096).unwrap();
    s.memset(&buf, 9).unwrap();
    // SAFETY: deliberately wrong, and only in this child process: a host read of device memory.
    let byte = unsafe { std::ptr::read_volatile(buf.device_ptr() as *const u8) };
    println!("read {byte} without a fault");
}

#[test]
fn strict_memory_faults_host_reads_of_device_memory() {
    let _mode = together();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "strict_memory_child_reads_device_memory", "--nocapture", "--test-threads=1"])
        .env("GCAP_CAPTURE_CHILD", "strict")
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(11), "SIGSEGV expected: {:?}", String::from_utf8_lossy(&out.stdout));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("without a fault"));
}

#[test]
// A stream hashes by its handle, which never changes: the interior mutability clippy sees is its
// pending-work list.
#[allow(clippy::mutable_key_type)]
fn streams_compare_by_identity() {
    let _mode = together();
    let ctx = sim();
    let (a, b) = (Stream::new(&ctx).unwrap(), Stream::new(&ctx).unwrap());
    assert_eq!(a, a.clone());
    assert_ne!(a, b);
    let mut seen = std::collections::HashMap::new();
    seen.insert(a.clone(), "a");
    seen.insert(b.clone(), "b");
    seen.insert(a.clone(), "a again");
    assert_eq!((seen.len(), seen[&a], seen[&b]), (2, "a again", "b"));
    assert!(format!("{a:?}").starts_with("Stream(0x"), "{a:?}");
}

/// A thread in RELAXED mode allocates while another thread captures in GLOBAL mode without
/// invalidating that capture; in GLOBAL mode (every thread's start) the same call does.
#[test]
fn the_thread_capture_mode_exchanges() {
    let _mode = alone();
    let ctx = sim();
    let s = Stream::new(&ctx).unwrap();
    let buf = DeviceBuffer::<u8>::new(&ctx, 16).unwrap();
    for (mode, invalidates) in [(CaptureMode::Relaxed, false), (CaptureMode::Global, true)] {
        let guard = GraphCaptureGuard::begin_with_mode(&s, CaptureMode::Global).unwrap();
        s.memset(&buf, 1).unwrap();
        let ctx2 = ctx.clone();
        thread::spawn(move || {
            assert_eq!(thread_exchange_capture_mode(mode).unwrap(), CaptureMode::Global);
            let _scratch = DeviceBuffer::<u8>::new(&ctx2, 16);
            assert_eq!(thread_exchange_capture_mode(CaptureMode::Global).unwrap(), mode);
        })
        .join()
        .unwrap();
        let expect = if invalidates { CaptureStatus::Invalidated } else { CaptureStatus::Active };
        assert_eq!(guard.status(), expect, "another thread in {mode:?} mode allocated");
        assert_eq!(guard.finish().is_ok(), !invalidates);
    }
}

/// oxicuda's `record_memcpy(dst, src, size, direction)`: host to device and device to host with a
/// byte count and element offsets, checked against the buffers before C sees them.
#[test]
fn record_memcpy_takes_a_direction_a_size_and_offsets() {
    let _mode = alone();
    let ctx = sim();
    let s = Stream::new(&ctx).unwrap();
    let input = HostBuffer::from_slice(&ctx, &[1u32, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    let dev = DeviceBuffer::<u32>::zeroed(&ctx, 8).unwrap();
    let out = HostBuffer::<u32>::new(&ctx, 8).unwrap();
    let mut cap = StreamCapture::begin(&s).unwrap();
    cap.record_memcpy(dev.at(2), input.at(4), 12, MemcpyDirection::HostToDevice).unwrap(); // 5, 6, 7
    cap.record_memcpy(&out, &dev, 16, MemcpyDirection::DeviceToHost).unwrap(); // the first four
    cap.record_memcpy(out.at(6), dev.at(3), 8, MemcpyDirection::DeviceToHost).unwrap(); // 6, 7
    let bad = |r: gcap::GpuResult<()>, what: &str| match r {
        Err(GpuError::InvalidValue(m)) => assert!(m.contains("record_memcpy") && m.contains(what), "{m}"),
        other => panic!("{what}: {other:?}"),
    };
    bad(cap.record_memcpy(&dev, &input, 32, MemcpyDirection::DeviceToHost), "dst is a device buffer");
    bad(cap.record_memcpy(&dev, &dev, 36, MemcpyDirection::DeviceToDevice), "36 bytes");
    bad(cap.record_memcpy(dev.at(7), &dev, 8, MemcpyDirection::DeviceToDevice), "at byte offset 28");
    bad(cap.record_memcpy(dev.at(usize::MAX), &dev, 4, MemcpyDirection::DeviceToDevice), "overflow");
    assert_eq!(cap.status(), CaptureStatus::Active, "refused before the library saw them");
    assert_eq!(cap.recorded_count(), 3);
    drop(cap);

    let foreign_ctx = sim();
    let foreign = DeviceBuffer::<u32>::new(&foreign_ctx, 8).unwrap();
    let mut cap = StreamCapture::begin(&s).unwrap();
    bad(cap.record_memcpy(&dev, &foreign, 32, MemcpyDirection::DeviceToDevice), "src belongs to another context");
    cap.record_memcpy(dev.at(2), input.at(4), 12, MemcpyDirection::HostToDevice).unwrap();
    cap.record_memcpy(&out, &dev, 16, MemcpyDirection::DeviceToHost).unwrap();
    cap.record_memcpy(out.at(6), dev.at(3), 8, MemcpyDirection::DeviceToHost).unwrap();
    assert_eq!(cap.recorded_count(), 3);
    let g = cap.end().unwrap();
    g.instantiate().unwrap().launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(dev.to_vec().unwrap(), [0, 0, 5, 6, 7, 0, 0, 0]);
    assert_eq!(out.to_vec(), [0, 0, 5, 6, 0, 0, 6, 7]);
}

/// Stream-ordered and graph allocation: a capture's `alloc_async` and `free_async` become
/// allocation and free nodes whose memory comes from the capture's pool (so a `CapturePool`
/// holds something), CUDA's relaunch rule holds, and outside a capture they are ordinary
/// stream-ordered allocations.
#[test]
fn graph_allocations_draw_from_the_pool() {
    let _mode = together();
    let ctx = sim();
    let s = Stream::new(&ctx).unwrap();
    let pool = CapturePool::new(&ctx).unwrap();
    let out = DeviceBuffer::<u32>::zeroed(&ctx, 256).unwrap();
    assert_eq!(pool.stats().unwrap().reserved_bytes, 0);

    // Allocated and freed in one capture: every launch allocates and frees it.
    let guard = GraphCaptureGuard::begin_with_pool(&s, pool.clone()).unwrap();
    let scratch = s.alloc_async::<u32>(256).unwrap();
    s.memset_u32(&scratch, 5).unwrap();
    s.copy(&out, &scratch).unwrap();
    s.free_async(scratch).unwrap();
    let g = guard.finish().unwrap();
    let types: Vec<NodeType> = g.nodes().unwrap().into_iter().map(|(_, t)| t).collect();
    assert_eq!(types, [NodeType::MemAlloc, NodeType::Memset, NodeType::Memcpy, NodeType::MemFree]);
    assert_eq!(pool.stats().unwrap().reserved_bytes, 1024, "the pool holds the graph's allocation");
    for _ in 0..3 {
        g.launch().unwrap();
    }
    s.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![5; 256]);
    assert_eq!(pool.stats().unwrap().used_bytes, 0);

    // Allocated in the capture, freed outside it after a launch; the buffer outlives the capture.
    let guard = GraphCaptureGuard::begin_with_pool(&s, pool.clone()).unwrap();
    let kept = s.alloc_async::<u32>(64).unwrap();
    s.memset_u32(&kept, 9).unwrap();
    let g2 = guard.finish().unwrap();
    g2.launch().unwrap();
    s.synchronize().unwrap();
    assert_eq!(kept.to_vec().unwrap(), vec![9; 64]);
    match g2.launch() {
        Err(GpuError::InvalidValue(m)) => assert!(!m.is_empty()),
        other => panic!("a relaunch while its allocation is live: {other:?}"),
    }
    let addr = kept.device_ptr();
    s.free_async(kept).unwrap();
    g2.launch().unwrap();
    s.synchronize().unwrap();
    assert!(matches!(ctx.trim_graph_memory(), Err(GpuError::IllegalState(_))), "the graphs hold their buffers");
    drop((g, g2));
    assert_eq!(ctx.trim_graph_memory(), Ok(()));
    let again = {
        let guard = GraphCaptureGuard::begin(&s).unwrap(); // a pool of its own
        let b = s.alloc_async::<u8>(32).unwrap();
        s.memset(&b, 1).unwrap();
        drop(guard.finish().unwrap());
        b
    };
    assert!(matches!(ctx.trim_graph_memory(), Err(GpuError::IllegalState(_))), "a graph buffer is alive");
    drop(again);
    ctx.trim_graph_memory().unwrap();
    assert_ne!(addr, 0);

    // Outside a capture: ordinary memory, freed in stream order.
    let eager = s.alloc_async::<u16>(100).unwrap();
    s.memset(&eager, 0x11).unwrap();
    assert_eq!(eager.to_vec().unwrap(), vec![0x1111; 100]);
    s.free_async(eager).unwrap(); // the stream's own pending work does not hold it back
    let used = s.alloc_async::<u8>(16).unwrap();
    let mut graph = gcap::Graph::new(&ctx).unwrap();
    graph.add_memset(&[], &used, 1).unwrap();
    match s.free_async(used) {
        Err(GpuError::IllegalState(m)) => assert!(m.contains("still used"), "{m}"),
        other => panic!("a buffer a graph uses: {other:?}"),
    }
    graph.instantiate().unwrap().launch(&s).unwrap(); // still allocated: the graph kept it
    s.synchronize().unwrap();
    assert!(matches!(s.alloc_async::<u8>(0), Err(GpuError::InvalidValue(_))));
}
