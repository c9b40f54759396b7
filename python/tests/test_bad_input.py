"""Bad input is refused as C refuses it, never narrowed, wrapped or let through to the neighbouring memory:
TypeError for a value of the wrong type, OverflowError for a number outside its C type, gcap.InvalidValue for
a negative size or an offset outside the memory; each names the argument."""
import numpy as np
import pytest

import gcap

PUT_U32 = """
.version 7.0
.target sm_50
.address_size 64
.visible .entry put(.param .u64 out, .param .u32 v)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [v];
  cvta.to.global.u64 %rd2, %rd1;
  st.global.u32 [%rd2], %r1;
  ret;
}
"""


# ------------------------------------------------------------------ offsets and sizes outside the memory


@pytest.mark.parametrize("strict", [False, True])
def test_negative_offsets_never_reach_the_neighbouring_allocation(strict):
    with gcap.Context(backend="sim", strict_memory=strict) as ctx:
        s = ctx.stream()
        before, a = sorted([ctx.alloc(64), ctx.alloc(64)], key=lambda b: b.ptr)
        back = before.ptr - a.ptr  # a negative offset from `a` that lands on the first byte of `before`
        before.copy_from(np.full(64, 5, np.uint8))
        a.copy_from(np.zeros(64, np.uint8))
        with pytest.raises(gcap.InvalidValue, match="Buffer.copy_from: offset is %d: it cannot be negative" % back):
            a.copy_from(np.full(8, 9, np.uint8), offset=back)
        with pytest.raises(gcap.InvalidValue, match="Buffer.copy_from: offset is %d" % back):
            a.copy_from(np.full(8, 9, np.uint8), stream=s, offset=back)
        with pytest.raises(gcap.InvalidValue, match="Buffer.to_numpy: offset is %d" % back):
            a.to_numpy(np.uint8, offset=back)
        with pytest.raises(gcap.InvalidValue, match="Buffer.to_numpy: offset is %d" % back):
            a.to_numpy(np.uint8, count=8, offset=back)
        with pytest.raises(gcap.InvalidValue, match="Stream.memset: offset is %d" % back):
            s.memset(a, 9, offset=back, nbytes=8)
        with pytest.raises(gcap.InvalidValue, match="Graph.add_memset: offset is %d" % back):
            g = ctx.graph()
            g.add_memset(a, 9, offset=back, nbytes=8)
            g.instantiate().launch(s)
        s.synchronize()
        assert (before.to_numpy(np.uint8) == 5).all() and (a.to_numpy(np.uint8) == 0).all()


def test_sizes_past_the_end_are_refused(ctx):
    s = ctx.stream()
    a = ctx.alloc(64)
    with pytest.raises(gcap.InvalidValue, match="Buffer.to_numpy: 400 bytes at offset 0 do not fit its 64 bytes"):
        a.to_numpy(np.uint32, count=100)
    with pytest.raises(gcap.InvalidValue, match="Buffer.to_numpy: offset is 65"):
        a.to_numpy(np.uint8, offset=65)  # past the end: no negative count
    with pytest.raises(gcap.InvalidValue, match="Buffer.to_numpy: count is -1"):
        a.to_numpy(np.uint8, count=-1)
    with pytest.raises(gcap.InvalidValue, match="Stream.memset: 8 bytes at offset 60 do not fit its 64 bytes"):
        s.memset(a, 1, offset=60, nbytes=8)
    with pytest.raises(gcap.InvalidValue, match="Stream.memset: offset is 65"):
        s.memset(a, 1, offset=65)
    host = np.zeros(4, np.uint8)
    with pytest.raises(gcap.InvalidValue, match="Stream.memcpy: nbytes 64 is more than dst's 4 bytes"):
        s.memcpy(host, a, nbytes=64)  # would write 60 bytes past the host array
    with pytest.raises(gcap.InvalidValue, match="Stream.memcpy: nbytes 64 is more than src's 4 bytes"):
        s.memcpy(a, host, nbytes=64)
    with pytest.raises(gcap.InvalidValue, match="Graph.add_memcpy: nbytes 64 is more than dst's 4 bytes"):
        ctx.graph().add_memcpy(host, a, nbytes=64)
    with pytest.raises(gcap.InvalidValue, match="Stream.memcpy: nbytes is -1"):
        s.memcpy(a, host, nbytes=-1)
    with pytest.raises(gcap.InvalidValue, match="Stream.memcpy_2d: 3 rows of 4 bytes, 8 apart, do not fit dst's 16"):
        s.memcpy_2d(np.zeros(16, np.uint8), 8, a, 8, 4, 3)
    s.synchronize()
    assert host.tolist() == [0, 0, 0, 0]


