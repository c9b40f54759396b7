#!/usr/bin/env python3
"""Writes the GPU run's verdict: per-test results from meson's testlog.json and the figures
bench_gpu printed as JSON lines. Exits 1 when a test failed, timed out or none ran.

usage: verdict.py TESTLOG.json BENCH.json BACKEND ELAPSED_S BUDGET_S
"""
import json
import sys

PASSED = {"OK", "EXPECTEDFAIL"}
SKIPPED = {"SKIP"}


def json_lines(path):
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            pass  # a line cut short by a time limit
    return records


def main(testlog, bench, backend, elapsed, budget):
    tests = json_lines(testlog)
    passed = [t for t in tests if t.get("result") in PASSED]
    skipped = [t for t in tests if t.get("result") in SKIPPED]
    failed = [t for t in tests if t not in passed and t not in skipped]
    run = "dry run on the simulator: no CUDA driver" if backend == "sim" else "CUDA backend"
    print(f"gcap GPU check: {run}; {elapsed} s of a {budget} s budget")
    print(f"{len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped")
    if not tests:
        print("no test result was recorded (the suite did not start or ran out of time)")
    def rank(t):  # failures first, then skips
        return (0 if t in failed else 1 if t in skipped else 2, t.get("name", ""))
    for t in sorted(tests, key=rank):
        print(f"  {t.get('result', '?'):<13} {t.get('duration', 0):7.2f} s  {t.get('name', '?')}")
    figures = json_lines(bench)
    print(f"benchmarks: {len(figures)} figures" if figures else "benchmarks: none")
    for f in figures:
        if "ratio" in f:
            print(f"  {f['metric']:<34} {f['value']:12.3f} {f.get('unit', ''):<4} "
                  f"vs {f.get('baseline', '?')} {f.get('baseline_value', 0):.3f}: ratio {f['ratio']:.3f}")
        else:
            print(f"  {f.get('metric', '?'):<34} {f.get('value')}")
    return 1 if failed or not tests else 0


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
