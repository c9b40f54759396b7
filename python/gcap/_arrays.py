"""Typed device arrays and the GPU array protocols.

DeviceArray (ctx.empty, ctx.zeros, ctx.asarray) is a shape and a numpy dtype over device memory. It
exports the array protocols other libraries read: on CUDA `__cuda_array_interface__` (version 3) and
DLPack (kDLCUDA); on the simulator, whose device memory is host memory, `__array_interface__` and DLPack
(kDLCPU), so numpy views it without a copy. The other way, copies, fills and kernel arguments accept a
DeviceArray and another library's CUDA array (CuPy, PyTorch, Numba: `__cuda_array_interface__`, or
`__dlpack__` on a CUDA device) as device memory: `device_operand` and `device_address`.
"""
import ctypes
import numbers
import operator
import os
from ctypes import POINTER, c_char_p, c_int, c_int32, c_int64, c_uint8, c_uint16, c_uint64, c_void_p, py_object

from ._lib import lib
from ._objects import Buffer, Error, InvalidValue, NotSupported, Stream, check, handle_of

# DLPack device types (dlpack.h, DLDeviceType)
KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13

_INVALID = ("GCAP_ERROR_INVALID_VALUE", 1)
_UNSUPPORTED = ("GCAP_ERROR_NOT_SUPPORTED", 5)


# ------------------------------------------------------------------ DLPack's C structs (dlpack.h)


class DLDevice(ctypes.Structure):
    """dlpack.h's DLDevice: a device type (kDLCPU 1, kDLCUDA 2, ...) and its ordinal."""
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(ctypes.Structure):
    """dlpack.h's DLDataType: a type code (0 int, 1 uint, 2 float, 5 complex, 6 bool), bits and lanes."""
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(ctypes.Structure):
    """dlpack.h's DLTensor: data, device, shape and strides (in elements; NULL for C order)."""
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32), ("dtype", DLDataType),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class DLManagedTensor(ctypes.Structure):
    """dlpack.h's DLManagedTensor: what a "dltensor" capsule points at."""
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", c_void_p)]


class DLPackVersion(ctypes.Structure):
    """dlpack.h's DLPackVersion: major and minor."""
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    """dlpack.h's DLManagedTensorVersioned (DLPack 1.0): what a "dltensor_versioned" capsule points at."""
    _fields_ = [("version", DLPackVersion), ("manager_ctx", c_void_p), ("deleter", c_void_p), ("flags", c_uint64),
                ("dl_tensor", DLTensor)]


_capsule_pointer = ctypes.PYFUNCTYPE(c_void_p, py_object, c_char_p)(("PyCapsule_GetPointer", ctypes.pythonapi))
_capsule_is_valid = ctypes.PYFUNCTYPE(c_int, py_object, c_char_p)(("PyCapsule_IsValid", ctypes.pythonapi))


def _dlpack_tensor(capsule):
    """The DLTensor of an unused "dltensor" or "dltensor_versioned" capsule, in the capsule's memory (valid while
    the capsule lives)."""
    for name, managed in ((b"dltensor", DLManagedTensor), (b"dltensor_versioned", DLManagedTensorVersioned)):
        if _capsule_is_valid(capsule, name):
            return managed.from_address(_capsule_pointer(capsule, name)).dl_tensor
    raise InvalidValue("__dlpack__() did not give an unused \"dltensor\" capsule", *_INVALID)


def _dlpack_layout(t):
    """(address, bytes) of a C-contiguous DLTensor; InvalidValue for one with gaps or another order."""
    itemsize = (t.dtype.bits * t.dtype.lanes + 7) // 8
    shape = [t.shape[i] for i in range(t.ndim)]
    strides = None if not t.strides else [t.strides[i] * itemsize for i in range(t.ndim)]
    return (t.data or 0) + t.byte_offset, _contiguous_bytes(shape, itemsize, strides, "a DLPack tensor")


