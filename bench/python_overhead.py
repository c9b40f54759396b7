#!/usr/bin/env python3
"""The Python binding's cost per call: Stream.memset of 64 bytes on the simulator against the same
gcap_memset_async from C (bench_call), regions alternating in one run so that a shared machine's
load falls on both alike. Prints both medians and their ratio.

    python3 bench/python_overhead.py BUILD/bench/bench_call [rounds]   (with the gcap package importable)
"""
import statistics
import subprocess
import sys
import time

import gcap


def python_ns(s, buf, calls=20000):
    start = time.perf_counter_ns()
    for _ in range(calls):
        s.memset(buf, 7, 0, 64)
    return (time.perf_counter_ns() - start) / calls


def main():
    bench_call = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with gcap.Context(backend="sim") as ctx:
        s, buf = ctx.stream(), ctx.alloc(64)
        python_ns(s, buf, 2000)  # warm up
        py, c = [], []
        for _ in range(rounds):
            py.append(python_ns(s, buf))
            c.append(float(subprocess.run([bench_call, "3"], capture_output=True, text=True, check=True).stdout))
    p, q = statistics.median(py), statistics.median(c)
    print("python Stream.memset:   %8.1f ns per call" % p)
    print("C gcap_memset_async:    %8.1f ns per call" % q)
    print("ratio python / C:       %8.1f   (binding overhead %.1f ns per call)" % (p / q, p - q))


if __name__ == "__main__":
    main()
