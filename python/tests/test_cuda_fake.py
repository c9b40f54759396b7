"""The CUDA backend from Python, on the recording fake driver of tests/cuda/ (set GCAP_FAKE_CUDA_DIR to
the directory holding its libcuda.so.1; .ci/run does). A real GPU is not needed, nor used."""
import os
import subprocess
import sys
import textwrap

import pytest

FAKE = os.environ.get("GCAP_FAKE_CUDA_DIR")


@pytest.mark.skipif(not FAKE, reason="GCAP_FAKE_CUDA_DIR is not set")
def test_capture_and_replay_on_the_cuda_backend():
    code = textwrap.dedent("""
        import gcap, numpy as np
        with gcap.Context(backend="cuda") as ctx:
            assert ctx.backend == "cuda"
            s, buf = ctx.stream(), ctx.alloc(256)
            with s.capture() as cap:
                s.memset(buf, 9)
                s.memset(buf, 4, offset=0, nbytes=16)
            x = cap.graph.instantiate()
            x.launch(s); s.synchronize()
            out = buf.to_numpy(np.uint8)
            assert (out[:16] == 4).all() and (out[16:] == 9).all(), out
            try:
                ctx.stats()
            except gcap.NotSupported as e:
                print("ok:", e.status)
    """)
    env = dict(os.environ, LD_LIBRARY_PATH=FAKE, FAKE_CUDA_RETAIN="0", FAKE_CUDA_DEVICES="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ok: GCAP_ERROR_NOT_SUPPORTED" in out.stdout
