"""The API as the issue and docs/python.md show it, line for line."""
import numpy as np

import gcap


def test_the_taste_works_as_shown():
    ctx = gcap.Context(backend="sim")
    s1, s2 = ctx.stream(), ctx.stream()
    buf = ctx.alloc(4096)
    assert buf.nbytes == 4096 and buf.ptr != 0
    buf.copy_from(np.ones(1024, np.float32), stream=s1)
    with s1.capture() as cap:
        s1.memset(buf, 0)
        ev = ctx.event(); ev.record(s1); s2.wait(ev)
        s2.memset(buf, 7, offset=0, nbytes=64)
        ev2 = ctx.event(); ev2.record(s2); s1.wait(ev2)
    g = cap.graph
    assert isinstance(g, gcap.Graph)
    assert [n.type for n in g.nodes] == ["memset", "memset"]
    assert g.edges == [(g.nodes[0], g.nodes[1])]
    assert g.nodes[1].dependencies == [g.nodes[0]]
    assert g.nodes[1].params["width"] == 64
    assert "digraph" in g.to_dot()
    assert g.find_races() == []
    x = g.instantiate(); x.launch(s1); s1.synchronize()
    out = buf.to_numpy(np.float32)
    raw = buf.to_numpy(np.uint8)
    assert (raw[:64] == 7).all() and (raw[64:] == 0).all()
    assert out.shape == (1024,)
    ctx.close()


def test_sim_options_as_keywords(tmp_path):
    trace = tmp_path / "t.json"
    with gcap.Context(backend="sim", order="shuffle", seed=3, check_races=True, trace=str(trace)) as ctx:
        s = ctx.stream()
        buf = ctx.alloc(256)
        s.memset(buf, 1)
        s.synchronize()
        t = ctx.trace()
        assert len(t.events) >= 1
        assert t._repr_svg_().startswith("<svg")
        assert "1 streams" in repr(t) or "streams" in repr(t)
    assert trace.read_text().rstrip().endswith("]}")


def test_backend_names():
    with gcap.Context(backend="sim") as ctx:
        assert ctx.backend == "sim"
    try:
        gcap.Context(backend="gpu")
    except gcap.InvalidValue as e:
        assert "backend 'gpu'" in str(e)
    else:
        raise AssertionError("an unknown backend was accepted")
