"""Ctrl-C while a kernel runs.

A kernel runs inside a ctypes call, where Python's own SIGINT handler cannot run until the call
returns, and a kernel that never ends never returns. Python's C-level handler still writes the
signal's number to the wakeup fd (signal.set_wakeup_fd): a watcher thread reads it and calls
gcap_sim_interrupt, which stops the running kernels; the call returns (LaunchTimeout, sticky: the
context is then only good for closing), and Python's handler raises KeyboardInterrupt as usual.

Installed once, from the main thread, when the first context is made, and only where Python's
default SIGINT handler is in place and nobody else uses the wakeup fd (asyncio's event loop does):
elsewhere Ctrl-C reaches the program after the kernel, as before.
"""
import os
import signal
import threading

from ._lib import lib

_lock = threading.Lock()
_installed = False


def _watch(fd):
    while True:
        try:
            data = os.read(fd, 64)
        except OSError:
            return
        if not data:
            return
        if signal.SIGINT in data:
            lib.gcap_sim_interrupt()


def install():
    """Routes SIGINT to gcap_sim_interrupt as well as to Python (see the module's docstring)."""
    global _installed
    with _lock:
        if _installed or threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return
        r, w = os.pipe()
        os.set_blocking(w, False)
        try:
            old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        except (ValueError, OSError):
            os.close(r)
            os.close(w)
            return
        if old != -1:  # someone else's: leave it to them
            signal.set_wakeup_fd(old)
            os.close(r)
            os.close(w)
            return
        threading.Thread(target=_watch, args=(r,), name="gcap-sigint", daemon=True).start()
        _installed = True
