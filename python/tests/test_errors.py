"""Errors are exceptions: one class per status, the C status name and the C library's message."""
import numpy as np
import pytest

import gcap


def test_a_failing_call_raises_its_status_class_with_the_c_message(ctx):
    s = ctx.stream()
    with pytest.raises(gcap.InvalidValue) as info:
        s.memset(123, 0, nbytes=16)  # not device memory
    e = info.value
    assert e.status == "GCAP_ERROR_INVALID_VALUE" and e.code == 1
    assert isinstance(e, gcap.Error)
    assert str(e).startswith("gcap_memset_async: ")


def test_every_status_has_its_class():
    names = {cls.status for cls in gcap.Error.__subclasses__()}
    for status in ["GCAP_ERROR_INVALID_VALUE", "GCAP_ERROR_STREAM_CAPTURE_INVALIDATED",
                   "GCAP_ERROR_STREAM_CAPTURE_UNJOINED", "GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE", "GCAP_ERROR_BACKEND"]:
        assert status in names


def test_every_status_of_the_c_library_has_its_exported_class():
    from gcap._lib import lib
    for code in range(1, 1000):
        name = lib.gcap_status_name(code).decode()
        if name != "GCAP_UNKNOWN_STATUS":
            cls = [c for c in gcap.Error.__subclasses__() if c.status == name]
            assert len(cls) == 1, name
            assert getattr(gcap, cls[0].__name__) is cls[0] and cls[0].__name__ in gcap.__all__, name
    assert gcap.IllegalAddress.status == "GCAP_ERROR_ILLEGAL_ADDRESS" and gcap.AssertError.status == "GCAP_ERROR_ASSERT"


def test_a_forbidden_call_during_capture_invalidates_it(ctx):
    s = ctx.stream()
    buf = ctx.alloc(64)
    with pytest.raises(gcap.CaptureInvalidated) as ended:
        with s.capture() as cap:
            s.memset(buf, 1)
            with pytest.raises(gcap.CaptureUnsupported) as info:
                ctx.synchronize()  # not permitted while a stream captures
            assert "has capturing streams" in str(info.value)
            assert cap.status == "invalidated"
    assert "was invalidated by gcap_context_synchronize" in str(ended.value)  # the first offending call
    assert cap.graph is None
    assert cap.error is ended.value
    assert "failed" in repr(cap)
    s.memset(buf, 2)  # the stream works again
    s.synchronize()
    assert (buf.to_numpy(np.uint8) == 2).all()


def test_an_unjoined_fork_fails_the_end(ctx):
    s1, s2 = ctx.stream(), ctx.stream()
    buf = ctx.alloc(64)
    with pytest.raises(gcap.CaptureUnjoined) as ended:
        with s1.capture() as cap:
            ev = ctx.event(); ev.record(s1); s2.wait(ev)
            s2.memset(buf, 3)
    assert "(node 0, memset) was never joined back" in str(ended.value)
    assert cap.graph is None
    assert cap.error is ended.value
    assert cap.error.status == "GCAP_ERROR_STREAM_CAPTURE_UNJOINED"
    s1.memset(buf, 4)  # both streams work again
    s2.memset(buf, 5, nbytes=1)
    ctx.synchronize()
    assert buf.to_numpy(np.uint8)[:2].tolist() == [5, 4]


def test_an_exception_in_the_block_discards_the_capture_and_propagates(ctx):
    s = ctx.stream()
    buf = ctx.alloc(64)
    with pytest.raises(KeyError):
        with s.capture() as cap:
            s.memset(buf, 5)
            raise KeyError("in the block")
    assert cap.graph is None
    assert s.capture_info()["status"] == "none"
    s.memset(buf, 6)
    s.synchronize()
    assert (buf.to_numpy(np.uint8) == 6).all()


def test_argument_errors_in_python(ctx):
    s = ctx.stream()
    with pytest.raises(gcap.InvalidValue):
        s.capture(mode="nonsense")
    with pytest.raises(gcap.InvalidValue):
        s.memcpy(1, 2)  # two plain addresses and no size
    with pytest.raises(gcap.InvalidValue):
        gcap.Context(backend="sim", order="sideways")
    with pytest.raises(gcap.InvalidValue):
        gcap.Context(backend="sim", colour="blue")
