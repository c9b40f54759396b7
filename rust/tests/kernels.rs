//! Kernels (CPU closures, raw CPU functions, PTX, CUDA C), their arguments, host functions and
//! page-locked buffers: through eager launches, graph nodes and both capture shapes, on the
//! simulator. Most tests follow the `GCAP_SIM_*` variables (any order, execution mode, thread
//! count or check), except `GCAP_SIM_KERNELS=ptx`, under which CPU kernels cannot run.

use std::ffi::c_void;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use gcap::{
    sys, Backend, Context, DeviceBuffer, Dim3, Exec, GpuError, Graph, GraphCaptureGuard, HostBuffer, Kernel, KernelAttr,
    Module, NodeType, SimOptions, Stream, StreamCapture,
};

/// The quickstart's kernels as PTX (`examples/kernels/quickstart_ptx.h`, copied by the example).
const QUICKSTART_PTX: &str = include_str!("../examples/quickstart.ptx");

/// A GLOBAL-mode capture is invalidated by an unsafe call (an allocation, a module load) from any
/// thread, and tests run on parallel threads: tests capturing in GLOBAL mode run alone.
static MODE_LOCK: RwLock<()> = RwLock::new(());

fn alone() -> RwLockWriteGuard<'static, ()> {
    MODE_LOCK.write().unwrap_or_else(|e| e.into_inner())
}

fn together() -> RwLockReadGuard<'static, ()> {
    MODE_LOCK.read().unwrap_or_else(|e| e.into_inner())
}

/// A simulator context as the environment's `GCAP_SIM_*` variables configure it.
fn sim() -> Context {
    Context::new(Backend::Sim).expect("a simulator context")
}

/// A simulator context with the default options whatever the environment says (IMMEDIATE: a
/// kernel's failure is its launch's error).
fn immediate() -> Context {
    Context::sim(&SimOptions::default()).expect("a simulator context")
}

/// saxpy(float a, const float *x, float *y, uint32_t n) and scale(float *y, float s, uint32_t n),
/// as CPU closures with the PTX's signatures.
fn closure_module(ctx: &Context) -> Module {
    Module::builder(ctx)
        .cpu_kernel("saxpy", &[4, 8, 8, 4], |block, args| {
            let (a, x, y, n) = (args.get::<f32>(0), args.buffer::<f32>(1), args.buffer::<f32>(2), args.get::<u32>(3));
            for t in block.threads() {
                let i = block.global_x(t);
                if i < n as u64 {
                    let i = i as usize;
                    y.set(i, a * x.get(i) + y.get(i));
                }
            }
        })
        .cpu_kernel("scale", &[8, 4, 4], |block, args| {
            let (y, s, n) = (args.buffer::<f32>(0), args.get::<f32>(1), args.get::<u32>(2));
            for t in block.threads() {
                let i = block.global_x(t);
                if i < n as u64 {
                    y.set(i as usize, s * y.get(i as usize));
                }
            }
        })
        .build()
        .expect("the closure module")
}

fn xs(n: usize) -> Vec<f32> {
    (0..n).map(|i| (i % 16) as f32 * 0.25).collect()
}

fn saxpy_ref(a: f32, x: &[f32], y: &mut [f32], n: usize) {
    for i in 0..n.min(y.len()) {
        y[i] += a * x[i];
    }
}

/// Runs this test binary again with one test and `env`, for what cannot happen in this process
/// (an abort, a process-wide choice of library).
fn run_child(test: &str, env: &[(&str, &str)]) -> Output {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", test, "--nocapture", "--test-threads=1"]).env("GCAP_KERNELS_CHILD", test);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the test binary runs again")
}

fn is_child(test: &str) -> bool {
    std::env::var("GCAP_KERNELS_CHILD").is_ok_and(|v| v == test)
}

// ----------------------------------------------------------------- closures, eagerly

#[test]
fn closure_kernels_compute_saxpy_and_scale() {
    let _mode = together();
    let ctx = sim();
    let m = closure_module(&ctx);
    assert_eq!(m.kernel_names(), ["saxpy", "scale"]);
    let (saxpy, scale) = (m.kernel("saxpy").unwrap(), m.kernel("scale").unwrap());
    assert!(saxpy.is_closure() && !saxpy.is_raw());
    assert_eq!(saxpy.param_sizes(), Some(&[4usize, 8, 8, 4][..]));
    assert_eq!(saxpy.name(), "saxpy");

    let x = DeviceBuffer::from_slice(&ctx, &xs(1024)).unwrap();
    let y = DeviceBuffer::from_slice(&ctx, &[1.0f32; 1024]).unwrap();
    let s = Stream::new(&ctx).unwrap();
    let n = 1000u32; // the last 24 elements stay as they are
    s.launch(&saxpy, 4, 256, 0, &[&2.0f32, &x, &y, &n]).unwrap();
    s.launch(&scale, (4, 1, 1), Dim3::new(256, 1, 1), 0, &[&y, &0.5f32, &n]).unwrap();
    s.synchronize().unwrap();

    let mut want = vec![1.0f32; 1024];
    saxpy_ref(2.0, &xs(1024), &mut want, 1000);
    want.iter_mut().take(1000).for_each(|v| *v *= 0.5);
    assert_eq!(y.to_vec().unwrap(), want);
    let stats = ctx.sim_stats().unwrap();
    assert_eq!(stats.kernels_executed, 2);
}

#[test]
fn closure_kernels_run_on_worker_threads() {
    let _mode = together();
    let ctx = Context::sim(&SimOptions { threads: 4, ..Default::default() }).unwrap();
    let m = Module::builder(&ctx)
        .cpu_kernel("count", &[8], |block, args| {
            let hits = args.buffer::<u32>(0);
            for t in block.threads() {
                let i = block.global_x(t) as usize;
                hits.set(i, hits.get(i) + 1);
            }
        })
        .build()
        .unwrap();
    let hits = DeviceBuffer::<u32>::zeroed(&ctx, 64 * 128).unwrap();
    let s = Stream::new(&ctx).unwrap();
    for _ in 0..3 {
        s.launch(&m.kernel("count").unwrap(), 64, 128, 0, &[&hits]).unwrap();
    }
    s.synchronize().unwrap();
    assert_eq!(hits.to_vec().unwrap(), vec![3; 64 * 128]);
    assert!(ctx.sim_stats().unwrap().blocks_parallel > 0, "the blocks ran on the worker threads");
}

