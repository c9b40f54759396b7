"""gcap.DeviceArray: typed device memory, its views, copies, fills and kernel arguments, and the array
protocols (numpy's array interface and DLPack on the simulator; the CUDA Array Interface and DLPack on
CUDA, here through the recording fake driver, a real device, or the dict and capsule builders)."""
import ctypes
import gc
import os
import re
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import gcap
from gcap import _arrays, _kernels

FAKE = os.environ.get("GCAP_FAKE_CUDA_DIR")
HAS_FROM_DLPACK = hasattr(np, "from_dlpack")


@pytest.fixture
def loose():
    """A simulator context whose device memory host code may touch, whatever GCAP_SIM_* says."""
    c = gcap.Context(backend="sim", strict_memory=False)
    yield c
    c.close()
    gc.collect()


def cuda_context():
    """A CUDA context, or a skip saying why there is none."""
    try:
        return gcap.Context(backend="cuda")
    except (gcap.NotInitialized, gcap.NotSupported) as e:
        pytest.skip("no CUDA device or driver here (%s); on the simulator a DeviceArray is host memory and has no "
                    "__cuda_array_interface__" % e.status)


# ------------------------------------------------------------------ making arrays


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "uint16", "int64", "complex64", "bool"])
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 2)])
def test_asarray_and_get_round_trip(ctx, dtype, shape):
    host = (np.arange(int(np.prod(shape))) % 7).astype(dtype).reshape(shape)
    a = ctx.asarray(host)
    assert isinstance(a, gcap.DeviceArray)
    assert (a.shape, a.dtype, a.ndim, a.size, a.nbytes) == (host.shape, host.dtype, host.ndim, host.size, host.nbytes)
    assert a.strides == host.strides and a.itemsize == host.itemsize and len(a) == shape[0]
    assert a.context is ctx and isinstance(a.buffer, gcap.Buffer) and a.ptr == a.buffer.ptr
    out = a.get()
    assert out.dtype == host.dtype and out.shape == host.shape and (out == host).all()
    assert (a.copy_to_host() == host).all()


@pytest.mark.parametrize("dtype", ["float32", "int8", "uint64"])
def test_zeros_and_empty(ctx, dtype):
    z = ctx.zeros((4, 3), dtype)
    assert z.get().tolist() == np.zeros((4, 3), dtype).tolist()
    e = ctx.empty(7, dtype)
    assert e.shape == (7,) and e.dtype == np.dtype(dtype)
    e.set(np.arange(7))
    assert e.get().tolist() == list(range(7))
    assert ctx.empty(()).shape == () and ctx.empty(()).nbytes == 4
    assert ctx.zeros((0, 5)).get().shape == (0, 5)


def test_zeros_on_a_stream_and_set_broadcasts(ctx):
    s = ctx.stream()
    z = ctx.zeros((2, 5), "int32", stream=s)
    s.synchronize()
    assert z.get().sum() == 0
    z.set(3)
    assert (z.get() == 3).all()
    z.set(np.arange(5))  # one row, broadcast to both
    assert z.get().tolist() == [list(range(5))] * 2
    z.set(np.full((2, 5), 2.9))  # converted to the array's dtype
    assert (z.get() == 2).all()


def test_asarray_on_a_stream_keeps_the_host_array_until_synchronized():
    with gcap.Context(backend="sim", exec="deferred") as ctx:
        s = ctx.stream()
        a = ctx.asarray(np.arange(1000, dtype=np.float64) * 3, stream=s)  # the only reference is the stream's
        gc.collect()
        b = ctx.zeros(4)
        b.set(np.ones(4, np.float32) * 2, stream=s)
        assert a.get(stream=s)[-1] == 2997.0 and b.get().tolist() == [2.0] * 4
        assert ctx.asarray(a) is a  # already this context's device memory


def test_repr_and_a_closed_context():
    ctx = gcap.Context(backend="sim")
    a = ctx.zeros((4, 8))
    assert re.fullmatch(r"<gcap\.DeviceArray shape=\(4, 8\) float32 at 0x[0-9a-f]+ ctx=0x[0-9a-f]+ sim>", repr(a)), repr(a)
    ctx.close()
    assert repr(a) == "<gcap.DeviceArray shape=(4, 8) float32 (freed)>"
    with pytest.raises(gcap.ContextClosed):
        a.get()


