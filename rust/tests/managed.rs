//! Managed memory (`DeviceBuffer::new_managed`): a kernel reads what the host wrote into it and
//! the host reads what the kernel wrote, also with the simulator's strict memory on.

use gcap::{Context, DeviceBuffer, GpuError, Module, SimOptions, Stream};

/// out[tid] = in[tid] + 1.
const INC: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry inc(.param .u64 out, .param .u64 in)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [in];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.u64 %rd4, %rd2, %rd3;
  ld.global.u32 %r2, [%rd4];
  add.u32 %r3, %r2, 1;
  add.u64 %rd5, %rd1, %rd3;
  st.global.u32 [%rd5], %r3;
  ret;
}
"#;

#[test]
fn host_and_kernels_share_managed_memory() {
    for strict_memory in [false, true] {
        let ctx = Context::sim(&SimOptions { strict_memory, ..Default::default() }).unwrap();
        let stream = Stream::new(&ctx).unwrap();
        let kernel = Module::from_ptx(&ctx, INC).unwrap().kernel("inc").unwrap();
        let mut a = DeviceBuffer::<u32>::new_managed(&ctx, 32).unwrap();
        let b = DeviceBuffer::<u32>::new_managed(&ctx, 32).unwrap();
        assert!(a.is_managed() && !DeviceBuffer::<u32>::new(&ctx, 1).unwrap().is_managed());
        // SAFETY: no work is pending.
        unsafe { a.as_host_slice_mut().unwrap() }.iter_mut().enumerate().for_each(|(i, w)| *w = 10 * i as u32);
        stream.launch(&kernel, 1, 32, 0, &[&b, &a]).unwrap();
        stream.synchronize().unwrap();
        // SAFETY: the stream is synchronized.
        let got = unsafe { b.as_host_slice().unwrap() };
        assert!(got.iter().enumerate().all(|(i, &w)| w == 10 * i as u32 + 1), "{got:?}");
    }
}

#[test]
fn bad_inputs() {
    let ctx = Context::sim(&SimOptions::default()).unwrap();
    assert!(matches!(DeviceBuffer::<u32>::new_managed(&ctx, 0), Err(GpuError::InvalidValue(m)) if m.contains("gcap_mem_alloc_managed")));
    assert!(matches!(DeviceBuffer::<u8>::new_managed(&ctx, usize::MAX - 4096), Err(GpuError::OutOfMemory(_))));
    let plain = DeviceBuffer::<u32>::new(&ctx, 4).unwrap();
    // SAFETY: nothing is pending; the call refuses before touching memory.
    assert!(matches!(unsafe { plain.as_host_slice() }, Err(GpuError::InvalidValue(m)) if m.contains("not managed")));
}
