"""Graphs, nodes and executables: built by capture or by hand, inspected, instantiated, updated."""
import ctypes
import os
import tempfile
from ctypes import byref, c_size_t, c_uint64, c_void_p

from . import _checked, _lib
from ._lib import lib
from ._kernels import Kernel
from ._objects import (Buffer, Event, ExecUpdateFailure, Handle, InvalidValue, Stream, UserObject, _pointer_of, check,
                       copy_operands, dim3_of, error_of, fill_range, handle_of, host_callback, kind_of)

NODE_TYPES = {0: "kernel", 1: "memcpy", 2: "memset", 3: "host", 4: "graph", 5: "empty", 6: "event_wait",
              7: "event_record", 10: "mem_alloc", 11: "mem_free", 13: "conditional"}
_CONDITIONAL_TYPES = {"if": 0, "while": 1, "switch": 2}
_UPDATE_RESULTS = {0: "SUCCESS", 1: "ERROR", 2: "TOPOLOGY_CHANGED", 3: "NODE_TYPE_CHANGED", 4: "FUNCTION_CHANGED",
                   5: "PARAMETERS_CHANGED", 6: "NOT_SUPPORTED", 7: "UNSUPPORTED_FUNCTION_CHANGE",
                   8: "ATTRIBUTES_CHANGED"}


def _free_graph(h):
    lib.gcap_graph_destroy(h)


def _node_array(nodes):
    nodes = list(nodes or ())
    handles = [handle_of(n, Node, "deps[%d]" % i) for i, n in enumerate(nodes)]
    return (c_void_p * max(1, len(nodes)))(*handles), len(nodes)


def _enumerate(fn, *args):
    count = c_size_t(0)
    check(fn(*args, None, byref(count)))
    arr = (c_void_p * max(1, count.value))()
    check(fn(*args, arr, byref(count)))
    return [arr[i] for i in range(count.value)]