def test_bad_shapes_and_dtypes(ctx):
    with pytest.raises(gcap.InvalidValue, match="negative dimension"):
        ctx.empty((2, -1))
    with pytest.raises(TypeError, match="shape must be an int or a sequence of ints, not float"):
        ctx.empty(2.5)
    with pytest.raises(gcap.InvalidValue, match="not a numpy dtype"):
        ctx.zeros(3, "float13")
    with pytest.raises(gcap.InvalidValue, match="Python objects"):
        ctx.asarray(np.array([object()]))
    a = ctx.zeros((2, 3))
    with pytest.raises(gcap.InvalidValue, match=r"DeviceArray.set: \(4,\) data into shape \(2, 3\)"):
        a.set(np.zeros(4))
    with pytest.raises(gcap.InvalidValue, match="device data of shape"):
        a.set(ctx.zeros((3, 2)))


# ------------------------------------------------------------------ views


def test_slices_are_views_of_the_same_memory(ctx):
    a = ctx.zeros((6, 4), "int32")
    rows = a[2:4]
    assert rows.shape == (2, 4) and rows.ptr == a.ptr + 2 * 16 and rows.buffer is a.buffer
    rows.set(np.full((2, 4), 7))  # a copy through the view
    s = ctx.stream()
    s.memcpy(a[5], np.arange(4, dtype=np.int32))
    s.synchronize()
    whole = a.get()
    assert whole[2:4].tolist() == [[7] * 4] * 2 and whole[5].tolist() == [0, 1, 2, 3]
    assert whole[[0, 1, 4]].sum() == 0
    assert a[3].shape == (4,) and a[3].get().tolist() == [7] * 4 and a[-1].get().tolist() == [0, 1, 2, 3]
    assert a[1:1].size == 0 and a[4:100].shape == (2, 4) and a[-2:].ptr == a[4].ptr
    assert a[2, :].ptr == a[2].ptr and a[2:3, ...].shape == (1, 4) and a[()].shape == (6, 4) and a[...].ptr == a.ptr
    assert a[2][1].shape == () and a[2][1].get() == 7 and a[np.int64(5)][3].get() == 3


def test_a_view_keeps_its_array_alive(ctx):
    a = ctx.asarray(np.arange(8, dtype=np.int16))
    alive = weakref.ref(a)
    view = a[3:5]
    del a
    gc.collect()
    assert alive() is not None and view.get().tolist() == [3, 4]
    del view
    gc.collect()
    assert alive() is None


@pytest.mark.parametrize("key, text", [
    (slice(None, None, 2), "::2"), (slice(4, 0, -1), "4:0:-1"), ((slice(None), 1), ":, 1"), ((1, 2), "1, 2"),
    ([0, 1], "[0, 1]"), (None, "None"), (np.array([True, False, True]), "<ndarray array>")])
def test_what_is_not_contiguous_is_refused(ctx, key, text):
    a = ctx.zeros((3, 4))
    with pytest.raises(gcap.InvalidValue) as e:
        a[key]
    assert str(e.value).startswith("DeviceArray[%s]: indexing gives contiguous views only" % text), str(e.value)
    assert e.value.status == "GCAP_ERROR_INVALID_VALUE"


def test_indexes_outside_the_array(ctx):
    a = ctx.zeros(3)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        a[3]
    with pytest.raises(IndexError):
        a[-4]
    with pytest.raises(IndexError, match="0-d"):
        a[0][0]
    with pytest.raises(TypeError):
        len(a[0])


# ------------------------------------------------------------------ copies, fills, graphs


def test_copies_and_fills_of_arrays_captured_and_replayed(ctx):
    s = ctx.stream()
    src = ctx.asarray(np.arange(16, dtype=np.float32))
    dst = ctx.zeros(16, "float32")
    host = np.zeros(16, np.float32)
    with s.capture() as cap:
        s.memset(dst, 0)
        s.memcpy(dst[4:12], src[0:8])
        s.memcpy(host, dst)
    assert dst.get().sum() == 0 and host.sum() == 0  # nothing ran: it was recorded
    types = sorted(n.type for n in cap.graph.nodes)
    assert types == ["memcpy", "memcpy", "memset"]
    x = cap.graph.instantiate()
    for _ in range(2):
        dst.set(-1)
        x.launch(s)
        s.synchronize()
        expect = np.zeros(16, np.float32)
        expect[4:12] = np.arange(8)
        assert dst.get().tolist() == expect.tolist() and host.tolist() == expect.tolist()