#[test]
fn shared_memory_is_per_block_and_starts_zeroed() {
    let _mode = together();
    let ctx = Context::sim(&SimOptions { threads: 2, ..Default::default() }).unwrap();
    let m = Module::builder(&ctx)
        .cpu_kernel("block_sums", &[8, 8], |block, args| {
            let (input, sums) = (args.buffer::<u32>(0), args.buffer::<u64>(1));
            let shared = block.shared::<u64>();
            assert_eq!(shared.len(), 2);
            assert_eq!(shared.get(0), 0, "shared memory starts as zeros");
            for t in block.threads() {
                shared.set(0, shared.get(0) + input.get(block.global_x(t) as usize) as u64);
            }
            sums.set(block.block_idx().x as usize, shared.get(0));
            shared.set(0, 12345); // the next block on this worker must not see it
        })
        .build()
        .unwrap();
    let input = DeviceBuffer::from_slice(&ctx, &(0..1024u32).collect::<Vec<_>>()).unwrap();
    let sums = DeviceBuffer::<u64>::zeroed(&ctx, 8).unwrap();
    let s = Stream::new(&ctx).unwrap();
    s.launch(&m.kernel("block_sums").unwrap(), 8, 128, 16, &[&input, &sums]).unwrap();
    s.synchronize().unwrap();
    let want: Vec<u64> = (0..8u64).map(|b| (b * 128..(b + 1) * 128).sum()).collect();
    assert_eq!(sums.to_vec().unwrap(), want);
}

#[test]
fn kernels_without_parameters_and_plain_slices() {
    let _mode = together();
    let ctx = sim();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let m = Module::builder(&ctx)
        .cpu_kernel("tick", &[], move |block, args| {
            assert!(args.is_empty());
            c.fetch_add(block.thread_count() as usize, Ordering::Relaxed);
        })
        .cpu_kernel("iota", &[8], |_block, args| {
            let out = args.buffer::<i64>(0);
            // SAFETY: one block, and nothing else touches the buffer while it runs.
            let plain = unsafe { out.as_mut_slice() };
            for (i, v) in plain.iter_mut().enumerate() {
                *v = i as i64 * -3;
            }
        })
        .build()
        .unwrap();
    let s = Stream::new(&ctx).unwrap();
    s.launch(&m.kernel("tick").unwrap(), (2, 3), (4, 5, 2), 0, &[]).unwrap();
    let out = DeviceBuffer::<i64>::new(&ctx, 10).unwrap();
    s.launch(&m.kernel("iota").unwrap(), 1, 1, 0, &[&&out]).unwrap();
    s.synchronize().unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 2 * 3 * 40);
    assert_eq!(out.to_vec().unwrap(), (0..10).map(|i| i * -3).collect::<Vec<i64>>());
}

// ----------------------------------------------------------------- graphs and captures

#[test]
fn graph_nodes_replay_kernels_copies_and_host_checks() {
    let _mode = together();
    let ctx = sim();
    let m = closure_module(&ctx);
    let (saxpy, scale) = (m.kernel("saxpy").unwrap(), m.kernel("scale").unwrap());
    const N: usize = 512;
    let hx = HostBuffer::from_slice(&ctx, &xs(N)).unwrap();
    let hy = Arc::new(HostBuffer::<f32>::new(&ctx, N).unwrap());
    let (dx, dy) = (DeviceBuffer::<f32>::new(&ctx, N).unwrap(), DeviceBuffer::<f32>::zeroed(&ctx, N).unwrap());

    let mut g = Graph::new(&ctx).unwrap();
    let up = g.add_upload(&[], &dx, &hx).unwrap();
    let k1 = g.add_kernel(&[up], &saxpy, 2, 256, 0, &[&0.5f32, &dx, &dy, &(N as u32)]).unwrap();
    let k2 = g.add_kernel(&[k1], &scale, 2, 256, 0, &[&dy, &0.99f32, &(N as u32)]).unwrap();
    let down = g.add_download(&[k2], &dy, &hy).unwrap();
    let checked = Arc::new(Mutex::new((vec![0f32; N], 0usize, 0usize))); // reference, runs, mismatches
    let (c, y) = (checked.clone(), hy.clone());
    let host = g
        .add_host(&[down], move || {
            let mut c = c.lock().unwrap();
            let got = y.to_vec(); // ordered after the download node
            let x = xs(N);
            for i in 0..N {
                c.0[i] = 0.99 * (0.5 * x[i] + c.0[i]);
                if got[i] != c.0[i] {
                    c.2 += 1;
                }
            }
            c.1 += 1;
        })
        .unwrap();

    let types: Vec<NodeType> = g.nodes().unwrap().into_iter().map(|n| g.node_type(n).unwrap()).collect();
    assert_eq!(types, [NodeType::Memcpy, NodeType::Kernel, NodeType::Kernel, NodeType::Memcpy, NodeType::Host]);
    assert_eq!(g.dependencies(host).unwrap(), [down]);
    let info = g.kernel_node_info(k1).unwrap();
    assert_eq!((info.name.as_str(), info.grid, info.block, info.shared_mem), ("saxpy", Dim3::new(2, 1, 1), Dim3::new(256, 1, 1), 0));
    assert!(matches!(g.kernel_node_info(up), Err(GpuError::InvalidValue(_))));
    let dot = g.to_dot(true).unwrap();
    assert!(dot.contains("saxpy") && dot.contains("scale"), "{dot}");

    let exec = g.instantiate().unwrap();
    drop(g); // the executable keeps the closures, the buffers and the host function
    drop((dx, dy, m, saxpy, scale));
    let s = Stream::new(&ctx).unwrap();
    for _ in 0..20 {
        exec.launch(&s).unwrap();
    }
    s.synchronize().unwrap();
    let c = checked.lock().unwrap();
    assert_eq!((c.1, c.2), (20, 0), "the host node ran on every replay and every value matched");
    assert_eq!(hy.to_vec(), c.0);
    let stats = ctx.sim_stats().unwrap();
    assert_eq!((stats.graph_launches, stats.nodes_executed, stats.host_calls), (20, 100, 20));
}

#[test]
fn stream_capture_records_kernels_by_name() {
    let _mode = alone();
    let ctx = sim();
    let m = closure_module(&ctx);
    let (saxpy, scale) = (m.kernel("saxpy").unwrap(), m.kernel("scale").unwrap());
    let x = DeviceBuffer::from_slice(&ctx, &xs(256)).unwrap();
    let y = DeviceBuffer::<f32>::zeroed(&ctx, 256).unwrap();
    let s = Stream::new(&ctx).unwrap();

    let mut cap = StreamCapture::begin(&s).unwrap();
    cap.record_kernel(&saxpy, 1, 256, 0, &[&1.0f32, &x, &y, &256u32]).unwrap();
    cap.record_kernel(&scale, 1, 256, 0, &[&y, &2.0f32, &256u32]).unwrap();
    match cap.record_kernel(&scale, 1, 256, 0, &[&y, &2.0f32]) {
        Err(GpuError::InvalidValue(m)) => assert!(m.contains("takes 3 arguments but 2"), "{m}"),
        other => panic!("a short argument list gave {other:?}"),
    }
    assert_eq!(cap.recorded_count(), 2);
    let g = cap.end().unwrap();
    assert_eq!((g.node_count(), g.edge_count()), (2, 1));
    assert!(matches!(
        cap.record_kernel(&scale, 1, 256, 0, &[&y, &2.0f32, &256u32]),
        Err(GpuError::StreamCaptureUnmatched(_))
    ));
    assert_eq!(y.to_vec().unwrap(), vec![0.0; 256], "nothing ran during the capture");
    let exec = g.instantiate().unwrap();
    drop((g, x, m, saxpy, scale));
    exec.launch(&s).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    let want: Vec<f32> = xs(256).iter().map(|&x| ((x * 2.0) + x) * 2.0).collect(); // y = 2(x + 2(x + 0))
    assert_eq!(y.to_vec().unwrap(), want);
}

