#!/usr/bin/env python3
"""gcap's simulator running kernels from their PTX, against numba's CUDA simulator on the same
kernels (saxpy and a shared-memory reduction, bench/kernels/ptx_bench.cu and its numba twin
below), in one run: the figure is how many times faster gcap runs a launch. Both results are
checked against numpy. JSON lines on stdout, a table on stderr.

    python3 bench/ptx_vs_numba.py [--quick]

Needs the gcap package and numba in the same Python (numba's simulator needs no GPU:
NUMBA_ENABLE_CUDASIM=1 is set here). Without numba it says so and exits 77.
"""
import ast
import json
import os
import re
import statistics
import sys
import time

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
import numpy as np  # noqa: E402

try:
    from numba import cuda  # noqa: E402
except ImportError:
    print("ptx_vs_numba: numba is not installed (pip install numba)", file=sys.stderr)
    sys.exit(77)
import gcap  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
N = 4096  # 16 blocks of 256: numba's simulator runs a Python thread per GPU thread
BLOCK = 256


def bench_ptx():
    """The PTX of bench/kernels/ptx_bench.cu, from the C header tools/gen-example-ptx.sh writes."""
    text = open(os.path.join(HERE, "kernels", "ptx_bench_ptx.h")).read()
    return "".join(ast.literal_eval(s) for s in re.findall(r'^\s*("(?:[^"\\]|\\.)*")\s*$', text, re.M))


@cuda.jit
def saxpy_numba(a, x, y, n):
    i = cuda.grid(1)
    if i < n:
        y[i] = a * x[i] + y[i]


@cuda.jit
def reduce_numba(inp, out, n):
    part = cuda.shared.array(256, dtype=np.uint32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    part[t] = inp[i] if i < n else 0
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if t < s:
            part[t] += part[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        out[cuda.blockIdx.x] = part[0]


def median_seconds(fn, reps):
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def report(metric, value, baseline, baseline_value, target):
    ratio = baseline_value / value
    met = ratio >= target
    print(json.dumps({"metric": metric, "n": N, "unit": "ms/launch", "value": round(value * 1e3, 3),
                      "baseline": baseline, "baseline_value": round(baseline_value * 1e3, 3),
                      "ratio": round(ratio, 1), "target": target, "met": met}), flush=True)
    print(f"{metric:<24} {value * 1e3:12.3f} ms   {baseline:<18} {baseline_value * 1e3:12.3f} ms"
          f"   {ratio:10.1f}x  {'met' if met else 'MISSED'}", file=sys.stderr)


def main():
    quick = "--quick" in sys.argv[1:]
    reps = 3 if quick else 7
    rng = np.random.default_rng(1)
    x = rng.random(N, dtype=np.float32)
    y = rng.random(N, dtype=np.float32)
    ints = rng.integers(0, 1000, N, dtype=np.uint32)
    grid = N // BLOCK

    with gcap.Context(backend="sim", kernels="ptx", checks="none") as ctx:
        mod = ctx.load_module(image=bench_ptx())
        s = ctx.stream()
        bx, by, bin_, bout = ctx.alloc(N * 4), ctx.alloc(N * 4), ctx.alloc(N * 4), ctx.alloc(grid * 4)
        bx.copy_from(x)
        bin_.copy_from(ints)

        def gcap_saxpy():
            by.copy_from(y)
            s.launch(mod.saxpy, grid=grid, block=BLOCK, args=(np.float32(2.0), bx, by, np.uint32(N)))
            s.synchronize()

        def gcap_reduce():
            s.launch(mod.reduce_shared, grid=grid, block=BLOCK, args=(bin_, bout, np.uint32(N)))
            s.synchronize()

        t_gcap_saxpy = median_seconds(gcap_saxpy, reps * 5)
        assert np.array_equal(by.to_numpy(np.float32), np.float32(2.0) * x + y)
        t_gcap_reduce = median_seconds(gcap_reduce, reps * 5)
        assert np.array_equal(bout.to_numpy(np.uint32), ints.reshape(grid, BLOCK).sum(axis=1, dtype=np.uint32))

    ny = y.copy()
    nout = np.zeros(grid, dtype=np.uint32)

    def numba_saxpy():
        ny[:] = y
        saxpy_numba[grid, BLOCK](np.float32(2.0), x, ny, N)

    def numba_reduce():
        reduce_numba[grid, BLOCK](ints, nout, N)

    t_numba_saxpy = median_seconds(numba_saxpy, reps)
    assert np.array_equal(ny, np.float32(2.0) * x + y)
    t_numba_reduce = median_seconds(numba_reduce, reps)
    assert np.array_equal(nout, ints.reshape(grid, BLOCK).sum(axis=1, dtype=np.uint32))

    print(f"{'metric':<24} {'gcap':>15}   {'baseline':<18} {'value':>15}   {'gcap faster':>11}", file=sys.stderr)
    report("ptx_vs_numba_saxpy", t_gcap_saxpy, "numba cudasim", t_numba_saxpy, 1000)
    report("ptx_vs_numba_reduce", t_gcap_reduce, "numba cudasim", t_numba_reduce, 1000)


if __name__ == "__main__":
    main()
