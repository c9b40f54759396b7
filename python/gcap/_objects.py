"""Contexts, errors, memory, streams, events and captures: the C handles, owned by Python objects."""
import ctypes
import threading
import weakref
from ctypes import byref, c_float, c_int, c_size_t, c_uint, c_void_p

from . import _checked, _interrupt, _lib
from ._lib import lib

# ------------------------------------------------------------------ errors


class Error(Exception):
    """A gcap call failed. `status` is the C status name, `code` its value; the text is the C library's message."""

    status = "GCAP_ERROR_UNKNOWN"

    def __init__(self, message, status=None, code=None):
        super().__init__(message)
        if status is not None:
            self.status = status
        self.code = code


_CLASS_OF = {}


def _error_class(name, status):
    cls = type(name, (Error,), {"status": status, "__doc__": "gcap status %s." % status})
    _CLASS_OF[status] = cls
    return cls


InvalidValue = _error_class("InvalidValue", "GCAP_ERROR_INVALID_VALUE")
OutOfMemory = _error_class("OutOfMemory", "GCAP_ERROR_OUT_OF_MEMORY")
NotInitialized = _error_class("NotInitialized", "GCAP_ERROR_NOT_INITIALIZED")
InvalidHandle = _error_class("InvalidHandle", "GCAP_ERROR_INVALID_HANDLE")
NotSupported = _error_class("NotSupported", "GCAP_ERROR_NOT_SUPPORTED")
NotFound = _error_class("NotFound", "GCAP_ERROR_NOT_FOUND")
NotReady = _error_class("NotReady", "GCAP_ERROR_NOT_READY")
IllegalState = _error_class("IllegalState", "GCAP_ERROR_ILLEGAL_STATE")
CaptureUnsupported = _error_class("CaptureUnsupported", "GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED")
CaptureInvalidated = _error_class("CaptureInvalidated", "GCAP_ERROR_STREAM_CAPTURE_INVALIDATED")
CaptureMerge = _error_class("CaptureMerge", "GCAP_ERROR_STREAM_CAPTURE_MERGE")
CaptureUnmatched = _error_class("CaptureUnmatched", "GCAP_ERROR_STREAM_CAPTURE_UNMATCHED")
CaptureUnjoined = _error_class("CaptureUnjoined", "GCAP_ERROR_STREAM_CAPTURE_UNJOINED")
CaptureIsolation = _error_class("CaptureIsolation", "GCAP_ERROR_STREAM_CAPTURE_ISOLATION")
CaptureImplicit = _error_class("CaptureImplicit", "GCAP_ERROR_STREAM_CAPTURE_IMPLICIT")
CapturedEvent = _error_class("CapturedEvent", "GCAP_ERROR_CAPTURED_EVENT")
CaptureWrongThread = _error_class("CaptureWrongThread", "GCAP_ERROR_STREAM_CAPTURE_WRONG_THREAD")
ExecUpdateFailure = _error_class("ExecUpdateFailure", "GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE")
BackendError = _error_class("BackendError", "GCAP_ERROR_BACKEND")
InvalidPtx = _error_class("InvalidPtx", "GCAP_ERROR_INVALID_PTX")
InvalidSource = _error_class("InvalidSource", "GCAP_ERROR_INVALID_SOURCE")
# Kernel faults: sticky, as on a GPU. Every later call on the context raises the same, except those that
# free or destroy; the context is then only good for closing.
IllegalAddress = _error_class("IllegalAddress", "GCAP_ERROR_ILLEGAL_ADDRESS")
LaunchTimeout = _error_class("LaunchTimeout", "GCAP_ERROR_LAUNCH_TIMEOUT")  # the watchdog or gcap_sim_interrupt
AssertError = _error_class("AssertError", "GCAP_ERROR_ASSERT")
IllegalInstruction = _error_class("IllegalInstruction", "GCAP_ERROR_ILLEGAL_INSTRUCTION")
MisalignedAddress = _error_class("MisalignedAddress", "GCAP_ERROR_MISALIGNED_ADDRESS")
LaunchFailure = _error_class("LaunchFailure", "GCAP_ERROR_LAUNCH_FAILURE")
# Not a fault: the grid of a cooperative launch does not fit on the device at once; nothing ran.
CooperativeLaunchTooLarge = _error_class("CooperativeLaunchTooLarge", "GCAP_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE")


class ContextClosed(InvalidHandle):
    """The object's context was closed: its C handle is gone."""


class CallbackError(BackendError):
    """A Python kernel or host function raised; its exception is the `__cause__`. Raised by the call
    that ran it or waited for it (a launch, a synchronize)."""


def error_of(st, message=None):
    name = lib.gcap_status_name(st).decode()
    if message is None:
        message = lib.gcap_last_error_message().decode()
    return _CLASS_OF.get(name, Error)(message or name, name, st)


def check(st):
    """Raises the exception of status st (with this thread's C message) unless it is GCAP_SUCCESS."""
    if st != 0:
        raise error_of(st)


# ------------------------------------------------------------------ handles