#[test]
fn record_kernel_refuses_a_name_an_earlier_module_shadows() {
    let _mode = alone();
    let ctx = sim();
    let first = Module::builder(&ctx).cpu_kernel("k", &[4], |_, _| {}).build().unwrap();
    let second = Module::builder(&ctx).cpu_kernel("k", &[8, 8], |_, _| {}).build().unwrap();
    let buf = DeviceBuffer::<u8>::new(&ctx, 8).unwrap();
    let s = Stream::new(&ctx).unwrap();
    let mut cap = StreamCapture::begin(&s).unwrap();
    match cap.record_kernel(&second.kernel("k").unwrap(), 1, 1, 0, &[&buf, &buf]) {
        Err(GpuError::InvalidValue(m)) => assert!(m.contains("another kernel named \"k\""), "{m}"),
        other => panic!("a shadowed name gave {other:?}"),
    }
    cap.record_kernel(&first.kernel("k").unwrap(), 1, 1, 0, &[&1u32]).unwrap();
    // The stream itself launches by handle: the second module's kernel can be captured that way.
    s.launch(&second.kernel("k").unwrap(), 1, 1, 0, &[&buf, &buf]).unwrap();
    let g = cap.end().unwrap();
    assert_eq!(g.node_count(), 2);
}

#[test]
fn graph_capture_guard_records_launches_and_host_functions() {
    let _mode = together();
    let ctx = sim();
    let m = closure_module(&ctx);
    let saxpy = m.kernel("saxpy").unwrap();
    let x = DeviceBuffer::from_slice(&ctx, &[1.0f32; 128]).unwrap();
    let y = DeviceBuffer::<f32>::zeroed(&ctx, 128).unwrap();
    let host = HostBuffer::<f32>::new(&ctx, 128).unwrap();
    let s = Stream::new(&ctx).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));

    let guard = GraphCaptureGuard::begin(&s).unwrap();
    s.launch(&saxpy, 1, 128, 0, &[&3.0f32, &x, &y, &128u32]).unwrap();
    s.download(&y, &host).unwrap();
    let c = calls.clone();
    s.host_fn(move || {
        c.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0, "captured, not run");
    let graph = guard.finish().unwrap();
    assert_eq!(graph.exec().node_count(), 3);
    drop((x, m, saxpy));
    for _ in 0..5 {
        graph.launch().unwrap();
    }
    s.synchronize().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    assert_eq!(host.to_vec(), vec![15.0; 128]);
}

// ----------------------------------------------------------------- PTX and CUDA C

#[test]
fn ptx_kernels_run_on_the_simulator() {
    let _mode = together();
    let ctx = immediate();
    let m = Module::from_ptx(&ctx, QUICKSTART_PTX).unwrap();
    assert_eq!(m.kernel_names(), ["saxpy", "scale"]);
    let saxpy = m.kernel("saxpy").unwrap();
    assert!(!saxpy.is_closure() && !saxpy.is_raw());
    assert_eq!(saxpy.param_sizes(), Some(&[4usize, 8, 8, 4][..]));
    assert_eq!(m.kernel("scale").unwrap().param_count(), Some(3));
    assert_eq!(saxpy.attribute(KernelAttr::MaxThreadsPerBlock), Ok(1024));
    assert_eq!(saxpy.attribute(KernelAttr::SharedSizeBytes), Ok(0));
    assert_eq!(saxpy.attribute(KernelAttr::PtxVersion), Ok(75));
    assert_eq!(saxpy.attribute(KernelAttr::MaxDynamicSharedSize), Ok(48 * 1024));

    let x = DeviceBuffer::from_slice(&ctx, &xs(300)).unwrap();
    let y = DeviceBuffer::from_slice(&ctx, &[2.0f32; 300]).unwrap();
    let s = Stream::new(&ctx).unwrap();
    s.launch(&saxpy, 2, 256, 0, &[&0.5f32, &x, &y, &300u32]).unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    g.add_kernel(&[], &m.kernel("scale").unwrap(), 2, 256, 0, &[&y, &4.0f32, &300u32]).unwrap();
    g.instantiate().unwrap().launch(&s).unwrap();
    s.synchronize().unwrap();
    let mut want = vec![2.0f32; 300];
    saxpy_ref(0.5, &xs(300), &mut want, 300);
    want.iter_mut().for_each(|v| *v *= 4.0);
    assert_eq!(y.to_vec().unwrap(), want);
    assert!(ctx.sim_stats().unwrap().ptx_instructions > 0, "the PTX interpreter ran them");

    // A PTX kernel's bad pointer is the simulator's (sticky) error, not the host's undefined behaviour.
    match s.launch(&saxpy, 1, 32, 0, &[&1.0f32, &0x10u64, &y, &32u32]) {
        Err(GpuError::IllegalAddress(m)) => assert!(m.contains("global address 0x10"), "{m}"),
        other => panic!("a bad pointer gave {other:?}"),
    }
}

#[test]
fn bad_ptx_and_unknown_kernels() {
    let _mode = together();
    let ctx = sim();
    match Module::from_ptx(&ctx, ".version 7.5\n.target sm_75\n.address_size 64\n.visible .entry k(\n{ bogus; }\n") {
        Err(GpuError::InvalidPtx(m)) => assert!(m.contains("line"), "{m}"),
        other => panic!("bad PTX gave {other:?}"),
    }
    assert!(matches!(Module::from_ptx(&ctx, "a\0b"), Err(GpuError::InvalidValue(_))));
    let m = Module::from_ptx(&ctx, QUICKSTART_PTX).unwrap();
    match m.kernel("nope") {
        Err(GpuError::NotFound(msg)) => assert!(msg.contains("nope"), "{msg}"),
        other => panic!("an unknown kernel gave {other:?}"),
    }
    assert!(matches!(closure_module(&ctx).kernel("saxpy2"), Err(GpuError::NotFound(_))));
}

