//! Graphs, their nodes, and executable graphs.

use std::collections::HashMap;
use std::ffi::c_void;
use std::os::raw::{c_int, c_long};
use std::ptr;
use std::sync::Arc;

use crate::context::{Context, Keep};
use crate::error::{check, GpuError, GpuResult};
use crate::memory::{DeviceBuffer, DeviceRepr};
use crate::stream::{Event, Stream};
use crate::sys;

extern "C" {
    fn tmpfile() -> *mut sys::FILE;
    fn fclose(f: *mut sys::FILE) -> c_int;
    fn fseek(f: *mut sys::FILE, offset: c_long, whence: c_int) -> c_int;
    fn ftell(f: *mut sys::FILE) -> c_long;
    fn fread(p: *mut c_void, size: usize, n: usize, f: *mut sys::FILE) -> usize;
}

/// The type of a node (`CUgraphNodeType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeType {
    /// A kernel launch.
    Kernel,
    /// A copy.
    Memcpy,
    /// A fill.
    Memset,
    /// A host function.
    Host,
    /// A child graph.
    Graph,
    /// An empty node (ordering only).
    Empty,
    /// Waits for an event.
    EventWait,
    /// Records an event.
    EventRecord,
    /// Allocates graph memory.
    MemAlloc,
    /// Frees graph memory.
    MemFree,
    /// A conditional node (IF, WHILE, SWITCH).
    Conditional,
}

impl NodeType {
    fn of(raw: sys::gcap_node_type) -> NodeType {
        match raw {
            sys::GCAP_NODE_KERNEL => NodeType::Kernel,
            sys::GCAP_NODE_MEMCPY => NodeType::Memcpy,
            sys::GCAP_NODE_MEMSET => NodeType::Memset,
            sys::GCAP_NODE_HOST => NodeType::Host,
            sys::GCAP_NODE_GRAPH => NodeType::Graph,
            sys::GCAP_NODE_EVENT_WAIT => NodeType::EventWait,
            sys::GCAP_NODE_EVENT_RECORD => NodeType::EventRecord,
            sys::GCAP_NODE_MEM_ALLOC => NodeType::MemAlloc,
            sys::GCAP_NODE_MEM_FREE => NodeType::MemFree,
            sys::GCAP_NODE_CONDITIONAL => NodeType::Conditional,
            _ => NodeType::Empty,
        }
    }
}

/// A node of a graph: a handle the C library checks on every use, so a node of a graph that is
/// gone, or of another graph, is an error ([`GpuError::InvalidHandle`] or `InvalidValue`), never
/// undefined behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    pub(crate) raw: *mut sys::gcap_node,
}

// SAFETY: a node is an address the C library validates before use.
unsafe impl Send for Node {}
// SAFETY: as above.
unsafe impl Sync for Node {}

/// Two nodes with no path between them that touch the same bytes, one of them writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Race {
    /// The earlier-created node.
    pub first: Node,
    /// The later-created node.
    pub second: Node,
    /// The first byte of the overlap.
    pub addr: u64,
    /// The overlap's size.
    pub bytes: usize,
}

/// A graph (`cudaGraph_t`): from a capture or built node by node.
pub struct Graph {
    ctx: Context,
    pub(crate) raw: *mut sys::gcap_graph,
    /// What its nodes use: buffers and host data, kept while the graph (and its executables) live.
    pub(crate) keep: Vec<Keep>,
}

// SAFETY: gcap graph calls take the context's lock; changing a graph needs `&mut Graph`.
unsafe impl Send for Graph {}
// SAFETY: `&Graph` only reads (counts, nodes, DOT, races, instantiate), under the context's lock.
unsafe impl Sync for Graph {}

impl Drop for Graph {
    fn drop(&mut self) {
        unsafe { sys::gcap_graph_destroy(self.raw) };
    }
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Graph({:p}: {} nodes, {} edges)", self.raw, self.node_count(), self.edge_count())
    }
}

fn deps_of(deps: &[Node]) -> Vec<*mut sys::gcap_node> {
    deps.iter().map(|n| n.raw).collect()
}

