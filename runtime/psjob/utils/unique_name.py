"""`paddle.utils.unique_name`: generate, guard, switch over Fluid's name generator.

The generator is psjob.fluid.unique_name's, so names made here and by the layers
count together (`fc_0`, `fc_1`, ...). Paddle 2.x's `switch` returns the previous
generator with the previous dygraph parameter-name checker, a pair that `switch(*old)`
restores; psjob has no dygraph mode, so the checker is passed through as given.
"""
from __future__ import annotations

from psjob.fluid import unique_name as _names

# guard is Fluid's: names made inside count from 0 under a fresh (or the given) generator.
from psjob.fluid.unique_name import UniqueNameGenerator, generate, guard  # noqa: F401

__all__ = ["generate", "switch", "guard"]

_checker = None  # what switch(..., new_para_name_checker) last set; no effect without dygraph


def generate_with_ignorable_key(key: str) -> str:
    """generate(key) (the key matters only to Paddle's dygraph tracer)."""
    return generate(key)


def switch(new_generator=None, new_para_name_checker=None):
    """Use `new_generator` (a fresh one when None) from now on; returns
    (previous generator, previous checker) for `switch(*previous)`."""
    global _checker
    old_checker, _checker = _checker, new_para_name_checker
    return _names.switch(new_generator), old_checker
