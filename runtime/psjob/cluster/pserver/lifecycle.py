"""Serving until done: what a pserver and a heter trainer process share."""
from __future__ import annotations

import signal
import threading


def wait_for_stop(stopped: threading.Event) -> None:
    """Block until `stopped` is set (SIGTERM's handler sets it from the main thread, which a
    short timeout lets run)."""
    while not stopped.wait(0.5):
        pass


def wait_stoppable(proc) -> None:
    """`proc.wait()` with SIGTERM (Kubernetes stopping the pod) calling `proc.stop()`.

    `wait()` returns False when the process was stopped before its trainers
    completed: exit 143, the status of a process ended by SIGTERM."""
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda *_: proc.stop())
    try:
        if not proc.wait():
            raise SystemExit(143)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
