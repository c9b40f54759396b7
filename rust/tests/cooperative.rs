//! Cooperative launches: `Stream::launch_cooperative` runs a grid-synchronised kernel (the PTX nvcc
//! makes of `cooperative_groups::this_grid().sync()`, tests/ptx/coop) whose ordinary launch traps;
//! a grid too large for the device is `GpuError::CooperativeLaunchTooLarge`, and nothing runs.

use gcap::{Context, DeviceBuffer, GpuError, Module, SimOptions, Stream};

const PTX: &str = include_str!("../../tests/ptx/coop/grid_sync.ptx");
const N: i32 = 5000;
const ROUNDS: i32 = 3;
const BLOCKS: u32 = 12;

#[test]
fn a_grid_sync_runs_cooperatively_and_traps_otherwise() {
    let ctx = Context::sim(&SimOptions::default()).unwrap();
    let m = Module::from_ptx(&ctx, PTX).unwrap();
    let k = m.kernel("grid_sum").unwrap();
    let data: Vec<i32> = (0..N).map(|i| (i * 7919) % 23 - 11).collect();
    let sum: i32 = data.iter().sum();
    let input = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    let partial = DeviceBuffer::<i32>::zeroed(&ctx, BLOCKS as usize).unwrap();
    let out = DeviceBuffer::from_slice(&ctx, &[-1i32; ROUNDS as usize]).unwrap();
    let s = Stream::new(&ctx).unwrap();
    let (n, rounds) = (N, ROUNDS);
    s.launch_cooperative(&k, BLOCKS, 128, 0, &[&input, &partial, &out, &n, &rounds]).unwrap();
    s.synchronize().unwrap();
    let want: Vec<i32> = (1..=ROUNDS).map(|r| r * sum).collect();
    assert_eq!(out.to_vec().unwrap(), want);

    let count = m.kernel("grid_count").unwrap();
    let seen = DeviceBuffer::<u32>::zeroed(&ctx, 265).unwrap();
    match s.launch_cooperative(&count, 265, 1024, 0, &[&seen, &seen]) {
        Err(GpuError::CooperativeLaunchTooLarge(msg)) => {
            assert!(msg.contains("gcap_launch_cooperative_kernel"), "{msg}");
            assert!(msg.contains("holds at most 264 at once"), "{msg}");
        }
        other => panic!("265 blocks of 1024 threads: {other:?}"),
    }
    assert_eq!(seen.to_vec().unwrap(), vec![0u32; 265]); // nothing ran

    match s.launch(&k, BLOCKS, 128, 0, &[&input, &partial, &out, &n, &rounds]) {
        Err(GpuError::LaunchFailure(msg)) => assert!(msg.contains("trap executed"), "{msg}"),
        other => panic!("an ordinary launch of a grid sync: {other:?}"),
    }
}
