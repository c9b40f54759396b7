"""Kernel.set_attribute: a kernel opts into more than 48 KiB of dynamic shared memory, and launches are checked
against what it opted into."""
import numpy as np
import pytest

import gcap

# Fills `words` words of dynamic shared memory, then writes them out backwards.
REVERSE = r""".version 8.0
.target sm_80
.address_size 64
.extern .shared .align 16 .b8 dyn[];
.visible .entry reverse(.param .u64 out, .param .u32 words)
{
.reg .pred %p<2>;
.reg .b32 %r<10>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [out];
cvta.to.global.u64 %rd1, %rd1;
ld.param.u32 %r1, [words];
mov.u32 %r2, %tid.x;
mov.u32 %r3, %ntid.x;
mov.u32 %r4, dyn;
mov.u32 %r5, %r2;
FILL:
setp.ge.u32 %p1, %r5, %r1;
@%p1 bra FILLED;
shl.b32 %r6, %r5, 2;
add.s32 %r6, %r6, %r4;
st.shared.u32 [%r6], %r5;
add.s32 %r5, %r5, %r3;
bra FILL;
FILLED:
bar.sync 0;
mov.u32 %r5, %r2;
OUT:
setp.ge.u32 %p1, %r5, %r1;
@%p1 bra DONE;
sub.s32 %r8, %r1, 1;
sub.s32 %r8, %r8, %r5;
shl.b32 %r6, %r8, 2;
add.s32 %r6, %r6, %r4;
ld.shared.u32 %r7, [%r6];
mul.wide.u32 %rd2, %r5, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r7;
add.s32 %r5, %r5, %r3;
bra OUT;
DONE:
ret;
}
"""

BIG = 96 * 1024


def test_opting_into_96_kib(ctx):
    k = ctx.load_module(image=REVERSE).reverse
    out = ctx.alloc(BIG)
    s = ctx.stream()
    words = np.uint32(BIG // 4)
    assert k.attributes["max_dynamic_shared_size"] == 48 * 1024
    with pytest.raises(gcap.InvalidValue, match="GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE"):
        s.launch(k, 1, 256, (out, words), shared_mem=BIG)
    k.set_attribute("max_dynamic_shared_size", BIG)
    assert k.attributes["max_dynamic_shared_size"] == BIG
    s.launch(k, 1, 256, (out, words), shared_mem=BIG)
    s.synchronize()
    assert (out.to_numpy(np.uint32) == np.arange(BIG // 4, dtype=np.uint32)[::-1]).all()
    with pytest.raises(gcap.InvalidValue, match="opted into"):
        s.launch(k, 1, 256, (out, words), shared_mem=BIG + 4)


def test_refusals(ctx):
    k = ctx.load_module(image=REVERSE).reverse
    with pytest.raises(gcap.InvalidValue, match="232448"):
        k.set_attribute("max_dynamic_shared_size", 232448 + 1)  # past the simulated H100's 227 KiB a block
    with pytest.raises(gcap.InvalidValue, match="cannot be set"):
        k.set_attribute("num_regs", 32)
    with pytest.raises(gcap.InvalidValue, match="no attribute"):
        k.set_attribute("shared_memory", 1)
    with pytest.raises(gcap.InvalidValue, match="negative"):
        k.set_attribute("max_dynamic_shared_size", -1)
    with pytest.raises(TypeError):
        k.set_attribute("max_dynamic_shared_size", 1.5)
    with pytest.raises(OverflowError):
        k.set_attribute("max_dynamic_shared_size", 2 ** 31)
    assert k.attributes["max_dynamic_shared_size"] == 48 * 1024  # unchanged
    k.set_attribute("max_dynamic_shared_size", 232448)
    k.module.close()
    with pytest.raises(gcap.InvalidHandle):
        k.set_attribute("max_dynamic_shared_size", 1024)
