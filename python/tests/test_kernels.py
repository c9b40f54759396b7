"""Simulator kernels written in Python: called once per block with numpy views of pointer arguments."""
import numpy as np
import pytest

import gcap


def scale(block, x, a, n):
    i = block.thread_ids()
    i = i[i < n]
    x[i] *= a


def test_launch_and_node(ctx):
    mod = ctx.load_module([gcap.kernel("scale", ["float32*", "float32", "uint32"], sim=scale)])
    k = mod["scale"]
    assert mod.scale is k and "scale(float32*, float32, uint32)" in repr(k)
    buf = ctx.alloc(1000 * 4)
    buf.copy_from(np.arange(1000, dtype=np.float32))
    s = ctx.stream()
    s.launch(k, grid=4, block=256, args=(buf, 2.0, 1000))
    s.synchronize()
    assert (buf.to_numpy(np.float32) == np.arange(1000) * 2).all()
    g = ctx.graph()
    n = g.add_kernel(k, 4, 256, args=(buf, 0.5, 1000))
    assert n.type == "kernel" and n.params["kernel"] == "scale" and n.params["block"] == (256, 1, 1)
    x = g.instantiate()
    x.launch(s)
    s.synchronize()
    assert (buf.to_numpy(np.float32) == np.arange(1000)).all()
    x.set_kernel(n, k, 4, 256, args=(buf, 3.0, 1000))
    x.launch(s)
    s.synchronize()
    assert (buf.to_numpy(np.float32) == np.arange(1000) * 3).all()
    with pytest.raises(gcap.InvalidValue):
        s.launch(k, 1, 1, args=(buf,))
    with pytest.raises(gcap.InvalidValue):
        gcap.kernel("bad", ["complex128"])


def test_a_while_loop_set_from_a_python_kernel(ctx):
    def countdown(block, counter, handle):
        counter[0] -= 1
        gcap.set_conditional(handle, int(counter[0] != 0))

    mod = ctx.load_module([gcap.kernel("countdown", ["uint32*", "handle"], sim=countdown)])
    counter = ctx.alloc(4)
    counter.copy_from(np.array([5], np.uint32))
    g = ctx.graph()
    h = g.conditional_handle(default=1, assign_default=True)
    loop, (body,) = g.add_conditional(h, "while")
    body.add_kernel(mod.countdown, 1, 1, args=(counter, h))
    assert loop.type == "conditional" and len(body.nodes) == 1
    s = ctx.stream()
    before = ctx.stats()["nodes_executed"]
    g.instantiate().launch(s)
    s.synchronize()
    assert counter.to_numpy(np.uint32)[0] == 0
    assert ctx.stats()["nodes_executed"] - before == 1 + 5


def test_an_exception_in_a_python_kernel_or_host_function_is_raised_by_the_caller(ctx):
    def broken(block, x):
        raise ZeroDivisionError("in the kernel")

    mod = ctx.load_module([gcap.kernel("broken", ["uint8*"], sim=broken)])
    buf = ctx.alloc(8)
    s = ctx.stream()
    with pytest.raises(gcap.CallbackError) as info:
        s.launch(mod.broken, 1, 1, args=(buf,))
        s.synchronize()
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert "kernel broken raised ZeroDivisionError: in the kernel" in str(info.value)
    assert info.value.status == "GCAP_ERROR_BACKEND"
    g = ctx.graph()
    g.add_host(lambda: 1 / 0)
    with pytest.raises(gcap.CallbackError):
        g.instantiate().launch(s)
        s.synchronize()
    s.synchronize()  # reported once


def test_float64_arrays_and_signed_scalars_arrive_exactly(ctx):
    def axpb(block, x, out, a, b8, b16, b64, n):
        i = block.thread_ids()
        i = i[i < n]
        x[i] = x[i] * a + b16
        if block.block_idx[0] == 0:
            out[:3] = (b8, b16, b64)

    mod = ctx.load_module([gcap.kernel("axpb", ["float64*", "int64*", "float64", "int8", "int16", "int64", "uint32"],
                                       sim=axpb)])
    n = 300
    x0 = np.arange(n) / 3.0 + 0.1                       # float64 values no float32 holds
    x, out = ctx.alloc(x0.nbytes + 16), ctx.alloc(3 * 8)
    x.copy_from(x0)
    x.copy_from(np.array([-1.0, 2.0]), offset=x0.nbytes)  # past n: left alone
    a, b64 = 1.0 / 7.0, -(2 ** 40) - 3
    s = ctx.stream()
    s.launch(mod.axpb, grid=2, block=256, args=(x, out, a, -5, -300, b64, n))
    s.synchronize()
    assert out.to_numpy(np.int64).tolist() == [-5, -300, b64]
    want = x0 * a - 300
    got = x.to_numpy(np.float64)
    assert (got[:n] == want).all() and got[n:].tolist() == [-1.0, 2.0]
    g = ctx.graph()
    g.add_kernel(mod.axpb, 2, 256, args=(x, out, 0.1, -128, -32768, -(2 ** 63), n))
    g.instantiate().launch(s)
    s.synchronize()
    assert out.to_numpy(np.int64).tolist() == [-128, -32768, -(2 ** 63)]
    assert (x.to_numpy(np.float64, count=n) == want * 0.1 - 32768).all()
