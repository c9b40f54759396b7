"""Ctrl-C while a PTX kernel runs: the kernel stops and the program gets KeyboardInterrupt."""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

# A kernel that never ends: it writes 1 to started[0], then waits for started[1], which nobody sets
# (a spin on global memory: only the watchdog or an interrupt ends it).
PROGRAM = textwrap.dedent('''
    import ctypes, sys, threading, time, gcap
    PTX = """
    .version 7.0
    .target sm_70
    .address_size 64
    .visible .entry spin(.param .u64 started)
    {
      .reg .pred %p<2>;
      .reg .b32 %r<3>;
      .reg .b64 %rd<3>;
      ld.param.u64 %rd1, [started];
      cvta.to.global.u64 %rd2, %rd1;
      mov.u32 %r1, 1;
      st.global.u32 [%rd2], %r1;
    $L_loop:
      ld.volatile.global.u32 %r2, [%rd2+4];
      setp.eq.u32 %p1, %r2, 0;
      @%p1 bra $L_loop;
      ret;
    }
    """
    ctx = gcap.Context(backend="sim", kernels="ptx", kernel_timeout_ms=0, exec=sys.argv[1])
    mod = ctx.load_module(image=PTX)
    started = ctx.alloc(8)
    s = ctx.stream()
    ctypes.memset(started.ptr, 0, 8)  # device memory is host memory on the simulator; fresh memory need not be zeros
    flag = ctypes.c_uint32.from_address(started.ptr)

    def tell():  # once the kernel runs
        while flag.value == 0:
            time.sleep(0.001)
        print("running", flush=True)

    threading.Thread(target=tell, daemon=True).start()
    s.launch(mod.spin, grid=1, block=32, args=(started,))
    s.synchronize()
    print("the kernel ended", flush=True)
''')


def _as_at_a_terminal():
    """The program starts with SIGINT's default disposition, as from a terminal: a run started in
    the background (a CI runner, `cmd &` in a script) would otherwise hand it SIGINT ignored, and
    Python would then neither raise KeyboardInterrupt nor let gcap see Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("mode", ["immediate", "deferred"])
def test_ctrl_c_stops_a_running_kernel(mode, tmp_path):
    script = tmp_path / "spin.py"
    script.write_text(PROGRAM)
    p = subprocess.Popen([sys.executable, str(script), mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ), text=True, preexec_fn=_as_at_a_terminal)
    try:
        assert p.stdout.readline().strip() == "running", p.stderr.read()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert "the kernel ended" not in out
    assert err.rstrip().splitlines()[-1] == "KeyboardInterrupt", err
    assert p.returncode != 0