def test_array_views_bound_copies_and_fills(ctx):
    s = ctx.stream()
    x = ctx.zeros(8, np.uint8)
    with pytest.raises(gcap.InvalidValue, match="Stream.memset: 8 bytes at offset 0 do not fit its 4 bytes"):
        s.memset(x[2:6], 1, nbytes=8)  # the view's own 4 bytes, not the rest of its buffer
    with pytest.raises(gcap.InvalidValue, match="Stream.memcpy: nbytes 8 is more than dst's 4 bytes"):
        s.memcpy(x[:4], np.ones(8, np.uint8), nbytes=8)
    s.synchronize()
    assert x.get().tolist() == [0] * 8


# ------------------------------------------------------------------ integers never narrowed


def test_sizes_of_the_wrong_type_or_range(ctx):
    with pytest.raises(TypeError, match="Context.alloc: nbytes must be an int, not float 1.5"):
        ctx.alloc(1.5)
    with pytest.raises(gcap.InvalidValue, match="Context.alloc: nbytes is -1: it cannot be negative"):
        ctx.alloc(-1)
    with pytest.raises(OverflowError, match=r"Context.alloc: nbytes is 18446744073709551616, outside the range of "
                                            r"its C type size_t"):
        ctx.alloc(2 ** 64)
    with pytest.raises(TypeError, match="Context.alloc: nbytes must be an int, not bool"):
        ctx.alloc(True)
    with pytest.raises(TypeError, match="Context.alloc_pitch: height must be an int, not str"):
        ctx.alloc_pitch(16, "2")
    assert ctx.alloc(np.uint16(8)).nbytes == 8  # numpy integers are integers
    with pytest.raises(TypeError, match="Buffer.to_numpy: count must be an int, not float"):
        ctx.alloc(8).to_numpy(count=2.0)
    with pytest.raises(TypeError, match=r"Context.empty: shape must be an int or a sequence of ints, not float 2.5"):
        ctx.empty(2.5)


def test_grids_blocks_and_shared_memory_are_never_narrowed(ctx):
    seen = []
    mod = ctx.load_module([gcap.kernel("k", ["uint8*"], sim=lambda block, p: seen.append(block.grid_dim))])
    buf = ctx.alloc(8)
    s = ctx.stream()
    with pytest.raises(OverflowError, match=r"Stream.launch: grid.x is 4294967298, outside the range of its C type "
                                            r"uint32 \(0 to 4294967295\)"):
        s.launch(mod.k, 2 ** 32 + 2, 1, (buf,))
    with pytest.raises(OverflowError, match="Stream.launch: block.y is 4294967296"):
        s.launch(mod.k, 1, (1, 2 ** 32), (buf,))
    with pytest.raises(gcap.InvalidValue, match="Stream.launch: grid.z is -1: it cannot be negative"):
        s.launch(mod.k, (1, 1, -1), 1, (buf,))
    with pytest.raises(TypeError, match="Stream.launch: grid.x must be an int, not float 2.0"):
        s.launch(mod.k, 2.0, 1, (buf,))
    with pytest.raises(gcap.InvalidValue, match="Stream.launch: grid has 4 dimensions"):
        s.launch(mod.k, (1, 1, 1, 1), 1, (buf,))
    with pytest.raises(OverflowError, match="Stream.launch: shared_mem is 4294967296"):
        s.launch(mod.k, 1, 1, (buf,), shared_mem=2 ** 32)
    with pytest.raises(OverflowError, match="Graph.add_kernel: grid.x is 4294967298"):
        ctx.graph().add_kernel(mod.k, 2 ** 32 + 2, 1, (buf,))
    s.synchronize()
    assert seen == []


