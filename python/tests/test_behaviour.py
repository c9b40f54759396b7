"""What a PyTorch or CuPy user expects of failures, pointers, reprs and stream ordering."""
import re
import time

import numpy as np
import pytest

import gcap


def _touch(block, *args):
    pass


def test_reprs_show_what_messages_name(ctx):
    s, side, buf = ctx.stream(), ctx.stream(), ctx.alloc(64)
    e = ctx.event()
    assert re.fullmatch(r"<gcap\.Stream 0x[0-9a-f]+ ctx=0x[0-9a-f]+ sim>", repr(s))
    assert re.fullmatch(r"<gcap\.Context 0x[0-9a-f]+ sim>", repr(ctx))
    assert re.fullmatch(r"<gcap\.Buffer 0x[0-9a-f]+ ctx=0x[0-9a-f]+ sim 64 bytes>", repr(buf))
    with pytest.raises(gcap.CaptureUnjoined) as failed:
        with s.capture():
            e.record(s)
            side.wait(e)
            side.memset(buf, 1)
    # Every stream the message names is one whose repr shows that address.
    named = re.findall(r"stream (0x[0-9a-f]+)", str(failed.value))
    assert named and set(named) == {repr(side).split()[1], repr(s).split()[1]}
    assert "ctx=0x%x " % ctx._h in repr(s)
    g = ctx.graph()
    a = g.add_memset(buf, 1)
    g.add_memset(buf, 2, deps=[a])
    g.add_empty()
    assert re.fullmatch(r"<gcap\.Graph 0x[0-9a-f]+ ctx=0x[0-9a-f]+ sim 3 nodes \(2 memset, 1 empty\), 1 edge>",
                        repr(g))
    assert re.fullmatch(r"<gcap\.Node 0x[0-9a-f]+ 1: memset of graph 0x[0-9a-f]+>", repr(g.nodes[1]))
    assert repr(g.instantiate()).endswith(" sim 3 nodes per launch>")
    s.close()
    assert repr(s) == "<gcap.Stream (closed)>"


def test_pointer_parameters_refuse_host_arrays_and_foreign_pointers(ctx):
    mod = ctx.load_module([gcap.kernel("k", ["float32*:read", "float32*"], sim=_touch)])
    s, buf = ctx.stream(), ctx.alloc(64)
    host = np.zeros(16, np.float32)
    with pytest.raises(gcap.InvalidValue, match=r"kernel k: argument 1 \(parameter float32\*\) is a host ndarray"):
        s.launch(mod.k, 1, 1, args=(buf, host))
    with pytest.raises(gcap.InvalidValue, match=r'kernel "k" parameter 0 \(READ\) is 0x[0-9a-f]+, which is in no device'):
        ctx.graph().add_kernel(mod.k, 1, 1, args=(0x1234560, buf))  # an address gcap never gave
    s.launch(mod.k, 1, 1, args=(buf, buf.ptr + 16))  # inside the buffer: fine
    s.synchronize()
    with pytest.raises(gcap.InvalidValue, match="only a pointer takes a use"):
        gcap.kernel("bad", ["float32:read"])
    with pytest.raises(gcap.InvalidValue, match="only a pointer takes a use"):
        gcap.kernel("bad", ["float32*:sometimes"])


def test_pointer_uses_reach_race_analysis(ctx):
    mod = ctx.load_module([gcap.kernel("r", ["uint8*:read"], sim=_touch),
                           gcap.kernel("w", ["uint8*:write"], sim=_touch),
                           gcap.kernel("rw", ["uint8*"], sim=_touch)])
    buf = ctx.alloc(256)
    readers = ctx.graph()
    readers.add_kernel(mod.r, 1, 1, args=(buf,))
    readers.add_kernel(mod.r, 1, 1, args=(buf,))
    assert readers.find_races() == []  # two readers of one buffer do not race
    for writer in (mod.w, mod.rw):
        g = ctx.graph()
        first = g.add_kernel(mod.r, 1, 1, args=(buf,))
        second = g.add_kernel(writer, 1, 1, args=(buf,))
        races = g.find_races()
        assert len(races) == 1 and {races[0].first, races[0].second} == {first, second}


def test_pointer_parameters_keep_their_element_type(ctx):
    seen = {}

    def k(block, d, b):
        seen["d"], seen["b"] = d.dtype, b.dtype
        d[:2] = [1.5, -2.25]
        b[:2] = [-3, 100]

    mod = ctx.load_module([gcap.kernel("k", ["float64*:write", "int8*:write"], sim=k)])
    d, b, s = ctx.alloc(16), ctx.alloc(2), ctx.stream()
    s.launch(mod.k, 1, 1, args=(d, b))
    s.synchronize()
    assert seen == {"d": np.dtype("float64"), "b": np.dtype("int8")}
    assert d.to_numpy(np.float64).tolist() == [1.5, -2.25]
    assert b.to_numpy(np.int8).tolist() == [-3, 100]


def test_wait_stream_orders_work_across_streams():
    # DEFERRED, shuffled: without the wait the copy may run before the fill on another stream.
    for seed in range(1, 9):
        with gcap.Context(backend="sim", exec="deferred", order="shuffle", seed=seed) as ctx:
            a, b = ctx.stream(), ctx.stream()
            src, dst = ctx.alloc(1024), ctx.alloc(1024)
            a.memset(src, 0x5A)
            b.wait_stream(a)
            b.memcpy(dst, src)
            b.synchronize()
            assert (dst.to_numpy() == 0x5A).all(), seed


def test_wait_stream_forks_and_joins_a_capture(ctx):
    s, side, buf = ctx.stream(), ctx.stream(), ctx.alloc(64)
    with s.capture() as cap:
        s.memset(buf, 1, nbytes=32)
        side.wait_stream(s)  # fork
        side.memset(buf, 2, offset=32)
        s.wait_stream(side)  # join
    g = cap.graph
    assert sorted(n.type for n in g.nodes).count("memset") == 2
    g.instantiate().launch(s)
    s.synchronize()
    assert buf.to_numpy().tolist() == [1] * 32 + [2] * 32


def test_elapsed_time_and_query(ctx):
    s = ctx.stream()
    start, end = ctx.event(), ctx.event()
    start.record(s)
    s.host_func(lambda: time.sleep(0.02))
    end.record(s)
    s.synchronize()
    assert s.query() and end.query()
    ms = start.elapsed_time(end)
    assert ms == start.elapsed_ms(end) and 15.0 <= ms < 2000.0
    assert end.elapsed_time(start) == pytest.approx(-ms)
