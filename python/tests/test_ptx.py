"""Kernels from PTX and CUDA C: modules whose kernels are the PTX's entries, run on the simulator from
their PTX and compared with numpy; module variables; kernel faults (sticky, as on a GPU); the kernels
and checks options; PTX that does not parse."""
import ctypes
import os

import numpy as np
import pytest

import gcap

# SOURCE is kernels.cu; PTX is `nvcc -ptx -arch=compute_75 -lineinfo kernels.cu` of it (CUDA 13.0,
# banner left out).
SOURCE = r"""
extern "C" __global__ void saxpy(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__device__ unsigned long long calls = 0;

extern "C" __global__ void block_sums(float *out, const float *in, int n) {
  __shared__ float part[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  part[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    out[blockIdx.x] = part[0];
    atomicAdd(&calls, 1ull);
  }
}

extern "C" __global__ void peek(float *out, int from) {
  __shared__ float part[128];
  part[threadIdx.x] = (float)threadIdx.x;
  if (threadIdx.x == 0) *out = part[from];
}

extern "C" __global__ void poke(int *p, int at) { p[threadIdx.x + at] = 1; }
"""

PTX = r""".version 9.0
.target sm_75
.address_size 64

	// .globl	saxpy
.global .align 8 .u64 calls;
// _ZZ10block_sumsE4part has been demoted
// _ZZ4peekE4part has been demoted

.visible .entry saxpy(
	.param .u64 saxpy_param_0,
	.param .u64 saxpy_param_1,
	.param .f32 saxpy_param_2,
	.param .u32 saxpy_param_3
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<5>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<8>;
	.loc	1 1 0


	ld.param.u64 	%rd1, [saxpy_param_0];
	ld.param.u64 	%rd2, [saxpy_param_1];
	ld.param.f32 	%f1, [saxpy_param_2];
	ld.param.u32 	%r2, [saxpy_param_3];
	.loc	1 2 3
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	.loc	1 3 3
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB0_2;

	.loc	1 2 3
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	.loc	1 3 3
	mul.wide.s32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd4, %rd5;
	ld.global.f32 	%f2, [%rd6];
	add.s64 	%rd7, %rd3, %rd5;
	ld.global.f32 	%f3, [%rd7];
	fma.rn.f32 	%f4, %f2, %f1, %f3;
	st.global.f32 	[%rd7], %f4;

$L__BB0_2:
	.loc	1 4 1
	ret;

}
	// .globl	block_sums
.visible .entry block_sums(
	.param .u64 block_sums_param_0,
	.param .u64 block_sums_param_1,
	.param .u32 block_sums_param_2
)
{
	.reg .pred 	%p<6>;
	.reg .f32 	%f<9>;
	.reg .b32 	%r<15>;
	.reg .b64 	%rd<11>;
	.loc	1 8 0
	// demoted variable
	.shared .align 4 .b8 _ZZ10block_sumsE4part[1024];

	ld.param.u64 	%rd1, [block_sums_param_0];
	ld.param.u64 	%rd2, [block_sums_param_1];
	ld.param.u32 	%r9, [block_sums_param_2];
	.loc	1 10 3
	mov.u32 	%r1, %ntid.x;
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %tid.x;
	mad.lo.s32 	%r4, %r2, %r1, %r3;
	.loc	1 11 3
	setp.ge.s32 	%p1, %r4, %r9;
	mov.f32 	%f8, 0f00000000;
	@%p1 bra 	$L__BB1_2;

	.loc	1 10 3
	cvta.to.global.u64 	%rd3, %rd2;
	.loc	1 11 3
	mul.wide.s32 	%rd4, %r4, 4;
	add.s64 	%rd5, %rd3, %rd4;
	ld.global.f32 	%f8, [%rd5];

$L__BB1_2:
	shl.b32 	%r10, %r3, 2;
	mov.u32 	%r11, _ZZ10block_sumsE4part;
	add.s32 	%r5, %r11, %r10;
	st.shared.f32 	[%r5], %f8;
	.loc	1 12 3
	bar.sync 	0;
	.loc	1 13 3
	shr.u32 	%r14, %r1, 1;
	setp.eq.s32 	%p2, %r14, 0;
	@%p2 bra 	$L__BB1_6;

$L__BB1_3:
	.loc	1 14 5
	setp.ge.u32 	%p3, %r3, %r14;
	@%p3 bra 	$L__BB1_5;

	shl.b32 	%r12, %r14, 2;
	add.s32 	%r13, %r5, %r12;
	ld.shared.f32 	%f4, [%r5];
	ld.shared.f32 	%f5, [%r13];
	add.f32 	%f6, %f5, %f4;
	st.shared.f32 	[%r5], %f6;

$L__BB1_5:
	.loc	1 15 5
	bar.sync 	0;
	.loc	1 13 3
	shr.u32 	%r14, %r14, 1;
	setp.ne.s32 	%p4, %r14, 0;
	@%p4 bra 	$L__BB1_3;

$L__BB1_6:
	.loc	1 17 3
	setp.ne.s32 	%p5, %r3, 0;
	@%p5 bra 	$L__BB1_8;

	.loc	1 18 5
	ld.shared.f32 	%f7, [_ZZ10block_sumsE4part];
	.loc	1 10 3
	cvta.to.global.u64 	%rd6, %rd1;
	.loc	1 18 5
	mul.wide.u32 	%rd7, %r2, 4;
	add.s64 	%rd8, %rd6, %rd7;
	st.global.f32 	[%rd8], %f7;
	.loc	1 19 5
	.loc	2 226 3, function_name $L__info_string0, inlined_at 1 19 5
	mov.u64 	%rd9, calls;
	atom.global.add.u64 	%rd10, [%rd9], 1;

$L__BB1_8:
	.loc	1 21 1
	ret;

}
	// .globl	peek
.visible .entry peek(
	.param .u64 peek_param_0,
	.param .u32 peek_param_1
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<3>;
	.reg .b32 	%r<9>;
	.reg .b64 	%rd<3>;
	.loc	1 23 0
	// demoted variable
	.shared .align 4 .b8 _ZZ4peekE4part[512];

	ld.param.u64 	%rd1, [peek_param_0];
	ld.param.u32 	%r1, [peek_param_1];
	.loc	1 25 3
	mov.u32 	%r2, %tid.x;
	cvt.rn.f32.u32 	%f1, %r2;
	shl.b32 	%r3, %r2, 2;
	mov.u32 	%r4, _ZZ4peekE4part;
	add.s32 	%r5, %r4, %r3;
	st.shared.f32 	[%r5], %f1;
	.loc	1 26 3
	setp.ne.s32 	%p1, %r2, 0;
	@%p1 bra 	$L__BB2_2;

	.loc	1 25 3
	cvta.to.global.u64 	%rd2, %rd1;
	.loc	1 26 3
	shl.b32 	%r6, %r1, 2;
	add.s32 	%r8, %r4, %r6;
	ld.shared.f32 	%f2, [%r8];
	st.global.f32 	[%rd2], %f2;

$L__BB2_2:
	.loc	1 27 1
	ret;

}
	// .globl	poke
.visible .entry poke(
	.param .u64 poke_param_0,
	.param .u32 poke_param_1
)
{
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<5>;
	.loc	1 29 0


	ld.param.u64 	%rd1, [poke_param_0];
	ld.param.u32 	%r1, [poke_param_1];
	.loc	1 29 41
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r2, %tid.x;
	add.s32 	%r3, %r2, %r1;
	mul.wide.u32 	%rd3, %r3, 4;
	add.s64 	%rd4, %rd2, %rd3;
	mov.u32 	%r4, 1;
	st.global.u32 	[%rd4], %r4;
	ret;

}
	.file	1 "/tmp/k/kernels.cu"
	.file	2 "/usr/local/cuda/bin/../targets/x86_64-linux/include/device_atomic_functions.hpp"
	.section	.debug_str
	{
$L__info_string0:
.b8 95,90,78,51,56,95,73,78,84,69,82,78,65,76,95,56,100,55,101,101,49,97,50,95,49,48,95,107,101,114,110,101,108,115,95,99,117,95,115,97
.b8 120,112,121,57,97,116,111,109,105,99,65,100,100,69,80,121,121,0

	}
"""