def test_graph_nodes_take_arrays(ctx):
    a, b = ctx.zeros((4, 4), "uint8"), ctx.zeros((4, 4), "uint8")
    g = ctx.graph()
    fill = g.add_memset(a[1:3], 0xAB)
    copy = g.add_memcpy(b, a, deps=[fill])
    assert fill.params["dst"] == a.ptr + 4 and fill.params["width"] == 8
    assert copy.params["dst"] == b.ptr and copy.params["src"] == a.ptr and copy.params["nbytes"] == 16
    s = ctx.stream()
    g.instantiate().launch(s)
    s.synchronize()
    assert b.get().tolist() == [[0] * 4, [0xAB] * 4, [0xAB] * 4, [0] * 4]


def test_device_to_device_set(ctx):
    a = ctx.asarray(np.arange(6, dtype=np.int64).reshape(2, 3))
    b = ctx.empty((2, 3), "int64")
    b.set(a)
    assert b.get().tolist() == [[0, 1, 2], [3, 4, 5]]
    b[1].set(a[0])
    assert b.get().tolist() == [[0, 1, 2], [0, 1, 2]]


# ------------------------------------------------------------------ kernels


def axpy(block, x, y, n):
    """x[i] += 2 * y[i] for i < n: float64 x, int8 y."""
    assert isinstance(x, np.ndarray) and x.dtype == np.float64 and y.dtype == np.int8
    i = block.thread_ids()
    i = i[i < n]
    x[i] += 2 * y[i]


def test_python_kernels_see_arrays_as_numpy_views(ctx):
    mod = ctx.load_module([gcap.kernel("axpy", ["float64*", "int8*", "uint32"], sim=axpy)])
    x = ctx.asarray(np.arange(10, dtype=np.float64))
    y = ctx.asarray(np.arange(10, dtype=np.int8) - 5)
    s = ctx.stream()
    s.launch(mod.axpy, grid=3, block=4, args=(x, y, 10))
    s.synchronize()
    assert x.get().tolist() == [i + 2 * (i - 5) for i in range(10)]
    x.set(np.zeros(10))
    g = ctx.graph()
    g.add_kernel(mod.axpy, 1, 8, args=(x[2:8], y[2:8], 6))  # views: pointers inside the arrays' buffers
    g.instantiate().launch(s)
    s.synchronize()
    assert x.get().tolist() == [0, 0] + [2 * (i - 5) for i in range(2, 8)] + [0, 0]


def test_kernel_pointer_arguments_are_device_addresses(ctx):
    a = ctx.zeros(8, "int8")
    assert _kernels._address(a) == a.ptr and _kernels._address(a[3]) == a.ptr + 3
    with pytest.raises(gcap.InvalidValue, match="host ndarray"):
        ctx.load_module([gcap.kernel("axpy", ["float64*", "int8*", "uint32"], sim=axpy)]).axpy._pack(
            (np.zeros(3), a, 3))


# ------------------------------------------------------------------ numpy views on the simulator


def test_array_interface_is_a_zero_copy_view(loose):
    a = loose.zeros((3, 4), "float32")
    assert not hasattr(a, "__cuda_array_interface__")
    assert a.__array_interface__ == {"shape": (3, 4), "typestr": "<f4", "data": (a.ptr, False), "strides": None,
                                     "version": 3}
    v = np.asarray(a)
    assert v.ctypes.data == a.ptr and not v.flags.owndata and v.flags.writeable
    v[1] = 5  # host code writing device memory: the simulator's is host memory
    np.asarray(a[2])[:] = np.arange(4)
    assert a.get().tolist() == [[0] * 4, [5] * 4, [0, 1, 2, 3]]
    assert np.array(a, dtype=np.int64).dtype == np.int64 and np.array(a, copy=True).ctypes.data != a.ptr


@pytest.mark.skipif(not HAS_FROM_DLPACK, reason="numpy %s has no from_dlpack (1.22 added it)" % np.__version__)
def test_from_dlpack_is_a_zero_copy_view(loose):
    a = loose.asarray(np.arange(12, dtype=np.int32).reshape(3, 4))
    assert a.__dlpack_device__() == (1, 0)
    d = np.from_dlpack(a[1:3])
    assert d.shape == (2, 4) and d.dtype == np.int32 and d.ctypes.data == a.ptr + 16
    d[:] = -d  # through the view
    assert a.get().tolist() == [[0, 1, 2, 3], [-4, -5, -6, -7], [-8, -9, -10, -11]]
    with pytest.raises(BufferError):
        a.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError):
        a.__dlpack__(copy=True)


