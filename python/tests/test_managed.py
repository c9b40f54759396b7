"""Context.managed: memory kernels and copies use as device memory and the host touches directly."""
import numpy as np
import pytest

import gcap


def _sim(**opts):
    return gcap.Context(backend="sim", **opts)


def test_host_writes_and_reads_managed_memory_around_copies(ctx):
    m = ctx.managed(64 * 4)
    assert m.managed and "managed" in repr(m)
    a = m.host_array("uint32")
    assert a.shape == (64,)
    a[:] = np.arange(64, dtype=np.uint32)
    d = ctx.alloc(64 * 4)
    d.copy_from(a)  # host view to device memory
    m2 = ctx.managed(64 * 4)
    m2.copy_from(d.to_numpy("uint32") * 3)
    assert (m2.host_array("uint32") == np.arange(64, dtype=np.uint32) * 3).all()
    assert (m.to_numpy("uint32") == np.arange(64)).all()
    m.close()
    m2.close()
    d.close()


def test_managed_memory_under_strict_memory():
    ctx = _sim(strict_memory=True)
    m = ctx.managed(16)
    v = m.host_array("uint32")
    v[:] = [1, 2, 3, 4]
    assert list(m.to_numpy("uint32")) == [1, 2, 3, 4]
    ctx.close()


def test_bad_inputs(ctx):
    with pytest.raises(gcap.InvalidValue, match="gcap_mem_alloc_managed: bytes is 0"):
        ctx.managed(0)
    with pytest.raises(gcap.InvalidValue, match="Context.managed: nbytes"):
        ctx.managed(-1)
    with pytest.raises(TypeError):
        ctx.managed(1.5)
    with pytest.raises(gcap.OutOfMemory, match="gcap_mem_alloc_managed"):
        ctx.managed(2 ** 63)
    with pytest.raises(gcap.InvalidValue, match="not managed memory"):
        ctx.alloc(16).host_array()
    with pytest.raises(gcap.InvalidValue, match="Buffer.host_array"):
        ctx.managed(16).host_array("uint32", count=5)
