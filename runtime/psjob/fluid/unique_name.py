"""Unique names for variables and layers (`fc_0.w_0`, `fc_0.tmp_1`, ...).

A generator counts per key; `guard()` swaps in a fresh generator so that two
programs built under separate guards get identical names — this is how Fluid
builds a test program whose parameters share the training program's names.
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


def generate(key: str) -> str:
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
