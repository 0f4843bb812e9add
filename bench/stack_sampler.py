"""A sampling profiler for every Python thread of a process (py-spy is not installed here).

    PSJOB_STACK_SAMPLES=/tmp/prof.txt python bench/peer_psjob_worker.py ...

Every `period_s` a daemon thread reads sys._current_frames() and counts, per
function, the samples where it is the innermost Python frame (self: time in
it or in the C code it called) and where it is anywhere on the stack
(inclusive). At exit the counts go to the file, one table per role process.
Samples whose innermost frame is a known blocking wait (IDLE) are dropped;
other waits in C code still count, so read the tables next to the CPU
figures, not as CPU.
"""
from __future__ import annotations

import atexit
import collections
import os
import sys
import threading

# Innermost functions that only block (a lock, a queue, a poll, a gRPC completion queue).
IDLE = frozenset({"wait", "select", "_worker", "_serve", "channel_spin", "_wait_once", "get"})


def _name(code):
    return f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}:{code.co_name}"


def start(path, period_s=0.005, top=45):
    own, inclusive = collections.Counter(), collections.Counter()
    per_thread = collections.Counter()
    stop = threading.Event()

    def run():
        me = threading.get_ident()
        while not stop.wait(period_s):
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                leaf = _name(frame.f_code)
                if leaf.split(":")[-1] in IDLE:
                    continue
                per_thread[names.get(ident, "?")] += 1
                own[leaf] += 1
                seen = set()
                while frame is not None:
                    n = _name(frame.f_code)
                    if n not in seen:
                        inclusive[n] += 1
                        seen.add(n)
                    frame = frame.f_back

    def dump():
        stop.set()
        total = max(sum(per_thread.values()), 1)
        with open(f"{path}.{os.getpid()}", "w") as f:
            f.write(f"argv {sys.argv}\nsamples per thread: {dict(per_thread)}\n\nself%  function\n")
            for n, c in own.most_common(top):
                f.write(f"{100 * c / total:5.1f}  {n}\n")
            f.write("\ninclusive%  function\n")
            for n, c in inclusive.most_common(top):
                f.write(f"{100 * c / total:5.1f}  {n}\n")

    threading.Thread(target=run, daemon=True, name="stack-sampler").start()
    atexit.register(dump)


if os.environ.get("PSJOB_STACK_SAMPLES"):
    start(os.environ["PSJOB_STACK_SAMPLES"])
