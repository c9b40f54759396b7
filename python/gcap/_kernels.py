"""Kernels: definitions with their parameter types, simulator kernels written in Python (one call per
block, pointer arguments as numpy views), modules, and packing arguments for a launch or a node."""
import ctypes
from ctypes import POINTER, byref, c_size_t, c_void_p

from . import _lib
from ._lib import lib
from ._objects import Buffer, Handle, InvalidValue, check

_SCALARS = {
    "int8": ctypes.c_int8, "uint8": ctypes.c_uint8, "int16": ctypes.c_int16, "uint16": ctypes.c_uint16,
    "int32": ctypes.c_int32, "uint32": ctypes.c_uint32, "int64": ctypes.c_int64, "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float, "float64": ctypes.c_double, "handle": ctypes.c_uint64,
}


class Param:
    """One parameter: a scalar type ("float32", "uint32", "handle" for a conditional handle...) or a pointer
    ("float32*"), which a Python kernel sees as a numpy view of that dtype."""

    def __init__(self, spec):
        self.spec = spec
        self.pointer = spec.endswith("*")
        base = spec[:-1] if self.pointer else spec
        if not self.pointer and base not in _SCALARS:
            raise InvalidValue("parameter type %r is not one of %s or a pointer ('float32*')" % (spec, ", ".join(_SCALARS)),
                               "GCAP_ERROR_INVALID_VALUE", 1)
        self.dtype = base
        self.ctype = c_void_p if self.pointer else _SCALARS[base]

    @property
    def size(self):
        return ctypes.sizeof(self.ctype)


class KernelDef:
    """What a module is loaded with: the kernel's name, its parameters, and (simulator) its Python body."""

    def __init__(self, name, params, sim=None):
        self.name = name
        self.params = [Param(p) for p in params]
        self.sim = sim


def kernel(name, params, sim=None):
    """A kernel definition: `gcap.kernel("scale", ["float32*", "float32", "uint32"], sim=scale_block)`.

    `sim(block, *args)` runs once per block on the simulator: `block.grid_dim`, `block.block_dim`,
    `block.block_idx` are (x, y, z) tuples, `block.thread_ids()` the block's global x indices as an array,
    pointer arguments numpy views from the pointer to the end of its buffer, scalars Python numbers.
    """
    return KernelDef(name, params, sim)


class Block:
    def __init__(self, b):
        self.grid_dim = (b.grid_dim.x, b.grid_dim.y, b.grid_dim.z)
        self.block_dim = (b.block_dim.x, b.block_dim.y, b.block_dim.z)
        self.block_idx = (b.block_idx.x, b.block_idx.y, b.block_idx.z)

    def thread_ids(self):
        """The global x index of each thread of the block: block_idx.x * block_dim.x + [0, block_dim.x)."""
        import numpy as np
        return self.block_idx[0] * self.block_dim[0] + np.arange(self.block_dim[0])


def _view(ctx, address, dtype):
    import numpy as np
    buf = ctx._buffer_at(address)
    if buf is None:
        return address  # memory the context does not know as a Buffer: the address itself
    nbytes = buf._ptr + buf.nbytes - address
    dt = np.dtype(dtype)
    raw = (ctypes.c_char * nbytes).from_address(address)
    return np.frombuffer(raw, dtype=dt, count=nbytes // dt.itemsize)


def _block_function(ctx, kdef):
    def call(block_p, args_p):
        try:
            values = []
            for i, p in enumerate(kdef.params):
                cell = ctypes.cast(args_p[i], POINTER(p.ctype)).contents
                values.append(_view(ctx, cell.value or 0, p.dtype) if p.pointer else cell.value)
            kdef.sim(Block(block_p.contents), *values)
        except BaseException as exc:  # cannot cross C: the launch's caller, or the next wait, reports it
            ctx._callback_failed("kernel %s" % kdef.name, exc)
    return _lib.sim_block_fn(call)


class Module(Handle):
    """Kernels loaded together: `module["name"]` (or `module.name`) is a Kernel."""

    def __init__(self, ctx, kernels, image=None):
        defs = (_lib.kernel_def * max(1, len(kernels)))()
        keep = [defs]
        for i, k in enumerate(kernels):
            sizes = (c_size_t * max(1, len(k.params)))(*[p.size for p in k.params])
            keep.append(sizes)
            defs[i].name = k.name.encode()
            defs[i].num_params = len(k.params)
            defs[i].param_sizes = sizes
            if k.sim is not None:
                fn = _block_function(ctx, k)
                keep.append(fn)
                defs[i].sim_block_fn = fn
        desc = _lib.module_desc()
        if image is not None:
            data = image.encode() if isinstance(image, str) else bytes(image)
            if isinstance(image, str):
                data += b"\0"
            blob = ctypes.create_string_buffer(data, len(data))
            keep.append(blob)
            desc.image, desc.image_size = ctypes.addressof(blob), len(data)
        desc.kernels, desc.num_kernels = defs, len(kernels)
        h = c_void_p()
        check(lib.gcap_module_load(ctx._handle(), byref(desc), byref(h)))
        super().__init__(ctx, h.value)
        ctx._keep_alive(keep)  # launches and nodes may call the functions until the context goes
        self._kernels = {}
        for k in kernels:
            kh = c_void_p()
            check(lib.gcap_module_get_kernel(self._h, k.name.encode(), byref(kh)))
            self._kernels[k.name] = Kernel(self, kh.value, k)

    def close(self):
        h, self._h = self._h, None
        if h is not None and self._ctx._h is not None:
            lib.gcap_module_unload(h)

    def __getitem__(self, name):
        return self._kernels[name]

    def __getattr__(self, name):
        kernels = self.__dict__.get("_kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(name)


class Packed:
    """A launch's argument values and the pointer array to them (kept alive together)."""

    def __init__(self, values):
        self.values = values
        self.pointers = (c_void_p * max(1, len(values)))(*[ctypes.addressof(v) for v in values])


class Kernel(Handle):
    def __init__(self, module, h, kdef):
        super().__init__(module._ctx, h)
        self.module, self.definition = module, kdef

    @property
    def name(self):
        return self.definition.name

    def __repr__(self):
        return "<gcap.Kernel %s(%s)>" % (self.name, ", ".join(p.spec for p in self.definition.params))

    def _pack(self, args):
        params = self.definition.params
        if len(args) != len(params):
            raise InvalidValue("kernel %s takes %d arguments, not %d" % (self.name, len(params), len(args)),
                               "GCAP_ERROR_INVALID_VALUE", 1)
        values = []
        for p, a in zip(params, args):
            if p.pointer:
                a = a.ptr if isinstance(a, Buffer) else (a.ctypes.data if hasattr(a, "ctypes") else int(a or 0))
            values.append(p.ctype(a))
        return Packed(values)