impl Graph {
    /// An empty graph of `ctx` (`cudaGraphCreate`).
    pub fn new(ctx: &Context) -> GpuResult<Graph> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gcap_graph_create(ctx.raw(), &mut raw) })?;
        Ok(Graph { ctx: ctx.clone(), raw, keep: Vec::new() })
    }

    pub(crate) fn from_raw(ctx: &Context, raw: *mut sys::gcap_graph, keep: Vec<Keep>) -> Graph {
        Graph { ctx: ctx.clone(), raw, keep }
    }

    /// The graph's context.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The number of nodes.
    pub fn node_count(&self) -> usize {
        unsafe { sys::gcap_graph_node_count(self.raw) }
    }

    /// The number of edges.
    pub fn edge_count(&self) -> usize {
        unsafe { sys::gcap_graph_edge_count(self.raw) }
    }

    /// The nodes, in creation order.
    pub fn nodes(&self) -> GpuResult<Vec<Node>> {
        let mut count = 0usize;
        check(unsafe { sys::gcap_graph_get_nodes(self.raw, ptr::null_mut(), &mut count) })?;
        let mut raw = vec![ptr::null_mut(); count];
        check(unsafe { sys::gcap_graph_get_nodes(self.raw, raw.as_mut_ptr(), &mut count) })?;
        Ok(raw.into_iter().take(count).map(|raw| Node { raw }).collect())
    }

    /// The edges, as (from, to) pairs.
    pub fn edges(&self) -> GpuResult<Vec<(Node, Node)>> {
        let mut count = 0usize;
        check(unsafe { sys::gcap_graph_get_edges(self.raw, ptr::null_mut(), ptr::null_mut(), &mut count) })?;
        let (mut from, mut to) = (vec![ptr::null_mut(); count], vec![ptr::null_mut(); count]);
        check(unsafe { sys::gcap_graph_get_edges(self.raw, from.as_mut_ptr(), to.as_mut_ptr(), &mut count) })?;
        Ok(from.into_iter().zip(to).take(count).map(|(f, t)| (Node { raw: f }, Node { raw: t })).collect())
    }

    /// A node's type. [`GpuError::InvalidHandle`] for a node that is gone.
    pub fn node_type(&self, node: Node) -> GpuResult<NodeType> {
        let mut deps = 0usize;
        check(unsafe { sys::gcap_node_get_dependencies(node.raw, ptr::null_mut(), &mut deps) })?; // validates it
        Ok(NodeType::of(unsafe { sys::gcap_node_get_type(node.raw) }))
    }

    /// The graph as Graphviz DOT text (`verbose`: node parameters in the labels).
    pub fn to_dot(&self, verbose: bool) -> GpuResult<String> {
        let flags = if verbose { sys::GCAP_DOT_VERBOSE } else { 0 };
        with_tmpfile(|f| check(unsafe { sys::gcap_graph_write_dot(self.raw, f, flags) }))
    }

    /// Race analysis: pairs of nodes with no path between them touching the same bytes, one writing.
    pub fn find_races(&self) -> GpuResult<Vec<Race>> {
        let mut count = 0usize;
        check(unsafe { sys::gcap_graph_find_races(self.raw, ptr::null_mut(), &mut count) })?;
        let mut raw = vec![unsafe { std::mem::zeroed::<sys::gcap_race>() }; count];
        check(unsafe { sys::gcap_graph_find_races(self.raw, raw.as_mut_ptr(), &mut count) })?;
        Ok(raw
            .into_iter()
            .take(count)
            .map(|r| Race { first: Node { raw: r.first }, second: Node { raw: r.second }, addr: r.addr as u64, bytes: r.bytes })
            .collect())
    }

    /// An independent copy (`cudaGraphClone`). [`GpuError::NotSupported`] for graphs holding
    /// allocation or conditional nodes.
    pub fn try_clone(&self) -> GpuResult<Graph> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gcap_graph_clone(self.raw, &mut raw) })?;
        Ok(Graph { ctx: self.ctx.clone(), raw, keep: self.keep.clone() })
    }

    fn added(&mut self, st: sys::gcap_status, raw: *mut sys::gcap_node, keep: Vec<Keep>) -> GpuResult<Node> {
        check(st)?;
        self.keep.extend(keep);
        Ok(Node { raw })
    }

    /// Adds an empty node after `deps`.
    pub fn add_empty(&mut self, deps: &[Node]) -> GpuResult<Node> {
        let d = deps_of(deps);
        let mut raw = ptr::null_mut();
        let st = unsafe { sys::gcap_graph_add_empty_node(self.raw, d.as_ptr(), d.len(), &mut raw) };
        self.added(st, raw, Vec::new())
    }

    /// Adds a node filling every byte of `dst` with `value`, after `deps`.
    pub fn add_memset<T: DeviceRepr>(&mut self, deps: &[Node], dst: &DeviceBuffer<T>, value: u8) -> GpuResult<Node> {
        let d = deps_of(deps);
        let p = sys::gcap_memset_node_params {
            dst: dst.raw(),
            value: value as u32,
            element_size: 1,
            width: dst.size_bytes(),
            height: 1,
            pitch: 0,
        };
        let mut raw = ptr::null_mut();
        let st = unsafe { sys::gcap_graph_add_memset_node(self.raw, d.as_ptr(), d.len(), &p, &mut raw) };
        self.added(st, raw, vec![dst.keep()])
    }

    /// Adds a node copying all of `src` into `dst` (device to device), after `deps`.
    pub fn add_copy<T: DeviceRepr>(&mut self, deps: &[Node], dst: &DeviceBuffer<T>, src: &DeviceBuffer<T>) -> GpuResult<Node> {
        if dst.len() != src.len() {
            return Err(GpuError::InvalidValue(format!("add_copy: {} elements into a buffer of {}", src.len(), dst.len())));
        }
        let d = deps_of(deps);
        let p = sys::gcap_memcpy_node_params {
            dst: dst.raw(),
            src: src.raw(),
            bytes: dst.size_bytes(),
            kind: sys::GCAP_MEMCPY_DEVICE_TO_DEVICE,
        };
        let mut raw = ptr::null_mut();
        let st = unsafe { sys::gcap_graph_add_memcpy_node(self.raw, d.as_ptr(), d.len(), &p, &mut raw) };
        self.added(st, raw, vec![dst.keep(), src.keep()])
    }

    /// Adds a node running a copy of `child` (`cudaGraphAddChildGraphNode`), after `deps`.
    pub fn add_child(&mut self, deps: &[Node], child: &Graph) -> GpuResult<Node> {
        let d = deps_of(deps);
        let mut raw = ptr::null_mut();
        let st = unsafe { sys::gcap_graph_add_child_graph_node(self.raw, d.as_ptr(), d.len(), child.raw, &mut raw) };
        self.added(st, raw, child.keep.clone())
    }

    /// Adds a node recording `event`, after `deps`.
    pub fn add_event_record(&mut self, deps: &[Node], event: &Event) -> GpuResult<Node> {
        let d = deps_of(deps);
        let mut raw = ptr::null_mut();
        let st = unsafe { sys::gcap_graph_add_event_record_node(self.raw, d.as_ptr(), d.len(), event.raw, &mut raw) };
        self.added(st, raw, Vec::new())
    }

    /// Adds a node waiting for `event`, after `deps`.
    pub fn add_event_wait(&mut self, deps: &[Node], event: &Event) -> GpuResult<Node> {
        let d = deps_of(deps);
        let mut raw = ptr::null_mut();
        let st = unsafe { sys::gcap_graph_add_event_wait_node(self.raw, d.as_ptr(), d.len(), event.raw, &mut raw) };
        self.added(st, raw, Vec::new())
    }

    /// Adds edges `from[i] -> to[i]`.
    pub fn add_dependencies(&mut self, edges: &[(Node, Node)]) -> GpuResult<()> {
        let from: Vec<_> = edges.iter().map(|e| e.0.raw).collect();
        let to: Vec<_> = edges.iter().map(|e| e.1.raw).collect();
        check(unsafe { sys::gcap_graph_add_dependencies(self.raw, from.as_ptr(), to.as_ptr(), edges.len()) })
    }

    /// An executable graph (`cudaGraphInstantiate`); it is independent of the graph afterwards.
    /// [`GpuError::InvalidValue`] naming a race under the simulator's `check_races`, or a bad node.
    pub fn instantiate(&self) -> GpuResult<GraphExec> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gcap_graph_instantiate(self.raw, 0, &mut raw) })?;
        let base = self.keep.clone();
        Ok(GraphExec { ctx: self.ctx.clone(), raw, keep: Arc::new(base.clone()), base, by_node: HashMap::new() })
    }
}