class Handle:
    """A C handle of a context: freed when collected, and never used once its context is closed."""

    _destroy = None  # the C function that frees it

    def __init__(self, ctx, h):
        self._ctx = ctx
        self._h = h
        if ctx is not None:
            ctx._children.add(self)

    @property
    def context(self):
        """The Context the object belongs to."""
        return self._ctx

    def _handle(self):
        if self._ctx is not None and self._ctx._h is None:
            raise ContextClosed("%s: its context is closed" % type(self).__name__, "GCAP_ERROR_INVALID_HANDLE", 4)
        if self._h is None:
            raise InvalidHandle("%s: it was closed" % type(self).__name__, "GCAP_ERROR_INVALID_HANDLE", 4)
        return self._h

    def _forget(self):
        self._h = None

    def _repr(self, details=""):
        """`<gcap.Name 0x55e7... ctx=0x55e6... sim details>`: the addresses C messages name."""
        name = type(self).__name__
        if self._h is None or (self._ctx is not None and self._ctx._h is None):
            return "<gcap.%s (closed)>" % name
        return "<gcap.%s 0x%x ctx=0x%x %s%s>" % (name, self._h, self._ctx._h, self._ctx.backend,
                                                 details and " " + details)

    def __repr__(self):
        return self._repr()

    def close(self):
        """Frees the C handle now (later calls on this object raise). Raises IllegalState, and keeps the object,
        when called from a host function or Python kernel of its context, or when C refuses (a stream that
        captures)."""
        if self._h is not None and self._destroy is not None and (self._ctx is None or self._ctx._h is not None):
            self._refuse_in_callback()
            check(type(self)._destroy(self._h) or 0)
        self._h = None

    def _refuse_in_callback(self):
        """IllegalState when a host function or Python kernel of this object's context runs on this thread: the
        work running may use the object, and C may not be called back into to free it."""
        if self._h is not None and running_callback_of(self._ctx):
            raise IllegalState("%s.close: called from a host function or Python kernel of its context, which the "
                               "context is running; close it after the work (it stays usable)" % type(self).__name__,
                               "GCAP_ERROR_ILLEGAL_STATE", 8)

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown, or a stream still capturing: nothing to report to
            pass


def handle_of(obj, cls, what):
    """The C handle of `obj`, which must be a `cls`: TypeError naming the argument otherwise (and ContextClosed or
    InvalidHandle once it is closed)."""
    if not isinstance(obj, cls):
        raise TypeError("%s must be a gcap.%s, not %s" % (what, cls.__name__, type(obj).__name__))
    return obj._handle()


def _free_stream(h):
    return lib.gcap_stream_destroy(h)


def _free_event(h):
    return lib.gcap_event_destroy(h)


# ------------------------------------------------------------------ Python callbacks

_here = threading.local()  # .running: the contexts whose Python callbacks run on this thread, innermost last


def _running_here():
    running = getattr(_here, "running", None)
    if running is None:
        running = _here.running = []
    return running


def running_callback_of(ctx):
    """True when a host function or Python kernel of `ctx` runs on this thread."""
    return ctx is not None and any(c is ctx for c in _running_here())


def run_callback(ctx, what, fn, *args):
    """Runs Python callback fn(*args) for the C side, which no exception may cross: True when it returned. When it
    raised, the exception is kept for the call that ran the work or waited for it (Context._report_callbacks),
    and it returns False. While a KeyboardInterrupt or SystemExit of the context waits to be raised, nothing
    more runs (False): the program is being stopped."""
    if any(not isinstance(exc, Exception) for _, exc in ctx._failures):
        return False
    running = _running_here()
    running.append(ctx)
    try:
        fn(*args)
        return True
    except BaseException as exc:  # KeyboardInterrupt and SystemExit too: _report_callbacks raises them as they are
        ctx._callback_failed(what, exc)
        return False
    finally:
        running.pop()


# ------------------------------------------------------------------ context

_BACKENDS = {"auto": 0, "sim": 1, "cuda": 2}
_ORDERS = {"capture": 0, "shuffle": 1}
_EXECS = {"immediate": 0, "deferred": 1}
_SIM_KERNELS = {"auto": 0, "cpu": 1, "ptx": 2}
_CHECKS = {"memory": 1, "sync": 2, "shared": 4, "init": 8}
_SIM_OPTIONS = {"order", "seed", "check_races", "trace", "exec", "strict_memory", "threads", "kernels", "checks",
                "kernel_timeout_ms", "zero_block_memory", "poison_allocations"}


def checks_of(checks):
    """The GCAP_SIM_CHECK_* bits of "all", "none", "memory,sync" or an iterable of check names."""
    if isinstance(checks, str):
        if checks in ("all", "none"):
            return sum(_CHECKS.values()) if checks == "all" else 0
        checks = checks.split(",") if checks else []
    bits = 0
    for name in checks:
        if name not in _CHECKS:
            raise InvalidValue("check %r is not one of %s (or checks='all' or 'none')" % (name, ", ".join(_CHECKS)),
                               "GCAP_ERROR_INVALID_VALUE", 1)
        bits |= _CHECKS[name]
    return bits


