"""Kernels: definitions with their parameter types, simulator kernels written in Python (one call per
block, pointer arguments as numpy views), modules (of definitions, PTX or CUDA C), and packing arguments
for a launch or a node."""
import ctypes
import re
from ctypes import POINTER, byref, c_char_p, c_size_t, c_void_p

from . import _checked, _lib
from ._lib import lib
from ._objects import Buffer, Handle, InvalidValue, check, run_callback

_SCALARS = {
    "int8": ctypes.c_int8, "uint8": ctypes.c_uint8, "int16": ctypes.c_int16, "uint16": ctypes.c_uint16,
    "int32": ctypes.c_int32, "uint32": ctypes.c_uint32, "int64": ctypes.c_int64, "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float, "float64": ctypes.c_double, "handle": ctypes.c_uint64,
}


_BYTES = re.compile(r"b8\[([1-9][0-9]*)\]$")


# How a kernel uses a pointer parameter: gcap_param_access values, for race analysis and pointer checks.
_ACCESS = {"read": 2, "write": 3, "readwrite": 4}


class Param:
    """One parameter: a scalar type ("float32", "uint32", "handle" for a conditional handle...), a pointer
    ("float32*"), which a Python kernel sees as a numpy view of that dtype, or "b8[n]", n bytes passed by
    value (a struct: bytes or a ctypes Structure of that size).

    A pointer may say how the kernel uses it: "float32*:read", "float32*:write" or "float32*:readwrite"
    (the default). Race analysis then knows that two readers do not race, and the simulator refuses an
    argument outside device memory of the context (InvalidValue naming the parameter), as C does."""

    def __init__(self, spec):
        if not isinstance(spec, str):
            raise TypeError("parameter type %r is not a str such as 'float32*' or 'uint32'" % (spec,))
        self.spec = spec
        spec, _, mode = spec.partition(":")
        self.pointer = spec.endswith("*")
        if mode and (not self.pointer or mode not in _ACCESS):
            raise InvalidValue("parameter type %r: only a pointer takes a use, one of :%s" % (self.spec, ", :".join(_ACCESS)),
                               "GCAP_ERROR_INVALID_VALUE", 1)
        self.access = _ACCESS[mode or "readwrite"] if self.pointer else 0
        base = spec[:-1] if self.pointer else spec
        raw = _BYTES.match(spec)
        if base not in _SCALARS and not (raw and not self.pointer):
            raise InvalidValue("parameter type %r is not one of %s, a pointer ('float32*') or bytes ('b8[16]')"
                               % (spec, ", ".join(_SCALARS)), "GCAP_ERROR_INVALID_VALUE", 1)
        self.dtype = "uint8" if raw else base
        self.ctype_name = "uint64" if base == "handle" else base  # the C type a scalar is checked against
        self.ctype = (ctypes.c_char * int(raw.group(1))) if raw else c_void_p if self.pointer else _SCALARS[base]

    @property
    def size(self):
        """The bytes of the parameter's value (a pointer's: 8)."""
        return ctypes.sizeof(self.ctype)


class KernelDef:
    """What a module is loaded with: the kernel's name, its parameters, and (simulator) its Python body.
    `params` is None for a kernel of a module's PTX whose parameter types Python does not know."""

    def __init__(self, name, params, sim=None):
        if not isinstance(name, str):
            raise TypeError("gcap.kernel: name must be a str, not %s" % type(name).__name__)
        _checked.text(name, "gcap.kernel: name")
        if params is not None and (isinstance(params, (str, bytes)) or not hasattr(params, "__iter__")):
            raise TypeError("gcap.kernel %s: params must be a list of parameter types (['float32*', 'uint32']), "
                            "not %s %r" % (name, type(params).__name__, params))
        if sim is not None and not callable(sim):
            raise TypeError("gcap.kernel %s: sim must be a function of (block, *args), not %s"
                            % (name, type(sim).__name__))
        self.name = name
        self.params = None if params is None else [Param(p) for p in params]
        self.sim = sim