def _dlpack_capsule(keep, shape, dtype, ptr, device, max_version=None):
    """A DLPack capsule of the C-contiguous memory at `ptr`, keeping `keep` alive until its consumer is done:
    "dltensor_versioned" (writable) when `max_version` allows DLPack 1.0 and numpy makes one, else "dltensor".

    numpy exports a view of that memory (numpy never reads it), then the capsule is told the real `device`,
    a (DLPack device type, id) pair. numpy's capsule destructor and deleter are C functions: unlike ctypes
    callbacks they are safe when a capsule goes while an exception propagates, and the destructor leaves a
    capsule a consumer renamed "used_dltensor" to that consumer, who calls the deleter."""
    import numpy as np
    view = np.asarray(_Exported(keep, _array_interface(shape, dtype, ptr)))
    capsule = None
    if max_version is not None and tuple(max_version) >= (1, 0):
        try:
            capsule = view.__dlpack__(max_version=tuple(max_version))
        except TypeError:  # numpy before 2.1 exports unversioned capsules only
            capsule = None
    if capsule is None:
        capsule = view.__dlpack__()
    _dlpack_tensor(capsule).device = DLDevice(*device)
    return capsule


class _Exported:
    """What an exported view of device memory keeps alive (numpy's `base`): `array`, and the interface numpy read."""

    def __init__(self, array, interface):
        self.array = array
        self.__array_interface__ = interface


# ------------------------------------------------------------------ the interface dicts


def _array_interface(shape, dtype, ptr):
    """numpy's `__array_interface__` (version 3) of C-contiguous writable memory at `ptr`."""
    return {"shape": tuple(shape), "typestr": dtype.str, "data": (int(ptr), False), "strides": None, "version": 3}


def _cuda_interface(shape, dtype, ptr, stream=None):
    """`__cuda_array_interface__` (version 3) of C-contiguous device memory at `ptr`; `stream` is the CUstream
    handle (an int) its data is ready on, or None when no stream needs waiting for."""
    return {"shape": tuple(shape), "typestr": dtype.str, "data": (int(ptr), False), "strides": None, "version": 3,
            "stream": stream}


def _contiguous_bytes(shape, itemsize, strides, what):
    """The bytes of C-contiguous memory of `shape`; InvalidValue when byte `strides` (None: C order) leave gaps."""
    count = 1
    for n in shape:
        count *= int(n)
    if strides is not None and count:
        expect = itemsize
        for n, step in zip(reversed(shape), reversed(list(strides))):
            if n != 1 and step != expect:
                raise InvalidValue("%s of shape %s with byte strides %s is not C-contiguous: copies, fills and "
                                   "kernels take contiguous memory (make it contiguous first)"
                                   % (what, tuple(shape), tuple(strides)), *_INVALID)
            expect *= n
    return count * itemsize


# ------------------------------------------------------------------ other libraries' device arrays


def _from_cuda_interface(cai):
    """(address, bytes) of a `__cuda_array_interface__` dict; InvalidValue for masked or non-contiguous memory."""
    import numpy as np
    if cai.get("mask") is not None:
        raise InvalidValue("a masked __cuda_array_interface__ array cannot be device memory for gcap", *_INVALID)
    shape = tuple(int(n) for n in cai["shape"])
    nbytes = _contiguous_bytes(shape, np.dtype(cai["typestr"]).itemsize, cai.get("strides"), "a CUDA array")
    return int(cai["data"][0] or 0), nbytes


def _foreign(x):
    """(address, bytes, keep) of another library's CUDA array: its `__cuda_array_interface__` where it has one,
    else its DLPack export on a CUDA device; None for anything else (host arrays among them)."""
    try:
        cai = x.__cuda_array_interface__
    except AttributeError:
        cai = None
    if cai is not None:
        return _from_cuda_interface(cai) + (x,)
    device = getattr(x, "__dlpack_device__", None)
    if device is None or hasattr(x, "__array_interface__") or int(device()[0]) not in (KDL_CUDA, KDL_CUDA_MANAGED):
        return None
    capsule = x.__dlpack__()
    return _dlpack_layout(_dlpack_tensor(capsule)) + ((x, capsule),)  # the capsule's destructor frees it, unused


