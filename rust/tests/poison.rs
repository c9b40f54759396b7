//! What memory nothing wrote holds on the simulator: `SimOptions::zero_block_memory` and
//! `SimOptions::poison_allocations`.

use gcap::{Context, DeviceBuffer, Module, SimOptions, Stream};

/// Each thread stores shared word tid.x, which nothing wrote.
const PEEK: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry peek(.param .u64 out)
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
"#;

fn peek(options: &SimOptions) -> Vec<u32> {
    let ctx = Context::sim(options).unwrap();
    let stream = Stream::new(&ctx).unwrap();
    let kernel = Module::from_ptx(&ctx, PEEK).unwrap().kernel("peek").unwrap();
    let out = DeviceBuffer::<u32>::zeroed(&ctx, 32).unwrap();
    stream.launch(&kernel, 1, 32, 0, &[&out]).unwrap();
    stream.synchronize().unwrap();
    out.to_vec().unwrap()
}

#[test]
fn shared_memory_starts_as_poison_unless_zeroed() {
    assert!(!SimOptions::default().zero_block_memory);
    let poisoned = peek(&SimOptions { seed: 9, ..Default::default() });
    assert!(poisoned.iter().all(|&w| w != 0), "{poisoned:x?}");
    assert!(poisoned.iter().enumerate().all(|(i, &w)| w == poisoned[i % 2]), "a 64-bit word repeated");
    assert_eq!(peek(&SimOptions { seed: 9, ..Default::default() }), poisoned, "the same seed, the same pattern");
    assert_eq!(peek(&SimOptions { seed: 9, zero_block_memory: true, ..Default::default() }), vec![0; 32]);
}

#[test]
fn fresh_allocations_are_poisoned_on_request() {
    assert!(!SimOptions::default().poison_allocations);
    // Strict memory: fresh mappings read as zeros, so what differs is the option's doing.
    for poison in [false, true] {
        let ctx = Context::sim(&SimOptions { strict_memory: true, poison_allocations: poison, ..Default::default() })
            .unwrap();
        let bytes = DeviceBuffer::<u8>::new(&ctx, 1000).unwrap().to_vec().unwrap();
        if poison {
            assert!(bytes.iter().enumerate().all(|(i, &b)| b != 0 && b == bytes[i % 8]), "{:x?}", &bytes[..16]);
        } else {
            assert!(bytes.iter().all(|&b| b == 0));
        }
    }
}