/// Runs `write` on a temporary FILE and returns what it wrote.
fn with_tmpfile(write: impl FnOnce(*mut sys::FILE) -> GpuResult<()>) -> GpuResult<String> {
    let f = unsafe { tmpfile() };
    if f.is_null() {
        return Err(GpuError::OutOfMemory("tmpfile() failed: no temporary file for the DOT text".into()));
    }
    let written = write(f).map(|_| unsafe {
        let len = ftell(f).max(0) as usize;
        fseek(f, 0, 0);
        let mut buf = vec![0u8; len];
        let got = fread(buf.as_mut_ptr().cast(), 1, len, f);
        buf.truncate(got);
        String::from_utf8_lossy(&buf).into_owned()
    });
    unsafe { fclose(f) };
    written
}

/// What went wrong in [`GraphExec::update`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateResult {
    /// The update was applied.
    Success,
    /// The graphs differ in nodes or edges.
    TopologyChanged,
    /// A node's type changed.
    NodeTypeChanged,
    /// A kernel node's kernel changed.
    FunctionChanged,
    /// A node's parameters changed in a way that cannot be updated.
    ParametersChanged,
    /// Something else the update does not support.
    NotSupported,
    /// Another refusal (`CUgraphExecUpdateResult` value).
    Other(u32),
}