def device_operand(x):
    """(device address, bytes, object to keep alive) of a DeviceArray or of another library's CUDA array
    (`__cuda_array_interface__`, or `__dlpack__` on a CUDA device); None for anything else. Raises
    InvalidValue for memory that is not C-contiguous."""
    if isinstance(x, DeviceArray):
        return x.ptr, x.nbytes, x
    if x is None or isinstance(x, (Buffer, numbers.Number, str, bytes, bytearray, memoryview)):
        return None
    return _foreign(x)


def device_address(x):
    """The device address of a DeviceArray or another library's CUDA array (an int); None for anything else."""
    found = device_operand(x)
    return None if found is None else found[0]


# ------------------------------------------------------------------ making arrays


def _shape_of(shape, what):
    """`shape` as a tuple of non-negative ints: TypeError for what is not an int or a sequence of ints (a float
    among them, as numpy has it), InvalidValue for a negative dimension."""
    try:
        dims = tuple(operator.index(n) for n in ((shape,) if isinstance(shape, numbers.Integral) else shape))
    except TypeError:
        raise TypeError("%s: shape must be an int or a sequence of ints, not %s %r"
                        % (what, type(shape).__name__, shape)) from None
    if any(n < 0 for n in dims):
        raise InvalidValue("%s: shape %r has a negative dimension" % (what, dims), *_INVALID)
    return dims


def _dtype_of(dtype):
    """`dtype` as a numpy dtype of plain data; InvalidValue otherwise."""
    import numpy as np
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise InvalidValue("dtype %r is not a numpy dtype: %s" % (dtype, exc), *_INVALID) from None
    if dt.hasobject or dt.itemsize == 0:
        raise InvalidValue("dtype %s cannot live in device memory (Python objects, or no size)" % dt, *_INVALID)
    return dt


def empty(ctx, shape, dtype="float32"):
    """A DeviceArray of new, uninitialized device memory (ctx.empty)."""
    shape, dtype = _shape_of(shape, "Context.empty"), _dtype_of(dtype)
    count = 1
    for n in shape:
        count *= n
    buf = ctx.alloc(max(1, count * dtype.itemsize))  # gcap_mem_alloc takes no 0: an empty array has 1 byte
    return DeviceArray(buf, shape, dtype)


def zeros(ctx, shape, dtype="float32", stream=None):
    """A DeviceArray of new device memory, zeroed by a memset: on `stream`, else on a stream of its own, waited for."""
    a = empty(ctx, shape, dtype)
    if a.nbytes:
        s = ctx.stream() if stream is None else stream
        check(lib.gcap_memset_async(s._handle(), a.ptr, 0, a.nbytes))
        if stream is None:
            s.synchronize()
            s.close()
        else:
            a._written_on(stream)
    return a


def asarray(ctx, data, stream=None, dtype=None):
    """A DeviceArray holding a copy of `data` (ctx.asarray); a DeviceArray of ctx of that dtype is returned as is."""
    import numpy as np
    if isinstance(data, DeviceArray) and data.context is ctx and (dtype is None or np.dtype(dtype) == data.dtype):
        return data
    if isinstance(data, DeviceArray) or device_operand(data) is not None:
        raise InvalidValue("ctx.asarray takes host data; copy device memory with empty(...).set(array) or "
                           "Stream.memcpy", *_INVALID)
    host = np.asarray(data, dtype=dtype)
    a = empty(ctx, host.shape, host.dtype)
    a.set(host, stream=stream)
    return a


# ------------------------------------------------------------------ the array