@pytest.mark.skipif(not HAS_FROM_DLPACK, reason="numpy %s has no from_dlpack (1.22 added it)" % np.__version__)
def test_dlpack_exports_release_the_array(loose):
    a = loose.asarray(np.arange(64, dtype=np.float32))
    gc.collect()
    before = sys.getrefcount(a)
    views = []
    for i in range(3000):
        view = np.from_dlpack(a)
        if i % 100 == 0:
            views.append(view)  # some consumers keep theirs a while
            gc.collect()
        a.__dlpack__()  # a capsule nobody consumes
        a.__dlpack__(max_version=(1, 0))
    assert sys.getrefcount(a) > before
    del view, views
    gc.collect()
    assert sys.getrefcount(a) == before
    assert a.get().tolist() == list(range(64))


def test_a_capsule_dropped_while_an_exception_propagates(loose):
    a = loose.zeros(4)
    gc.collect()
    before = sys.getrefcount(a)
    for _ in range(100):
        with pytest.raises(ZeroDivisionError):
            [a.__dlpack__(), 1 / 0]  # the capsule goes during the unwinding, the exception intact
    gc.collect()
    assert sys.getrefcount(a) == before


_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_SetName", ctypes.pythonapi))


def test_a_consumed_capsule_is_the_consumers_to_release(loose):
    """A consumer renames the capsule "used_dltensor" and calls the deleter when done: dropping the capsule then
    must not release the array a second time."""
    a = loose.zeros(4)
    gc.collect()
    before = sys.getrefcount(a)
    capsule = a.__dlpack__()
    managed = _arrays.DLManagedTensor.from_address(_arrays._capsule_pointer(capsule, b"dltensor"))
    address, deleter = ctypes.addressof(managed), ctypes.CFUNCTYPE(None, ctypes.c_void_p)(managed.deleter)
    assert _set_name(capsule, b"used_dltensor") == 0
    del capsule, managed
    gc.collect()
    assert sys.getrefcount(a) == before + 1  # the consumer's reference
    deleter(address)
    gc.collect()
    assert sys.getrefcount(a) == before


def test_strict_memory_refuses_host_views():
    with gcap.Context(backend="sim", strict_memory=True) as ctx:
        a = ctx.asarray(np.arange(4, dtype=np.float32))
        for export in (lambda: a.__array_interface__, lambda: np.asarray(a), a.__dlpack__):
            with pytest.raises(gcap.NotSupported, match="strict memory"):
                export()
        if HAS_FROM_DLPACK:
            with pytest.raises(gcap.NotSupported, match="strict memory"):
                np.from_dlpack(a)
        assert a.get().tolist() == [0, 1, 2, 3]  # copies still work


def test_strict_memory_from_the_environment(monkeypatch):
    monkeypatch.setenv("GCAP_SIM_STRICT_MEMORY", "1")
    with gcap.Context(backend="sim") as ctx:
        a = ctx.zeros(2)
        with pytest.raises(gcap.NotSupported, match="GCAP_SIM_STRICT_MEMORY"):
            np.asarray(a)
        assert a.get().tolist() == [0, 0]


# ------------------------------------------------------------------ other libraries' CUDA arrays, as operands


class Foreign:
    """Another library's CUDA array, as CuPy or Numba shows one: a __cuda_array_interface__ (here of simulator
    memory, which the simulator reads as its device memory)."""

    def __init__(self, ptr, shape, typestr, strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False),
                                         "strides": strides, "version": 3, "stream": None}


class ForeignDLPack:
    """A CUDA array that speaks DLPack only (as PyTorch can): kDLCUDA, the memory being simulator memory."""

    def __init__(self, ptr, shape, dtype):
        self.ptr, self.shape, self.dtype = ptr, shape, np.dtype(dtype)

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        return _arrays._dlpack_capsule(self, self.shape, self.dtype, self.ptr, (2, 0))