def kernel(name, params, sim=None):
    """A kernel definition: `gcap.kernel("scale", ["float32*", "float32", "uint32"], sim=scale_block)`.

    `sim(block, *args)` runs once per block on the simulator: `block.grid_dim`, `block.block_dim`,
    `block.block_idx` are (x, y, z) tuples, `block.thread_ids()` the block's global x indices as an array,
    pointer arguments numpy views from the pointer to the end of its buffer, scalars Python numbers.
    """
    return KernelDef(name, params, sim)


class Block:
    """What a Python kernel's body gets for its block: `grid_dim`, `block_dim` and `block_idx`, (x, y, z) tuples
    of ints, and thread_ids()."""

    def __init__(self, b):
        self.grid_dim = (b.grid_dim.x, b.grid_dim.y, b.grid_dim.z)
        self.block_dim = (b.block_dim.x, b.block_dim.y, b.block_dim.z)
        self.block_idx = (b.block_idx.x, b.block_idx.y, b.block_idx.z)

    def thread_ids(self):
        """The global x index of each thread of the block: block_idx.x * block_dim.x + [0, block_dim.x)."""
        import numpy as np
        return self.block_idx[0] * self.block_dim[0] + np.arange(self.block_dim[0])


# PTX parameter types: the spec of the same size and kind.
_PTX_SCALARS = {"u8": "uint8", "s8": "int8", "b8": "uint8", "u16": "uint16", "s16": "int16", "b16": "uint16",
                "u32": "uint32", "s32": "int32", "b32": "uint32", "f32": "float32", "u64": "uint64", "s64": "int64",
                "b64": "uint64", "f64": "float64"}
_PTX_SIZES = {"f16": 2, "bf16": 2, "f16x2": 4, "bf16x2": 4}
_ENTRY = re.compile(r"\.visible\s+\.entry\s+([A-Za-z_$%][\w$]*)\s*(?:\(([^)]*)\))?")


def _ptx_param(decl):
    """The spec of one `.param .u64 .ptr .align 8 name` or `.param .align 8 .b8 name[16]` declaration."""
    words = decl.replace("[", " [").split()
    types = [w[1:] for w in words if w[1:] in _PTX_SCALARS or w[1:] in _PTX_SIZES]
    if not words or words[0] != ".param" or len(types) != 1:
        return None
    count = re.search(r"\[(\d+)\]", decl)
    if count is None and types[0] in _PTX_SCALARS:
        return _PTX_SCALARS[types[0]]
    size = _PTX_SIZES.get(types[0]) or ctypes.sizeof(_SCALARS[_PTX_SCALARS[types[0]]])
    return "b8[%d]" % (size * (int(count.group(1)) if count else 1))


def ptx_entries(image):
    """{entry name: [parameter specs]} of PTX text (str or bytes); an entry whose parameters it cannot read
    is left out (its kernel then packs arguments by their own types)."""
    if isinstance(image, (bytes, bytearray, memoryview)):
        try:
            image = bytes(image).decode()
        except UnicodeDecodeError:  # a cubin or fatbin
            return {}
    text = re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", image.rstrip("\0"), flags=re.S))
    entries = {}
    for m in _ENTRY.finditer(text):
        decls = [d.strip() for d in (m.group(2) or "").split(",") if d.strip()]
        specs = [_ptx_param(d) for d in decls]
        if None not in specs:
            entries[m.group(1)] = specs
    return entries


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
    what = "kernel %s" % kdef.name

    def block(block_p, args_p):
        values = []
        for i, p in enumerate(kdef.params):
            cell = ctypes.cast(args_p[i], POINTER(p.ctype)).contents
            values.append(_view(ctx, cell.value or 0, p.dtype) if p.pointer
                          else bytes(cell) if isinstance(cell, ctypes.Array) else cell.value)
        kdef.sim(Block(block_p.contents), *values)

    def call(block_p, args_p):
        # An exception cannot cross C: the launch's caller, or the next wait, raises it. The block fails the launch
        # as sim.h documents for a per-block function that calls gcap_sim_syncthreads (GCAP_ERROR_BACKEND), so the
        # remaining blocks do not run, as on a GPU whose kernel traps.
        if not run_callback(ctx, what, block, block_p, args_p):
            lib.gcap_sim_syncthreads(None)
    return _lib.sim_block_fn(call)


