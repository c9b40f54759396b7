//! Large dynamic shared memory: a kernel opts into more than 48 KiB with
//! `Kernel::set_attribute(KernelAttr::MaxDynamicSharedSize, ..)`, and launches are checked
//! against what it opted into.

use gcap::{Context, DeviceBuffer, GpuError, KernelAttr, Module, SimOptions, Stream};

/// Fills `words` words of dynamic shared memory, then writes them out backwards.
const REVERSE: &str = r".version 8.0
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
";

const BIG: u32 = 96 * 1024;

#[test]
fn a_kernel_opts_into_96_kib() {
    let ctx = Context::sim(&SimOptions::default()).unwrap();
    let m = Module::from_ptx(&ctx, REVERSE).unwrap();
    let k = m.kernel("reverse").unwrap();
    let out = DeviceBuffer::<u32>::zeroed(&ctx, (BIG / 4) as usize).unwrap();
    let s = Stream::new(&ctx).unwrap();
    let words = BIG / 4;
    assert_eq!(k.attribute(KernelAttr::MaxDynamicSharedSize), Ok(48 * 1024));
    match s.launch(&k, 1, 256, BIG, &[&out, &words]) {
        Err(GpuError::InvalidValue(msg)) => assert!(msg.contains("GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE"), "{msg}"),
        other => panic!("a 96 KiB launch before opting in: {other:?}"),
    }
    k.set_attribute(KernelAttr::MaxDynamicSharedSize, BIG as i32).unwrap();
    assert_eq!(k.attribute(KernelAttr::MaxDynamicSharedSize), Ok(BIG as i32));
    s.launch(&k, 1, 256, BIG, &[&out, &words]).unwrap();
    s.synchronize().unwrap();
    let want: Vec<u32> = (0..words).rev().collect();
    assert_eq!(out.to_vec().unwrap(), want);
    assert!(matches!(s.launch(&k, 1, 256, BIG + 4, &[&out, &words]), Err(GpuError::InvalidValue(_))));
}

#[test]
fn past_the_limit_or_another_attribute_is_refused() {
    let ctx = Context::sim(&SimOptions::default()).unwrap();
    let m = Module::from_ptx(&ctx, REVERSE).unwrap();
    let k = m.kernel("reverse").unwrap();
    match k.set_attribute(KernelAttr::MaxDynamicSharedSize, 232448 + 1) {
        Err(GpuError::InvalidValue(msg)) => assert!(msg.contains("gcap_kernel_set_attribute"), "{msg}"),
        other => panic!("past the simulated H100's 227 KiB: {other:?}"),
    }
    assert!(matches!(k.set_attribute(KernelAttr::NumRegs, 32), Err(GpuError::InvalidValue(_))));
    assert!(matches!(k.set_attribute(KernelAttr::MaxDynamicSharedSize, -1), Err(GpuError::InvalidValue(_))));
    assert_eq!(k.attribute(KernelAttr::MaxDynamicSharedSize), Ok(48 * 1024));
    k.set_attribute(KernelAttr::MaxDynamicSharedSize, 232448).unwrap();
    assert_eq!(k.attribute(KernelAttr::MaxDynamicSharedSize), Ok(232448));
}
