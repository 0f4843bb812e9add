"""`import paddle` in a process started with psjob's --as-paddle: psjob, announced on stderr.

This directory is on PYTHONPATH only for processes started by `psjob launch
--as-paddle`, `psjob as-paddle` or a job with `spec.asPaddle: true`
(psjob.launcher.aspaddle). The module replaces itself in sys.modules by the psjob
package, and every `paddle.X.Y` import then resolves to psjob.X.Y.
"""
if __name__ != "paddle":
    raise ImportError(f"{__name__} is psjob's `paddle` alias: it is imported as `paddle` from "
                      "psjob.launcher.aspaddle.SHIM_DIR, not under another name")

try:
    import psjob.launcher.aspaddle
except ModuleNotFoundError as _exc:
    if _exc.name != "psjob":
        raise
    import sys as _sys
    raise ImportError(f"paddle is psjob in this process (--as-paddle), but {_sys.executable} has no "
                      "psjob installed: run the script with the interpreter psjob is installed in "
                      "(first on PATH for `python` in a pipe_command)", name="paddle") from None

psjob.launcher.aspaddle.install()