/// The PTX the Rust quickstart includes is the C example's, byte for byte.
#[test]
fn quickstart_ptx_matches_the_c_header() {
    let header = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kernels/quickstart_ptx.h");
    let Ok(text) = std::fs::read_to_string(&header) else {
        eprintln!("{} is not here (a packaged crate): nothing to compare", header.display());
        return;
    };
    let body = &text[text.find('=').unwrap() + 1..text.rfind(';').unwrap()];
    let mut ptx = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next().unwrap() {
                    'n' => ptx.push('\n'),
                    't' => ptx.push('\t'),
                    other => ptx.push(other),
                },
                c => ptx.push(c),
            }
        }
    }
    assert_eq!(ptx, QUICKSTART_PTX, "regenerate rust/examples/quickstart.ptx from {}", header.display());
}

/// Every PTX file of the repository loads with the parameter sizes this crate reads, which the
/// library checks against its own reading.
#[test]
fn repository_ptx_parameter_sizes_agree_with_the_library() {
    let _mode = together();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["tests/ptx", "tests/ptx/samples", "tests/ptx/bugs"] {
        if let Ok(entries) = std::fs::read_dir(root.join(dir)) {
            files.extend(entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "ptx")));
        }
    }
    let ctx = immediate();
    let mut loaded = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        match Module::from_ptx(&ctx, &text) {
            Ok(m) => {
                loaded += 1;
                for name in m.kernel_names() {
                    let k = m.kernel(&name).unwrap();
                    assert!(k.param_sizes().is_some(), "{}: {name} has no sizes", f.display());
                }
            }
            Err(GpuError::InvalidPtx(_)) | Err(GpuError::NotSupported(_)) => {}
            Err(e) => panic!("{}: {e}", f.display()),
        }
    }
    assert!(files.is_empty() || loaded > 0, "no PTX file of {} loaded", files.len());
}

const SAXPY_CU: &str = r#"
extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"#;

#[test]
fn cuda_source_modules_compile_with_nvrtc() {
    let _mode = together();
    let ctx = immediate();
    let m = match Module::from_cuda_source(&ctx, SAXPY_CU, &["-DUNUSED=1"]) {
        Err(GpuError::NotFound(msg)) => {
            eprintln!("no NVRTC here, skipping the compile checks: {msg}");
            return;
        }
        other => other.unwrap(),
    };
    let saxpy = m.kernel("saxpy").unwrap();
    assert_eq!((saxpy.param_count(), saxpy.param_sizes()), (Some(4), None));
    let x = DeviceBuffer::from_slice(&ctx, &xs(64)).unwrap();
    let y = DeviceBuffer::from_slice(&ctx, &[1.0f32; 64]).unwrap();
    let s = Stream::new(&ctx).unwrap();
    s.launch(&saxpy, 1, 64, 0, &[&2.0f32, &x, &y, &64u32]).unwrap();
    s.synchronize().unwrap();
    let mut want = vec![1.0f32; 64];
    saxpy_ref(2.0, &xs(64), &mut want, 64);
    assert_eq!(y.to_vec().unwrap(), want);
    match s.launch(&saxpy, 1, 64, 0, &[&2.0f32, &x, &y]) {
        Err(GpuError::InvalidValue(msg)) => assert!(msg.contains("takes 4 arguments but 3"), "{msg}"),
        other => panic!("a short argument list gave {other:?}"),
    }
    match Module::from_cuda_source(&ctx, "extern \"C\" __global__ void k() { undefined_name(); }", &[]) {
        Err(GpuError::InvalidSource(log)) => assert!(log.contains("undefined_name"), "{log}"),
        other => panic!("a bad source gave {other:?}"),
    }
}

/// A kernel that stores through a null pointer, line 2 of its source.
const NULL_STORE_CU: &str = "extern \"C\" __global__ void null_store(int v) {\n  *(volatile int *)0 = v;\n}\n";

#[test]
fn a_cuda_source_is_named_in_reports() {
    let _mode = together();
    for (name, shown) in [(Some("faulty.cu"), "(faulty.cu:2)"), (None, "(<nvrtc source>:2)")] {
        let ctx = immediate();
        let loaded = match name {
            Some(name) => Module::from_cuda_source_named(&ctx, name, NULL_STORE_CU, &["-lineinfo"]),
            None => Module::from_cuda_source(&ctx, NULL_STORE_CU, &["-lineinfo"]),
        };
        let m = match loaded {
            Err(GpuError::NotFound(msg)) => {
                eprintln!("no NVRTC here, skipping the source name checks: {msg}");
                return;
            }
            other => other.unwrap(),
        };
        let k = m.kernel("null_store").unwrap();
        let s = Stream::new(&ctx).unwrap();
        match s.launch(&k, 1, 1, 0, &[&5i32]) {
            Err(GpuError::IllegalAddress(msg)) => {
                assert!(msg.contains("kernel \"null_store\"") && msg.contains(shown), "{name:?}: {msg}");
                let cwd = std::env::current_dir().unwrap();
                assert!(!msg.contains(cwd.to_str().unwrap()), "{name:?}: {msg}");
            }
            other => panic!("a store through a null pointer gave {other:?}"),
        }
    }
    let ctx = immediate();
    match Module::from_cuda_source_named(&ctx, "broken.cu", "extern \"C\" __global__ void k() { undeclared = 1; }", &[]) {
        Err(GpuError::InvalidSource(log)) => assert!(log.contains("broken.cu(1): error"), "{log}"),
        other => panic!("a bad source gave {other:?}"),
    }
    match Module::from_cuda_source_named(&ctx, "", NULL_STORE_CU, &[]) {
        Err(GpuError::InvalidValue(msg)) => assert!(msg.contains("name"), "{msg}"),
        other => panic!("an empty name gave {other:?}"),
    }
    match Module::from_cuda_source_named(&ctx, "a\0b.cu", NULL_STORE_CU, &[]) {
        Err(GpuError::InvalidValue(msg)) => assert!(msg.contains("Module::from_cuda_source_named: the source name contains a NUL byte"), "{msg}"),
        other => panic!("a name with a NUL gave {other:?}"),
    }
}