/// An executable graph (`cudaGraphExec_t`). Launches of one executable never overlap.
pub struct GraphExec {
    ctx: Context,
    pub(crate) raw: *mut sys::gcap_exec,
    /// What its launches use: `base` and every `by_node` list, in one list a launch holds on to.
    keep: Arc<Vec<Keep>>,
    /// What the graph's nodes used at instantiation (and updates added).
    base: Vec<Keep>,
    /// What each node's latest setter gave it (the previous one stays with launches already issued).
    by_node: HashMap<usize, Vec<Keep>>,
}

// SAFETY: gcap executable calls take the context's lock, and launches of one executable are
// serialized by the library.
unsafe impl Send for GraphExec {}
// SAFETY: as above.
unsafe impl Sync for GraphExec {}

impl Drop for GraphExec {
    fn drop(&mut self) {
        unsafe { sys::gcap_exec_destroy(self.raw) }; // waits for its launches: `keep` may go after
    }
}

impl std::fmt::Debug for GraphExec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GraphExec({:p}: {} nodes per launch)", self.raw, self.node_count())
    }
}

impl GraphExec {
    /// Launches the executable on `stream` (`cudaGraphLaunch`).
    pub fn launch(&self, stream: &Stream) -> GpuResult<()> {
        let _issuing = self.ctx.issuing(); // the keeps go where the launch went
        check(unsafe { sys::gcap_exec_launch(self.raw, stream.raw()) })?;
        stream.keep([self.keep.clone() as Keep])
    }

    /// Uploads the executable ahead of its first launch on `stream` (`cudaGraphUpload`).
    pub fn upload(&self, stream: &Stream) -> GpuResult<()> {
        check(unsafe { sys::gcap_exec_upload(self.raw, stream.raw()) })
    }

    /// How many nodes a launch runs (child graphs counted with their contents).
    pub fn node_count(&self) -> usize {
        unsafe { sys::gcap_exec_node_count(self.raw) }
    }

    /// The executable's context.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Takes `graph`'s parameters (`cudaGraphExecUpdate`): on a refusal, the result and the node
    /// of `graph` it names come with [`GpuError::GraphExecUpdateFailure`].
    pub fn update(&mut self, graph: &Graph) -> Result<(), (GpuError, UpdateResult, Option<Node>)> {
        let mut info = unsafe { std::mem::zeroed::<sys::gcap_exec_update_info>() };
        let st = unsafe { sys::gcap_exec_update(self.raw, graph.raw, &mut info) };
        if let Err(e) = check(st) {
            let result = match info.result {
                sys::GCAP_EXEC_UPDATE_SUCCESS => UpdateResult::Success,
                sys::GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED => UpdateResult::TopologyChanged,
                sys::GCAP_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED => UpdateResult::NodeTypeChanged,
                sys::GCAP_EXEC_UPDATE_ERROR_FUNCTION_CHANGED => UpdateResult::FunctionChanged,
                sys::GCAP_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED => UpdateResult::ParametersChanged,
                sys::GCAP_EXEC_UPDATE_ERROR_NOT_SUPPORTED => UpdateResult::NotSupported,
                other => UpdateResult::Other(other),
            };
            let node = (!info.error_node.is_null()).then_some(Node { raw: info.error_node });
            return Err((e, result, node));
        }
        // The executable now uses what graph's nodes use (and keeps what it used before).
        self.base.extend(graph.keep.iter().cloned());
        self.rebuild_keep();
        Ok(())
    }
}