def test_foreign_cuda_arrays_are_device_memory(ctx):
    buf = ctx.zeros(16, "int32")
    s = ctx.stream()
    s.memcpy(Foreign(buf.ptr, (4,), "<i4"), np.array([1, 2, 3, 4], np.int32))
    s.memset(Foreign(buf[8].ptr, (2, 2), "<i4"), 1)
    s.memcpy(ForeignDLPack(buf[12].ptr, (2, 2), "int32"), np.array([9, 8, 7, 6], np.int32))
    s.synchronize()
    assert buf.get().tolist() == [1, 2, 3, 4, 0, 0, 0, 0] + [0x01010101] * 4 + [9, 8, 7, 6]
    assert _kernels._address(Foreign(buf.ptr + 8, (2,), "<i4")) == buf.ptr + 8
    assert _kernels._address(ForeignDLPack(buf.ptr + 4, (1,), "int32")) == buf.ptr + 4
    assert _arrays.device_operand(np.zeros(3)) is None and _arrays.device_operand(7) is None


def test_foreign_arrays_in_python_kernels(ctx):
    mod = ctx.load_module([gcap.kernel("axpy", ["float64*", "int8*", "uint32"], sim=axpy)])
    x, y = ctx.zeros(4, "float64"), ctx.asarray(np.array([1, 2, 3, 4], np.int8))
    s = ctx.stream()
    s.launch(mod.axpy, 1, 4, args=(Foreign(x.ptr, (4,), "<f8"), ForeignDLPack(y.ptr, (4,), "int8"), 4))
    s.synchronize()
    assert x.get().tolist() == [2, 4, 6, 8]


def test_foreign_arrays_that_are_not_contiguous_are_refused(ctx):
    buf = ctx.zeros(16, "float32")
    with pytest.raises(gcap.InvalidValue, match=r"shape \(4,\) with byte strides \(8,\) is not C-contiguous"):
        ctx.stream().memset(Foreign(buf.ptr, (4,), "<f4", strides=(8,)), 0)
    masked = Foreign(buf.ptr, (4,), "<f4")
    masked.__cuda_array_interface__["mask"] = object()
    with pytest.raises(gcap.InvalidValue, match="masked"):
        ctx.stream().memset(masked, 0)
    assert _arrays.device_address(Foreign(buf.ptr, (4, 1), "<f4", strides=(4, 64))) == buf.ptr  # a size-1 axis


# ------------------------------------------------------------------ the CUDA protocols


def test_cuda_interface_builder():
    d = _arrays._cuda_interface((4, 8), np.dtype("float32"), 0x7F0000001000, stream=0x1234)
    assert d == {"shape": (4, 8), "typestr": "<f4", "data": (0x7F0000001000, False), "strides": None, "version": 3,
                 "stream": 0x1234}
    assert _arrays._from_cuda_interface(d) == (0x7F0000001000, 128)


@pytest.mark.parametrize("max_version, name", [(None, b"dltensor"), ((1, 0), b"dltensor_versioned")])
def test_dlpack_capsule_builder_for_a_cuda_device(max_version, name):
    """The capsule DeviceArray.__dlpack__ makes on CUDA, of an address never dereferenced."""
    keep = object()
    before = sys.getrefcount(keep)
    capsule = _arrays._dlpack_capsule(keep, (4, 8), np.dtype("float32"), 0x7F0000001000, (2, 3), max_version)
    if name == b"dltensor_versioned" and not _arrays._capsule_is_valid(capsule, name):
        pytest.skip("numpy %s exports unversioned DLPack only" % np.__version__)
    t = _arrays._dlpack_tensor(capsule)
    assert (t.device.device_type, t.device.device_id, t.ndim) == (2, 3, 2)
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (2, 32, 1)
    assert [t.shape[0], t.shape[1]] == [4, 8] and t.data + t.byte_offset == 0x7F0000001000
    assert _arrays._dlpack_layout(t) == (0x7F0000001000, 128)
    assert sys.getrefcount(keep) == before + 1
    del t, capsule
    gc.collect()
    assert sys.getrefcount(keep) == before


def test_cuda_protocols_in_process():
    """On a CUDA backend (a real device): the interface, DLPack and no numpy view."""
    ctx = cuda_context()
    with ctx:
        s = ctx.stream()
        a = ctx.asarray(np.arange(12, dtype=np.float32).reshape(3, 4), stream=s)
        cai = a.__cuda_array_interface__
        assert cai["data"] == (a.ptr, False) and cai["shape"] == (3, 4) and cai["typestr"] == "<f4"
        assert isinstance(cai["stream"], int) and cai["stream"] > 0
        assert not hasattr(a, "__array_interface__") and a.__dlpack_device__() == (2, 0)
        capsule = a.__dlpack__(stream=-1)
        t = _arrays._dlpack_tensor(capsule)  # valid while the capsule lives
        assert t.device.device_type == 2 and t.data + t.byte_offset == a.ptr
        with pytest.raises(TypeError, match="get"):
            np.asarray(a)
        assert a.get(stream=s)[2].tolist() == [8, 9, 10, 11]