class Graph(Handle):
    """A graph of a context. Nodes come from capture or from the add_* methods; `nodes`, `edges`,
    `to_dot()`, `find_races()`, `instantiate()`. In a notebook it displays as its picture."""

    _destroy = staticmethod(_free_graph)

    def __init__(self, ctx, h, owned=True):
        super().__init__(ctx, h)
        self._owned = owned
        self._host_fns = []

    @classmethod
    def _create(cls, ctx):
        h = c_void_p()
        check(lib.gcap_graph_create(ctx._handle(), byref(h)))
        return cls(ctx, h.value)

    @classmethod
    def _load(cls, ctx, path):
        f = _lib.libc.fopen(os.fsencode(path), b"r")
        if not f:
            raise InvalidValue("cannot read %r" % (path,), "GCAP_ERROR_INVALID_VALUE", 1)
        h = c_void_p()
        st = lib.gcap_graph_load(ctx._handle(), f, byref(h))
        _lib.libc.fclose(f)
        check(st)
        return cls(ctx, h.value)

    def close(self):
        """Destroys the graph now (cudaGraphDestroy) unless it belongs to a node (a body or child); executables
        made from it stay."""
        if self._owned:
            super().close()
        self._h = None

    def __repr__(self):
        if self._h is None or self._ctx._h is None:
            return self._repr()
        nodes = self.nodes
        counts = {}
        for n in nodes:
            counts[n.type] = counts.get(n.type, 0) + 1
        kinds = ", ".join("%d %s" % (c, t) for t, c in counts.items())
        edges = len(self.edges)
        return self._repr("%d node%s%s, %d edge%s" % (len(nodes), "" if len(nodes) == 1 else "s",
                                                      " (%s)" % kinds if kinds else "", edges, "" if edges == 1 else "s"))

    # -------------------------------------------------------------- inspection

    def _node(self, h):
        return Node(self, h)

    @property
    def nodes(self):
        """The nodes in creation order."""
        return [self._node(h) for h in _enumerate(lib.gcap_graph_get_nodes, self._handle())]

    @property
    def edges(self):
        """(from, to) pairs in creation order."""
        count = c_size_t(0)
        check(lib.gcap_graph_get_edges(self._handle(), None, None, byref(count)))
        a, b = (c_void_p * max(1, count.value))(), (c_void_p * max(1, count.value))()
        check(lib.gcap_graph_get_edges(self._h, a, b, byref(count)))
        return [(self._node(a[i]), self._node(b[i])) for i in range(count.value)]

    def to_dot(self, verbose=False):
        """The graph in Graphviz's DOT language."""
        return _via_file(lambda f: lib.gcap_graph_write_dot(self._handle(), f, 1 if verbose else 0))

    def save(self, path):
        """Saves the graph as gcap's versioned JSON."""
        f = _lib.libc.fopen(os.fsencode(path), b"w")
        if not f:
            raise InvalidValue("cannot write %r" % (path,), "GCAP_ERROR_INVALID_VALUE", 1)
        st = lib.gcap_graph_save(self._handle(), f)
        _lib.libc.fclose(f)
        check(st)

    def find_races(self):
        """Pairs of nodes with no path between them touching the same bytes, one writing: a list of Race."""
        count = c_size_t(0)
        check(lib.gcap_graph_find_races(self._handle(), None, byref(count)))
        arr = (_lib.race * max(1, count.value))()
        check(lib.gcap_graph_find_races(self._h, arr, byref(count)))
        return [Race(self._node(r.first), self._node(r.second), r.addr, r.bytes) for r in arr[:count.value]]

    def clone(self):
        """An independent copy of the graph, node for node (cudaGraphClone). Raises NotSupported for graphs holding
        allocation or conditional nodes."""
        h = c_void_p()
        check(lib.gcap_graph_clone(self._handle(), byref(h)))
        return Graph(self._ctx, h.value)

    def instantiate(self, auto_free=False, use_node_priority=False):
        """An Exec of the graph (cudaGraphInstantiate): `auto_free` frees allocations left live by the previous
        launch, `use_node_priority` honours kernel priorities. Raises InvalidValue naming a race (check_races)
        or a bad node, NotSupported for a second executable of a graph holding allocations or conditional
        handles."""
        h = c_void_p()
        flags = (1 if _checked.flag(auto_free, "Graph.instantiate: auto_free") else 0) | \
            (8 if _checked.flag(use_node_priority, "Graph.instantiate: use_node_priority") else 0)
        check(lib.gcap_graph_instantiate(self._handle(), flags, byref(h)))
        return Exec(self._ctx, h.value, self)

    # -------------------------------------------------------------- building

    def _added(self, st, h):
        check(st)
        return self._node(h.value)

    def add_empty(self, deps=()):
        """Adds an empty node after `deps` (a list of Nodes): a Node."""
        arr, n = _node_array(deps)
        h = c_void_p()
        return self._added(lib.gcap_graph_add_empty_node(self._handle(), arr, n, byref(h)), h)

    def add_memset(self, buf, value, deps=(), offset=0, nbytes=None, element_size=1):
        """A fill of nbytes (default: to the end) of buf from offset with `value` in `element_size`-byte elements."""
        p = _memset_params(buf, value, offset, nbytes, element_size, "Graph.add_memset")
        arr, n = _node_array(deps)
        h = c_void_p()
        return self._added(lib.gcap_graph_add_memset_node(self._handle(), arr, n, byref(p), byref(h)), h)

    def add_memcpy(self, dst, src, nbytes=None, kind="default", deps=()):
        """Adds a copy node of `nbytes` (default: the smaller operand) from `src` to `dst` (Buffers, arrays or
        addresses) after `deps`: a Node. Raises InvalidValue for a copy outside its memory."""
        p, keep = _memcpy_params(dst, src, nbytes, kind, "Graph.add_memcpy")
        self._host_fns.append(keep)  # host arrays the node reads or writes at every launch
        arr, n = _node_array(deps)
        h = c_void_p()
        return self._added(lib.gcap_graph_add_memcpy_node(self._handle(), arr, n, byref(p), byref(h)), h)

    def add_kernel(self, kernel, grid, block, args=(), deps=(), shared_mem=0):
        """Adds a kernel node launching `kernel` on `grid` x `block` with `args` after `deps`: a Node. Raises
        InvalidValue for wrong arguments (naming the parameter)."""
        p, _values = _kernel_params(kernel, grid, block, args, shared_mem, "Graph.add_kernel")
        arr, n = _node_array(deps)
        h = c_void_p()
        return self._added(lib.gcap_graph_add_kernel_node(self._handle(), arr, n, byref(p), byref(h)), h)

    def add_host(self, fn, deps=()):
        """Adds a host node that calls fn() when it runs, after `deps`: a Node. An exception in fn is raised as
        CallbackError by the launch's caller or the next wait."""
        cb = self._ctx._keep_alive(host_callback(self._ctx, fn))
        p = _lib.host_node_params(cb, None)
        arr, n = _node_array(deps)
        h = c_void_p()
        return self._added(lib.gcap_graph_add_host_node(self._handle(), arr, n, byref(p), byref(h)), h)

    def add_child(self, child, deps=()):
        """A node running a copy of `child`."""
        arr, n = _node_array(deps)
        h = c_void_p()
        c = handle_of(child, Graph, "Graph.add_child: child")
        return self._added(lib.gcap_graph_add_child_graph_node(self._handle(), arr, n, c, byref(h)), h)

    def add_event_record(self, event, deps=()):
        """Adds a node recording `event` after `deps`: a Node."""
        arr, n = _node_array(deps)
        h = c_void_p()
        e = handle_of(event, Event, "Graph.add_event_record: event")
        return self._added(lib.gcap_graph_add_event_record_node(self._handle(), arr, n, e, byref(h)), h)

    def add_event_wait(self, event, deps=()):
        """Adds a node that waits for `event` after `deps`: a Node."""
        arr, n = _node_array(deps)
        h = c_void_p()
        e = handle_of(event, Event, "Graph.add_event_wait: event")
        return self._added(lib.gcap_graph_add_event_wait_node(self._handle(), arr, n, e, byref(h)), h)

    def conditional_handle(self, default=0, assign_default=False):
        """A conditional handle (an int to pass to kernels as a "handle" parameter)."""
        h = c_uint64()
        default = _checked.integer(default, "Graph.conditional_handle: default", "unsigned")
        assign = _checked.flag(assign_default, "Graph.conditional_handle: assign_default")
        check(lib.gcap_graph_conditional_handle_create(self._handle(), default, 1 if assign else 0, byref(h)))
        return h.value

    def add_conditional(self, handle, type="if", size=1, deps=()):
        """A conditional node; returns (node, [body graphs])."""
        if type not in _CONDITIONAL_TYPES:
            raise InvalidValue("type %r is not 'if', 'while' or 'switch'" % (type,), "GCAP_ERROR_INVALID_VALUE", 1)
        handle = _checked.integer(handle, "Graph.add_conditional: handle", "uint64")
        size = _checked.size(size, "Graph.add_conditional: size", "unsigned")
        bodies = (c_void_p * max(1, size))()
        p = _lib.conditional_node_params(handle, _CONDITIONAL_TYPES[type], size, bodies)
        arr, n = _node_array(deps)
        h = c_void_p()
        node = self._added(lib.gcap_graph_add_conditional_node(self._handle(), arr, n, byref(p), byref(h)), h)
        return node, [Graph(self._ctx, bodies[i], owned=False) for i in range(size)]

    def add_memcpy_3d(self, dst, src, extent, dst_pitch=0, src_pitch=0, dst_rows=0, src_rows=0, dst_pos=(0, 0, 0),
                      src_pos=(0, 0, 0), kind="default", deps=()):
        """A copy of extent = (width in bytes, rows, slices) between pitched sides (cudaMemcpy3DParms, linear memory)."""
        what = "Graph.add_memcpy_3d"
        d, dsize, dkeep = _pointer_of(dst, what + ": dst")
        s, ssize, skeep = _pointer_of(src, what + ": src")
        extent = _triple(extent, what + ": extent")
        src_pos, dst_pos = _triple(src_pos, what + ": src_pos"), _triple(dst_pos, what + ": dst_pos")
        src_pitch = _checked.size(src_pitch, what + ": src_pitch")
        dst_pitch = _checked.size(dst_pitch, what + ": dst_pitch")
        src_rows, dst_rows = _checked.size(src_rows, what + ": src_rows"), _checked.size(dst_rows, what + ": dst_rows")
        for x, known, pitch, rows, pos, name in ((dst, dsize, dst_pitch, dst_rows, dst_pos, "dst"),
                                                 (src, ssize, src_pitch, src_rows, src_pos, "src")):
            if known is not None and all(extent):  # the last byte: that of the last row of the last slice
                last = ((pos[2] + extent[2] - 1) * max(rows, 1) + pos[1] + extent[1] - 1) * pitch + pos[0] + extent[0]
                if last > known:
                    raise InvalidValue("%s: the copy reaches byte %d of %s, which has %d" % (what, last, name, known),
                                       "GCAP_ERROR_INVALID_VALUE", 1)
        kind = kind_of(kind, what + ": kind")
        self._host_fns.append((dkeep, skeep))
        p = _lib.memcpy_3d_params(_lib.pitched_ptr(s, src_pitch, src_pitch, src_rows), _lib.pos(*src_pos),
                                  _lib.pitched_ptr(d, dst_pitch, dst_pitch, dst_rows), _lib.pos(*dst_pos),
                                  _lib.extent(*extent), kind)
        arr, n = _node_array(deps)
        h = c_void_p()
        return self._added(lib.gcap_graph_add_memcpy_3d_node(self._handle(), arr, n, byref(p), byref(h)), h)

    def retain_user_object(self, obj, count=1, move=False):
        """The graph takes `count` references of obj (your own with move=True)."""
        count = _checked.size(count, "Graph.retain_user_object: count", "unsigned")
        move = _checked.flag(move, "Graph.retain_user_object: move")
        o = handle_of(obj, UserObject, "Graph.retain_user_object: obj")
        check(lib.gcap_graph_retain_user_object(self._handle(), o, count, 1 if move else 0))

    def release_user_object(self, obj, count=1):
        """Drops `count` of the graph's references to `obj` (cudaGraphReleaseUserObject); returns None."""
        count = _checked.size(count, "Graph.release_user_object: count", "unsigned")
        o = handle_of(obj, UserObject, "Graph.release_user_object: obj")
        check(lib.gcap_graph_release_user_object(self._handle(), o, count))

    def add_mem_alloc(self, nbytes, deps=()):
        """An allocation node; returns (node, address): the address is fixed from now on."""
        p = _lib.mem_alloc_node_params(_checked.size(nbytes, "Graph.add_mem_alloc: nbytes"), None, None)
        arr, n = _node_array(deps)
        h = c_void_p()
        node = self._added(lib.gcap_graph_add_mem_alloc_node(self._handle(), arr, n, byref(p), byref(h)), h)
        return node, p.dptr

    def add_mem_free(self, address, deps=()):
        """Adds a node freeing graph allocation `address` (an int or Buffer) after `deps`: a Node. Raises
        InvalidValue for an address no allocation node returned."""
        arr, n = _node_array(deps)
        h = c_void_p()
        address = _pointer_of(address, "Graph.add_mem_free: address")[0]
        return self._added(lib.gcap_graph_add_mem_free_node(self._handle(), arr, n, address, byref(h)), h)

    def add_dependencies(self, edges):
        """Adds (from, to) edges; all or none."""
        edges = list(edges)
        a, n = _node_array([e[0] for e in edges])
        b, _ = _node_array([e[1] for e in edges])
        check(lib.gcap_graph_add_dependencies(self._handle(), a, b, n))

    def remove_dependencies(self, edges):
        """Removes edges, a list of (from Node, to Node); returns None. Raises InvalidValue for an edge that is not
        there."""
        edges = list(edges)
        a, n = _node_array([e[0] for e in edges])
        b, _ = _node_array([e[1] for e in edges])
        check(lib.gcap_graph_remove_dependencies(self._handle(), a, b, n))

    def _repr_svg_(self):
        from ._pictures import graph_svg
        return graph_svg(self)


