"""Paddle's text of a tensor, as its C++ TensorFormatter writes it: the Print op's output and
what print() of a fetched LoDTensor shows (Paddle 3.0.0, legacy static graph):

    Variable: x                 (Print: print_tensor_name)
      - message: hello          (Print: a message given)
      - lod: {{0, 1, 2}}
      - place: Place(cpu)
      - shape: [2, 3]
      - layout: NCHW
      - dtype: float32
      - data: [0.1 2.5 -3 1e-07]

Values are written as C++'s ostream writes them (6 significant digits, 1 and 0 for bools).
"""
from __future__ import annotations

import numpy as np


def place_text(place) -> str:
    """Place(cpu), or Place(gpu:N) for a CUDAPlace."""
    device_id = getattr(place, "device_id", None)
    return "Place(cpu)" if device_id is None else f"Place(gpu:{int(device_id)})"


def lod_text(lod) -> str:
    """{{0, 2, 4}{0, 3, 6, 7, 8}}: each level braced, the whole braced ({} without a LoD)."""
    return "{" + "".join("{" + ", ".join(str(int(v)) for v in level) + "}" for level in (lod or ())) + "}"


def _value(v, kind: str) -> str:
    if kind == "b":
        return "1" if v else "0"
    if kind in "iu":
        return str(int(v))
    return f"{float(v):g}"


def data_text(arr: np.ndarray, summarize: int = -1) -> str:
    """[v0 v1 ...]: the first `summarize` values of the flattened array (all when -1)."""
    flat = np.asarray(arr).reshape(-1)
    if summarize >= 0:
        flat = flat[:summarize]
    kind = flat.dtype.kind
    return "[" + " ".join(_value(v, kind) for v in flat.tolist()) + "]"


def tensor_text(arr: np.ndarray, lod, place) -> str:
    """print() of a LoDTensor: lod (when it has one), shape, layout, place, dtype, data."""
    arr = np.asarray(arr)
    lines = [f"  - lod: {lod_text(lod)}"] if lod else []
    lines += [f"  - shape: {list(arr.shape)}", "  - layout: NCHW", f"  - place: {place_text(place)}",
              f"  - dtype: {arr.dtype.name}", f"  - data: {data_text(arr)}"]
    return "\n".join(lines)


def print_op_text(arr: np.ndarray, lod, place, *, name: str | None, message: str, summarize: int,
                  print_lod: bool, print_shape: bool, print_dtype: bool) -> str:
    """The Print op's text: Variable (when name is given), message, lod, place, shape, layout,
    dtype, data, each as the op's flags choose."""
    arr = np.asarray(arr)
    lines = [f"Variable: {name}"] if name is not None else []
    if message:
        lines.append(f"  - message: {message}")
    if print_lod:
        lines.append(f"  - lod: {lod_text(lod)}")
    lines.append(f"  - place: {place_text(place)}")
    if print_shape:
        lines.append(f"  - shape: {list(arr.shape)}")
    lines.append("  - layout: NCHW")
    if print_dtype:
        lines.append(f"  - dtype: {arr.dtype.name}")
    lines.append(f"  - data: {data_text(arr, summarize)}")
    return "\n".join(lines)
