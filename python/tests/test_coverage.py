"""The rest of the API, call by call: copies of every kind, stream and event queries, host functions,
graph events and setters, uploads, pictures and summaries."""
import numpy as np
import pytest

import gcap


def test_copies_and_queries(ctx):
    s = ctx.stream()
    a, b = ctx.alloc(16), ctx.alloc(16)
    a.copy_from(b"0123456789abcdef")
    s.memcpy(b, a)                                      # device to device, kind inferred
    host = np.zeros(16, np.uint8)
    s.memcpy(host, b, kind="device_to_host")
    s.synchronize()
    assert bytes(host) == b"0123456789abcdef"
    assert s.query() is True
    assert (a.to_numpy(np.uint8, count=4, offset=12) == np.frombuffer(b"cdef", np.uint8)).all()
    with pytest.raises(gcap.InvalidValue):
        a.copy_from(np.zeros(32, np.uint8))
    with pytest.raises(gcap.InvalidValue):
        s.memcpy(host, b, kind="sideways")
    assert "16 bytes" in repr(a) and "Stream" in repr(s)
    a.close()
    with pytest.raises(gcap.InvalidHandle):
        a.ptr


def test_host_functions_and_events(ctx):
    s1, s2 = ctx.stream(), ctx.stream()
    calls = []
    s1.host_func(lambda: calls.append("a"))
    e = ctx.event()
    e.record(s1)
    s2.wait(e)
    s2.host_func(lambda: calls.append("b"))
    s2.synchronize()
    assert calls == ["a", "b"]
    assert e.query() and "Event" in repr(e)
    e.close()
    with pytest.raises(gcap.InvalidHandle):
        e.record(s1)


def test_graph_events_setters_upload_and_pictures(ctx):
    buf = ctx.alloc(64)
    host = np.zeros(64, np.uint8)
    e = ctx.event()
    g = ctx.graph()
    fill = g.add_memset(buf, 1)
    rec = g.add_event_record(e, deps=[fill])
    wait = g.add_event_wait(e, deps=[rec])
    copy = g.add_memcpy(host, buf, deps=[wait])
    assert [n.type for n in g.nodes] == ["memset", "event_record", "event_wait", "memcpy"]
    assert copy.index == 3 and "memcpy" in repr(copy)
    fill.set_memset(value=5)
    other = np.zeros(64, np.uint8)
    copy.set_memcpy(other, buf)
    s = ctx.stream()
    x = g.instantiate(auto_free=True)
    x.upload(s)
    x.launch(s)
    s.synchronize()
    assert (other == 5).all() and (host == 0).all()
    x.set_memcpy(copy, host, buf)
    x.launch(s)
    s.synchronize()
    assert (host == 5).all()
    assert "memset" in g.to_dot(verbose=True) and "value 0x5" in g.to_dot(verbose=True)
    from gcap._pictures import _layered_svg
    svg = _layered_svg(g)
    assert svg.startswith("<svg") and svg.count("<rect") == 4
    extra = g.add_empty()
    extra.destroy()
    assert len(g.nodes) == 4


def test_kernel_node_setter_and_use_node_priority(ctx):
    def put(block, x, v):
        x[0] = v

    mod = ctx.load_module([gcap.kernel("put", ["uint32*", "uint32"], sim=put)])
    buf = ctx.alloc(4)
    g = ctx.graph()
    n = g.add_kernel(mod.put, 1, 1, args=(buf, 1))
    n.set_kernel(mod.put, 1, 1, args=(buf, 2))
    s = ctx.stream()
    g.instantiate(use_node_priority=True).launch(s)
    s.synchronize()
    assert buf.to_numpy(np.uint32)[0] == 2


def test_version_and_stats(ctx):
    assert gcap.version() == gcap.__version__ and gcap.version().count(".") == 2
    stats = ctx.stats()
    assert "graph_launches" in stats and "bytes_set" in stats
    info = ctx.stream().capture_info()
    assert info["status"] == "none"
