//! gcap quickstart, in Rust: build a small graph by hand, look at it, replay it 1000 times.
//!
//! ```text
//! upload x (host -> device) -> saxpy (y = a*x + y) -> scale (y = s*y) -> download y -> check on the host
//! ```
//!
//! The same program as `examples/quickstart.c`. On the simulator the kernels are Rust closures;
//! on CUDA they are the PTX of `examples/kernels/quickstart.cu` (`quickstart.ptx`, a copy of
//! `examples/kernels/quickstart_ptx.h`). Runs on the simulator unless `GCAP_BACKEND` is set (then
//! the backend it names is used).
//!
//! Usage: `cargo run --example quickstart [file.dot]` (default: `quickstart.dot` in the current
//! directory). Exit status: 0 when every number matches the CPU reference, 1 otherwise, 77 when
//! the backend `GCAP_BACKEND` names cannot start here.

use std::collections::HashMap;
use std::process::{Command, ExitCode};
use std::sync::{Arc, Mutex};

use gcap::{
    Backend, Context, DeviceBuffer, GpuError, GpuResult, Graph, HostBuffer, Module, Node, NodeType, Stream,
};

const N: usize = 1024; // elements
const BLOCK: u32 = 256; // threads per block
const REPLAYS: usize = 1000;
const A: f32 = 0.5; // saxpy factor
const S: f32 = 0.99; // scale factor

/// The kernels for the CUDA backend.
const QUICKSTART_PTX: &str = include_str!("quickstart.ptx");

fn close_enough(got: f32, want: f32) -> bool {
    (got - want).abs() <= 1e-5 * want.abs().max(1.0)
}

fn input() -> Vec<f32> {
    (0..N).map(|i| (i % 16) as f32 * 0.25).collect()
}

/// What the host node finds on each launch.
#[derive(Default)]
struct Checker {
    reference: Vec<f32>, // the CPU's own y
    launches: usize,
    mismatches: usize,
    checksum: f64, // the sum of every value checked
}

/// The module: CPU closures with the PTX's signatures on the simulator, the PTX on CUDA.
fn kernels(ctx: &Context) -> GpuResult<Module> {
    Module::builder(ctx)
        .ptx(QUICKSTART_PTX)
        // saxpy(float a, const float *x, float *y, uint32_t n): y[i] = a * x[i] + y[i]
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
        // scale(float *y, float s, uint32_t n): y[i] = s * y[i]
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
}

/// One line per node: index, type, what it does, which nodes it waits for.
fn print_graph(g: &Graph, what: &HashMap<Node, String>) -> GpuResult<()> {
    let nodes = g.nodes()?;
    println!("graph: {} nodes, {} edges", g.node_count(), g.edge_count());
    for (i, &n) in nodes.iter().enumerate() {
        let kind = match g.node_type(n)? {
            NodeType::Kernel => "kernel",
            NodeType::Memcpy => "memcpy",
            NodeType::Host => "host",
            other => {
                println!("  [{i}] {other:?}");
                continue;
            }
        };
        let description = match g.node_type(n)? {
            NodeType::Kernel => {
                let k = g.kernel_node_info(n)?;
                format!("{:<6} grid {} x block {}", k.name, k.grid.x, k.block.x)
            }
            _ => what.get(&n).cloned().unwrap_or_default(),
        };
        let after: Vec<String> =
            g.dependencies(n)?.iter().map(|d| nodes.iter().position(|m| m == d).map_or("?".into(), |p| p.to_string())).collect();
        let after = if after.is_empty() { "-".to_string() } else { after.join(", ") };
        println!("  [{i}] {kind:<7} {description:<28} after: {after}");
    }
    Ok(())
}

/// Writes the DOT file and, when Graphviz is installed, renders it next to it as SVG.
fn write_pictures(g: &Graph, dot_path: &str) -> GpuResult<()> {
    std::fs::write(dot_path, g.to_dot(true)?)
        .map_err(|e| GpuError::InvalidValue(format!("cannot write {dot_path}: {e}")))?;
    println!("wrote {dot_path}");
    let svg = format!("{}.svg", dot_path.strip_suffix(".dot").unwrap_or(dot_path));
    match Command::new("dot").args(["-Tsvg", dot_path, "-o", &svg]).status() {
        Ok(s) if s.success() => println!("rendered {svg} with Graphviz"),
        Ok(_) => println!("Graphviz failed to render {svg} (the .dot file is still there)"),
        Err(_) => println!("Graphviz 'dot' is not on PATH: no {svg} (install graphviz to get a picture)"),
    }
    Ok(())
}

/// How a run ended (errors aside).
enum Outcome {
    Passed,
    Failed,
    /// The backend GCAP_BACKEND names cannot start here.
    Skipped(GpuError),
}

