"""gcap: record the work of CUDA streams into graphs, instantiate and replay them, on a GPU or on a CPU
simulator that enforces every capture rule, from Python.

    import gcap, numpy as np
    with gcap.Context(backend="sim") as ctx:
        s = ctx.stream(); buf = ctx.alloc(4096)
        with s.capture() as cap:
            s.memset(buf, 7)
        x = cap.graph.instantiate(); x.launch(s); s.synchronize()
        print(buf.to_numpy(np.uint8)[:4])
"""
from ._lib import lib as _clib
from ._objects import (AssertError, BackendError, Buffer, CallbackError, Capture, CapturedEvent, CaptureImplicit,
                       CaptureInvalidated, CaptureIsolation, CaptureMerge, CaptureUnjoined, CaptureUnmatched,
                       CaptureUnsupported, CaptureWrongThread, Context, ContextClosed, CooperativeLaunchTooLarge, Error,
                       Event, ExecUpdateFailure, IllegalAddress, IllegalInstruction, IllegalState, InvalidHandle,
                       InvalidPtx, InvalidSource, InvalidValue, LaunchFailure, LaunchTimeout, MisalignedAddress,
                       NotFound, NotInitialized, NotReady, NotSupported, OutOfMemory, STREAM_DEFAULT,
                       STREAM_NON_BLOCKING, Stream, UserObject)
from ._graphs import Exec, Graph, Node, Race
from ._kernels import Kernel, KernelDef, Module, kernel
from ._arrays import DeviceArray


def set_conditional(handle, value):
    """cudaGraphSetConditional for Python simulator kernels: sets the conditional handle's value. Raises TypeError
    or OverflowError for a handle that is not a uint64 or a value that is not a C unsigned int."""
    from ._checked import integer
    _clib.gcap_sim_set_conditional(integer(handle, "set_conditional: handle", "uint64"),
                                   integer(value, "set_conditional: value", "unsigned"))


def version():
    """The C library's version, "major.minor.patch"."""
    import ctypes
    major, minor, patch = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    _clib.gcap_version(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch))
    return "%d.%d.%d" % (major.value, minor.value, patch.value)


__version__ = version()

__all__ = [
    "Context", "Stream", "Event", "Buffer", "Capture", "Graph", "Node", "Exec", "Race", "Module", "Kernel", "KernelDef",
    "kernel", "set_conditional", "version", "DeviceArray",
    "Error", "InvalidValue", "OutOfMemory", "NotInitialized", "InvalidHandle", "NotSupported", "NotFound", "NotReady",
    "IllegalState", "CaptureUnsupported", "CaptureInvalidated", "CaptureMerge", "CaptureUnmatched", "CaptureUnjoined",
    "CaptureIsolation", "CaptureImplicit", "CapturedEvent", "CaptureWrongThread", "ExecUpdateFailure", "BackendError",
    "InvalidPtx", "InvalidSource", "IllegalAddress", "AssertError", "IllegalInstruction", "MisalignedAddress",
    "LaunchFailure", "LaunchTimeout", "CooperativeLaunchTooLarge", "ContextClosed", "CallbackError", "UserObject",
]