impl GraphExec {
    /// Changes a fill node of this executable only (`cudaGraphExecMemsetNodeSetParams`): it now fills
    /// every byte of `dst` with `value`. `node` is the node of the graph the executable was made from.
    pub fn set_memset<T: DeviceRepr>(&mut self, node: Node, dst: &DeviceBuffer<T>, value: u8) -> GpuResult<()> {
        let p = sys::gcap_memset_node_params {
            dst: dst.raw(),
            value: value as u32,
            element_size: 1,
            width: dst.size_bytes(),
            height: 1,
            pitch: 0,
        };
        check(unsafe { sys::gcap_exec_memset_node_set_params(self.raw, node.raw, &p) })?;
        self.keep_for(node, vec![dst.keep()]);
        Ok(())
    }

    /// Changes a copy node of this executable only (`cudaGraphExecMemcpyNodeSetParams`): it now copies
    /// all of `src` into `dst`, device to device.
    pub fn set_copy<T: DeviceRepr>(&mut self, node: Node, dst: &DeviceBuffer<T>, src: &DeviceBuffer<T>) -> GpuResult<()> {
        if dst.len() != src.len() {
            return Err(GpuError::InvalidValue(format!("set_copy: {} elements into a buffer of {}", src.len(), dst.len())));
        }
        let p = sys::gcap_memcpy_node_params {
            dst: dst.raw(),
            src: src.raw(),
            bytes: dst.size_bytes(),
            kind: sys::GCAP_MEMCPY_DEVICE_TO_DEVICE,
        };
        check(unsafe { sys::gcap_exec_memcpy_node_set_params(self.raw, node.raw, &p) })?;
        self.keep_for(node, vec![dst.keep(), src.keep()]);
        Ok(())
    }

    /// Disables a node of this executable (it runs as an empty node, keeping its edges) or enables it
    /// again (`cudaGraphNodeSetEnabled`).
    pub fn set_enabled(&mut self, node: Node, enabled: bool) -> GpuResult<()> {
        check(unsafe { sys::gcap_exec_node_set_enabled(self.raw, node.raw, enabled) })
    }

    /// Whether a node of this executable is enabled.
    pub fn is_enabled(&self, node: Node) -> GpuResult<bool> {
        let mut enabled = false;
        check(unsafe { sys::gcap_exec_node_get_enabled(self.raw, node.raw, &mut enabled) })?;
        Ok(enabled)
    }

    /// Node `node` of the executable now uses `items` (what a setter gave it) instead of what its
    /// previous setter gave it; launches already issued hold on to the list they were issued with.
    fn keep_for(&mut self, node: Node, items: Vec<Keep>) {
        self.by_node.insert(node.raw as usize, items);
        self.rebuild_keep();
    }

    fn rebuild_keep(&mut self) {
        let mut keep = self.base.clone();
        keep.extend(self.by_node.values().flatten().cloned());
        self.keep = Arc::new(keep);
    }