class Context:
    """A gcap context: `Context(backend="sim", order="shuffle", seed=3, check_races=True, trace="t.json")`.

    Simulator options as keywords: order ("capture" or "shuffle"), seed, check_races, trace (a path the
    Chrome trace-event timeline is written to), exec ("immediate" or "deferred"), strict_memory, threads,
    kernels (what runs a kernel: "auto", its Python or C body where it has one and else its PTX; "cpu";
    "ptx"), checks (made while PTX kernels run: "all", "none", or some of "memory", "sync", "shared",
    "init"; by default memory and sync), kernel_timeout_ms (the watchdog: a kernel running longer raises
    LaunchTimeout, and so does Ctrl-C, as KeyboardInterrupt; 60000 by default, 0 for none),
    zero_block_memory (PTX kernels' shared and local memory start each block as zeros, not as the
    seeded poison pattern a GPU's leftovers stand for), poison_allocations (fresh device allocations
    hold the seeded poison pattern, as a caching allocator's reused memory does; off by default).
    Use it as a `with` block, or call close(); every object made from it is unusable afterwards.
    """

    def __init__(self, backend="sim", device=0, **sim):
        self._h = None
        self._children = weakref.WeakSet()
        self._keep = []  # callbacks and kernel definitions the C side may call until the context goes
        self._trace_file = None
        self._trace_path = sim.get("trace")
        if backend not in _BACKENDS:
            raise InvalidValue("backend %r is not 'auto', 'sim' or 'cuda'" % (backend,), "GCAP_ERROR_INVALID_VALUE", 1)
        opts = _lib.context_options()
        lib.gcap_context_options_init(byref(opts))
        opts.backend = _BACKENDS[backend]
        opts.device = _checked.integer(device, "Context: device", "int")
        self._device = opts.device  # the CUDA ordinal, for DeviceArray.__dlpack_device__
        if sim:
            so = self._sim_options(sim)
            self._so = so
            opts.sim = ctypes.pointer(so)
        h = c_void_p()
        st = lib.gcap_context_create(byref(opts), byref(h))
        if st != 0:
            err = error_of(st)
            self._close_trace()
            raise err
        self._h = h.value
        _interrupt.install()  # Ctrl-C stops a running kernel
        self._buffers = {}  # pointer -> Buffer, for the views Python kernels get
        self._failures = []  # (what, exception) of Python callbacks that raised, for the next call to report

    def _sim_options(self, sim):
        so = _lib.sim_options()
        lib.gcap_sim_options_init(byref(so))
        unknown = set(sim) - _SIM_OPTIONS
        if unknown:
            raise InvalidValue("unknown simulator option(s): %s" % ", ".join(sorted(unknown)), "GCAP_ERROR_INVALID_VALUE", 1)
        if "order" in sim:
            if sim["order"] not in _ORDERS:
                raise InvalidValue("order %r is not 'capture' or 'shuffle'" % (sim["order"],), "GCAP_ERROR_INVALID_VALUE", 1)
            so.order = _ORDERS[sim["order"]]
        if "exec" in sim:
            if sim["exec"] not in _EXECS:
                raise InvalidValue("exec %r is not 'immediate' or 'deferred'" % (sim["exec"],), "GCAP_ERROR_INVALID_VALUE", 1)
            so.exec = _EXECS[sim["exec"]]
        if "kernels" in sim:
            if sim["kernels"] not in _SIM_KERNELS:
                raise InvalidValue("kernels %r is not 'auto', 'cpu' or 'ptx'" % (sim["kernels"],),
                                   "GCAP_ERROR_INVALID_VALUE", 1)
            so.kernels = _SIM_KERNELS[sim["kernels"]]
        if "checks" in sim:
            so.checks = checks_of(sim["checks"])
        so.seed = _checked.integer(sim.get("seed", 0), "Context: seed", "uint64")
        so.check_races = _checked.flag(sim.get("check_races", False), "Context: check_races")
        so.strict_memory = _checked.flag(sim.get("strict_memory", False), "Context: strict_memory")
        so.zero_block_memory = _checked.flag(sim.get("zero_block_memory", False), "Context: zero_block_memory")
        so.poison_allocations = _checked.flag(sim.get("poison_allocations", False), "Context: poison_allocations")
        so.threads = _checked.integer(sim.get("threads", 0), "Context: threads", "unsigned")
        if "kernel_timeout_ms" in sim:
            so.kernel_timeout_ms = _checked.integer(sim["kernel_timeout_ms"], "Context: kernel_timeout_ms", "uint32")
        if sim.get("trace"):
            self._trace_file = _lib.libc.fopen(str(sim["trace"]).encode(), b"w")
            if not self._trace_file:
                raise InvalidValue("trace %r cannot be written" % (sim["trace"],), "GCAP_ERROR_INVALID_VALUE", 1)
            so.trace = self._trace_file
        return so

    def _handle(self):
        if self._h is None:
            raise ContextClosed("the context is closed", "GCAP_ERROR_INVALID_HANDLE", 4)
        return self._h

    def _close_trace(self):
        if self._trace_file:
            _lib.libc.fclose(self._trace_file)
            self._trace_file = None

    def close(self):
        """Destroys the context and everything made from it (their Python objects then raise ContextClosed). Raises
        IllegalState, and leaves the context as it was, when called from a host function or Python kernel of this
        context (the work running needs it)."""
        if self._h is None:
            return
        if running_callback_of(self):
            raise IllegalState("Context.close: called from a host function or Python kernel of this context, which "
                               "the context is running; close it after the work (the context stays usable)",
                               "GCAP_ERROR_ILLEGAL_STATE", 8)
        for child in list(self._children):
            child._forget()
        h, self._h = self._h, None
        lib.gcap_context_destroy(h)
        self._close_trace()
        self._keep.clear()
        self._buffers.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    @property
    def backend(self):
        """'sim' or 'cuda'."""
        return lib.gcap_backend_name(lib.gcap_context_backend(self._handle())).decode()

    def __repr__(self):
        return "<gcap.Context (closed)>" if self._h is None else "<gcap.Context 0x%x %s>" % (self._h, self.backend)

    def synchronize(self):
        """Waits for all work of the context (cudaDeviceSynchronize); returns None. Raises CaptureUnsupported while
        a stream captures, the sticky fault of a kernel that failed, or CallbackError when a Python callback
        raised."""
        self._report_callbacks(lib.gcap_context_synchronize(self._handle()))

    def stats(self):
        """The simulator's counters as a dict (NotSupported on CUDA)."""
        s = _lib.sim_stats()
        check(lib.gcap_sim_get_stats(self._handle(), byref(s)))
        return {name: getattr(s, name) for name, _ in s._fields_}

    def stream(self, flags=None, priority=0):
        """A new Stream of this context: by default non-blocking, of priority 0 (cudaStreamCreate). `flags`
        gcap.STREAM_DEFAULT makes a blocking stream, which the legacy stream orders (cudaStreamCreateWithFlags);
        `priority` (lower is more urgent) is clamped to priority_range, as CUDA does
        (cudaStreamCreateWithPriority). Raises InvalidValue for other flags."""
        return Stream(self, flags, priority)

    @property
    def priority_range(self):
        """(least, greatest) stream priorities: (0, -5), CUDA's numbers; lower is more urgent."""
        least, greatest = c_int(), c_int()
        check(lib.gcap_context_stream_priority_range(self._handle(), byref(least), byref(greatest)))
        return least.value, greatest.value

    @property
    def legacy_stream(self):
        """The context's legacy (NULL) stream: its work waits for the earlier work of every blocking stream
        (`ctx.stream(flags=gcap.STREAM_DEFAULT)`), and their later work waits for its. It cannot be captured;
        close() forgets the object and leaves the stream, which lives as long as the context."""
        h = c_void_p()
        check(lib.gcap_context_legacy_stream(self._handle(), byref(h)))
        return Stream._default(self, h.value)

    @property
    def per_thread_stream(self):
        """The calling thread's per-thread default stream: a blocking stream of its own for each thread, which
        lives as long as the context (close() forgets the object only)."""
        h = c_void_p()
        check(lib.gcap_context_per_thread_stream(self._handle(), byref(h)))
        return Stream._default(self, h.value)

    def event(self):
        """A new Event of this context, with timing (cudaEventCreate)."""
        return Event(self)

    def alloc(self, nbytes):
        """nbytes of device memory: a Buffer. Raises TypeError for what is not an int, InvalidValue for a negative
        size (and 0, as C does), OverflowError past size_t, OutOfMemory."""
        return Buffer(self, _checked.size(nbytes, "Context.alloc: nbytes"))

    def managed(self, nbytes):
        """nbytes of managed memory (cudaMallocManaged): a Buffer that kernels, copies and graphs use as device
        memory and that the host reads and writes directly through `.host_array()`, also under strict memory.
        Raises as alloc does."""
        return Buffer(self, _checked.size(nbytes, "Context.managed: nbytes"), managed=True)

    def alloc_pitch(self, width, height):
        """`height` rows of at least `width` bytes (cudaMallocPitch): a Buffer whose `.pitch` is the row stride.
        Raises as alloc does for a bad width or height."""
        return Buffer(self, 0, rows=(_checked.size(width, "Context.alloc_pitch: width"),
                                     _checked.size(height, "Context.alloc_pitch: height")))

    def empty(self, shape, dtype="float32"):
        """A gcap.DeviceArray of `shape` (an int or a tuple) and numpy `dtype` in new, uninitialized device memory.
        Raises TypeError for a shape that is not ints, InvalidValue for a negative dimension or a bad dtype,
        OutOfMemory."""
        from ._arrays import empty
        return empty(self, shape, dtype)

    def zeros(self, shape, dtype="float32", stream=None):
        """A gcap.DeviceArray of `shape` and `dtype` in new device memory, zeroed by a memset on `stream` (ordered
        there), else before it returns. Raises as empty does."""
        from ._arrays import zeros
        return zeros(self, shape, dtype, stream)

    def asarray(self, data, stream=None, dtype=None):
        """A gcap.DeviceArray holding a copy of host `data` (a numpy array, or what numpy.asarray takes): copied
        before it returns, or ordered on `stream`, which keeps the host data until it is synchronized. A
        DeviceArray of this context (of that dtype) is returned as is. Raises InvalidValue for other device
        memory or a dtype of Python objects."""
        from ._arrays import asarray
        return asarray(self, data, stream, dtype)

    def graph(self):
        """A new empty Graph of this context, for the add_* methods (cudaGraphCreate)."""
        from ._graphs import Graph
        return Graph._create(self)

    def load_graph(self, path):
        """The Graph saved at `path` by Graph.save (JSON). Raises InvalidValue for a file it cannot read or parse,
        NotSupported in a build without saved graphs."""
        from ._graphs import Graph
        return Graph._load(self, path)

    def load_module(self, kernels=None, image=None, source=None, options=None, name=None):
        """A module: `kernels` (gcap.kernel(...) definitions), and `image` (PTX text, or cubin bytes for CUDA)
        or `source` (CUDA C compiled by NVRTC at load, with `options` such as ["-DN=4"]). `name` ("kernels.cu")
        names a source in fault reports and NVRTC's log ("<nvrtc source>" without one); only with a source.

        Without definitions the kernels are the PTX's entries. On the simulator a kernel without a Python
        body runs from its PTX. InvalidPtx names the line of PTX that is wrong, InvalidSource gives NVRTC's
        log, NotFound means no NVRTC library was found; an image and a source together are InvalidValue.
        """
        from ._kernels import Module
        return Module(self, kernels or [], image, source, options, name)

    def trace(self):
        """The timeline written so far to the `trace` file, as a picture in notebooks."""
        from ._pictures import Trace
        if not self._trace_path:
            raise IllegalState("the context was made without trace=...", "GCAP_ERROR_ILLEGAL_STATE", 8)
        if self._trace_file:
            _lib.libc.fflush(self._trace_file)
        return Trace(self._trace_path)

    def graph_memory(self):
        """The context's graph memory in bytes: used and reserved, now and at their highest."""
        out = {}
        for i, name in enumerate(("used", "used_high", "reserved", "reserved_high")):
            v = ctypes.c_uint64()
            check(lib.gcap_context_get_graph_mem_attribute(self._handle(), i, byref(v)))
            out[name] = v.value
        return out

    def reset_graph_memory_high(self):
        """The two high marks become the current figures."""
        for attr in (1, 3):
            check(lib.gcap_context_set_graph_mem_attribute(self._handle(), attr, 0))

    def trim_graph_memory(self):
        """Gives back reserved graph memory no executable needs (cudaDeviceGraphMemTrim); see docs/memory.md."""
        check(lib.gcap_context_graph_mem_trim(self._handle()))

    def user_object(self, destroy, refs=1):
        """A resource whose `destroy()` runs once the last reference (yours, graphs', executables') is gone."""
        return UserObject(self, destroy, _checked.size(refs, "Context.user_object: refs", "unsigned"))

    def _callback_failed(self, what, exc):
        self._failures.append((what, exc))

    def _report_callbacks(self, st=0):
        """After a call that may have run Python callbacks: raises what they raised since the last report (the first
        KeyboardInterrupt or SystemExit as itself, else CallbackError from the first exception), else the status
        `st` of the call (a kernel a callback stopped fails its launch with GCAP_ERROR_BACKEND)."""
        if self._failures:
            failures, self._failures = self._failures, []
            for what, exc in failures:
                if not isinstance(exc, Exception):
                    raise exc
            what, exc = failures[0]
            raise CallbackError("%s raised %s: %s" % (what, type(exc).__name__, exc), "GCAP_ERROR_BACKEND",
                                999) from exc
        if st != 0:
            raise error_of(st)

    def _keep_alive(self, obj):
        self._keep.append(obj)
        return obj

    def _buffer_at(self, address):
        for ptr, buf in self._buffers.items():
            if ptr <= address < ptr + buf.nbytes:
                return buf
        return None


