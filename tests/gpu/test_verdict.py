#!/usr/bin/env python3
"""The GPU verdict counts from meson's testlog.json: failures and time-outs fail it, skips do
not, a line cut short is ignored, no result at all fails it, and figures are listed."""
import os
import subprocess
import sys
import tempfile

VERDICT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "verdict.py")


def verdict(tmp, testlog, bench, backend="cuda"):
    paths = []
    for name, text in (("testlog.json", testlog), ("bench.json", bench)):
        paths.append(os.path.join(tmp, name))
        with open(paths[-1], "w", encoding="utf-8") as f:
            f.write(text)
    run = subprocess.run([sys.executable, VERDICT, *paths, backend, "12", "420"],
                         capture_output=True, text=True, check=False)
    return run.returncode, run.stdout.splitlines()


def line(name, result, duration=0.5):
    return f'{{"name":"{name}","result":"{result}","duration":{duration}}}\n'


def expect(cond, what):
    if not cond:
        sys.exit(f"FAILED: {what}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        good = line("gcap:unit / a", "OK") + line("gcap:unit / b", "SKIP") + line("gcap:unit / c", "EXPECTEDFAIL")
        figure = '{"metric":"launch","value":2.5,"unit":"us","baseline":"raw","baseline_value":2.0,"ratio":1.25}\n'
        rc, out = verdict(tmp, good + '{"name":"gcap:unit / d","res', figure)
        expect(rc == 0, f"all passed or skipped gives 0, got {rc}: {out}")
        expect(out[0] == "gcap GPU check: CUDA backend; 12 s of a 420 s budget", out[0])
        expect(out[1] == "2 passed, 0 failed, 1 skipped", out[1])
        expect(out[-2] == "benchmarks: 1 figures", out[-2])
        expect("launch" in out[-1] and "ratio 1.250" in out[-1], out[-1])

        rc, out = verdict(tmp, good + line("gcap:unit / e", "TIMEOUT", 60.0) + line("gcap:unit / f", "FAIL"), "")
        expect(rc == 1, f"a failure gives 1, got {rc}")
        expect(out[1] == "2 passed, 2 failed, 1 skipped", out[1])
        expect({out[2].split()[0], out[3].split()[0]} == {"FAIL", "TIMEOUT"}, f"failures first: {out[2:4]}")
        expect(out[-1] == "benchmarks: none", out[-1])

        rc, out = verdict(tmp, "", "", backend="sim")
        expect(rc == 1, f"no result gives 1, got {rc}")
        expect(out[0].startswith("gcap GPU check: dry run on the simulator"), out[0])
        expect(out[2].startswith("no test result was recorded"), out[2])
    print("ok")


if __name__ == "__main__":
    main()
