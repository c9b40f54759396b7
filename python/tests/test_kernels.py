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