    /// Changes a kernel node of this executable only (`cudaGraphExecKernelNodeSetParams`): it now
    /// launches `kernel` (of the same context) with `grid`, `block`, `shared_mem` and `args`,
    /// checked and kept as by [`Stream::launch`](crate::Stream::launch). `node` is the node of the
    /// graph the executable was made from ([`CapturedGraph::nodes`](crate::CapturedGraph::nodes) for
    /// a capture). Launches already issued run with the old parameters. [`GpuError::InvalidValue`]
    /// for bad arguments or a node that is not a kernel node; [`GpuError::InvalidHandle`] for a
    /// kernel of another context.
    pub fn set_kernel(
        &mut self,
        node: Node,
        kernel: &crate::Kernel,
        grid: impl Into<crate::Dim3>,
        block: impl Into<crate::Dim3>,
        shared_mem: u32,
        args: &[&dyn crate::KernelArg],
    ) -> GpuResult<()> {
        let ctx = self.ctx.clone();
        let l = crate::module::prepare_launch("GraphExec::set_kernel", &ctx, kernel, grid.into(), block.into(), shared_mem, args, false)?;
        self.set_prepared_kernel(node, kernel, l)
    }

    /// [`set_kernel`](Self::set_kernel) for raw CPU kernels and kernels of unknown parameter count.
    ///
    /// # Safety
    /// As for [`Stream::launch_unchecked`](crate::Stream::launch_unchecked), for every later launch
    /// of the executable.
    pub unsafe fn set_kernel_unchecked(
        &mut self,
        node: Node,
        kernel: &crate::Kernel,
        grid: impl Into<crate::Dim3>,
        block: impl Into<crate::Dim3>,
        shared_mem: u32,
        args: &[&dyn crate::KernelArg],
    ) -> GpuResult<()> {
        let ctx = self.ctx.clone();
        let what = "GraphExec::set_kernel_unchecked";
        let l = crate::module::prepare_launch(what, &ctx, kernel, grid.into(), block.into(), shared_mem, args, true)?;
        self.set_prepared_kernel(node, kernel, l)
    }

    fn set_prepared_kernel(&mut self, node: Node, kernel: &crate::Kernel, mut l: crate::module::PreparedLaunch) -> GpuResult<()> {
        let p = sys::gcap_kernel_node_params {
            kernel: kernel.raw,
            grid: l.grid,
            block: l.block,
            shared_mem_bytes: l.shared_mem,
            args: l.args(),
        };
        check(unsafe { sys::gcap_exec_kernel_node_set_params(self.raw, node.raw, &p) })?;
        let keeps = std::mem::take(&mut l.keeps);
        self.keep_for(node, keeps);
        Ok(())
    }

    /// Changes a host node of this executable only (`cudaGraphExecHostNodeSetParams`): later launches
    /// call `f` instead. The executable keeps `f` (and drops the function it replaces once the
    /// launches already issued are synchronized). As for [`Stream::host_fn`](crate::Stream::host_fn),
    /// `f` must not use the device, and a panic in it aborts the process. [`GpuError::InvalidValue`]
    /// for a node that is not a host node.
    pub fn set_host<F: Fn() + Send + Sync + 'static>(&mut self, node: Node, f: F) -> GpuResult<()> {
        let (func, user_data, keep) = crate::host::host_fn(f);
        let p = sys::gcap_host_node_params { fn_: func, user_data };
        check(unsafe { sys::gcap_exec_host_node_set_params(self.raw, node.raw, &p) })?;
        self.keep_for(node, vec![keep]);
        Ok(())
    }

}

/// What a kernel node launches ([`Graph::kernel_node_info`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelNodeInfo {
    /// The kernel's name (empty when its module is gone).
    pub name: String,
    /// The grid, in blocks.
    pub grid: crate::Dim3,
    /// The block, in threads.
    pub block: crate::Dim3,
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem: u32,
}

/// Kernel, host and page-locked copy nodes (see [`crate::Module`] and [`crate::HostBuffer`]).
impl Graph {
    /// Adds a node launching `kernel` after `deps` (`cudaGraphAddKernelNode`); arguments are checked
    /// and kept as by [`Stream::launch`](crate::Stream::launch), and the argument values are copied
    /// into the node. Raw CPU kernels and kernels of unknown parameter count need
    /// [`add_kernel_unchecked`](Self::add_kernel_unchecked).
    pub fn add_kernel(
        &mut self,
        deps: &[Node],
        kernel: &crate::Kernel,
        grid: impl Into<crate::Dim3>,
        block: impl Into<crate::Dim3>,
        shared_mem: u32,
        args: &[&dyn crate::KernelArg],
    ) -> GpuResult<Node> {
        let ctx = self.ctx.clone();
        let l = crate::module::prepare_launch(
            "Graph::add_kernel",
            &ctx,
            kernel,
            grid.into(),
            block.into(),
            shared_mem,
            args,
            false,
        )?;
        self.add_prepared_kernel(deps, kernel, l)
    }

