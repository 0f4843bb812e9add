"""Unique names for variables and layers (`fc_0.w_0`, `fc_0.tmp_1`, ...).

A generator counts per key; `guard()` swaps in a fresh generator so that two
programs built under separate guards get identical names — this is how Fluid
builds a test program whose parameters share the training program's names.

Fluid 1.x (Paddle 1.8) counts every name in this one process-wide generator.
Paddle 3.0's legacy static graph counts the names a program's layers make (the
layer's name, its parameters and temporaries, a variable created without a
name: `_generated_var_N`, operator overloading's `tmp_N`) in that Program's own
generator (`Program._name_generator`), so the same net built in two fresh
Programs gets the same names in both and `guard()` no longer resets them; the
optimizer's names (`learning_rate_N`, `fc_0.w_0_moment1_N`) and a few others
stay in the process-wide one. psjob does the same once per-program naming is on:
`paddle.enable_static()` turns it on (every Paddle 2.x/3.x static-graph script
calls it; a Fluid 1.x script never does, and psjob never calls it itself).
`generate_in(program, key)` is what the layer code calls.
"""
import collections
import contextlib
import copy


class UniqueNameGenerator:
    def __init__(self, prefix: str = ""):
        self.prefix = prefix or ""
        self.ids = collections.defaultdict(int)

    def __call__(self, key: str) -> str:
        return self.generate(key)

    def generate(self, key: str) -> str:
        n = self.ids[key]
        self.ids[key] += 1
        return f"{self.prefix}{key}_{n}"

    def clone(self) -> "UniqueNameGenerator":
        twin = UniqueNameGenerator(self.prefix)
        twin.ids = copy.deepcopy(self.ids)
        return twin


_generator = UniqueNameGenerator()
_per_program = False


def generate(key: str) -> str:
    return _generator(key)


def use_per_program_names(on: bool = True) -> None:
    """Name a program's layers from its own counter (Paddle 2.x/3.x), or not (Fluid 1.x)."""
    global _per_program
    _per_program = bool(on)


def per_program_names() -> bool:
    return _per_program


def generate_in(program, key: str) -> str:
    """A name for something `program` holds: from the program's own counter when
    per-program naming is on (Paddle 3.0), else from the process-wide one (Fluid 1.x)."""
    if _per_program and program is not None:
        return program._name_generator(key)
    return _generator(key)


def switch(new_generator=None):
    global _generator
    old = _generator
    _generator = new_generator if new_generator is not None else UniqueNameGenerator()
    return old


@contextlib.contextmanager
def guard(new_generator=None):
    if isinstance(new_generator, bytes):
        new_generator = new_generator.decode()
    if isinstance(new_generator, str):
        new_generator = UniqueNameGenerator(new_generator)
    old = switch(new_generator)
    try:
        yield
    finally:
        switch(old)
