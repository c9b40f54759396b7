"""Stream flags and priorities, the legacy stream's implicit ordering, and the per-thread stream."""
import threading

import pytest

import gcap


def test_flags_priorities_and_range(ctx):
    assert ctx.priority_range == (0, -5)
    plain = ctx.stream()
    assert plain.flags == gcap.STREAM_NON_BLOCKING and plain.priority == 0
    blocking = ctx.stream(flags=gcap.STREAM_DEFAULT, priority=-3)
    assert blocking.flags == gcap.STREAM_DEFAULT and blocking.priority == -3
    assert ctx.stream(priority=-100).priority == -5  # clamped, as CUDA
    with pytest.raises(gcap.InvalidValue, match="flags 0x4 is not GCAP_STREAM_DEFAULT"):
        ctx.stream(flags=4)
    with pytest.raises(TypeError):
        ctx.stream(priority="high")


def test_priorities_order_deferred_work():
    for seed in range(1, 6):
        with gcap.Context(backend="sim", exec="deferred", order="shuffle", seed=seed) as c:
            lo, hi = c.stream(priority=0), c.stream(priority=-5)
            log = []
            for i in range(3):
                lo.host_func(lambda i=i: log.append(("lo", i)))
            for i in range(3):
                hi.host_func(lambda i=i: log.append(("hi", i)))
            c.synchronize()
            assert log == [("hi", 0), ("hi", 1), ("hi", 2), ("lo", 0), ("lo", 1), ("lo", 2)]


def test_legacy_stream_orders_blocking_streams():
    for exec_mode in ("immediate", "deferred"):
        with gcap.Context(backend="sim", exec=exec_mode, order="shuffle", seed=2) as c:
            legacy = c.legacy_stream
            assert legacy.flags == gcap.STREAM_DEFAULT
            a = c.stream(flags=gcap.STREAM_DEFAULT)
            log = []
            a.host_func(lambda: log.append("a"))
            legacy.host_func(lambda: log.append("legacy"))
            legacy.synchronize()  # runs a's earlier work first
            assert log == ["a", "legacy"]
            legacy.host_func(lambda: log.append("legacy 2"))
            a.host_func(lambda: log.append("a 2"))
            a.synchronize()  # runs the legacy work first
            assert log == ["a", "legacy", "legacy 2", "a 2"]
            legacy.close()  # forgets the object; the stream lives on
            c.legacy_stream.synchronize()


def test_legacy_stream_capture_rules(ctx):
    legacy = ctx.legacy_stream
    with pytest.raises(gcap.InvalidValue, match="legacy stream, which cannot be captured"):
        with legacy.capture():
            pass
    b = ctx.stream(flags=gcap.STREAM_DEFAULT)
    with pytest.raises(gcap.CaptureInvalidated):
        with b.capture():
            with pytest.raises(gcap.CaptureImplicit):
                legacy.host_func(lambda: None)


def test_per_thread_stream(ctx):
    mine = ctx.per_thread_stream
    assert mine.flags == gcap.STREAM_DEFAULT
    assert ctx.per_thread_stream._h == mine._h
    other = []
    t = threading.Thread(target=lambda: other.append(ctx.per_thread_stream._h))
    t.start()
    t.join()
    assert other and other[0] != mine._h
    mine.close()
    ctx.per_thread_stream.synchronize()