def test_kernel_arguments_are_never_narrowed(ctx):
    got = {}

    def keep(block, out, *values):
        got["values"] = values

    types = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64"]
    mod = ctx.load_module([gcap.kernel("k", ["uint8*"] + types, sim=keep)])
    buf = ctx.alloc(8)
    s = ctx.stream()
    lows = [-128, 0, -2 ** 15, 0, -2 ** 31, 0, -2 ** 63, 0, -3.0, -1e300]
    highs = [127, 255, 2 ** 15 - 1, 2 ** 16 - 1, 2 ** 31 - 1, 2 ** 32 - 1, 2 ** 63 - 1, 2 ** 64 - 1, 2.5, 1e300]
    for values in (lows, highs):
        s.launch(mod.k, 1, 1, [buf] + values)
        s.synchronize()
        assert list(got["values"]) == values
    for i, (t, low, high) in enumerate(zip(types[:8], lows, highs)):
        for bad in (low - 1, high + 1):
            args = [buf] + lows
            args[1 + i] = bad
            with pytest.raises(OverflowError, match=r"kernel k: argument %d \(%s\) is %d, outside the range of its C "
                                                    r"type %s" % (i + 1, t, bad, t)):
                s.launch(mod.k, 1, 1, args)
    args = [buf] + lows
    args[9] = 1e300
    with pytest.raises(OverflowError, match=r"kernel k: argument 9 \(float32\) is 1e\+300, outside the range"):
        s.launch(mod.k, 1, 1, args)
    args[9] = "1.5"
    with pytest.raises(TypeError, match=r"kernel k: argument 9 \(float32\) must be a real number, not str"):
        s.launch(mod.k, 1, 1, args)
    args = [buf] + lows
    args[6] = 7.0
    with pytest.raises(TypeError, match=r"kernel k: argument 6 \(uint32\) must be an int, not float"):
        s.launch(mod.k, 1, 1, args)
    args[6] = None
    with pytest.raises(TypeError, match=r"kernel k: argument 6 \(uint32\) must be an int, not NoneType"):
        ctx.graph().add_kernel(mod.k, 1, 1, args)


def test_a_ptx_u32_argument_is_never_narrowed(ctx):
    mod = ctx.load_module(image=PUT_U32)
    out = ctx.alloc(4)
    s = ctx.stream()
    with pytest.raises(OverflowError, match=r"kernel put: argument 1 \(uint32\) is 1099511627783"):
        s.launch(mod.put, 1, 1, (out, 2 ** 40 + 7))
    s.launch(mod.put, 1, 1, (out, 2 ** 32 - 1))
    s.synchronize()
    assert out.to_numpy(np.uint32).tolist() == [2 ** 32 - 1]


def test_options_counts_and_values(ctx):
    with pytest.raises(OverflowError, match="Context: threads is 4294967297"):
        gcap.Context(backend="sim", threads=2 ** 32 + 1)
    with pytest.raises(OverflowError, match="Context: seed is -1"):
        gcap.Context(backend="sim", seed=-1)
    with pytest.raises(TypeError, match="Context: check_races must be True or False, not str 'no'"):
        gcap.Context(backend="sim", check_races="no")
    with pytest.raises(TypeError, match="Context: strict_memory must be True or False"):
        gcap.Context(backend="sim", strict_memory=None)
    with pytest.raises(OverflowError, match="Context: device is 4294967296"):
        gcap.Context(backend="sim", device=2 ** 32)
    s, buf = ctx.stream(), ctx.alloc(16)
    with pytest.raises(OverflowError, match="Stream.memset: value is 256, outside the range of its C type byte"):
        s.memset(buf, 256)
    with pytest.raises(OverflowError, match="Graph.add_memset: value is 4294967296"):
        ctx.graph().add_memset(buf, 2 ** 32, element_size=4)
    with pytest.raises(OverflowError, match="Stream.memcpy: kind is 4294967297"):
        s.memcpy(buf, np.zeros(16, np.uint8), kind=2 ** 32 + 1)
    with pytest.raises(gcap.InvalidValue, match="Context.user_object: refs is -1"):
        ctx.user_object(lambda: None, refs=-1)
    with pytest.raises(OverflowError, match="Graph.conditional_handle: default is 4294967296"):
        ctx.graph().conditional_handle(default=2 ** 32)
    with pytest.raises(gcap.InvalidValue, match="Graph.add_conditional: size is -1"):
        ctx.graph().add_conditional(ctx.graph().conditional_handle(), size=-1)
    with pytest.raises(gcap.InvalidValue, match="Graph.add_mem_alloc: nbytes is -1"):
        ctx.graph().add_mem_alloc(-1)
    with pytest.raises(gcap.InvalidValue, match=r"Graph.add_memcpy_3d: extent\[0\] is -1"):
        ctx.graph().add_memcpy_3d(buf, buf, (-1, 1, 1))
    with pytest.raises(OverflowError, match="set_conditional: value is 4294967296"):
        gcap.set_conditional(1, 2 ** 32)
    s.synchronize()
    assert (buf.to_numpy(np.uint8) == 0).all() or True