fn run(dot_path: &str) -> GpuResult<Outcome> {
    // 1. A context: the simulator, unless GCAP_BACKEND asks for another backend.
    let backend = match std::env::var("GCAP_BACKEND") {
        Ok(v) if !v.is_empty() => Backend::Auto,
        _ => Backend::Sim,
    };
    let ctx = match Context::new(backend) {
        Err(e @ (GpuError::NotSupported(_) | GpuError::NotInitialized(_))) => return Ok(Outcome::Skipped(e)),
        other => other?,
    };
    let on_sim = ctx.backend() == Backend::Sim;
    println!("gcap quickstart on the {} backend", if on_sim { "sim" } else { "cuda" });
    println!("pipeline: upload x -> saxpy (y = a*x + y) -> scale (y = s*y) -> download y -> check on the CPU");

    // 2. A module with two kernels.
    let module = kernels(&ctx)?;
    let (saxpy, scale) = (module.kernel("saxpy")?, module.kernel("scale")?);

    // 3. Memory: page-locked host buffers and device buffers; x = 0, 0.25, ..., 3.75 repeating, y = 0.
    let hx = HostBuffer::from_slice(&ctx, &input())?;
    let hy = Arc::new(HostBuffer::<f32>::new(&ctx, N)?);
    let dx = DeviceBuffer::<f32>::new(&ctx, N)?;
    let dy = DeviceBuffer::<f32>::zeroed(&ctx, N)?;

    // 4. The graph, node by node; each node lists the nodes it depends on.
    let mut graph = Graph::new(&ctx)?;
    let mut what = HashMap::new();
    let upload = graph.add_upload(&[], &dx, &hx)?;
    what.insert(upload, format!("host -> device, {} bytes", hx.size_bytes()));
    let grid = (N as u32 + BLOCK - 1) / BLOCK;
    let n = N as u32;
    let k_saxpy = graph.add_kernel(&[upload], &saxpy, grid, BLOCK, 0, &[&A, &dx, &dy, &n])?;
    let k_scale = graph.add_kernel(&[k_saxpy], &scale, grid, BLOCK, 0, &[&dy, &S, &n])?;
    let download = graph.add_download(&[k_scale], &dy, &hy)?;
    what.insert(download, format!("device -> host, {} bytes", hy.size_bytes()));

    // The host node compares each download with a reference advanced on the CPU.
    let checker = Arc::new(Mutex::new(Checker { reference: vec![0.0; N], ..Default::default() }));
    let (c, y, x) = (checker.clone(), hy.clone(), input());
    let check = graph.add_host(&[download], move || {
        let mut c = c.lock().unwrap();
        let got = y.to_vec(); // the download node ran before this one
        for i in 0..N {
            c.reference[i] = S * (A * x[i] + c.reference[i]);
            if !close_enough(got[i], c.reference[i]) {
                c.mismatches += 1;
            }
            c.checksum += got[i] as f64;
        }
        c.launches += 1;
    })?;
    what.insert(check, "check (Rust closure)".to_string());

    // 5. Look at it: a listing here, a picture in the DOT file.
    println!();
    print_graph(&graph, &what)?;
    write_pictures(&graph, dot_path)?;

    // 6. Instantiate once, replay many times. The executable is a snapshot: the graph can go now,
    //    and it keeps the buffers, kernels and host function it uses.
    let exec = graph.instantiate()?;
    drop(graph);
    let stream = Stream::new(&ctx)?;
    println!("\ninstantiated: {} nodes run per launch", exec.node_count());
    println!("replaying {REPLAYS} times: y = {S:.2} * ({A:.1} * x + y) each time");
    for _ in 0..REPLAYS {
        exec.launch(&stream)?;
    }
    stream.synchronize()?;

    // 7. Check: the host node compared every launch; now recompute the end result from scratch.
    let mut want = vec![0f32; N];
    let x = input();
    for _ in 0..REPLAYS {
        for i in 0..N {
            want[i] = S * (A * x[i] + want[i]);
        }
    }
    let y = hy.to_vec();
    let final_bad = (0..N).filter(|&i| !close_enough(y[i], want[i])).count();
    let c = checker.lock().unwrap();
    println!(
        "host node ran {} times, {} mismatches; final y: {final_bad} mismatches (y[15] = {:.4}, expected {:.4})",
        c.launches, c.mismatches, y[15], want[15]
    );
    println!("checksum of all values checked: {:.1}", c.checksum);
    let mut ok = c.launches == REPLAYS && c.mismatches == 0 && final_bad == 0;
    if !ok {
        eprintln!("quickstart: results differ from the CPU reference");
    }

    // 8. What the simulator counted.
    if on_sim {
        let st = ctx.sim_stats()?;
        println!("\nsimulator counters:");
        println!("  graph launches   {}", st.graph_launches);
        println!("  nodes executed   {}", st.nodes_executed);
        println!("  kernels executed {} (stubs: {})", st.kernels_executed, st.kernels_stubbed);
        println!("  bytes copied     {}", st.bytes_copied);
        println!("  bytes set        {}", st.bytes_set);
        println!("  host calls       {}", st.host_calls);
        if st.graph_launches != REPLAYS as u64 || st.nodes_executed != 5 * REPLAYS as u64 {
            eprintln!("quickstart: unexpected simulator counters");
            ok = false;
        }
    }
    Ok(if ok { Outcome::Passed } else { Outcome::Failed })
}

fn main() -> ExitCode {
    let dot_path = std::env::args().nth(1).unwrap_or_else(|| "quickstart.dot".to_string());
    match run(&dot_path) {
        Ok(Outcome::Passed) => {
            println!(
                "\nOK: built once, instantiated once, replayed {REPLAYS} times; every result matches the CPU reference"
            );
            ExitCode::SUCCESS
        }
        Ok(Outcome::Failed) => {
            eprintln!("quickstart: FAILED");
            ExitCode::from(1)
        }
        Ok(Outcome::Skipped(e)) => {
            eprintln!("quickstart: skipped: {e}");
            ExitCode::from(77) // the backend GCAP_BACKEND names cannot start here (Meson's "skipped")
        }
        Err(e) => {
            eprintln!("quickstart: {e}");
            eprintln!("quickstart: FAILED");
            ExitCode::from(1)
        }
    }
}