# ------------------------------------------------------------------ memory

_KINDS = {"host_to_host": 0, "host_to_device": 1, "device_to_host": 2, "device_to_device": 3, "default": 4}


def kind_of(kind, what="kind"):
    """The gcap_memcpy_kind of a name ("device_to_host", ...) or of its number."""
    if not isinstance(kind, str):
        return _checked.integer(kind, what, "int")
    if kind not in _KINDS:
        raise InvalidValue("kind %r is not one of %s" % (kind, ", ".join(_KINDS)), "GCAP_ERROR_INVALID_VALUE", 1)
    return _KINDS[kind]


class Buffer(Handle):
    """Device memory of a context: `.ptr` (its address) and `.nbytes`."""

    _owner = None  # a module whose variable this is (Module.get_global): not freed, gone with the module

    def __init__(self, ctx, nbytes, rows=None, managed=False):
        p = c_void_p()
        self.pitch = None
        self.managed = bool(managed)
        if rows is None:
            nbytes = _checked.size(nbytes, "Buffer: nbytes")
            alloc = lib.gcap_mem_alloc_managed if managed else lib.gcap_mem_alloc
            check(alloc(ctx._handle(), nbytes, byref(p)))
        else:
            pitch = c_size_t()
            check(lib.gcap_mem_alloc_pitch(ctx._handle(), rows[0], rows[1], byref(p), byref(pitch)))
            self.pitch, nbytes = pitch.value, pitch.value * rows[1]
        super().__init__(ctx, p.value)
        self.nbytes = int(nbytes)
        self._ptr = p.value
        ctx._buffers[self._ptr] = self

    @classmethod
    def _of_module(cls, module, ptr, nbytes):
        """A module variable's memory: a Buffer that keeps its module loaded and is never freed itself."""
        self = cls.__new__(cls)
        Handle.__init__(self, module._ctx, ptr)
        self.pitch, self.nbytes, self._ptr, self._owner, self.managed = None, int(nbytes), ptr, module, False
        module._ctx._buffers[ptr] = self
        return self

    @property
    def ptr(self):
        """The device address (an int). Raises ContextClosed or InvalidHandle once freed."""
        return self._handle()

    def close(self):
        """Frees the memory now (gcap_mem_free); later use of the buffer raises InvalidHandle. Raises IllegalState,
        and keeps the buffer, when called from a host function or Python kernel of its context."""
        h = self._h
        if h is not None and self._ctx._h is not None:
            self._refuse_in_callback()
            if self._owner is None:
                check(lib.gcap_mem_free(self._ctx._h, h))
            self._ctx._buffers.pop(h, None)
        self._h = None

    def __repr__(self):
        return self._repr("%d bytes%s%s" % (self.nbytes, "" if self.pitch is None else ", pitch %d" % self.pitch,
                                            ", managed" if self.managed else ""))

    def host_array(self, dtype="uint8", count=None, offset=0):
        """A numpy array of `count` elements (default: as many as fit) from `offset` that IS the managed memory:
        host reads and writes go straight to it (synchronize the work that uses it first). It keeps the buffer
        alive, not its memory: do not use it after close(). Raises InvalidValue for memory that is not managed,
        a negative offset or count, or elements past the end."""
        import ctypes
        import numpy as np
        if not self.managed:
            raise InvalidValue("Buffer.host_array: the buffer is not managed memory (Context.managed)",
                               "GCAP_ERROR_INVALID_VALUE", 1)
        dtype, offset, count = self._span(np.dtype(dtype), count, offset, "Buffer.host_array")
        raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(self.ptr + offset)
        raw._gcap_buffer = self  # the array's base holds the buffer
        return np.frombuffer(raw, dtype=dtype, count=count)

    def _span(self, dtype, count, offset, who):
        """(dtype, offset, count) of `count` elements (default: as many as fit) from `offset`, checked against the
        buffer's size for `who`."""
        offset = _checked.size(offset, who + ": offset")
        if offset > self.nbytes:
            raise InvalidValue("%s: offset is %d, past the end of its %d bytes" % (who, offset, self.nbytes),
                               "GCAP_ERROR_INVALID_VALUE", 1)
        if count is None:
            count = (self.nbytes - offset) // dtype.itemsize
        count = _checked.size(count, who + ": count")
        _checked.within(offset, count * dtype.itemsize, self.nbytes, who)
        return dtype, offset, count

    def copy_from(self, data, stream=None, offset=0):
        """Copies a numpy array or bytes-like object in at `offset` (on `stream`, ordered, or synchronously); returns
        None. Raises InvalidValue for a negative offset or data that does not fit, TypeError for an offset that is
        not an int."""
        src, nbytes, keep = host_pointer(data)
        offset = _checked.size(offset, "Buffer.copy_from: offset")
        _checked.within(offset, nbytes, self.nbytes, "Buffer.copy_from")
        if stream is None:
            check(lib.gcap_memcpy(self._ctx._handle(), self.ptr + offset, src, nbytes, 1))
        else:
            s = handle_of(stream, Stream, "Buffer.copy_from: stream")
            stream._keep.append(keep)
            check(lib.gcap_memcpy_async(s, self.ptr + offset, src, nbytes, 1))

    def to_numpy(self, dtype="uint8", count=None, offset=0, stream=None):
        """A new numpy array of `count` elements (default: as many as fit) of the buffer's bytes from `offset`
        (synchronizing `stream` first when given). Raises InvalidValue for a negative offset or count, or for
        elements past the end; TypeError for an offset or count that is not an int."""
        import numpy as np
        dtype, offset, count = self._span(np.dtype(dtype), count, offset, "Buffer.to_numpy")
        out = np.empty(count, dtype)
        if stream is not None:
            stream.synchronize()
        if out.nbytes:
            check(lib.gcap_memcpy(self._ctx._handle(), out.ctypes.data, self.ptr + offset, out.nbytes, 2))
        return out


