"""End-to-end tier: whole training runs as a user would start them.

Real: the framework, data sets shipped in the package, generated CTR files,
and (in the distributed tests) real processes. Faked: nothing. Every test
builds its programs under fresh default programs, a fresh unique-name
generator and a fresh global scope.
"""
import pytest

import psjob.fluid as fluid


@pytest.fixture
def fresh_fluid():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), fluid.scope_guard(fluid.Scope()):
        yield main, startup
