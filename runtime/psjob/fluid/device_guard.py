"""fluid.device_guard: name the device kind the ops built inside it should run on.

    with fluid.device_guard("gpu"):
        h = fluid.layers.fc(x, 256, act="relu")     # mul, elementwise_add, relu: op_device "gpu"

Forward ops appended while the guard is open carry the attribute `op_device`
("cpu", "gpu", "xpu", or with an index, "gpu:1"); backward and optimizer ops
are never marked here — the heterogeneous split (transpiler/heter_split.py)
places each gradient op with the forward op it differentiates. Guards nest;
the innermost wins; `device_guard(None)` (or "") inside a guard leaves ops
unmarked, which means the default device, the CPU trainer.

psjob uses the mark for one thing: in a job with heterogeneous trainers
(`psjob launch --heter_worker_num K`), ops marked "gpu" or "xpu" run on the
heter trainers and everything else on the CPU trainers (docs/user/heter.md). On
a single machine and in a plain parameter-server job the mark changes
nothing about how a program runs.
"""
from __future__ import annotations

import contextlib

from psjob.fluid import framework

DEVICE_KINDS = ("cpu", "gpu", "xpu")
# Device kinds whose ops form the heterogeneous section.
HETER_DEVICE_KINDS = ("gpu", "xpu")


def parse_device(device) -> str | None:
    """'gpu', 'gpu:1', 'CPU', None, '' → the canonical op_device string, or None.

    Raises ValueError naming the accepted values for anything else."""
    if device is None or device == "":
        return None
    if not isinstance(device, str):
        raise TypeError(f"device_guard takes a device name such as 'gpu', got {type(device).__name__}")
    kind, sep, index = device.strip().lower().partition(":")
    if kind not in DEVICE_KINDS:
        raise ValueError(f"device_guard: unknown device {device!r}; accepted: 'cpu', 'gpu', 'xpu' "
                         "(optionally 'gpu:N' / 'xpu:N'), or None / '' for no device")
    if not sep:
        return kind
    if kind == "cpu":
        raise ValueError(f"device_guard: {device!r}: the CPU takes no device index, use 'cpu'")
    if not index.isdigit():
        raise ValueError(f"device_guard: {device!r}: the device index must be a non-negative integer")
    return f"{kind}:{int(index)}"


def device_kind(op_device) -> str:
    """The kind part of an op_device attribute ('gpu:1' → 'gpu'); '' when unmarked."""
    return str(op_device or "").partition(":")[0]


@contextlib.contextmanager
def device_guard(device=None):
    """Mark the forward ops built inside with `op_device` = device (see module docstring)."""
    canonical = parse_device(device)
    previous = framework._current_device
    framework._current_device = canonical
    try:
        yield
    finally:
        framework._current_device = previous
