"""Cooperative launches: Stream.launch(..., cooperative=True) runs a grid-synchronised kernel (the PTX nvcc makes
of cooperative_groups::this_grid().sync(), tests/ptx/coop) whose ordinary launch traps; a grid too large for the
device is CooperativeLaunchTooLarge; a capture records Node.cooperative and the replay runs cooperatively."""
import os

import numpy as np
import pytest

import gcap

PTX = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "ptx", "coop", "grid_sync.ptx")
N, ROUNDS, BLOCKS, THREADS = 5000, 3, 12, 128


def setup(ctx):
    with open(PTX, "rb") as f:
        m = ctx.load_module(image=f.read())
    data = (np.arange(N, dtype=np.int32) * 7919) % 23 - 11
    inp, partial, out = ctx.alloc(data.nbytes), ctx.alloc(4 * BLOCKS), ctx.alloc(4 * ROUNDS)
    inp.copy_from(data)
    out.copy_from(np.full(ROUNDS, -1, np.int32))
    want = [(r + 1) * int(data.sum()) for r in range(ROUNDS)]
    return m, (inp, partial, out, N, ROUNDS), out, want


@pytest.mark.parametrize("exec_mode", ["immediate", "deferred"])
def test_grid_sync_runs_cooperatively(exec_mode):
    with gcap.Context(backend="sim", kernels="ptx", exec=exec_mode) as ctx:
        m, args, out, want = setup(ctx)
        s = ctx.stream()
        s.launch(m.grid_sum, grid=BLOCKS, block=THREADS, args=args, cooperative=True)
        s.synchronize()
        assert out.to_numpy(np.int32).tolist() == want


def test_ordinary_launch_traps_and_too_large_is_refused():
    with gcap.Context(backend="sim", kernels="ptx") as ctx:
        m, args, out, want = setup(ctx)
        s = ctx.stream()
        with pytest.raises(gcap.CooperativeLaunchTooLarge, match="holds at most 264 at once") as info:
            s.launch(m.grid_count, grid=265, block=1024, args=(out, out), cooperative=True)
        assert (info.value.status, info.value.code) == ("GCAP_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", 720)
        assert out.to_numpy(np.int32).tolist() == [-1] * ROUNDS  # nothing ran
        with pytest.raises(TypeError, match="Stream.launch: cooperative"):
            s.launch(m.grid_sum, grid=BLOCKS, block=THREADS, args=args, cooperative="yes")
        with pytest.raises(gcap.LaunchFailure, match="trap executed"):
            s.launch(m.grid_sum, grid=BLOCKS, block=THREADS, args=args)


def test_capture_records_the_attribute():
    with gcap.Context(backend="sim", kernels="ptx") as ctx:
        m, args, out, want = setup(ctx)
        s = ctx.stream()
        with s.capture() as cap:
            s.launch(m.grid_sum, grid=BLOCKS, block=THREADS, args=args, cooperative=True)
        g = cap.graph
        (node,) = g.nodes
        assert node.cooperative is True
        x = g.instantiate()
        x.launch(s)
        s.synchronize()
        assert out.to_numpy(np.int32).tolist() == want
        node.cooperative = False
        assert node.cooperative is False
        with pytest.raises(TypeError, match="Node.cooperative"):
            node.cooperative = 2
