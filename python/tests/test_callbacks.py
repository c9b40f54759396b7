"""Python kernels and host functions: KeyboardInterrupt and SystemExit stop the launch and are raised as
themselves; an exception stops the kernel's remaining blocks; a callback cannot close its own context or the
objects the running work uses, and the context stays usable."""
import numpy as np
import pytest

import gcap


def recording_kernel(ctx, seen, raise_at, exc_type):
    def body(block, x):
        seen.append(block.block_idx[0])
        if block.block_idx[0] == raise_at:
            raise exc_type("stop at block %d" % raise_at)

    return ctx.load_module([gcap.kernel("blocks", ["uint8*"], sim=body)])


@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("exec_mode", ["immediate", "deferred"])
def test_an_interrupt_in_a_kernel_is_raised_as_itself_and_stops_the_launch(exc_type, exec_mode):
    with gcap.Context(backend="sim", exec=exec_mode) as ctx:
        seen = []
        mod = recording_kernel(ctx, seen, 1, exc_type)
        buf, s = ctx.alloc(8), ctx.stream()
        with pytest.raises(exc_type, match="stop at block 1"):
            s.launch(mod.blocks, grid=8, block=1, args=(buf,))
            s.synchronize()
        assert seen == [0, 1]  # the remaining blocks did not run
        # the context goes on: the next launch runs every block, and the interrupt was raised once
        del seen[:]
        ok = ctx.load_module([gcap.kernel("ok", ["uint8*"], sim=lambda block, x: seen.append(block.block_idx[0]))])
        s.launch(ok.ok, grid=3, block=1, args=(buf,))
        s.synchronize()
        assert seen == [0, 1, 2]


@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_in_a_graph_stops_the_python_work_after_it(exc_type):
    with gcap.Context(backend="sim") as ctx:
        seen, later = [], []
        mod = recording_kernel(ctx, seen, 0, exc_type)
        buf, s = ctx.alloc(8), ctx.stream()
        g = ctx.graph()
        k = g.add_kernel(mod.blocks, 4, 1, args=(buf,))
        h = g.add_host(lambda: later.append("host"), deps=[k])
        g.add_memset(buf, 3, deps=[h])
        x = g.instantiate()
        with pytest.raises(exc_type):
            x.launch(s)
            s.synchronize()
        assert seen == [0] and later == []
        s.synchronize()  # raised once


@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_in_a_host_function_is_raised_as_itself(exc_type):
    with gcap.Context(backend="sim", exec="deferred") as ctx:
        s, later = ctx.stream(), []

        def interrupted():
            raise exc_type("from the host function")

        s.host_func(interrupted)
        s.host_func(lambda: later.append(1))  # queued behind it: no Python runs once an interrupt waits
        with pytest.raises(exc_type, match="from the host function"):
            s.synchronize()
        assert later == []
        s.host_func(lambda: later.append(2))
        s.synchronize()
        assert later == [2]


def test_an_exception_in_a_kernel_stops_its_remaining_blocks(ctx):
    seen = []
    mod = recording_kernel(ctx, seen, 2, ZeroDivisionError)
    buf, s = ctx.alloc(8), ctx.stream()
    with pytest.raises(gcap.CallbackError, match="kernel blocks raised ZeroDivisionError: stop at block 2") as info:
        s.launch(mod.blocks, grid=8, block=1, args=(buf,))
    assert isinstance(info.value.__cause__, ZeroDivisionError) and info.value.status == "GCAP_ERROR_BACKEND"
    assert seen == [0, 1, 2]


# ------------------------------------------------------------------ closing from inside


@pytest.mark.parametrize("where", ["host function", "kernel"])
def test_closing_the_context_from_its_own_callback_is_refused(where):
    ctx = gcap.Context(backend="sim")
    s, buf = ctx.stream(), ctx.alloc(16)
    refused = []

    def close_it(*_):
        try:
            ctx.close()
        except gcap.IllegalState as e:
            refused.append(str(e))
        try:
            buf.close()
        except gcap.IllegalState as e:
            refused.append(str(e))

    if where == "kernel":
        mod = ctx.load_module([gcap.kernel("k", ["uint8*"], sim=close_it)])
        s.launch(mod.k, 1, 1, (buf,))
    else:
        s.host_func(close_it)
    s.synchronize()
    assert refused == ["Context.close: called from a host function or Python kernel of this context, which the "
                       "context is running; close it after the work (the context stays usable)",
                       "Buffer.close: called from a host function or Python kernel of its context, which the "
                       "context is running; close it after the work (it stays usable)"]
    s.memset(buf, 7)  # the context and the buffer are usable
    s.synchronize()
    assert (buf.to_numpy(np.uint8) == 7).all()
    ctx.close()
    with pytest.raises(gcap.ContextClosed):
        ctx.stream()


def test_an_uncaught_refusal_is_the_callbacks_error(ctx):
    s = ctx.stream()
    with pytest.raises(gcap.CallbackError) as info:
        s.host_func(ctx.close)  # runs at once (IMMEDIATE), or at the wait
        s.synchronize()
    assert isinstance(info.value.__cause__, gcap.IllegalState)
    assert ctx.stream() is not None  # still open


def test_a_close_that_c_refuses_keeps_the_object(ctx):
    s, buf = ctx.stream(), ctx.alloc(16)
    with s.capture() as cap:
        s.memset(buf, 1)
        with pytest.raises(gcap.IllegalState, match="gcap_stream_destroy: .* is part of capture"):
            s.close()  # a capturing stream is not destroyed, and stays this object's
    cap.graph.instantiate().launch(s)
    s.synchronize()
    assert (buf.to_numpy(np.uint8) == 1).all()
    s.close()
    with pytest.raises(gcap.InvalidHandle):
        s.synchronize()