class Module(Handle):
    """Kernels loaded together: `module["name"]` (or `module.name`) is a Kernel, whether defined with
    gcap.kernel or an entry of the module's PTX; `module.get_global(name)` is a module variable."""

    def __init__(self, ctx, kernels, image=None, source=None, options=None, name=None):
        if isinstance(kernels, KernelDef) or not all(isinstance(k, KernelDef) for k in kernels):
            raise TypeError("Context.load_module: kernels must be a list of gcap.kernel(...) definitions")
        kernels = list(kernels)
        for what, text in (("image", image), ("source", source)):
            if text is not None and not isinstance(text, (str, bytes, bytearray, memoryview)):
                raise TypeError("Context.load_module: %s must be str or bytes, not %s" % (what, type(text).__name__))
        if options is not None and (isinstance(options, (str, bytes)) or
                                    not all(isinstance(o, (str, bytes)) for o in options)):
            raise TypeError("Context.load_module: options must be a list of str, such as ['-DN=4']")
        if name is not None and not isinstance(name, str):
            raise TypeError("Context.load_module: name must be a str, such as 'kernels.cu', not %s"
                            % type(name).__name__)
        defs = (_lib.kernel_def * max(1, len(kernels)))()
        keep = [defs]
        for i, k in enumerate(kernels):
            sizes = (c_size_t * max(1, len(k.params)))(*[p.size for p in k.params])
            access = (ctypes.c_int * max(1, len(k.params)))(*[p.access for p in k.params])
            keep.extend((sizes, access))
            defs[i].name = _checked.text(k.name, "Context.load_module: kernel name")
            defs[i].num_params = len(k.params)
            defs[i].param_sizes, defs[i].param_access = sizes, access
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
        if kernels:
            desc.kernels, desc.num_kernels = defs, len(kernels)
        if source is not None:
            text = _checked.text(source, "Context.load_module: source")
            keep.append(text)
            desc.source = text
        if name is not None:
            encoded = _checked.text(name, "Context.load_module: name")
            keep.append(encoded)
            desc.name = encoded  # the library refuses it without a source, or empty
        if options is not None:
            options = [_checked.text(o, "Context.load_module: option") for o in options]
            array = (c_char_p * max(1, len(options)))(*options)
            keep.append((options, array))
            desc.options, desc.num_options = array, len(options)
        h = c_void_p()
        check(lib.gcap_module_load(ctx._handle(), byref(desc), byref(h)))
        super().__init__(ctx, h.value)
        ctx._keep_alive(keep)  # launches and nodes may call the functions until the context goes
        self._entries = ptx_entries(image) if image is not None else {}
        self._kernels, self._globals = {}, {}
        for k in kernels:
            kh = c_void_p()
            check(lib.gcap_module_get_kernel(self._h, _checked.text(k.name, "Module: kernel name"), byref(kh)))
            self._kernels[k.name] = Kernel(self, kh.value, k, checked=True)

    def close(self):
        """Unloads the module now (cudaModuleUnload); its kernels and module variables cannot be used afterwards.
        Raises IllegalState, and keeps the module, when called from a host function or Python kernel of its
        context."""
        h = self._h
        if h is not None and self._ctx._h is not None:
            self._refuse_in_callback()
            check(lib.gcap_module_unload(h))
            for buf in self.__dict__.get("_globals", {}).values():
                buf.close()  # its memory went with the module
        self._h = None

    def _find(self, name):
        """The Kernel `name`: defined, or an entry of the module's PTX; None when the module has none."""
        k = self._kernels.get(name)
        if k is None:
            kh = c_void_p()
            st = lib.gcap_module_get_kernel(self._handle(), _checked.text(name, "Module: kernel name"), byref(kh))
            if st == 6:  # GCAP_ERROR_NOT_FOUND
                return None
            check(st)
            k = self._kernels[name] = Kernel(self, kh.value, KernelDef(name, self._entries.get(name)))
        return k

    def __getitem__(self, name):
        k = self._find(name)
        if k is None:
            raise KeyError(name)
        return k

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        k = self._find(name)
        if k is None:
            raise AttributeError(name)
        return k

    def get_global(self, name):
        """The module's .global or .const variable `name` (cuModuleGetGlobal): a Buffer of its bytes, set from
        the PTX at load, for copies and kernel arguments; it lasts as long as the module. NotFound if none."""
        buf = self._globals.get(name)
        if buf is None or buf._h is None:
            ptr, nbytes = c_void_p(), c_size_t()
            check(lib.gcap_module_get_global(self._handle(), _checked.text(name, "Module.get_global: name"), byref(ptr),
                                             byref(nbytes)))
            buf = self._globals[name] = Buffer._of_module(self, ptr.value, nbytes.value)
        return buf