class DeviceArray:
    """A typed, C-contiguous view of device memory: `ctx.empty(shape, dtype)`, `ctx.zeros(...)`, `ctx.asarray(a)`.

    `.shape`, `.dtype`, `.ptr` (the device address) and the rest of numpy's metadata; `.get()` and `.set(a)`
    copy out and in. `a[i]` and `a[start:stop]` on the first axis are views of the same memory, which keep
    the array they view alive. Copies, fills (Stream.memcpy, Stream.memset, Graph.add_memcpy, ...) and
    kernel pointer arguments take it as device memory.

    Other libraries read it through the array protocols: on CUDA `__cuda_array_interface__` and DLPack
    (cupy.asarray(a), torch.from_dlpack(a)); on the simulator, whose device memory is host memory,
    `__array_interface__` and DLPack (numpy.asarray(a), numpy.from_dlpack(a): views without a copy). Such a
    view must not outlive the context, which frees the memory. The memory is the context's until it closes,
    as a Buffer's is (`.buffer`).
    """

    def __init__(self, buffer, shape, dtype, offset=0, base=None):
        self._buffer, self._shape, self._dtype, self._offset, self._base = buffer, shape, dtype, offset, base
        self._root = self if base is None else base._root  # who remembers the backend and the last writer
        if base is None:
            self._backend = buffer.context.backend
            self._stream = None  # the stream the last asarray/set/zeros wrote it on

    # -------------------------------------------------------------- metadata

    @property
    def shape(self):
        """The dimensions, a tuple of ints."""
        return self._shape

    @property
    def dtype(self):
        """The element type, a numpy dtype."""
        return self._dtype

    @property
    def ndim(self):
        """The number of dimensions."""
        return len(self._shape)

    @property
    def size(self):
        """The number of elements."""
        count = 1
        for n in self._shape:
            count *= n
        return count

    @property
    def itemsize(self):
        """The bytes of one element."""
        return self._dtype.itemsize

    @property
    def nbytes(self):
        """The bytes of all elements."""
        return self.size * self._dtype.itemsize

    @property
    def strides(self):
        """The byte step of each dimension, C order (a tuple)."""
        out, step = [], self._dtype.itemsize
        for n in reversed(self._shape):
            out.append(step)
            step *= n
        return tuple(reversed(out))

    @property
    def ptr(self):
        """The device address of the first element (an int). Raises ContextClosed or InvalidHandle once the
        memory is freed."""
        return self._buffer.ptr + self._offset

    @property
    def context(self):
        """The Context whose memory this is."""
        return self._buffer.context

    @property
    def buffer(self):
        """The Buffer of the memory (a view's is its array's), which this array keeps alive."""
        return self._buffer

    @property
    def backend(self):
        """'sim' or 'cuda': where the memory is."""
        return self._root._backend

    def __len__(self):
        """The first dimension; TypeError for a 0-d array."""
        if not self._shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self._shape[0]

    def __repr__(self):
        try:
            where = "at 0x%x ctx=0x%x %s" % (self.ptr, self.context._handle(), self.backend)
        except Error:
            where = "(freed)"
        return "<gcap.DeviceArray shape=%s %s %s>" % (self._shape, self._dtype, where)

    # -------------------------------------------------------------- views

    def __getitem__(self, key):
        """A view of whole elements of the first axis: `a[i]` (one fewer dimension) or `a[start:stop]`, sharing
        this array's memory and keeping it alive. Raises InvalidValue for what is not contiguous (steps,
        later axes, fancy or boolean indexing), IndexError for an index outside the first axis."""
        if isinstance(key, tuple) and not key:
            return DeviceArray(self._buffer, self._shape, self._dtype, self._offset, self)
        first = _first_axis(key)
        if first is None:
            raise InvalidValue("DeviceArray[%s]: indexing gives contiguous views only, a[i] or a[start:stop] on the "
                               "first axis (no steps, later axes, fancy or boolean indexing); index .get()'s numpy "
                               "array instead" % _index_text(key), *_INVALID)
        if not self._shape:
            raise IndexError("a 0-d DeviceArray has no axis to index")
        n, row = self._shape[0], self.nbytes // self._shape[0] if self._shape[0] else 0
        if isinstance(first, slice):
            start, stop, _ = first.indices(n)
            shape, start = (max(0, stop - start),) + self._shape[1:], min(start, n)
        else:
            start = operator.index(first) + (n if operator.index(first) < 0 else 0)
            if not 0 <= start < n:
                raise IndexError("index %d is out of bounds for axis 0 with size %d" % (operator.index(first), n))
            shape = self._shape[1:]
        return DeviceArray(self._buffer, shape, self._dtype, self._offset + start * row, self)

    # -------------------------------------------------------------- copies

    def get(self, stream=None):
        """A new numpy array of the elements, copied out (synchronizing `stream` first when given). Raises
        ContextClosed once the context is closed."""
        import numpy as np
        out = np.empty(self._shape, self._dtype)
        if stream is not None:
            stream.synchronize()
        if out.nbytes:
            check(lib.gcap_memcpy(self.context._handle(), out.ctypes.data, self.ptr, out.nbytes, 2))
        return out

    def copy_to_host(self, stream=None):
        """Numba's name for get: a new numpy array of the elements."""
        return self.get(stream)

    def set(self, data, stream=None):
        """Copies `data` in: a host array (or scalar) broadcast to the shape and converted to the dtype, or device
        memory of the same shape and dtype (a DeviceArray, a CUDA array of another library). On `stream`,
        ordered (the host data is kept until the stream is synchronized), else synchronously. Returns None;
        raises InvalidValue for data of another shape."""
        import numpy as np
        found = device_operand(data)
        if found is not None:
            self._check_like(data, found[1])
            self._copy(found[0], found[1], 3, stream, data)
            return
        try:
            host = np.ascontiguousarray(np.broadcast_to(np.asarray(data, dtype=self._dtype), self._shape))
        except ValueError as exc:
            raise InvalidValue("DeviceArray.set: %s data into shape %s: %s" % (np.shape(data), self._shape, exc),
                               *_INVALID) from None
        self._copy(host.ctypes.data, host.nbytes, 1, stream, host)

    def _check_like(self, data, nbytes):
        shape, dtype = getattr(data, "shape", None), getattr(data, "dtype", None)
        if nbytes != self.nbytes or (shape is not None and tuple(shape) != self._shape) or \
                (isinstance(data, DeviceArray) and dtype != self._dtype):
            raise InvalidValue("DeviceArray.set: device data of shape %s (%d bytes) into %s %s" % (
                shape, nbytes, self._shape, self._dtype), *_INVALID)

    def _copy(self, src, nbytes, kind, stream, keep):
        if not nbytes:
            return
        if stream is None:
            check(lib.gcap_memcpy(self.context._handle(), self.ptr, src, nbytes, kind))
            return
        s = handle_of(stream, Stream, "DeviceArray.set: stream")
        stream._keep.append(keep)
        check(lib.gcap_memcpy_async(s, self.ptr, src, nbytes, kind))
        self._written_on(stream)

    def _written_on(self, stream):
        """Remembers `stream` as the one the data is ready on, unless it captures (then nothing was written)."""
        if stream.capture_info()["status"] == "none":
            self._root._stream = stream

    def _stream_handle(self):
        """The CUstream (an int) the data was last written on, or None."""
        s = self._root._stream
        if s is None or _cuda_stream is None:
            return None
        try:
            return _cuda_stream(s._handle()) or None
        except Error:  # closed since: its work was issued before, and waiting for it is no longer possible
            return None

    def _wait_for_writer(self):
        """Synchronizes the stream the data was last written on (unless it captures now)."""
        s = self._root._stream
        if s is not None and s._h is not None and s.capture_info()["status"] == "none":
            s.synchronize()
            self._root._stream = None

    # -------------------------------------------------------------- protocols

    def _refuse_strict(self, what):
        if _strict_memory(self.context):
            raise NotSupported("%s: the context has strict memory (strict_memory=True or GCAP_SIM_STRICT_MEMORY=1), "
                               "where host code touching device memory faults, so it is not exported as host memory; "
                               ".get() copies it out" % what, *_UNSUPPORTED)

    @property
    def __cuda_array_interface__(self):
        """CUDA: the CUDA Array Interface, version 3 (shape, typestr, data, strides None, stream: the CUstream of
        the last asarray/set/zeros on a stream, or None). On the simulator there is none (AttributeError):
        its device memory is host memory."""
        if self.backend != "cuda":
            raise AttributeError("__cuda_array_interface__: a simulator DeviceArray is host memory "
                                 "(__array_interface__, numpy.from_dlpack)")
        return _cuda_interface(self._shape, self._dtype, self.ptr, self._stream_handle())

    @property
    def __array_interface__(self):
        """Simulator: numpy's array interface, version 3, so that numpy.asarray(a) is a view without a copy; it waits
        for no stream (synchronize the one that wrote the data first). None on CUDA (AttributeError: the memory
        is the GPU's; .get() copies it out). Raises NotSupported under strict memory."""
        if self.backend == "cuda":
            raise AttributeError("__array_interface__: a CUDA DeviceArray is GPU memory; .get() copies it out")
        self._refuse_strict("__array_interface__")
        return _array_interface(self._shape, self._dtype, self.ptr)

    def __array__(self, dtype=None, copy=None):
        """numpy's conversion: on the simulator the memory itself (a copy when `dtype` differs or `copy`); on CUDA
        a TypeError, as CuPy does: .get() copies to the host explicitly."""
        import numpy as np
        if self.backend == "cuda":
            raise TypeError("a CUDA DeviceArray is not converted to numpy implicitly; use .get()")
        view = np.asarray(_Exported(self, self.__array_interface__))
        if dtype is not None and np.dtype(dtype) != self._dtype:
            if copy is False:
                raise ValueError("DeviceArray of %s: a view as %s needs a copy" % (self._dtype, np.dtype(dtype)))
            return view.astype(dtype)
        return view.copy() if copy else view

    def __dlpack_device__(self):
        """DLPack's (device type, id): (kDLCUDA = 2, the device) on CUDA, (kDLCPU = 1, 0) on the simulator."""
        if self.backend == "cuda":
            return (KDL_CUDA, int(getattr(self.context, "_device", 0)))
        return (KDL_CPU, 0)

    def __dlpack__(self, stream=None, *, max_version=None, dl_device=None, copy=None):
        """A DLPack PyCapsule of the memory, keeping this array alive until the consumer is done: "dltensor", or
        "dltensor_versioned" (DLPack 1.0) when `max_version` allows it. Unless `stream` is -1, the stream of the
        last asarray/set/zeros is synchronized first, so the data is ready on any consumer stream. Raises
        BufferError for another `dl_device` or copy=True, NotSupported under strict memory."""
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("DeviceArray.__dlpack__: the memory is on %s, not %s" % (self.__dlpack_device__(),
                                                                                      tuple(dl_device)))
        if copy:
            raise BufferError("DeviceArray.__dlpack__: copy=True is not supported (.get() copies to the host)")
        if self.backend != "cuda":
            self._refuse_strict("__dlpack__")
        if stream != -1:
            self._wait_for_writer()
        return _dlpack_capsule(self, self._shape, self._dtype, self.ptr, self.__dlpack_device__(), max_version)


