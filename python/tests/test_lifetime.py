"""C handles go with their Python objects, and with the context; a closed context's objects raise."""
import gc
import threading

import numpy as np
import pytest

import gcap
from gcap._lib import lib


def test_collected_objects_free_their_handles(ctx):
    s = ctx.stream()
    raw = s._h
    assert lib.gcap_stream_query(raw) == 0
    del s
    gc.collect()
    assert lib.gcap_stream_query(raw) == 4  # GCAP_ERROR_INVALID_HANDLE: it is gone
    g = ctx.graph()
    raw = g._h
    del g
    gc.collect()
    assert lib.gcap_graph_clone(raw, None) == 4


def test_closed_context_objects_raise_and_never_crash():
    ctx = gcap.Context(backend="sim")
    s, e, buf, g = ctx.stream(), ctx.event(), ctx.alloc(64), ctx.graph()
    node = g.add_memset(buf, 1)
    x = g.instantiate()
    ctx.close()
    for call in (s.synchronize, e.query, lambda: buf.ptr, lambda: g.nodes, lambda: node.type, lambda: x.launch(s),
                 ctx.stream, lambda: buf.to_numpy(np.uint8)):
        with pytest.raises(gcap.ContextClosed) as info:
            call()
        assert info.value.status == "GCAP_ERROR_INVALID_HANDLE"
    ctx.close()  # twice is fine
    del s, e, buf, g, node, x
    gc.collect()


def test_with_block_closes():
    with gcap.Context(backend="sim") as ctx:
        s = ctx.stream()
    with pytest.raises(gcap.ContextClosed):
        s.synchronize()


def test_captures_from_two_threads(ctx):
    results, errors = {}, []

    def worker(k):
        try:
            s = ctx.stream()
            buf = ctx.alloc(128)
            with s.capture(mode="thread_local") as cap:
                for _ in range(20):
                    s.memset(buf, k)
            x = cap.graph.instantiate()
            x.launch(s)
            s.synchronize()
            results[k] = (len(cap.graph.nodes), buf.to_numpy(np.uint8))
        except Exception as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in (3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for k in (3, 4):
        nodes, data = results[k]
        assert nodes == 20 and (data == k).all()