def host_pointer(data):
    """(address, bytes, object to keep alive) of a numpy array or bytes-like object."""
    if hasattr(data, "__array_interface__"):
        import numpy as np
        arr = np.ascontiguousarray(data)
        return arr.ctypes.data, arr.nbytes, arr
    buf = (ctypes.c_char * len(data)).from_buffer_copy(bytes(data))
    return ctypes.addressof(buf), len(data), buf


def copy_operands(dst, src, nbytes, what):
    """(dst address, src address, bytes, objects to keep alive): bytes default to the smaller known size, and are
    refused (InvalidValue) past the end of either operand whose size is known, a host array's among them."""
    d, dsize, dkeep = _pointer_of(dst, what + ": dst")
    s, ssize, skeep = _pointer_of(src, what + ": src")
    if nbytes is None:
        sizes = [x for x in (dsize, ssize) if x is not None]
        if not sizes:
            raise InvalidValue("%s: nbytes is needed for two plain addresses" % what, "GCAP_ERROR_INVALID_VALUE", 1)
        nbytes = min(sizes)
    nbytes = _checked.size(nbytes, what + ": nbytes")
    for name, known in (("dst", dsize), ("src", ssize)):
        if known is not None and nbytes > known:
            raise InvalidValue("%s: nbytes %d is more than %s's %d bytes" % (what, nbytes, name, known),
                               "GCAP_ERROR_INVALID_VALUE", 1)
    return d, s, nbytes, (dkeep, skeep)