def _via_file(write):
    fd, path = tempfile.mkstemp(suffix=".dot")
    os.close(fd)
    try:
        f = _lib.libc.fopen(os.fsencode(path), b"w")
        st = write(f)
        _lib.libc.fclose(f)
        check(st)
        with open(path) as text:
            return text.read()
    finally:
        os.remove(path)


def _kernel_params(kernel, grid, block, args, shared_mem, what):
    """The C parameters of a kernel node, and the argument values they point at (keep them until the call returns)."""
    k = handle_of(kernel, Kernel, what + ": kernel")
    grid, block = dim3_of(grid, what + ": grid"), dim3_of(block, what + ": block")
    shared_mem = _checked.size(shared_mem, what + ": shared_mem", "uint32")
    packed = kernel._pack(args)
    return _lib.kernel_node_params(k, grid, block, shared_mem, packed.pointers), packed


def _triple(v, what):
    """Three sizes (x, y, z) of an extent or a position."""
    items = tuple(v) if not isinstance(v, (str, bytes)) and hasattr(v, "__iter__") else None
    if items is None or len(items) != 3:
        raise TypeError("%s must be a sequence of 3 ints, not %r" % (what, v))
    return tuple(_checked.size(x, "%s[%d]" % (what, i)) for i, x in enumerate(items))