    /// [`add_kernel`](Self::add_kernel) for raw CPU kernels and kernels of unknown parameter count.
    ///
    /// # Safety
    /// As for [`Stream::launch_unchecked`](crate::Stream::launch_unchecked), for every launch of
    /// every executable made from this graph (or from graphs it is copied into).
    pub unsafe fn add_kernel_unchecked(
        &mut self,
        deps: &[Node],
        kernel: &crate::Kernel,
        grid: impl Into<crate::Dim3>,
        block: impl Into<crate::Dim3>,
        shared_mem: u32,
        args: &[&dyn crate::KernelArg],
    ) -> GpuResult<Node> {
        let ctx = self.ctx.clone();
        let l = crate::module::prepare_launch(
            "Graph::add_kernel_unchecked",
            &ctx,
            kernel,
            grid.into(),
            block.into(),
            shared_mem,
            args,
            true,
        )?;
        self.add_prepared_kernel(deps, kernel, l)
    }

    fn add_prepared_kernel(
        &mut self,
        deps: &[Node],
        kernel: &crate::Kernel,
        mut l: crate::module::PreparedLaunch,
    ) -> GpuResult<Node> {
        let d = deps_of(deps);
        let p = sys::gcap_kernel_node_params {
            kernel: kernel.raw,
            grid: l.grid,
            block: l.block,
            shared_mem_bytes: l.shared_mem,
            args: l.args(),
        };
        let mut raw = ptr::null_mut();
        let st = unsafe { sys::gcap_graph_add_kernel_node(self.raw, d.as_ptr(), d.len(), &p, &mut raw) };
        let keep = std::mem::take(&mut l.keeps);
        self.added(st, raw, keep)
    }

