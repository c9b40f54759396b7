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


def test_pitched_memory_and_2d_copies(ctx):
    rows = ctx.alloc_pitch(24, 5)
    assert rows.pitch == 512 and rows.nbytes == 512 * 5
    host = np.arange(40 * 5, dtype=np.uint8).reshape(5, 40)
    back = np.zeros((5, 24), np.uint8)
    s = ctx.stream()
    s.memcpy_2d(rows, rows.pitch, host, 40, 24, 5)
    s.memcpy_2d(back, 24, rows, rows.pitch, 24, 5)
    s.synchronize()
    assert (back == host[:, :24]).all()
    with pytest.raises(gcap.InvalidValue):
        s.memcpy_2d(rows, 8, host, 40, 24, 5)


def test_allocation_nodes_priorities_and_the_child_setter(ctx):
    g = ctx.graph()
    alloc, address = g.add_mem_alloc(256)
    fill = g.add_memset(address, 3, deps=[alloc], nbytes=256)
    host = np.zeros(256, np.uint8)
    copy = g.add_memcpy(host, address, nbytes=256, deps=[fill])
    g.add_mem_free(address, deps=[copy])
    assert [n.type for n in g.nodes] == ["mem_alloc", "memset", "memcpy", "mem_free"]
    s = ctx.stream()
    g.instantiate().launch(s)
    s.synchronize()
    assert (host == 3).all()

    def nothing(block, x):
        pass

    mod = ctx.load_module([gcap.kernel("nothing", ["uint64"], sim=nothing)])
    k = ctx.graph().add_kernel(mod.nothing, 1, 1, args=(0,))  # a pointer that may be NULL is a uint64
    assert k.priority == 0
    k.priority = -2
    assert k.priority == -2
    with pytest.raises(gcap.InvalidValue):
        fill.priority = 1  # not a kernel node

    buf = ctx.alloc(64)
    child, other = ctx.graph(), ctx.graph()
    child.add_memset(buf, 1)
    other.add_memset(buf, 2)
    parent = ctx.graph()
    node = parent.add_child(child)
    x = parent.instantiate()
    x.set_child(node, other)
    x.launch(s)
    s.synchronize()
    assert (buf.to_numpy(np.uint8) == 2).all()


def test_3d_copy_nodes(ctx):
    a, b = ctx.alloc(16 * 4 * 2), ctx.alloc(16 * 4 * 2)
    a.copy_from(np.arange(128, dtype=np.uint8))
    b.copy_from(np.zeros(128, np.uint8))
    g = ctx.graph()
    g.add_memcpy_3d(b, a, extent=(4, 2, 2), dst_pitch=16, src_pitch=16, dst_rows=4, src_rows=4, src_pos=(8, 1, 0),
                    kind="device_to_device")
    s = ctx.stream()
    g.instantiate().launch(s)
    s.synchronize()
    out = b.to_numpy(np.uint8).reshape(2, 4, 16)
    src = np.arange(128, dtype=np.uint8).reshape(2, 4, 16)
    assert (out[:, :2, :4] == src[:, 1:3, 8:12]).all()
    assert out[:, 2:, :].sum() == 0 and out[:, :, 4:].sum() == 0
    with pytest.raises(gcap.InvalidValue):
        g.add_memcpy_3d(b, a, extent=(4, 2, 2), dst_pitch=2, src_pitch=16, dst_rows=4, src_rows=4)


def test_user_objects_and_graph_memory(ctx):
    gone = []
    obj = ctx.user_object(lambda: gone.append(1))
    g = ctx.graph()
    g.retain_user_object(obj, move=True)  # the graph holds the only reference
    x = g.instantiate()
    del g
    import gc
    gc.collect()
    assert gone == []                     # the executable still holds one
    x.close()
    assert gone == [1]
    other = ctx.user_object(lambda: gone.append(2), refs=2)
    other.release(2)
    assert gone == [1, 2]

    mem = ctx.graph_memory()
    assert set(mem) == {"used", "used_high", "reserved", "reserved_high"}
    h = ctx.graph()
    alloc, address = h.add_mem_alloc(4096)
    assert ctx.graph_memory()["reserved"] >= 4096
    del h, alloc
    gc.collect()
    ctx.trim_graph_memory()
    ctx.reset_graph_memory_high()
    assert ctx.graph_memory()["reserved"] == 0
