"""`paddle.compat`: Paddle's Python 2/3 helpers (`to_text`, `to_bytes`, `round`,
`floor_division`, `get_exception_message`), with Python 3's meaning only.

Fluid 1.x programs import it (Paddle 1.8's distributed test harness does, as `cpt`).
Semantics follow Paddle's paddle/compat.py: containers (list, set, dict) are converted
item by item, in place when `inplace=True`; None, bool and float pass through; `round`
rounds halves away from zero (Python 2's rule, which Paddle kept)."""
from __future__ import annotations

import math

__all__ = ["long_type", "to_text", "to_bytes", "round", "floor_division", "get_exception_message"]

int_type = int
long_type = int


def _to_text(obj, encoding):
    if obj is None or isinstance(obj, (str, bool, float)):
        return obj
    if isinstance(obj, bytes):
        return obj.decode(encoding)
    return str(obj)


def _to_bytes(obj, encoding):
    if obj is None or isinstance(obj, bytes):
        return obj
    if isinstance(obj, str):
        return obj.encode(encoding)
    return bytes(obj)


def _convert(obj, one, encoding, inplace):
    if isinstance(obj, list):
        if inplace:
            obj[:] = [one(item, encoding) for item in obj]
            return obj
        return [one(item, encoding) for item in obj]
    if isinstance(obj, set):
        items = {one(item, encoding) for item in obj}
        if inplace:
            obj.clear()
            obj.update(items)
            return obj
        return items
    if isinstance(obj, dict):
        items = {one(k, encoding): one(v, encoding) for k, v in obj.items()}
        if inplace:
            obj.update(items)
            return obj
        return items
    return one(obj, encoding)


def to_text(obj, encoding="utf-8", inplace=False):
    """obj as str: bytes decoded with `encoding`; lists, sets and dicts item by item."""
    return _convert(obj, _to_text, encoding, inplace)


def to_bytes(obj, encoding="utf-8", inplace=False):
    """obj as bytes: str encoded with `encoding`; lists, sets and dicts item by item."""
    return _convert(obj, _to_bytes, encoding, inplace)


def round(x, d=0):  # noqa: A001 - Paddle's name
    """x rounded to d decimals, halves away from zero (round(2.5) == 3.0, round(-2.5) == -3.0)."""
    p = 10 ** d
    if x > 0.0:
        return float(math.floor((x * p) + math.copysign(0.5, x))) / p
    if x < 0.0:
        return float(math.ceil((x * p) + math.copysign(0.5, x))) / p
    return math.copysign(0.0, x)


def floor_division(x, y):
    return x // y


def get_exception_message(exc):
    return str(exc)