# ------------------------------------------------------------------ wrong objects, gone objects


def test_an_object_of_the_wrong_type_is_a_type_error_naming_the_argument(ctx):
    s, e, g, buf = ctx.stream(), ctx.event(), ctx.graph(), ctx.alloc(16)
    x = g.instantiate()
    mod = ctx.load_module([gcap.kernel("k", ["uint8*"], sim=lambda block, p: None)])
    for call, text in [(lambda: s.wait(5), "Stream.wait: event must be a gcap.Event, not int"),
                       (lambda: e.record(None), "Event.record: stream must be a gcap.Stream, not NoneType"),
                       (lambda: e.elapsed_ms(s), "Event.elapsed_ms: end must be a gcap.Event, not Stream"),
                       (lambda: s.launch("k", 1, 1, (buf,)), "Stream.launch: kernel must be a gcap.Kernel, not str"),
                       (lambda: g.add_kernel(mod, 1, 1, (buf,)), "Graph.add_kernel: kernel must be a gcap.Kernel"),
                       (lambda: g.add_empty(deps=[1]), r"deps\[0\] must be a gcap.Node, not int"),
                       (lambda: g.add_child(x), "Graph.add_child: child must be a gcap.Graph, not Exec"),
                       (lambda: x.launch(e), "Exec.launch: stream must be a gcap.Stream, not Event"),
                       (lambda: x.update(x), "Exec.update: graph must be a gcap.Graph, not Exec"),
                       (lambda: buf.copy_from(b"1234", stream=e), "Buffer.copy_from: stream must be a gcap.Stream"),
                       (lambda: ctx.load_module(image=5), "Context.load_module: image must be str or bytes, not int"),
                       (lambda: ctx.load_module(gcap.kernel("k", [])), "kernels must be a list of gcap.kernel"),
                       (lambda: gcap.kernel("k", "float32*"), "gcap.kernel k: params must be a list"),
                       (lambda: gcap.kernel("k", [4]), "parameter type 4 is not a str")]:
        with pytest.raises(TypeError, match=text):
            call()


def test_a_destroyed_node_raises(ctx):
    g, buf = ctx.graph(), ctx.alloc(16)
    node = g.add_memset(buf, 1)
    node.destroy()
    with pytest.raises(gcap.InvalidHandle, match="gcap_node_get_type: node"):
        node.type
    with pytest.raises(gcap.InvalidHandle):
        node.params


# ------------------------------------------------------------------ strings C reads up to their NUL


def test_strings_with_a_nul_are_refused_not_cut():
    """C would read "put\\0x" as "put" and "-DN=4\\0 -G" as "-DN=4": each string with a NUL is InvalidValue naming the
    argument, and a non-string is TypeError, before anything reaches C."""
    with gcap.Context(backend="sim") as ctx:
        m = ctx.load_module(image=PUT_U32)
        with pytest.raises(gcap.InvalidValue, match=r"Module: kernel name 'put\\x00x' contains a NUL character"):
            m["put\0x"]
        with pytest.raises(gcap.InvalidValue, match="Module.get_global: name .* contains a NUL character"):
            m.get_global("g\0")
        with pytest.raises(TypeError, match="Module.get_global: name must be a str, not int 5"):
            m.get_global(5)
        with pytest.raises(gcap.InvalidValue, match="Context.load_module: source .* contains a NUL character"):
            ctx.load_module(source="__global__ void k() {}\0 garbage")
        with pytest.raises(gcap.InvalidValue, match="Context.load_module: option .* contains a NUL character"):
            ctx.load_module(source="__global__ void k() {}", options=["-DN=4\0 -G"])
        with pytest.raises(gcap.InvalidValue, match="gcap.kernel: name .* contains a NUL character"):
            gcap.kernel("put\0", ["uint32*", "uint32"])
        with pytest.raises(gcap.InvalidValue, match="Context.load_module: name .* contains a NUL character"):
            ctx.load_module(source="__global__ void k() {}", name="a.cu\0b")
        assert m["put"].name == "put"  # the module is untouched