class Packed:
    """A launch's argument values and the pointer array to them (kept alive together)."""

    def __init__(self, values):
        self.values = values
        self.pointers = (c_void_p * max(1, len(values)))(*[ctypes.addressof(v) for v in values])


def _padded(value):
    """`value` in at least 8 zeroed bytes: the library reads a parameter's size from the PTX, so a scalar
    of the wrong size gives a wrong value, never a read past Python's memory."""
    cell = (ctypes.c_char * max(8, ctypes.sizeof(value)))()
    ctypes.memmove(cell, ctypes.addressof(value), ctypes.sizeof(value))
    return cell


def _address(a, what="address"):
    from ._arrays import device_address  # a DeviceArray, or another library's CUDA array: its device address
    found = device_address(a)
    if found is not None:
        return found
    if isinstance(a, Buffer):
        return a.ptr
    if hasattr(a, "ctypes"):
        return a.ctypes.data
    return 0 if a is None else _checked.integer(a, what, "pointer")


def _is_host_array(ctx, a):
    """True for a numpy array of host memory; a zero-copy view of the simulator's device memory is not."""
    import numpy as np
    return isinstance(a, np.ndarray) and ctx._buffer_at(a.ctypes.data) is None


def _typed(ctx, p, a, kernel, i):
    """Argument `a` as the value of parameter `p`: an address, bytes, or a scalar checked against its C type."""
    what = "kernel %s: argument %d (%s)" % (kernel, i, p.spec)
    if p.pointer and _is_host_array(ctx, a):
        raise InvalidValue("kernel %s: argument %d (parameter %s) is a host %s; device memory goes there: a "
                           "Buffer, a DeviceArray (ctx.asarray(...)) or a device address"
                           % (kernel, i, p.spec, type(a).__name__), "GCAP_ERROR_INVALID_VALUE", 1)
    if p.pointer or (p.dtype in ("uint64", "int64") and (isinstance(a, Buffer) or a is None or
                                                        getattr(a, "ndim", 0) > 0)):
        return p.ctype(_address(a, what))  # a PTX .u64 is often a pointer: a Buffer, an array or None is its address
    if issubclass(p.ctype, ctypes.Array):
        try:
            data = bytes(memoryview(a).cast("B")) if not isinstance(a, ctypes.Structure) else bytes(a)
        except TypeError:
            raise TypeError("%s takes %d bytes: bytes, a ctypes Structure or a numpy scalar (numpy.float16(1.5) for "
                            "a .f16), not %s %r" % (what, p.size, type(a).__name__, a)) from None
        if len(data) != p.size:
            raise InvalidValue("kernel %s: argument %d is %d bytes, its parameter %s" % (kernel, i, len(data), p.spec),
                               "GCAP_ERROR_INVALID_VALUE", 1)
        return p.ctype.from_buffer_copy(data)
    return p.ctype(_checked.scalar(a, what, p.ctype_name))


