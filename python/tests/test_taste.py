"""The API as the issue and docs/python.md show it, line for line."""
import json
import resource
import signal
import subprocess
import sys

import numpy as np
import pytest

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


def first_callers(launches=16, **options):
    """Which of two host nodes with no edge between them ran first, launch after launch."""
    with gcap.Context(backend="sim", **options) as ctx:
        calls = []
        g = ctx.graph()
        g.add_host(lambda: calls.append("a"))
        g.add_host(lambda: calls.append("b"))
        x, s = g.instantiate(), ctx.stream()
        for _ in range(launches):
            x.launch(s)
        s.synchronize()
        assert sorted(calls) == ["a"] * launches + ["b"] * launches
        return "".join(calls[0::2])


def test_sim_options_as_keywords(tmp_path):
    trace = tmp_path / "t.json"
    with gcap.Context(backend="sim", order="shuffle", seed=3, check_races=True, trace=str(trace)) as ctx:
        s = ctx.stream()
        buf = ctx.alloc(256)
        s.memset(buf, 1)
        s.synchronize()
        racy = ctx.graph()
        racy.add_memset(buf, 1)
        racy.add_memset(buf, 2)
        with pytest.raises(gcap.InvalidValue) as info:      # check_races
            racy.instantiate()
        assert "check_races: 1 race" in str(info.value)
        calls = []
        g = ctx.graph()
        g.add_host(lambda: calls.append("a"))
        g.add_host(lambda: calls.append("b"))
        x = g.instantiate()
        for _ in range(16):
            x.launch(s)
        s.synchronize()
        t = ctx.trace()
        assert [e[:2] for e in t.events[:1]] == [("memset", 1)]
        assert [e[0] for e in t.events[1:]] == ["host"] * 32
        assert t._repr_svg_().startswith("<svg")
        assert repr(t) == "<gcap.Trace: 33 events on 1 streams>"
    # order and seed: shuffled, the first of the two varies, the same for the same seed; in capture order
    # it is always the first created.
    shuffled = "".join(calls[0::2])
    assert set(shuffled) == {"a", "b"}
    assert first_callers(order="shuffle", seed=3) == shuffled
    assert first_callers(order="shuffle", seed=4) != shuffled
    assert first_callers(order="capture", seed=3) == "a" * 16
    # trace: the file is the timeline, complete once the context is gone.
    events = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"]
    assert [(e["name"], e["cat"]) for e in events[:2]] == [("memset", "stream"), ("host", "graph")]
    assert sorted(e["args"]["launch"] for e in events[1:]) == sorted(list(range(1, 17)) * 2)


def test_sim_options_exec_and_threads_as_keywords():
    def mark(block, x):
        x[block.block_idx[0]] = block.block_idx[0] + 1

    for options in ({"exec": "immediate", "threads": 1}, {"exec": "deferred", "threads": 2}):
        with gcap.Context(backend="sim", **options) as ctx:
            deferred = options["exec"] == "deferred"
            mod = ctx.load_module([gcap.kernel("mark", ["uint8*"], sim=mark)])
            buf = ctx.alloc(16)
            buf.copy_from(np.zeros(16, np.uint8))
            s = ctx.stream()
            s.memset(buf, 7, nbytes=12)
            s.launch(mod.mark, grid=8, block=32, args=(buf,))
            before = buf.to_numpy(np.uint8)                 # a synchronous copy waits for no stream
            assert (before == 0).all() if deferred else before.tolist() == list(range(1, 9)) + [7] * 4 + [0] * 4
            assert s.query() is not deferred                # a query runs one step of what is queued
            s.synchronize()
            assert buf.to_numpy(np.uint8).tolist() == list(range(1, 9)) + [7] * 4 + [0] * 4
            stats = ctx.stats()
            assert stats["ops_deferred"] == (2 if deferred else 0)
            assert stats["blocks_parallel"] == (8 if options["threads"] == 2 else 0)
            assert stats["kernels_executed"] == 1 and stats["bytes_set"] == 12


STRICT_MEMORY = """
import ctypes, sys
import gcap
with gcap.Context(backend="sim", strict_memory=sys.argv[1] == "1") as ctx:
    buf = ctx.alloc(64)
    buf.copy_from(bytes(range(64)))
    print(buf.to_numpy()[:4].tolist(), flush=True)         # copies open device memory
    print(ctypes.c_ubyte.from_address(buf.ptr + 3).value, flush=True)   # host code touching it
"""


def test_strict_memory_as_a_keyword_makes_host_access_fault(tmp_path):
    script = tmp_path / "strict.py"
    script.write_text(STRICT_MEMORY)

    def run(strict):
        return subprocess.run([sys.executable, str(script), strict], cwd=str(tmp_path), capture_output=True, text=True,
                              timeout=120, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))

    loose = run("0")
    assert loose.returncode == 0 and loose.stdout.split("\n")[:2] == ["[0, 1, 2, 3]", "3"], loose.stderr
    strict = run("1")
    assert strict.returncode == -signal.SIGSEGV and strict.stdout == "[0, 1, 2, 3]\n", strict.stderr


def test_backend_names():
    with gcap.Context(backend="sim") as ctx:
        assert ctx.backend == "sim"
    try:
        gcap.Context(backend="gpu")
    except gcap.InvalidValue as e:
        assert "backend 'gpu'" in str(e)
    else:
        raise AssertionError("an unknown backend was accepted")