def fill_range(buf, offset, nbytes, what):
    """(address, bytes) of a fill of `nbytes` (default: to the end) of `buf` from `offset`: InvalidValue for a
    negative offset or size, or for bytes past the end of memory whose size is known."""
    if type(buf) is Buffer and type(offset) is int and (nbytes is None or type(nbytes) is int):
        known = buf.nbytes  # the common case, checked first: a buffer, ints inside it
        if 0 <= offset <= known:
            count = known - offset if nbytes is None else nbytes
            if 0 <= count <= known - offset:
                return buf.ptr + offset, count
    ptr, known, _ = _pointer_of(buf, what + ": dst")
    offset = _checked.size(offset, what + ": offset")
    if known is not None and offset > known:
        raise InvalidValue("%s: offset is %d, past the end of its %d bytes" % (what, offset, known),
                           "GCAP_ERROR_INVALID_VALUE", 1)
    if nbytes is None:
        if known is None:
            raise InvalidValue("%s: nbytes is needed for a plain address" % what, "GCAP_ERROR_INVALID_VALUE", 1)
        nbytes = known - offset
    nbytes = _checked.size(nbytes, what + ": nbytes")
    if known is not None:
        _checked.within(offset, nbytes, known, what)
    return _checked.integer(ptr + offset, what + ": dst address", "pointer"), nbytes


def pitched_fits(x, known, pitch, width, rows, what, name):
    """Refuses (InvalidValue) `rows` rows of `width` bytes, `pitch` apart, that do not fit operand `name`'s size."""
    if known is not None and rows and (rows - 1) * pitch + width > known:
        raise InvalidValue("%s: %d rows of %d bytes, %d apart, do not fit %s's %d bytes"
                           % (what, rows, width, pitch, name, known), "GCAP_ERROR_INVALID_VALUE", 1)


def _pointer_of(x, what="address"):
    """(address, bytes or None, keep) of a Buffer, an array or an int address."""
    if isinstance(x, Buffer):
        return x.ptr, x.nbytes, x
    if isinstance(x, int) and not isinstance(x, bool):
        return _checked.integer(x, what, "pointer"), None, None
    from ._arrays import device_operand  # a DeviceArray, or another library's CUDA array: device memory
    found = device_operand(x)
    if found is not None:
        return found
    return host_pointer(x)


# ------------------------------------------------------------------ streams and events

_MODES = {"global": 0, "thread_local": 1, "relaxed": 2}
STREAM_DEFAULT = 0  # blocking: the legacy stream orders it (cudaStreamDefault)
STREAM_NON_BLOCKING = 1  # what ctx.stream() makes (cudaStreamNonBlocking)