def _memset_params(buf, value, offset, nbytes, element_size, what):
    if isinstance(element_size, bool) or element_size not in (1, 2, 4):
        raise InvalidValue("%s: element_size is %r, not 1, 2 or 4" % (what, element_size),
                           "GCAP_ERROR_INVALID_VALUE", 1)
    ptr, nbytes = fill_range(buf, offset, nbytes, what)
    if nbytes % element_size:
        raise InvalidValue("%s: nbytes %d is not a whole number of %d-byte elements" % (what, nbytes, element_size),
                           "GCAP_ERROR_INVALID_VALUE", 1)
    value = _checked.integer(value, what + ": value", ("byte", "uint16", "uint32")[element_size // 2])
    return _lib.memset_node_params(ptr, value, element_size, nbytes // element_size, 1, 0)


def _memcpy_params(dst, src, nbytes, kind, what):
    d, s, nbytes, keep = copy_operands(dst, src, nbytes, what)
    return _lib.memcpy_node_params(d, s, nbytes, kind_of(kind, what + ": kind")), keep


class Race:
    """Two nodes with no path between them touching `nbytes` at `addr`, one of them writing."""

    def __init__(self, first, second, addr, nbytes):
        self.first, self.second, self.addr, self.nbytes = first, second, addr, nbytes

    def __repr__(self):
        return "<gcap.Race %s and %s on %d bytes at 0x%x>" % (self.first, self.second, self.nbytes, self.addr or 0)


class Node:
    """A node of a graph: `type`, `dependencies`, `params` (a dict of its parameters)."""

    def __init__(self, graph, h):
        self.graph, self._h = graph, h

    def _handle(self):
        self.graph._handle()  # its graph (and context) still there
        return self._h

    def __eq__(self, other):
        return isinstance(other, Node) and other._h == self._h

    def __hash__(self):
        return hash(self._h)

    @property
    def type(self):
        """The node's type: 'kernel', 'memcpy', 'memset', 'host', 'graph', 'empty', 'event_record', 'event_wait',
        'mem_alloc', 'mem_free' or 'conditional'."""
        t = lib.gcap_node_get_type(self._handle())
        if t == -1:  # not a live node: destroyed (Node.destroy), or its graph was
            raise error_of(4)
        return NODE_TYPES.get(t, "unknown")

    @property
    def index(self):
        """The node's position in its graph's `nodes` (creation order)."""
        return self.graph.nodes.index(self)

    def __repr__(self):
        try:
            return "<gcap.Node 0x%x %d: %s of graph 0x%x>" % (self._h, self.index, self.type, self.graph._h)
        except Exception:
            return "<gcap.Node (gone)>"

    @property
    def dependencies(self):
        """The Nodes this node depends on (its incoming edges), a list."""
        return [Node(self.graph, h) for h in _enumerate(lib.gcap_node_get_dependencies, self._handle())]

    @property
    def params(self):
        """The node's parameters as a dict (a kernel's name, grid and block; a copy's addresses and size; ...)."""
        t = self.type
        if t == "memset":
            p = _lib.memset_node_params()
            check(lib.gcap_node_get_memset_params(self._h, byref(p)))
            return {"dst": p.dst, "value": p.value, "element_size": p.element_size, "width": p.width,
                    "height": p.height, "pitch": p.pitch}
        if t == "memcpy":
            p = _lib.memcpy_node_params()
            check(lib.gcap_node_get_memcpy_params(self._h, byref(p)))
            kinds = ("host_to_host", "host_to_device", "device_to_host", "device_to_device", "default")
            return {"dst": p.dst, "src": p.src, "nbytes": p.bytes, "kind": kinds[p.kind]}
        if t == "kernel":
            p = _lib.kernel_node_params()
            check(lib.gcap_node_get_kernel_params(self._h, byref(p)))
            return {"kernel": lib.gcap_kernel_name(p.kernel).decode(), "grid": (p.grid.x, p.grid.y, p.grid.z),
                    "block": (p.block.x, p.block.y, p.block.z), "shared_mem": p.shared_mem_bytes}
        if t == "graph":
            child = c_void_p()
            check(lib.gcap_node_get_child_graph(self._h, byref(child)))
            return {"graph": Graph(self.graph._ctx, child.value, owned=False)}
        return {}

    def set_memset(self, value=None, buf=None, offset=0, nbytes=None):
        """New fill parameters for this node of the graph (as CUDA's cudaGraphMemsetNodeSetParams)."""
        old = self.params
        if buf is None:
            if value is not None:
                value = _checked.integer(value, "Node.set_memset: value",
                                         ("byte", "uint16", "uint32")[old["element_size"] // 2])
            p = _lib.memset_node_params(old["dst"], old["value"] if value is None else value, old["element_size"],
                                        old["width"], old["height"], old["pitch"])
        else:
            p = _memset_params(buf, value, offset, nbytes, 1, "Node.set_memset")
        check(lib.gcap_node_set_memset_params(self._handle(), byref(p)))

    def set_memcpy(self, dst, src, nbytes=None, kind="default"):
        """Changes the copy node's operands (cudaGraphMemcpyNodeSetParams); returns None. Raises InvalidValue for a
        node of another type."""
        p, keep = _memcpy_params(dst, src, nbytes, kind, "Node.set_memcpy")
        self.graph._host_fns.append(keep)
        check(lib.gcap_node_set_memcpy_params(self._handle(), byref(p)))

    def set_kernel(self, kernel, grid, block, args=(), shared_mem=0):
        """Changes the kernel node's kernel, dimensions and arguments (cudaGraphKernelNodeSetParams); returns None."""
        p, _values = _kernel_params(kernel, grid, block, args, shared_mem, "Node.set_kernel")
        check(lib.gcap_node_set_kernel_params(self._handle(), byref(p)))

    @property
    def priority(self):
        """A kernel node's priority attribute (lower is more urgent; used with instantiate(use_node_priority=True))."""
        v = _lib.kernel_node_attr_value()
        check(lib.gcap_graph_kernel_node_get_attribute(self._handle(), 8, byref(v)))
        return v.priority

    @priority.setter
    def priority(self, value):
        v = _lib.kernel_node_attr_value(_checked.integer(value, "Node.priority", "int"))
        check(lib.gcap_graph_kernel_node_set_attribute(self._handle(), 8, byref(v)))

    @property
    def cooperative(self):
        """A kernel node's cooperative attribute: True runs it as a cooperative launch (every block resident at
        once); a capture of Stream.launch(..., cooperative=True) sets it."""
        v = _lib.kernel_node_attr_value()
        check(lib.gcap_graph_kernel_node_get_attribute(self._handle(), 2, byref(v)))
        return bool(v.cooperative)

    @cooperative.setter
    def cooperative(self, value):
        v = _lib.kernel_node_attr_value()
        v.cooperative = 1 if _checked.flag(value, "Node.cooperative") else 0
        check(lib.gcap_graph_kernel_node_set_attribute(self._handle(), 2, byref(v)))

    def destroy(self):
        """Removes the node and its edges from its graph."""
        check(lib.gcap_graph_destroy_node(self._handle()))


class Exec(Handle):
    """An executable graph: `launch(stream)`, `update(graph)`, per-node setters. Launches of one
    executable never overlap."""

    def __init__(self, ctx, h, graph):
        super().__init__(ctx, h)  # independent of `graph` from now on, as in C

    def close(self):
        """Destroys the executable now (cudaGraphExecDestroy); its graph is not affected."""
        if self._h is not None and self._ctx._h is not None:
            self._refuse_in_callback()
            lib.gcap_exec_destroy(self._h)
        self._h = None

    @property
    def node_count(self):
        """The executable's node count (gcap_exec_node_count), an int."""
        return lib.gcap_exec_node_count(self._handle())

    def __repr__(self):
        if self._h is None or self._ctx._h is None:
            return self._repr()
        return self._repr("%d nodes per launch" % self.node_count)

    def launch(self, stream):
        """Launches the executable on `stream` (cudaGraphLaunch); returns None. Raises InvalidValue when graph
        memory it allocates is still allocated (without auto_free), a kernel's sticky fault, or CallbackError."""
        s = handle_of(stream, Stream, "Exec.launch: stream")
        self._ctx._report_callbacks(lib.gcap_exec_launch(self._handle(), s))

    def upload(self, stream):
        """Uploads the executable ahead of its first launch on `stream` (cudaGraphUpload); returns None."""
        check(lib.gcap_exec_upload(self._handle(), handle_of(stream, Stream, "Exec.upload: stream")))

    def update(self, graph):
        """Takes the parameters of `graph`, of the same shape; raises ExecUpdateFailure (with `.result` and
        `.error_node`) and leaves the executable as it was otherwise."""
        info = _lib.exec_update_info()
        st = lib.gcap_exec_update(self._handle(), handle_of(graph, Graph, "Exec.update: graph"), byref(info))
        if st != 0:
            err = error_of(st)
            err.result = _UPDATE_RESULTS.get(info.result, str(info.result))
            err.error_node = Node(graph, info.error_node) if info.error_node else None
            raise err

    def set_memset(self, node, buf, value, offset=0, nbytes=None, element_size=1):
        """Changes a fill node of this executable only (cudaGraphExecMemsetNodeSetParams); `node` is the graph's
        Node. Returns None; raises InvalidValue for a change the driver does not take."""
        p = _memset_params(buf, value, offset, nbytes, element_size, "Exec.set_memset")
        n = handle_of(node, Node, "Exec.set_memset: node")
        check(lib.gcap_exec_memset_node_set_params(self._handle(), n, byref(p)))

    def set_memcpy(self, node, dst, src, nbytes=None, kind="default"):
        """Changes a copy node of this executable only (cudaGraphExecMemcpyNodeSetParams); returns None."""
        p, keep = _memcpy_params(dst, src, nbytes, kind, "Exec.set_memcpy")
        self._ctx._keep_alive(keep)
        n = handle_of(node, Node, "Exec.set_memcpy: node")
        check(lib.gcap_exec_memcpy_node_set_params(self._handle(), n, byref(p)))

    def set_kernel(self, node, kernel, grid, block, args=(), shared_mem=0):
        """Changes a kernel node of this executable only (cudaGraphExecKernelNodeSetParams); returns None."""
        p, _values = _kernel_params(kernel, grid, block, args, shared_mem, "Exec.set_kernel")
        n = handle_of(node, Node, "Exec.set_kernel: node")
        check(lib.gcap_exec_kernel_node_set_params(self._handle(), n, byref(p)))

    def set_child(self, node, graph):
        """Gives child-graph node `node` the values of `graph`, of the same shape (cudaGraphExecChildGraphNodeSetParams)."""
        n, g = handle_of(node, Node, "Exec.set_child: node"), handle_of(graph, Graph, "Exec.set_child: graph")
        check(lib.gcap_exec_child_graph_node_set_params(self._handle(), n, g))

    def set_enabled(self, node, enabled):
        """Disables (runs as empty) or enables a node of this executable (cudaGraphNodeSetEnabled); returns None."""
        enabled = _checked.flag(enabled, "Exec.set_enabled: enabled")
        check(lib.gcap_exec_node_set_enabled(self._handle(), handle_of(node, Node, "Exec.set_enabled: node"),
                                             enabled))


__all__ = ["Graph", "Node", "Exec", "Race", "ExecUpdateFailure", "Buffer", "ctypes"]