#[test]
fn nvrtc_missing_is_not_found() {
    const ME: &str = "nvrtc_missing_is_not_found";
    if is_child(ME) {
        let ctx = sim();
        match Module::from_cuda_source(&ctx, SAXPY_CU, &[]) {
            Err(GpuError::NotFound(msg)) => assert!(msg.contains("GCAP_NVRTC="), "{msg}"),
            other => panic!("without NVRTC: {other:?}"),
        }
        return;
    }
    let out = run_child(ME, &[("GCAP_NVRTC", "/nonexistent/libnvrtc.so")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

// ----------------------------------------------------------------- argument checks

#[test]
fn argument_errors_name_the_argument() {
    let _mode = together();
    let ctx = sim();
    let other = sim();
    let m = closure_module(&ctx);
    let saxpy = m.kernel("saxpy").unwrap();
    let (x, y) = (DeviceBuffer::<f32>::new(&ctx, 8).unwrap(), DeviceBuffer::<f32>::new(&ctx, 8).unwrap());
    let foreign = DeviceBuffer::<f32>::new(&other, 8).unwrap();
    let s = Stream::new(&ctx).unwrap();
    let msg = |r: gcap::GpuResult<()>| match r {
        Err(GpuError::InvalidValue(m)) => m,
        other => panic!("expected InvalidValue, got {other:?}"),
    };
    let m1 = msg(s.launch(&saxpy, 1, 8, 0, &[&1.0f32, &x, &y]));
    assert!(m1.contains("Stream::launch") && m1.contains("takes 4 arguments but 3 were given"), "{m1}");
    let m2 = msg(s.launch(&saxpy, 1, 8, 0, &[&1.0f64, &x, &y, &8u32]));
    assert!(m2.contains("argument 0") && m2.contains("8 bytes (f64)") && m2.contains("parameter 0 is 4 bytes"), "{m2}");
    let m3 = msg(s.launch(&saxpy, 1, 8, 0, &[&1.0f32, &x, &2u32, &8u32]));
    assert!(m3.contains("argument 2"), "{m3}");
    let m4 = msg(s.launch(&saxpy, 1, 8, 0, &[&1.0f32, &foreign, &y, &8u32]));
    assert!(m4.contains("argument 1") && m4.contains("another context"), "{m4}");
    // The library's own checks: dimensions.
    let m6 = msg(s.launch(&saxpy, 0, 8, 0, &[&1.0f32, &x, &y, &8u32]));
    assert!(m6.contains("zero dimension"), "{m6}");
    let m7 = msg(s.launch(&saxpy, 1, 2048, 0, &[&1.0f32, &x, &y, &8u32]));
    assert!(m7.contains("block"), "{m7}");

    let mut g = Graph::new(&ctx).unwrap();
    match g.add_kernel(&[], &saxpy, 1, 8, 0, &[&x]) {
        Err(GpuError::InvalidValue(m)) => assert!(m.contains("Graph::add_kernel"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(g.node_count(), 0);
    s.synchronize().unwrap();
}

/// Kernel and host nodes change their parameters safely, in a graph and in one executable only:
/// arguments checked as for a launch, buffers and functions kept, the replaced ones let go.
#[test]
fn kernel_and_host_node_setters() {
    let _mode = together();
    let ctx = immediate();
    let m = closure_module(&ctx);
    let scale = m.kernel("scale").unwrap();
    let s = Stream::new(&ctx).unwrap();
    let (y, z) = (DeviceBuffer::from_slice(&ctx, &[1.0f32; 64]).unwrap(), DeviceBuffer::from_slice(&ctx, &[1.0f32; 64]).unwrap());
    let (first, second) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut g = Graph::new(&ctx).unwrap();
    let k = g.add_kernel(&[], &scale, 1u32, 64u32, 0, &[&y, &2.0f32, &64u32]).unwrap();
    let f = first.clone();
    let h = g.add_host(&[k], move || {
        f.fetch_add(1, Ordering::SeqCst);
    }).unwrap();
    let mut x = g.instantiate().unwrap();
    x.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!((y.to_vec().unwrap()[0], first.load(Ordering::SeqCst)), (2.0, 1));

    // One executable: z is scaled by 3 and the second counter counts; the graph is unchanged.
    x.set_kernel(k, &scale, 1u32, 64u32, 0, &[&z, &3.0f32, &64u32]).unwrap();
    let c = second.clone();
    x.set_host(h, move || {
        c.fetch_add(1, Ordering::SeqCst);
    }).unwrap();
    x.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!((y.to_vec().unwrap()[0], z.to_vec().unwrap()[0]), (2.0, 3.0));
    assert_eq!((first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)), (1, 1));
    assert_eq!(Arc::strong_count(&first), 2, "the graph still holds the first function");
    x.set_host(h, || {}).unwrap();
    assert_eq!(Arc::strong_count(&second), 1, "the replaced function is let go");
    let fresh = g.instantiate().unwrap(); // made from the graph: the old parameters
    fresh.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!((y.to_vec().unwrap()[0], first.load(Ordering::SeqCst)), (4.0, 2));

    // The graph's own nodes.
    g.set_kernel(k, &scale, 1u32, 64u32, 0, &[&z, &0.5f32, &64u32]).unwrap();
    let c = second.clone();
    g.set_host(h, move || {
        c.fetch_add(10, Ordering::SeqCst);
    }).unwrap();
    g.instantiate().unwrap().launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!((z.to_vec().unwrap()[0], second.load(Ordering::SeqCst)), (1.5, 11));

    // Refusals name the setter; nothing changes.
    match x.set_kernel(k, &scale, 1u32, 64u32, 0, &[&z, &3.0f32]) {
        Err(GpuError::InvalidValue(m)) => assert!(m.contains("GraphExec::set_kernel") && m.contains("3 arguments"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(g.set_kernel(k, &scale, 1u32, 64u32, 0, &[&1u32]), Err(GpuError::InvalidValue(_))));
    let foreign = closure_module(&sim()).kernel("scale").unwrap();
    assert!(matches!(x.set_kernel(k, &foreign, 1u32, 64u32, 0, &[&z, &3.0f32, &64u32]), Err(GpuError::InvalidHandle(_))));
    assert!(matches!(x.set_host(k, || {}), Err(GpuError::InvalidValue(_))), "a kernel node is not a host node");
    assert!(matches!(x.set_kernel(h, &scale, 1u32, 64u32, 0, &[&z, &3.0f32, &64u32]), Err(GpuError::InvalidValue(_))));
    fresh.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(y.to_vec().unwrap()[0], 8.0);
}

/// A kernel of another context is what C calls it: `INVALID_HANDLE` (`gcap_launch_kernel` and
/// `gcap_graph_add_kernel_node` say so for the same handles), from every path that takes a kernel.
#[test]
fn a_kernel_of_another_context_is_an_invalid_handle_as_in_c() {
    let _mode = together();
    let (ctx, other) = (sim(), sim());
    let saxpy = closure_module(&ctx).kernel("saxpy").unwrap();
    let theirs = DeviceBuffer::<f32>::new(&other, 8).unwrap();
    let (s, foreign_stream) = (Stream::new(&ctx).unwrap(), Stream::new(&other).unwrap());
    let c_status = c_status_of_a_foreign_kernel_launch();
    assert_eq!(c_status, sys::GCAP_ERROR_INVALID_HANDLE);
    let handle = |r: gcap::GpuResult<()>, what: &str| match r {
        Err(GpuError::InvalidHandle(m)) => assert!(m.contains(what) && m.contains("another context"), "{m}"),
        other => panic!("{what}: expected InvalidHandle as C's {c_status}, got {other:?}"),
    };
    let args: [&dyn gcap::KernelArg; 4] = [&1.0f32, &theirs, &theirs, &8u32];
    handle(foreign_stream.launch(&saxpy, 1, 8, 0, &args), "Stream::launch");
    handle(unsafe { foreign_stream.launch_unchecked(&saxpy, 1, 8, 0, &args) }, "Stream::launch_unchecked");
    let mut g = Graph::new(&other).unwrap();
    handle(g.add_kernel(&[], &saxpy, 1, 8, 0, &args).map(drop), "Graph::add_kernel");
    assert_eq!(g.node_count(), 0);
    let mut cap = StreamCapture::begin_with_mode(&foreign_stream, gcap::CaptureMode::ThreadLocal).unwrap();
    handle(cap.record_kernel(&saxpy, 1, 8, 0, &args), "StreamCapture::record_kernel");
    drop(cap);
    s.synchronize().unwrap();
}

/// The C library's status for a launch, on a stream of one context, of a kernel of another.
fn c_status_of_a_foreign_kernel_launch() -> sys::gcap_status {
    let ptx = std::ffi::CString::new(QUICKSTART_PTX).unwrap();
    unsafe {
        let mut o = std::mem::zeroed::<sys::gcap_context_options>();
        sys::gcap_context_options_init(&mut o);
        o.backend = sys::GCAP_BACKEND_SIM;
        let (mut a, mut b) = (std::ptr::null_mut(), std::ptr::null_mut());
        assert_eq!(sys::gcap_context_create(&o, &mut a), sys::GCAP_SUCCESS);
        assert_eq!(sys::gcap_context_create(&o, &mut b), sys::GCAP_SUCCESS);
        let mut desc = std::mem::zeroed::<sys::gcap_module_desc>();
        desc.image = ptx.as_ptr().cast();
        desc.image_size = ptx.as_bytes_with_nul().len();
        let (mut module, mut kernel, mut stream) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
        assert_eq!(sys::gcap_module_load(a, &desc, &mut module), sys::GCAP_SUCCESS);
        assert_eq!(sys::gcap_module_get_kernel(module, b"saxpy\0".as_ptr().cast(), &mut kernel), sys::GCAP_SUCCESS);
        assert_eq!(sys::gcap_stream_create(b, &mut stream), sys::GCAP_SUCCESS);
        let one = sys::gcap_dim3 { x: 1, y: 1, z: 1 };
        let st = sys::gcap_launch_kernel(stream, kernel, one, one, 0, std::ptr::null_mut());
        sys::gcap_context_destroy(b);
        sys::gcap_context_destroy(a);
        st
    }
}

#[test]
fn module_builder_errors() {
    let _mode = together();
    let ctx = sim();
    let invalid = |b: gcap::ModuleBuilder, what: &str| match b.build() {
        Err(GpuError::InvalidValue(m)) => assert!(m.contains(what), "{m} lacks {what}"),
        other => panic!("{what}: {other:?}"),
    };
    invalid(Module::builder(&ctx), "no kernels");
    invalid(Module::builder(&ctx).cpu_kernel("a", &[4], |_, _| {}).cpu_kernel("a", &[4], |_, _| {}), "defined twice");
    invalid(Module::builder(&ctx).cpu_kernel("", &[4], |_, _| {}), "empty name");
    invalid(Module::builder(&ctx).cpu_kernel("z", &[4, 0], |_, _| {}), "parameter 1 is 0 bytes");
    invalid(Module::builder(&ctx).cpu_kernel("big", &[4; 33], |_, _| {}), "33 parameters");
    invalid(
        Module::builder(&ctx).ptx(QUICKSTART_PTX).cpu_kernel("saxpy", &[4, 8, 8], |_, _| {}),
        "sizes [4, 8, 8, 4] in the PTX",
    );
    invalid(Module::builder(&ctx).ptx(QUICKSTART_PTX).cpu_kernel("axpy", &[4], |_, _| {}), "no entry \"axpy\"");
    // With matching PTX the simulator runs the CPU kernels.
    let m = Module::builder(&ctx).ptx(QUICKSTART_PTX).cpu_kernel("scale", &[8, 4, 4], |_, _| {}).build().unwrap();
    assert!(m.kernel("scale").unwrap().is_closure());
    assert_eq!(Module::builder(&ctx).cpu_kernel("max", &[8; 32], |_, _| {}).build().unwrap().kernel_names(), ["max"]);
}

#[test]
fn closure_accessor_misuse_fails_the_launch_not_the_process() {
    let _mode = together();
    let ctx = immediate();
    let m = Module::builder(&ctx)
        .cpu_kernel("wrong_type", &[8], |_, args| {
            assert!(args.try_buffer::<u32>(0).is_none());
            args.buffer::<u32>(0).set(0, 1); // the argument is a buffer of f32
        })
        .cpu_kernel("scalar_as_buffer", &[8], |_, args| {
            assert_eq!(args.address(0), None);
            assert_eq!(args.try_get::<u32>(0), None, "an 8-byte parameter is not a u32");
            assert_eq!(args.get::<u64>(0), 42);
            args.buffer::<u64>(0);
        })
        .cpu_kernel("past_the_end", &[8], |_, args| {
            let b = args.buffer::<f32>(0);
            assert!(!b.try_set(b.len(), 1.0));
            assert_eq!(b.try_get(b.len()), None);
            b.get(b.len());
        })
        .build()
        .unwrap();
    let buf = DeviceBuffer::<f32>::zeroed(&ctx, 4).unwrap();
    let s = Stream::new(&ctx).unwrap();
    let fail = |r: gcap::GpuResult<()>, what: &str| match r {
        Err(GpuError::Backend(msg)) => assert!(msg.contains(what), "{msg} lacks {what}"),
        other => panic!("{what}: {other:?}"),
    };
    fail(s.launch(&m.kernel("wrong_type").unwrap(), 1, 1, 0, &[&buf]), "argument 0 is a buffer of f32, not a buffer of u32");
    fail(s.launch(&m.kernel("scalar_as_buffer").unwrap(), 1, 1, 0, &[&42u64]), "argument 0 is a scalar");
    fail(s.launch(&m.kernel("past_the_end").unwrap(), 1, 1, 0, &[&buf]), "index 4 is past the end");
    s.synchronize().unwrap();
    assert_eq!(buf.to_vec().unwrap(), vec![0.0; 4]);
}

// ----------------------------------------------------------------- raw CPU functions

/// examples/quickstart.c's saxpy_sim, as a C programmer would port it.
unsafe extern "C" fn saxpy_thread(t: *const sys::gcap_sim_thread, args: *const *mut c_void) {
    unsafe {
        let t = &*t;
        let a = *(*args.add(0) as *const f32);
        let x = *(*args.add(1) as *const *const f32);
        let y = *(*args.add(2) as *const *mut f32);
        let n = *(*args.add(3) as *const u32);
        let i = t.block_idx.x * t.block_dim.x + t.thread_idx.x;
        if i < n {
            *y.add(i as usize) = a * *x.add(i as usize) + *y.add(i as usize);
        }
    }
}

/// The same, per block.
unsafe extern "C" fn saxpy_block(b: *const sys::gcap_sim_block, args: *const *mut c_void) {
    unsafe {
        let b = &*b;
        for tx in 0..b.block_dim.x {
            let t = sys::gcap_sim_thread {
                grid_dim: b.grid_dim,
                block_dim: b.block_dim,
                block_idx: b.block_idx,
                thread_idx: sys::gcap_dim3 { x: tx, y: 0, z: 0 },
                shared_mem: b.shared_mem,
            };
            saxpy_thread(&t, args);
        }
    }
}

#[test]
fn raw_cpu_functions_need_the_unsafe_launches() {
    let _mode = together();
    let ctx = sim();
    let m = Module::builder(&ctx)
        .raw_thread_kernel("saxpy_t", &[4, 8, 8, 4], saxpy_thread)
        .raw_block_kernel("saxpy_b", &[4, 8, 8, 4], saxpy_block)
        .build()
        .unwrap();
    let (kt, kb): (Kernel, Kernel) = (m.kernel("saxpy_t").unwrap(), m.kernel("saxpy_b").unwrap());
    assert!(kt.is_raw() && kb.is_raw());
    let x = DeviceBuffer::from_slice(&ctx, &xs(256)).unwrap();
    let y = DeviceBuffer::<f32>::zeroed(&ctx, 256).unwrap();
    let s = Stream::new(&ctx).unwrap();
    match s.launch(&kt, 1, 256, 0, &[&1.0f32, &x, &y, &256u32]) {
        Err(GpuError::InvalidValue(msg)) => assert!(msg.contains("raw CPU function"), "{msg}"),
        other => panic!("a safe launch of a raw kernel gave {other:?}"),
    }
    // SAFETY: x and y hold 256 floats, as n says, and the launch has 256 threads.
    unsafe { s.launch_unchecked(&kt, 1, 256, 0, &[&1.0f32, &x, &y, &256u32]).unwrap() };
    let mut g = Graph::new(&ctx).unwrap();
    assert!(matches!(g.add_kernel(&[], &kb, 2, 128, 0, &[&1.0f32, &x, &y, &256u32]), Err(GpuError::InvalidValue(_))));
    // SAFETY: as above, for every replay (the graph keeps x and y).
    unsafe { g.add_kernel_unchecked(&[], &kb, 2, 128, 0, &[&1.0f32, &x, &y, &256u32]).unwrap() };
    // Argument checks still apply to unchecked launches.
    assert!(matches!(
        unsafe { s.launch_unchecked(&kt, 1, 256, 0, &[&1.0f32, &x, &y]) },
        Err(GpuError::InvalidValue(_))
    ));
    let exec = g.instantiate().unwrap();
    exec.launch(&s).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(y.to_vec().unwrap(), xs(256).iter().map(|x| 3.0 * x).collect::<Vec<_>>());
}

// ----------------------------------------------------------------- host functions, panics

#[test]
fn host_functions_run_in_stream_order_and_on_every_replay() {
    let _mode = together();
    let ctx = sim();
    let s = Stream::new(&ctx).unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    for i in 0..3 {
        let o = order.clone();
        s.host_fn(move || o.lock().unwrap().push(i)).unwrap();
    }
    s.synchronize().unwrap();
    assert_eq!(*order.lock().unwrap(), [0, 1, 2]);

    let count = Arc::new(AtomicUsize::new(0));
    let mut g = Graph::new(&ctx).unwrap();
    let c = count.clone();
    let a = g.add_host(&[], move || {
        c.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    let c = count.clone();
    g.add_host(&[a], move || {
        c.fetch_add(100, Ordering::SeqCst);
    })
    .unwrap();
    let exec = g.instantiate().unwrap();
    let clone = g.try_clone().unwrap();
    drop(g);
    for _ in 0..50 {
        exec.launch(&s).unwrap();
    }
    clone.instantiate().unwrap().launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(count.load(Ordering::SeqCst), 51 * 101);
    assert_eq!(ctx.sim_stats().unwrap().host_calls, 3 + 102);

    // A host function may not use the device: gcap refuses, nothing breaks.
    let refused = Arc::new(Mutex::new(None));
    let (r, s2) = (refused.clone(), s.clone());
    s.host_fn(move || *r.lock().unwrap() = Some(s2.synchronize())).unwrap();
    s.synchronize().unwrap();
    assert!(matches!(refused.lock().unwrap().take(), Some(Err(GpuError::IllegalState(_)))));
}

#[test]
fn a_panicking_kernel_closure_fails_its_launch() {
    let _mode = together();
    let ctx = Context::sim(&SimOptions { threads: 3, ..Default::default() }).unwrap();
    let m = Module::builder(&ctx)
        .cpu_kernel("boom", &[4], |block, args| {
            if block.block_idx().x == args.get::<u32>(0) {
                panic!("block {} gave up", block.block_idx().x);
            }
        })
        .build()
        .unwrap();
    let boom = m.kernel("boom").unwrap();
    let s = Stream::new(&ctx).unwrap();
    match s.launch(&boom, 16, 1, 0, &[&5u32]) {
        Err(GpuError::Backend(msg)) => assert!(msg.contains("panicked: block 5 gave up"), "{msg}"),
        other => panic!("a panicking closure gave {other:?}"),
    }
    s.launch(&boom, 16, 1, 0, &[&99u32]).unwrap(); // the context is not poisoned
    let mut g = Graph::new(&ctx).unwrap();
    g.add_kernel(&[], &boom, 4, 1, 0, &[&2u32]).unwrap();
    let exec = g.instantiate().unwrap();
    let err = exec.launch(&s).and_then(|_| s.synchronize()).unwrap_err();
    assert!(matches!(err, GpuError::Backend(_)), "{err:?}");
    s.synchronize().unwrap();
}

#[test]
fn a_panicking_host_function_aborts_the_process() {
    const ME: &str = "a_panicking_host_function_aborts_the_process";
    if is_child(ME) {
        let ctx = sim();
        let s = Stream::new(&ctx).unwrap();
        let mut g = Graph::new(&ctx).unwrap();
        g.add_host(&[], || panic!("the check failed")).unwrap();
        let exec = g.instantiate().unwrap();
        let _ = exec.launch(&s);
        let _ = s.synchronize();
        println!("still alive");
        return;
    }
    let out = run_child(ME, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the child went on: {stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("still alive"));
    assert!(stderr.contains("gcap: a host function panicked (the check failed); aborting"), "{stderr}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(6), "SIGABRT");
    }
}

// ----------------------------------------------------------------- page-locked buffers

#[test]
fn host_buffers_download_and_upload() {
    let _mode = together();
    let ctx = sim();
    let s = Stream::new(&ctx).unwrap();
    let d = DeviceBuffer::from_slice(&ctx, &[1u16, 2, 3, 4, 5]).unwrap();
    let h = HostBuffer::<u16>::new(&ctx, 5).unwrap();
    assert_eq!((h.len(), h.size_bytes(), h.is_empty()), (5, 10, false));
    assert_eq!(h.to_vec(), [0; 5], "a new host buffer is zeros");
    s.download(&d, &h).unwrap();
    s.synchronize().unwrap();
    assert_eq!(h.to_vec(), [1, 2, 3, 4, 5]);
    assert!(h.set(0, 9) && !h.set(5, 9));
    assert_eq!((h.get(0), h.get(5)), (Some(9), None));
    let back = DeviceBuffer::<u16>::new(&ctx, 5).unwrap();
    s.upload_from_host(&back, &h).unwrap();
    drop(h); // the pending copy keeps it
    s.synchronize().unwrap();
    assert_eq!(back.to_vec().unwrap(), [9, 2, 3, 4, 5]);

    let short = HostBuffer::<u16>::new(&ctx, 4).unwrap();
    assert!(matches!(s.download(&d, &short), Err(GpuError::InvalidValue(_))));
    assert!(matches!(s.upload_from_host(&d, &short), Err(GpuError::InvalidValue(_))));
    assert!(matches!(short.copy_from_slice(&[1, 2, 3]), Err(GpuError::InvalidValue(_))));
    let mut g = Graph::new(&ctx).unwrap();
    assert!(matches!(g.add_download(&[], &d, &short), Err(GpuError::InvalidValue(_))));
    assert!(matches!(g.add_upload(&[], &d, &short), Err(GpuError::InvalidValue(_))));
    assert!(HostBuffer::<f64>::new(&ctx, 0).is_err());
    let f = HostBuffer::from_slice(&ctx, &[1.5f64, -2.0]).unwrap();
    assert_eq!(f.to_vec(), [1.5, -2.0]);
}

/// The forgotten synchronize: under DEFERRED the simulator runs stream work only when the host
/// waits, so a read before the synchronize sees the old values, as a GPU's later copy would.
#[test]
fn deferred_reads_without_a_synchronize_see_old_data() {
    let _mode = together();
    let ctx = Context::sim(&SimOptions { exec: Exec::Deferred, ..Default::default() }).unwrap();
    let m = closure_module(&ctx);
    let x = DeviceBuffer::from_slice(&ctx, &[2.0f32; 64]).unwrap();
    let y = DeviceBuffer::from_slice(&ctx, &[1.0f32; 64]).unwrap();
    let host = HostBuffer::<f32>::new(&ctx, 64).unwrap();
    let s = Stream::new(&ctx).unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    s.launch(&m.kernel("saxpy").unwrap(), 1, 64, 0, &[&3.0f32, &x, &y, &64u32]).unwrap();
    s.download(&y, &host).unwrap();
    let r = ran.clone();
    s.host_fn(move || {
        r.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();

    assert_eq!(host.to_vec(), vec![0.0; 64], "the download has not run: the host buffer is stale");
    assert_eq!(y.to_vec().unwrap(), vec![1.0; 64], "the kernel has not run: the device buffer is stale");
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert!(!s.query().unwrap() || ctx.sim_stats().unwrap().ops_deferred > 0);

    s.synchronize().unwrap();
    assert_eq!(host.to_vec(), vec![7.0; 64]);
    assert_eq!(y.to_vec().unwrap(), vec![7.0; 64]);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert!(ctx.sim_stats().unwrap().ops_deferred >= 3);
}

#[test]
fn dim3_conversions() {
    assert_eq!(Dim3::from(5), Dim3::new(5, 1, 1));
    assert_eq!(Dim3::from((5, 6)), Dim3::new(5, 6, 1));
    assert_eq!(Dim3::from((5, 6, 7)).count(), 210);
}

/// A kernel's closure is device code: gcap refuses its calls that would block, allocate, free or
/// issue work (the context running it is in the middle of a call), as it does in host functions.
#[test]
fn closures_cannot_reenter_gcap() {
    let _mode = together();
    for exec in [Exec::Immediate, Exec::Deferred] {
        let ctx = Context::sim(&SimOptions { exec, threads: 2, ..Default::default() }).unwrap();
        let s = Stream::new(&ctx).unwrap();
        let other = sim();
        let results = Arc::new(Mutex::new(Vec::new()));
        let held: Arc<Mutex<Option<DeviceBuffer<u8>>>> = Arc::new(Mutex::new(Some(DeviceBuffer::new(&ctx, 64).unwrap())));
        let (r, s2, c2, h) = (results.clone(), s.clone(), ctx.clone(), held.clone());
        let h2 = held.clone();
        let m = Module::builder(&ctx)
            .cpu_kernel("reenter", &[], move |_, _| {
                let mut r = r.lock().unwrap();
                r.push(s2.synchronize());
                r.push(c2.synchronize());
                r.push(DeviceBuffer::<u8>::new(&c2, 16).map(|_| ()));
                r.push(DeviceBuffer::<u8>::new(&other, 16).map(|_| ()));
                r.push(s2.memset(h.lock().unwrap().as_ref().unwrap(), 1));
            })
            .cpu_kernel("drop_buffer", &[], move |_, _| {
                drop(h2.lock().unwrap().take()); // its free is refused: it leaks, nothing breaks
            })
            .build()
            .unwrap();
        s.launch(&m.kernel("reenter").unwrap(), 4, 1, 0, &[]).unwrap();
        s.launch(&m.kernel("drop_buffer").unwrap(), 1, 1, 0, &[]).unwrap();
        s.synchronize().unwrap();
        assert!(held.lock().unwrap().is_none());
        let r = results.lock().unwrap();
        assert_eq!(r.len(), 4 * 5);
        for (i, res) in r.iter().enumerate() {
            assert!(matches!(res, Err(GpuError::IllegalState(_))), "{exec:?} call {i}: {res:?}");
        }
    }
}

#[test]
fn handles_are_send_and_sync() {
    fn both<T: Send + Sync>() {}
    both::<Module>();
    both::<Kernel>();
    both::<gcap::ModuleBuilder>();
    both::<HostBuffer<f32>>();
    both::<gcap::DeviceSlice<'static, u64>>();
    both::<Dim3>();
}