def _untyped(a, kernel, i):
    """Argument `a` of a parameter whose type only the PTX knows: the argument's own type gives it."""
    import numpy as np
    if isinstance(a, np.ndarray) and a.ndim == 0:
        a = a[()]
    if isinstance(a, np.generic):
        return (ctypes.c_char * a.nbytes).from_buffer_copy(a.tobytes())
    if isinstance(a, (ctypes._SimpleCData, ctypes.Structure, ctypes.Union, ctypes.Array)):
        return (ctypes.c_char * ctypes.sizeof(a)).from_buffer_copy(bytes(a))
    from ._arrays import device_address  # a DeviceArray, or another library's CUDA array, is a pointer
    if isinstance(a, Buffer) or a is None or isinstance(a, np.ndarray) or device_address(a) is not None:
        return c_void_p(_address(a, "kernel %s: argument %d" % (kernel, i)))
    raise InvalidValue("kernel %s: argument %d is a Python %s, and Python does not know the parameter's type: pass a "
                       "numpy scalar (numpy.float32(2.0)) or a ctypes value, or define the kernel with "
                       "gcap.kernel(name, params) in load_module" % (kernel, i, type(a).__name__),
                       "GCAP_ERROR_INVALID_VALUE", 1)


class Kernel(Handle):
    """A kernel of a module, for Stream.launch and Graph.add_kernel: `name`, `module`, `definition`."""

    def __init__(self, module, h, kdef, checked=False):
        super().__init__(module._ctx, h)
        self.module, self.definition = module, kdef
        self._checked = checked  # a definition's sizes, which the library uses too; else Python's reading of the PTX

    @property
    def name(self):
        """The kernel's entry name."""
        return self.definition.name

    # gcap_kernel_attr's names, by value (7 is none).
    _ATTRIBUTES = ("max_threads_per_block", "shared_size_bytes", "const_size_bytes", "local_size_bytes", "num_regs",
                   "ptx_version", "binary_version", None, "max_dynamic_shared_size")

    @property
    def attributes(self):
        """What the kernel's code says of it (gcap_kernel_get_attribute), a dict of ints: max_threads_per_block,
        shared_size_bytes, const_size_bytes, local_size_bytes, num_regs, ptx_version, binary_version and
        max_dynamic_shared_size."""
        out = {}
        for value, name in enumerate(self._ATTRIBUTES):
            if name is not None:
                v = ctypes.c_int()
                check(lib.gcap_kernel_get_attribute(self._handle(), value, byref(v)))
                out[name] = v.value
        return out

    def set_attribute(self, name, value):
        """Sets attribute `name` (gcap_kernel_set_attribute, cudaFuncSetAttribute): only
        "max_dynamic_shared_size", the dynamic shared memory a launch may ask for, which may exceed 48 KiB up to
        the device's limit less the kernel's static shared memory (227 KiB a block on the simulator); launches
        and kernel nodes are checked against it. Returns None; raises InvalidValue for another name or a value
        past the limit, TypeError for a value that is not an int, OverflowError past an int32."""
        if name is None or name not in self._ATTRIBUTES:
            raise InvalidValue("Kernel.set_attribute: %r is no attribute (%s)" %
                               (name, ", ".join(n for n in self._ATTRIBUTES if n)), "GCAP_ERROR_INVALID_VALUE", 1)
        v = _checked.integer(value, "Kernel.set_attribute: value", "int32")
        check(lib.gcap_kernel_set_attribute(self._handle(), self._ATTRIBUTES.index(name), v))

    def __repr__(self):
        params = self.definition.params
        return self._repr("%s(%s)" % (self.name, "..." if params is None else ", ".join(p.spec for p in params)))

    def _pack(self, args):
        params = self.definition.params
        if params is not None and len(args) != len(params):
            raise InvalidValue("kernel %s takes %d arguments, not %d" % (self.name, len(params), len(args)),
                               "GCAP_ERROR_INVALID_VALUE", 1)
        if params is None:
            values = [_untyped(a, self.name, i) for i, a in enumerate(args)]
        else:
            values = [_typed(self._ctx, p, a, self.name, i) for i, (p, a) in enumerate(zip(params, args))]
        if not self._checked:
            values = [_padded(v) for v in values]
        return Packed(values)