CUDA_ON_THE_FAKE_DRIVER = """
import numpy as np, gcap
from gcap import _arrays
with gcap.Context(backend="cuda") as ctx:
    s = ctx.stream()
    a = ctx.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    assert a.backend == "cuda" and "cuda>" in repr(a)
    assert not hasattr(a, "__array_interface__")
    assert a.__cuda_array_interface__ == {"shape": (3, 4), "typestr": "<f4", "data": (a.ptr, False),
                                          "strides": None, "version": 3, "stream": None}
    b = ctx.asarray(np.ones(5, np.int16), stream=s)
    stream = b.__cuda_array_interface__["stream"]
    assert isinstance(stream, int) and stream > 0, stream   # the CUstream the data is ready on
    assert b.__dlpack_device__() == (2, 0)
    capsule = b.__dlpack__()
    t = _arrays._dlpack_tensor(capsule)                      # valid while the capsule lives
    assert (t.device.device_type, t.device.device_id) == (2, 0) and t.data + t.byte_offset == b.ptr
    assert b.__cuda_array_interface__["stream"] is None      # __dlpack__ synchronized the writer
    try:
        np.asarray(a)
        raise AssertionError("a CUDA array became a numpy array")
    except TypeError as e:
        assert ".get()" in str(e)
    try:
        np.from_dlpack(a)
        raise AssertionError("numpy took CUDA memory")
    except (RuntimeError, BufferError):
        pass
    s.memcpy(a[1], a[2])
    s.memset(b, 0)
    z = ctx.zeros((2, 2), "float64")
    s.synchronize()
    assert a.get()[1].tolist() == [8, 9, 10, 11] and b.get().sum() == 0 and z.get().sum() == 0
    print("ok")
"""


@pytest.mark.skipif(not FAKE, reason="GCAP_FAKE_CUDA_DIR is not set (the recording fake libcuda of tests/cuda/)")
def test_cuda_protocols_on_the_fake_driver():
    env = dict(os.environ, LD_LIBRARY_PATH=FAKE, FAKE_CUDA_RETAIN="0", FAKE_CUDA_DEVICES="1")
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(CUDA_ON_THE_FAKE_DRIVER)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout == "ok\n", out.stderr


# ------------------------------------------------------------------ the GPU array libraries (a real device)


def test_cupy_reads_and_writes_arrays():
    cp = pytest.importorskip("cupy", reason="CuPy is not installed")
    ctx = cuda_context()
    with ctx:
        a = ctx.asarray(np.arange(8, dtype=np.float32))
        view = cp.asarray(a)  # __cuda_array_interface__: no copy
        assert view.data.ptr == a.ptr
        view *= 2
        cp.cuda.runtime.deviceSynchronize()
        assert a.get().tolist() == [2.0 * i for i in range(8)]
        b = ctx.zeros(8)
        s = ctx.stream()
        s.memcpy(b, cp.arange(8, dtype=cp.float32))
        s.synchronize()
        assert b.get().tolist() == list(range(8))


def test_torch_reads_and_writes_arrays():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    ctx = cuda_context()
    with ctx:
        a = ctx.asarray(np.arange(6, dtype=np.int32))
        t = torch.from_dlpack(a)
        assert t.is_cuda and t.data_ptr() == a.ptr
        t += 1
        torch.cuda.synchronize()
        assert a.get().tolist() == list(range(1, 7))
        b = ctx.zeros(6, "int32")
        s = ctx.stream()
        s.memcpy(b, torch.arange(6, dtype=torch.int32, device="cuda"))
        s.synchronize()
        assert b.get().tolist() == list(range(6))


def test_numba_reads_arrays():
    numba_cuda = pytest.importorskip("numba.cuda", reason="Numba is not installed")
    if not numba_cuda.is_available():
        pytest.skip("Numba sees no CUDA device")
    ctx = cuda_context()
    with ctx:
        a = ctx.asarray(np.arange(5, dtype=np.float64))
        assert numba_cuda.as_cuda_array(a).copy_to_host().tolist() == list(range(5))