def _first_axis(key):
    """The int or step-1 slice of the first axis that `key` asks for (later axes whole); None for anything else."""
    if isinstance(key, tuple):
        if any(not (k is Ellipsis or (isinstance(k, slice) and k == slice(None))) for k in key[1:]):
            return None
        key = key[0]
    if key is Ellipsis:
        return slice(None)
    if isinstance(key, slice):
        return key if key.step is None or key.step == 1 else None
    if isinstance(key, numbers.Integral) and not isinstance(key, bool):
        return key
    return None


def _index_text(key):
    """`key` as written between brackets: "::2", "1:3, 0", "[0, 2]"."""
    def one(k):
        if isinstance(k, slice):
            text = "%s:%s" % ("" if k.start is None else k.start, "" if k.stop is None else k.stop)
            return text if k.step is None else "%s:%s" % (text, k.step)
        if k is Ellipsis:
            return "..."
        return "<%s array>" % type(k).__name__ if hasattr(k, "shape") else repr(k)
    return ", ".join(one(k) for k in key) if isinstance(key, tuple) else one(key)


def _strict_memory(ctx):
    """True when the simulator context protects its device memory from host code: its strict_memory option, or,
    made without simulator options, GCAP_SIM_STRICT_MEMORY=1 (which the library reads then)."""
    so = getattr(ctx, "_so", None)
    if so is not None:
        return bool(so.strict_memory)
    return os.environ.get("GCAP_SIM_STRICT_MEMORY") == "1"


def _cuda_stream_function():
    """gcap_cuda_stream of gcap/cuda.h (the CUstream behind a stream; NULL on the simulator), or None in a build
    without the CUDA backend."""
    try:
        return ctypes.CFUNCTYPE(c_void_p, c_void_p)(("gcap_cuda_stream", lib))
    except AttributeError:
        return None


_cuda_stream = _cuda_stream_function()