class Stream(Handle):
    """A stream of a context (cudaStream_t): `ctx.stream()`. Work issued to it runs in issue order: memset,
    memcpy, memcpy_2d, launch, host_func; wait(event) and wait_stream(other) order it after other streams;
    synchronize() and query() wait for it or ask about it; `with s.capture() as cap:` records its work into
    `cap.graph` instead of running it. close() (or collection) destroys it after its work; IllegalState while
    it captures."""

    _destroy = staticmethod(_free_stream)

    def __init__(self, ctx, flags=None, priority=0):
        h = c_void_p()
        if flags is None and priority == 0:
            check(lib.gcap_stream_create(ctx._handle(), byref(h)))
        else:
            flags = STREAM_NON_BLOCKING if flags is None else _checked.integer(flags, "Context.stream: flags", "unsigned")
            priority = _checked.integer(priority, "Context.stream: priority", "int")
            check(lib.gcap_stream_create_with_flags(ctx._handle(), flags, priority, byref(h)))
        super().__init__(ctx, h.value)
        self._keep = []  # host arrays of copies not yet waited for

    @classmethod
    def _default(cls, ctx, h):
        """An object for the legacy or a per-thread stream, which the context owns: close() only forgets it."""
        s = cls.__new__(cls)
        Handle.__init__(s, ctx, h)
        s._destroy = None
        s._keep = []
        return s

    @property
    def flags(self):
        """gcap.STREAM_NON_BLOCKING or gcap.STREAM_DEFAULT (blocking), as made."""
        v = c_uint()
        check(lib.gcap_stream_get_flags(self._handle(), byref(v)))
        return v.value

    @property
    def priority(self):
        """Its priority, after clamping (lower is more urgent)."""
        v = c_int()
        check(lib.gcap_stream_get_priority(self._handle(), byref(v)))
        return v.value


    def synchronize(self):
        """Waits until all work issued to the stream is done (cudaStreamSynchronize); returns None. Raises
        CaptureUnsupported while it captures, a kernel's sticky fault, or CallbackError when a Python callback
        raised."""
        st = lib.gcap_stream_synchronize(self._handle())
        if st == 0:
            self._keep.clear()
        self._ctx._report_callbacks(st)

    def query(self):
        """True when all its work is done, False while some is pending (Python callbacks it ran raise as synchronize
        says)."""
        st = lib.gcap_stream_query(self._handle())
        self._ctx._report_callbacks(0 if st == 7 else st)
        return st != 7

    def wait(self, event):
        """Makes later work on this stream wait for `event`'s latest record (cudaStreamWaitEvent); returns None."""
        check(lib.gcap_stream_wait_event(self._handle(), handle_of(event, Event, "Stream.wait: event")))

    def wait_stream(self, other):
        """Makes later work on this stream wait for all work issued to `other` so far (PyTorch's
        `Stream.wait_stream`: an event recorded on `other`, waited for here); returns None. During a capture
        this forks `other` into it or joins it back, as a record and a wait do."""
        e = Event(self._ctx)
        e.record(other)
        self.wait(e)
        self._keep.append(e)

    def memset(self, buf, value, offset=0, nbytes=None):
        """Fills nbytes (default: to the end) of `buf` (a Buffer, a DeviceArray or an address) from `offset` with the
        byte `value`; returns None. Raises InvalidValue for a negative offset or size or bytes past the end,
        OverflowError for a value outside 0..255."""
        ptr, nbytes = fill_range(buf, offset, nbytes, "Stream.memset")
        if type(value) is not int or not 0 <= value <= 255:
            value = _checked.integer(value, "Stream.memset: value", "byte")
        check(lib.gcap_memset_async(self._handle(), ptr, value, nbytes))

    def memcpy(self, dst, src, nbytes=None, kind="default"):
        """Copies between Buffers, DeviceArrays, host arrays and addresses (kind inferred from the pointers by
        default); returns None. Raises InvalidValue for nbytes past the end of an operand whose size is known."""
        d, s, nbytes, keep = copy_operands(dst, src, nbytes, "Stream.memcpy")
        kind = kind_of(kind, "Stream.memcpy: kind")
        self._keep.extend(x for x in keep if x is not None and not isinstance(x, Buffer))
        check(lib.gcap_memcpy_async(self._handle(), d, s, nbytes, kind))

    def memcpy_2d(self, dst, dpitch, src, spitch, width, height, kind="default"):
        """`height` rows of `width` bytes, rows `spitch` bytes apart in src and `dpitch` in dst (cudaMemcpy2DAsync);
        returns None. Raises InvalidValue for rows past the end of an operand whose size is known."""
        what = "Stream.memcpy_2d"
        d, dsize, dkeep = _pointer_of(dst, what + ": dst")
        s, ssize, skeep = _pointer_of(src, what + ": src")
        dpitch, spitch = _checked.size(dpitch, what + ": dpitch"), _checked.size(spitch, what + ": spitch")
        width, height = _checked.size(width, what + ": width"), _checked.size(height, what + ": height")
        pitched_fits(dst, dsize, dpitch, width, height, what, "dst")
        pitched_fits(src, ssize, spitch, width, height, what, "src")
        kind = kind_of(kind, what + ": kind")
        self._keep.extend(x for x in (dkeep, skeep) if x is not None and not isinstance(x, Buffer))
        check(lib.gcap_memcpy_2d_async(self._handle(), d, dpitch, s, spitch, width, height, kind))

    def launch(self, kernel, grid, block, args=(), shared_mem=0, cooperative=False):
        """Launches `kernel` (from ctx.load_module) on `grid` x `block` (an int or 1 to 3 ints each) with `args`
        converted to its parameter types; returns None. Raises TypeError, OverflowError or InvalidValue naming
        a dimension or argument that is not an int, does not fit its C type or is negative. `cooperative=True`
        is a cooperative launch (cudaLaunchCooperativeKernel): every block resident at once, so a grid-wide
        barrier (cooperative_groups' this_grid().sync()) completes; CooperativeLaunchTooLarge when the grid
        does not fit on the device at once (nothing runs)."""
        from ._kernels import Kernel
        k = handle_of(kernel, Kernel, "Stream.launch: kernel")
        grid, block = dim3_of(grid, "Stream.launch: grid"), dim3_of(block, "Stream.launch: block")
        shared_mem = _checked.size(shared_mem, "Stream.launch: shared_mem", "uint32")
        fn = lib.gcap_launch_cooperative_kernel if _checked.flag(cooperative, "Stream.launch: cooperative") \
            else lib.gcap_launch_kernel
        packed = kernel._pack(args)
        self._ctx._report_callbacks(fn(self._handle(), k, grid, block, shared_mem, packed.pointers))

    def host_func(self, fn):
        """Runs fn() when the stream reaches it (a host node when capturing)."""
        cb = self._ctx._keep_alive(host_callback(self._ctx, fn))
        self._ctx._report_callbacks(lib.gcap_launch_host_func(self._handle(), cb, None))

    def capture(self, mode="global"):
        """`with s.capture() as cap:` records the stream's work into `cap.graph` instead of running it."""
        return Capture(self, mode)

    def capture_info(self):
        """(status, graph pointer, number of frontier nodes) of the stream's capture."""
        info = _lib.capture_info()
        check(lib.gcap_stream_get_capture_info(self._handle(), byref(info)))
        return {"status": ("none", "active", "invalidated")[info.status], "id": info.id,
                "frontier": info.num_dependencies}