BAD_PTX = """.version 8.0
.target sm_75
.address_size 64
.visible .entry k()
{
  frobnicate.u32 %r1;
}
"""


def sim(**options):
    """A simulator context with explicit options (so no GCAP_SIM_* variable changes them)."""
    return gcap.Context(backend="sim", **dict({"kernels": "auto"}, **options))


def from_source(ctx, *args, **kwargs):
    """load_module(source=...), or a skip when the library finds no NVRTC."""
    try:
        return ctx.load_module(*args, **kwargs)
    except gcap.NotFound as e:
        pytest.skip("no NVRTC library for source= modules: %s" % e)


def run_saxpy_and_sums(ctx, m, a, n):
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    dx, dy, sums = ctx.alloc(x.nbytes), ctx.alloc(y.nbytes), ctx.alloc(4 * ((n + 255) // 256))
    dx.copy_from(x)
    dy.copy_from(y)
    s = ctx.stream()
    s.launch(m.saxpy, grid=(n + 127) // 128, block=128, args=(dy, dx, a, n))
    s.launch(m["block_sums"], grid=(n + 255) // 256, block=256, args=(sums, dy, n))
    s.synchronize()
    want = (np.float64(a) * x + y).astype(np.float32)  # the PTX's fma.rn rounds once
    np.testing.assert_allclose(dy.to_numpy(np.float32), want, rtol=1e-6, atol=1e-7)
    blocks = np.pad(want, (0, (-n) % 256)).reshape(-1, 256)
    np.testing.assert_allclose(sums.to_numpy(np.float32), blocks.sum(axis=1), rtol=1e-5, atol=1e-5)
    return (n + 255) // 256


def test_a_ptx_image_without_definitions_runs_its_entries(ctx):
    m = ctx.load_module(image=PTX)
    assert repr(m.saxpy).endswith(" saxpy(uint64, uint64, float32, uint32)>")
    assert m["saxpy"] is m.saxpy and m.saxpy.module is m
    blocks = run_saxpy_and_sums(ctx, m, 2.5, 1000)
    stats = ctx.stats()
    assert stats["kernels_executed"] == 2 and stats["kernels_stubbed"] == 0
    assert stats["ptx_instructions"] > 1000 * 10
    with pytest.raises(KeyError):
        m["saxpy_param_0"]
    with pytest.raises(AttributeError):
        m.nothing
    # The module variable: device memory, counted by the reduction's atomicAdd.
    calls = m.get_global("calls")
    assert calls.nbytes == 8 and m.get_global("calls") is calls
    assert calls.to_numpy(np.uint64)[0] == blocks
    calls.copy_from(np.array([100], np.uint64))
    run_saxpy_and_sums(ctx, m, -1.0, 300)
    assert calls.to_numpy(np.uint64)[0] == 102
    with pytest.raises(gcap.NotFound) as info:
        m.get_global("nothing")
    assert '"nothing"' in str(info.value)
    # Bytes work as well as text; each loaded module has its own variables.
    other = ctx.load_module(image=PTX.encode())
    assert other.get_global("calls").to_numpy(np.uint64)[0] == 0
    other.close()
    with pytest.raises(gcap.InvalidHandle):
        other.get_global("calls").ptr


def test_ptx_kernels_in_graphs(ctx):
    m = ctx.load_module(image=PTX)
    y, x = ctx.alloc(64 * 4), ctx.alloc(64 * 4)
    y.copy_from(np.ones(64, np.float32))
    x.copy_from(np.arange(64, dtype=np.float32))
    s = ctx.stream()
    with s.capture() as cap:
        s.launch(m.saxpy, 1, 64, args=(y, x, 2.0, 64))
    g = ctx.graph()
    n = g.add_kernel(m.saxpy, 1, 64, args=(y, x, 1.0, 64))
    assert n.params["kernel"] == "saxpy"
    cap.graph.instantiate().launch(s)
    g.instantiate().launch(s)
    s.synchronize()
    assert np.array_equal(y.to_numpy(np.float32), 1 + 3 * np.arange(64, dtype=np.float32))


def test_a_cuda_c_source_through_nvrtc(ctx):
    m = from_source(ctx, source=SOURCE, options=["-arch=compute_75", "-lineinfo"])
    # Python knows no parameter types here: arguments carry them.
    assert repr(m.saxpy).endswith(" saxpy(...)>")
    with pytest.raises(gcap.InvalidValue) as info:
        ctx.stream().launch(m.saxpy, 1, 1, args=(None, None, 2.0, 1))
    assert "argument 2 is a Python float" in str(info.value)
    run_saxpy_and_sums(ctx, m, np.float32(0.5), np.int32(777))
    assert m.get_global("calls").to_numpy(np.uint64)[0] == 4
    # Definitions give them, checked against the PTX at load.
    defs = [gcap.kernel("saxpy", ["float32*", "float32*", "float32", "int32"]),
            gcap.kernel("block_sums", ["float32*", "float32*", "int32"])]
    typed = ctx.load_module(defs, source=SOURCE)
    run_saxpy_and_sums(ctx, typed, 3.0, 513)
    with pytest.raises(gcap.InvalidValue) as info:
        ctx.load_module([gcap.kernel("saxpy", ["float32*", "float32*", "float64", "int32"])], source=SOURCE)
    assert "parameter 2" in str(info.value)
    # Options reach NVRTC.
    fill = ctx.load_module(source='extern "C" __global__ void fill(int *p) { p[threadIdx.x] = VALUE; }',
                           options=["-DVALUE=7"])
    buf = ctx.alloc(32 * 4)
    s = ctx.stream()
    s.launch(fill.fill, 1, 32, args=(buf,))
    s.synchronize()
    assert (buf.to_numpy(np.int32) == 7).all()
    with pytest.raises(gcap.InvalidSource) as info:
        ctx.load_module(source='extern "C" __global__ void k() { undeclared = 1; }')
    assert info.value.code == 300 and "undeclared" in str(info.value)


# Stores through a null pointer: a fault whose report names the source's line (with -lineinfo).
NULL_STORE = '''extern "C" __global__ void null_store(int v) {
  *(volatile int *)0 = v;
}
'''


def test_a_cuda_c_source_is_named_in_reports(ctx):
    """load_module(source=..., name=...) names the source in fault reports and NVRTC's log, as the user gave it;
    without a name, "<nvrtc source>" (not a file in the working directory)."""
    for name, shown in (("faulty.cu", "(faulty.cu:2)"), (None, "(<nvrtc source>:2)")):
        with gcap.Context(backend="sim", kernels="ptx", checks=["memory"]) as c:
            m = from_source(c, source=NULL_STORE, options=["-lineinfo"], name=name)
            s = c.stream()
            with pytest.raises(gcap.IllegalAddress) as info:
                s.launch(m.null_store, grid=1, block=1, args=(np.int32(5),))
                s.synchronize()
            assert 'kernel "null_store"' in str(info.value) and shown in str(info.value), str(info.value)
            assert os.getcwd() not in str(info.value)
    with pytest.raises(gcap.InvalidSource) as info:
        ctx.load_module(source='extern "C" __global__ void k() { undeclared = 1; }', name="broken.cu")
    assert "broken.cu(1): error" in str(info.value)
    # A name names a source: with an image, empty, or not text, it is refused.
    with pytest.raises(gcap.InvalidValue) as info:
        ctx.load_module(image=PTX, name="k.cu")
    assert "name" in str(info.value)
    with pytest.raises(gcap.InvalidValue) as info:
        ctx.load_module(source=NULL_STORE, name="")
    assert "name" in str(info.value)
    with pytest.raises(gcap.InvalidValue) as info:
        ctx.load_module(source=NULL_STORE, name="a\0b.cu")
    assert "Context.load_module: name" in str(info.value)
    with pytest.raises(TypeError) as info:
        ctx.load_module(source=NULL_STORE, name=7)
    assert "Context.load_module: name" in str(info.value)


def test_module_arguments(ctx):
    with pytest.raises(gcap.InvalidValue) as info:
        ctx.load_module(image=PTX, source=SOURCE)
    assert "both" in str(info.value)
    with pytest.raises(gcap.InvalidValue):
        ctx.load_module(image=PTX, options=["-DX=1"])  # options are for a source
    with pytest.raises(gcap.InvalidValue) as info:
        ctx.load_module([gcap.kernel("saxpy", ["float32*", "float32*", "float32", "uint64"])], image=PTX)
    assert "parameter 3 is 4 bytes in the image" in str(info.value)
    m = ctx.load_module([gcap.kernel("saxpy", ["float32*", "float32*", "float32", "int32"])], image=PTX)
    assert "saxpy(float32*, float32*, float32, int32)" in repr(m.saxpy)
    assert "poke(uint64, uint32)" in repr(m.poke)  # not defined, but in the PTX
    with pytest.raises(gcap.InvalidValue):
        ctx.stream().launch(m.saxpy, 1, 1, args=(None, None, 1.0))


def test_bad_ptx_names_the_line(ctx):
    with pytest.raises(gcap.InvalidPtx) as info:
        ctx.load_module(image=BAD_PTX)
    e = info.value
    assert e.status == "GCAP_ERROR_INVALID_PTX" and e.code == 218
    assert "line 6" in str(e) and "frobnicate" in str(e)


def test_an_out_of_bounds_kernel_faults_and_the_fault_is_sticky():
    ctx, other = sim(), sim()
    m = ctx.load_module(image=PTX)
    s = ctx.stream()
    p = ctx.alloc(64 * 4)
    with pytest.raises(gcap.IllegalAddress) as info:
        s.launch(m.poke, 1, 32, args=(p, 40))
    e = info.value
    assert e.status == "GCAP_ERROR_ILLEGAL_ADDRESS" and e.code == 700 and isinstance(e, gcap.Error)
    assert 'kernel "poke" block (0,0,0) thread (24,0,0)' in str(e) and "kernels.cu:29" in str(e)
    # Every later call on the context raises it again ...
    for call in (s.synchronize, ctx.synchronize, lambda: p.to_numpy(np.int32), lambda: ctx.alloc(16), ctx.graph,
                 lambda: s.launch(m.poke, 1, 1, args=(p, 0))):
        with pytest.raises(gcap.IllegalAddress) as again:
            call()
        assert 'kernel "poke"' in str(again.value)
    # ... except freeing and destroying; other contexts go on.
    p.close()
    s.close()
    m.close()
    ctx.close()
    q = other.alloc(16)
    q.copy_from(bytes(16))
    other.close()


def test_a_fault_in_deferred_work_is_raised_by_the_wait():
    with sim(exec="deferred") as ctx:
        m = ctx.load_module(image=PTX)
        s = ctx.stream()
        p = ctx.alloc(16 * 4)
        s.launch(m.poke, 1, 32, args=(p, 0))
        with pytest.raises(gcap.IllegalAddress) as info:
            s.synchronize()
        assert "thread (16,0,0)" in str(info.value)
        with pytest.raises(gcap.IllegalAddress):
            s.synchronize()


def test_the_kernels_option_chooses_what_runs():
    def nothing(block, y, x, a, n):
        pass

    defs = [gcap.kernel("saxpy", ["float32*", "float32*", "float32", "int32"], sim=nothing)]
    results = {}
    for kernels in ("auto", "cpu", "ptx"):
        with sim(kernels=kernels) as ctx:
            m = ctx.load_module(defs, image=PTX)
            y, x = ctx.alloc(32 * 4), ctx.alloc(32 * 4)
            y.copy_from(np.ones(32, np.float32))
            x.copy_from(np.ones(32, np.float32))
            s = ctx.stream()
            s.launch(m.saxpy, 1, 32, args=(y, x, 2.0, 32))
            s.synchronize()
            results[kernels] = (y.to_numpy(np.float32)[0], ctx.stats()["ptx_instructions"] > 0, _has(m, "poke"))
    # auto and cpu run the Python body; ptx the PTX. An entry without a definition is there except under cpu.
    assert results == {"auto": (1.0, False, True), "cpu": (1.0, False, False), "ptx": (3.0, True, True)}
    with pytest.raises(gcap.InvalidValue):
        sim(kernels="gpu")


def _has(module, name):
    try:
        module[name]
        return True
    except KeyError:
        return False


def peek(ctx, src, block=64):
    m = ctx.load_module(image=PTX)
    out = ctx.alloc(4)
    s = ctx.stream()
    s.launch(m.peek, 1, block, args=(out, src))
    s.synchronize()
    return out.to_numpy(np.float32)[0]


def test_the_checks_option():
    with sim() as ctx:
        assert peek(ctx, 5) == 5.0                    # defaults: memory and sync
    for checks in (["shared"], "shared", {"memory", "shared"}):
        with sim(checks=checks) as ctx:
            with pytest.raises(gcap.LaunchFailure) as info:
                peek(ctx, 63)                         # written by another warp, with no barrier
            assert "shared-memory race" in str(info.value) and 'kernel "peek"' in str(info.value)
    with sim(checks="all") as ctx:
        with pytest.raises(gcap.LaunchFailure):
            peek(ctx, 63)
    for checks in (["init"], "memory,init"):
        with sim(checks=checks) as ctx:
            with pytest.raises(gcap.LaunchFailure) as info:
                peek(ctx, 100)                        # no thread wrote it
            assert "uninitialised" in str(info.value)
    for checks in ("none", [], ["memory", "sync"]):
        with sim(checks=checks) as ctx:
            peek(ctx, 63)
    with sim(checks=["memory"]) as ctx:
        assert peek(ctx, 17) == 17.0
    for bad in (["races"], "memory,races", "everything"):
        with pytest.raises(gcap.InvalidValue) as info:
            sim(checks=bad)
        assert "races" in str(info.value) or "everything" in str(info.value)


def test_untyped_arguments_are_packed_by_their_own_type(ctx):
    from gcap._kernels import Kernel, KernelDef
    m = ctx.load_module(image=PTX)
    k = Kernel(m, m.saxpy._handle(), KernelDef("saxpy", None))  # as a source module's entry
    y, x = ctx.alloc(4 * 4), ctx.alloc(4 * 4)
    y.copy_from(np.zeros(4, np.float32))
    x.copy_from(np.arange(4, dtype=np.float32))
    s = ctx.stream()
    s.launch(k, 1, 4, args=(y, x, ctypes.c_float(2.0), np.array(4, np.int32)))
    s.synchronize()
    assert np.array_equal(y.to_numpy(np.float32), 2 * np.arange(4, dtype=np.float32))
    packed = k._pack((y, x, np.float32(1.0), np.int8(4)))
    assert [ctypes.sizeof(v) for v in packed.values] == [8, 8, 8, 8]  # each at least 8 bytes: never read past


PEEK_SHARED = r"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry peek_shared(.param .u64 out)
{
  .shared .align 8 .b8 sbuf[128];
  .reg .b32 %r<3>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  mov.u64 %rd3, sbuf;
  add.u64 %rd3, %rd3, %rd2;
  ld.shared.u32 %r2, [%rd3];
  add.u64 %rd4, %rd1, %rd2;
  st.global.u32 [%rd4], %r2;
  ret;
}
"""


def test_unwritten_memory_options():
    def peek_shared(**options):
        with sim(seed=4, **options) as c:
            out = c.alloc(4 * 32)
            out.copy_from(np.zeros(32, np.uint32))
            s = c.stream()
            s.launch(c.load_module(image=PEEK_SHARED).peek_shared, grid=1, block=32, args=(out,))
            s.synchronize()
            return out.to_numpy(np.uint32)

    poisoned = peek_shared()                           # shared memory starts as the seeded pattern
    assert (poisoned != 0).all() and (poisoned == np.resize(poisoned[:2], 32)).all()
    assert (peek_shared() == poisoned).all()           # the same seed, the same pattern
    assert (peek_shared(zero_block_memory=True) == 0).all()
    for poison in (False, True):                       # strict memory: fresh mappings read as zeros
        with sim(strict_memory=True, poison_allocations=poison) as c:
            got = c.alloc(1000).to_numpy(np.uint8)
            assert (got != 0).all() if poison else (got == 0).all()
            assert (got == np.resize(got[:8], 1000)).all()
    with pytest.raises(TypeError):
        sim(zero_block_memory="yes")


def test_kernel_attributes(ctx):
    m = ctx.load_module(image=PTX)
    a = m.block_sums.attributes
    assert a == {"max_threads_per_block": 1024, "shared_size_bytes": 1024, "const_size_bytes": 0,
                 "local_size_bytes": 0, "num_regs": 32, "ptx_version": 75, "binary_version": 75,
                 "max_dynamic_shared_size": 48 * 1024 - 1024}
    assert m.saxpy.attributes["shared_size_bytes"] == 0
    m.close()
    with pytest.raises(gcap.InvalidHandle):
        m.saxpy.attributes