    /// Adds a host node calling `f` after `deps`, on every launch of every executable made from the
    /// graph (`cudaGraphAddHostNode`). The graph and its executables keep `f`. As for
    /// [`Stream::host_fn`](crate::Stream::host_fn), `f` must not use the device, and a panic in it
    /// aborts the process.
    pub fn add_host<F: Fn() + Send + Sync + 'static>(&mut self, deps: &[Node], f: F) -> GpuResult<Node> {
        let (func, user_data, keep) = crate::host::host_fn(f);
        let d = deps_of(deps);
        let p = sys::gcap_host_node_params { fn_: func, user_data };
        let mut raw = ptr::null_mut();
        let st = unsafe { sys::gcap_graph_add_host_node(self.raw, d.as_ptr(), d.len(), &p, &mut raw) };
        self.added(st, raw, vec![keep])
    }

    /// Adds a node copying all of the page-locked `src` into `dst` (host to device) after `deps`:
    /// each launch copies what `src` holds when the node runs.
    pub fn add_upload<T: DeviceRepr>(
        &mut self,
        deps: &[Node],
        dst: &DeviceBuffer<T>,
        src: &crate::HostBuffer<T>,
    ) -> GpuResult<Node> {
        if dst.len() != src.len() {
            return Err(GpuError::InvalidValue(format!("add_upload: {} elements into a buffer of {}", src.len(), dst.len())));
        }
        let p = sys::gcap_memcpy_node_params {
            dst: dst.raw(),
            src: src.raw(),
            bytes: dst.size_bytes(),
            kind: sys::GCAP_MEMCPY_HOST_TO_DEVICE,
        };
        let d = deps_of(deps);
        let mut raw = ptr::null_mut();
        let st = unsafe { sys::gcap_graph_add_memcpy_node(self.raw, d.as_ptr(), d.len(), &p, &mut raw) };
        self.added(st, raw, vec![dst.keep(), src.keep()])
    }

    /// Adds a node copying all of `src` into the page-locked `dst` (device to host) after `deps`.
    pub fn add_download<T: DeviceRepr>(
        &mut self,
        deps: &[Node],
        src: &DeviceBuffer<T>,
        dst: &crate::HostBuffer<T>,
    ) -> GpuResult<Node> {
        if dst.len() != src.len() {
            return Err(GpuError::InvalidValue(format!(
                "add_download: {} elements into a host buffer of {}",
                src.len(),
                dst.len()
            )));
        }
        let p = sys::gcap_memcpy_node_params {
            dst: dst.raw(),
            src: src.raw(),
            bytes: src.size_bytes(),
            kind: sys::GCAP_MEMCPY_DEVICE_TO_HOST,
        };
        let d = deps_of(deps);
        let mut raw = ptr::null_mut();
        let st = unsafe { sys::gcap_graph_add_memcpy_node(self.raw, d.as_ptr(), d.len(), &p, &mut raw) };
        self.added(st, raw, vec![src.keep(), dst.keep()])
    }

    /// What kernel node `node` launches. [`GpuError::InvalidValue`] for another type of node,
    /// [`GpuError::InvalidHandle`] for a node that is gone.
    pub fn kernel_node_info(&self, node: Node) -> GpuResult<KernelNodeInfo> {
        let mut p = unsafe { std::mem::zeroed::<sys::gcap_kernel_node_params>() };
        check(unsafe { sys::gcap_node_get_kernel_params(node.raw, &mut p) })?;
        let name = unsafe { sys::gcap_kernel_name(p.kernel) };
        let name = if name.is_null() {
            String::new()
        } else {
            unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy().into_owned()
        };
        Ok(KernelNodeInfo {
            name,
            grid: crate::Dim3::new(p.grid.x, p.grid.y, p.grid.z),
            block: crate::Dim3::new(p.block.x, p.block.y, p.block.z),
            shared_mem: p.shared_mem_bytes,
        })
    }

    /// Changes kernel node `node` of this graph (`cudaGraphKernelNodeSetParams`): it now launches
    /// `kernel` with `grid`, `block`, `shared_mem` and `args`, checked and kept as by
    /// [`add_kernel`](Self::add_kernel). Executables already made from the graph are not changed
    /// ([`GraphExec::set_kernel`] changes one). [`GpuError::InvalidValue`] for bad arguments or a
    /// node that is not a kernel node, [`GpuError::InvalidHandle`] for a node that is gone or a
    /// kernel of another context.
    pub fn set_kernel(
        &mut self,
        node: Node,
        kernel: &crate::Kernel,
        grid: impl Into<crate::Dim3>,
        block: impl Into<crate::Dim3>,
        shared_mem: u32,
        args: &[&dyn crate::KernelArg],
    ) -> GpuResult<()> {
        let ctx = self.ctx.clone();
        let mut l = crate::module::prepare_launch("Graph::set_kernel", &ctx, kernel, grid.into(), block.into(), shared_mem, args, false)?;
        let p = sys::gcap_kernel_node_params {
            kernel: kernel.raw,
            grid: l.grid,
            block: l.block,
            shared_mem_bytes: l.shared_mem,
            args: l.args(),
        };
        check(unsafe { sys::gcap_node_set_kernel_params(node.raw, &p) })?;
        self.keep.append(&mut l.keeps);
        Ok(())
    }

    /// Changes host node `node` of this graph (`cudaGraphHostNodeSetParams`): it now calls `f`,
    /// which the graph keeps. Executables already made from it are not changed
    /// ([`GraphExec::set_host`] changes one). [`GpuError::InvalidValue`] for a node that is not a
    /// host node.
    pub fn set_host<F: Fn() + Send + Sync + 'static>(&mut self, node: Node, f: F) -> GpuResult<()> {
        let (func, user_data, keep) = crate::host::host_fn(f);
        let p = sys::gcap_host_node_params { fn_: func, user_data };
        check(unsafe { sys::gcap_node_set_host_params(node.raw, &p) })?;
        self.keep.push(keep);
        Ok(())
    }

    /// The nodes `node` depends on, in edge creation order.
    pub fn dependencies(&self, node: Node) -> GpuResult<Vec<Node>> {
        let mut count = 0usize;
        check(unsafe { sys::gcap_node_get_dependencies(node.raw, ptr::null_mut(), &mut count) })?;
        let mut raw = vec![ptr::null_mut(); count];
        check(unsafe { sys::gcap_node_get_dependencies(node.raw, raw.as_mut_ptr(), &mut count) })?;
        Ok(raw.into_iter().take(count).map(|raw| Node { raw }).collect())
    }
}