def dim3_of(v, what):
    """The gcap_dim3 of an int or of 1 to 3 ints (checked: each a uint32 from 0)."""
    return _lib.dim3(*_checked.dims(v, what))


def host_callback(ctx, fn):
    """A C host function calling fn(); an exception cannot cross C, so the next call reports it."""
    what = "host function %s" % getattr(fn, "__name__", repr(fn))

    def call(_user_data):
        run_callback(ctx, what, fn)
    return _lib.host_fn(call)


class Event(Handle):
    """An event of a context (cudaEvent_t, with timing): `ctx.event()`. record(stream) marks a point of a stream,
    which other streams wait for (Stream.wait) and the host waits for (synchronize) or asks about (query);
    elapsed_ms(end) is the time between two records. During a capture a record marks a node that other
    streams fork from."""

    _destroy = staticmethod(_free_event)

    def __init__(self, ctx):
        h = c_void_p()
        check(lib.gcap_event_create(ctx._handle(), byref(h)))
        super().__init__(ctx, h.value)


    def record(self, stream):
        """Records the event at this point of `stream` (cudaEventRecord); returns None. During a capture it marks a
        node others may wait for."""
        check(lib.gcap_event_record(self._handle(), handle_of(stream, Stream, "Event.record: stream")))

    def synchronize(self):
        """Waits until the work before the latest record is done (cudaEventSynchronize); returns None."""
        self._ctx._report_callbacks(lib.gcap_event_synchronize(self._handle()))

    def query(self):
        """True when the work before the latest record is done (or it was never recorded), False while pending."""
        st = lib.gcap_event_query(self._handle())
        self._ctx._report_callbacks(0 if st == 7 else st)
        return st != 7

    def elapsed_ms(self, end):
        """Milliseconds (a float) from this event's record to `end`'s (cudaEventElapsedTime). Raises NotReady
        while either record is pending, InvalidValue when either was never recorded."""
        ms = c_float()
        check(lib.gcap_event_elapsed_time(self._handle(), handle_of(end, Event, "Event.elapsed_ms: end"), byref(ms)))
        return ms.value

    def elapsed_time(self, end):
        """PyTorch's name for elapsed_ms: milliseconds from this event's record to `end`'s."""
        return self.elapsed_ms(end)


# ------------------------------------------------------------------ capture


class Capture:
    """A scoped stream capture: `with stream.capture(mode="global") as cap:` records the stream's work.

    After the block, `cap.graph` is the captured Graph. A capture that fails raises when the block ends:
    the status's exception (CaptureUnjoined, CaptureInvalidated, ...) with the C message naming the first
    offending call; `cap.error` keeps it, `cap.graph` stays None and the stream is usable again. An
    exception raised inside the block ends and discards the capture, leaves the stream usable, and
    propagates unchanged."""

    def __init__(self, stream, mode):
        if mode not in _MODES:
            raise InvalidValue("mode %r is not 'global', 'thread_local' or 'relaxed'" % (mode,),
                               "GCAP_ERROR_INVALID_VALUE", 1)
        self.stream, self.mode = stream, mode
        self.graph, self.error = None, None
        self._h = None

    def __enter__(self):
        opts = _lib.capture_options()
        lib.gcap_capture_options_init(byref(opts))
        opts.mode = _MODES[self.mode]
        h = c_void_p()
        check(lib.gcap_capture_begin(self.stream._handle(), byref(opts), byref(h)))
        self._h = h.value
        return self

    def __exit__(self, exc_type, exc, tb):
        h, self._h = self._h, None
        if exc_type is not None:
            lib.gcap_capture_destroy(h)  # ends it, discards the graph: the stream is usable again
            return False
        g = c_void_p()
        st = lib.gcap_capture_end(h, byref(g))
        if st != 0:
            self.error = error_of(st)  # taken before the destroy can touch this thread's message
        lib.gcap_capture_destroy(h)
        if self.error is not None:
            raise self.error  # as torch.cuda.graph does: a failed capture never passes silently
        from ._graphs import Graph
        self.graph = Graph(self.stream._ctx, g.value)
        return False

    @property
    def status(self):
        """'active', 'invalidated' while it lasts; 'ended' or 'failed' after."""
        if self._h is None:
            return "failed" if self.error is not None else "ended" if self.graph is not None else "not begun"
        s = c_int()
        check(lib.gcap_capture_get_status(self._h, byref(s)))
        return ("none", "active", "invalidated")[s.value]

    def __repr__(self):
        if self.graph is not None:
            return "<gcap.Capture (%s mode): %d nodes, %d edges>" % (self.mode, len(self.graph.nodes), len(self.graph.edges))
        if self.error is not None:
            return "<gcap.Capture (%s mode) failed: %s: %s>" % (self.mode, self.error.status, self.error)
        return "<gcap.Capture (%s mode) %s>" % (self.mode, self.status)



class UserObject(Handle):
    """cudaUserObjectCreate: `retain(n)`, `release(n)`; graphs take references with Graph.retain_user_object.
    The Python object holds no reference: its references are the counts given."""

    def __init__(self, ctx, destroy, refs):
        self._callback = ctx._keep_alive(host_callback(ctx, destroy))
        h = c_void_p()
        refs = _checked.size(refs, "UserObject: refs", "unsigned")
        check(lib.gcap_user_object_create(ctx._handle(), None, self._callback, refs, 1, byref(h)))
        super().__init__(ctx, h.value)

    def close(self):
        """Forgets the handle; the object's references (yours and graphs') still decide when `destroy` runs."""
        self._h = None  # its references count, not this object

    def retain(self, count=1):
        """Adds `count` references of yours (cudaUserObjectRetain); returns None."""
        check(lib.gcap_user_object_retain(self._handle(), _checked.size(count, "UserObject.retain: count", "unsigned")))

    def release(self, count=1):
        """Drops `count` of your references; `destroy` runs once no reference is left (cudaUserObjectRelease)."""
        check(lib.gcap_user_object_release(self._handle(), _checked.size(count, "UserObject.release: count",
                                                                          "unsigned")))
