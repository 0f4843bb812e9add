"""psjob.fluid: a Fluid-style static-graph framework (`import psjob.fluid as fluid`).

Build a Program with `layers` and an `optimizer`, run it with an `Executor`
on a Place, save it with `io`, and distribute it with the
`DistributeTranspiler` — the API Fluid 1.x scripts use.
"""
from . import core, framework, initializer, layers, unique_name  # noqa: F401
from . import io, optimizer, regularizer, clip, metrics  # noqa: F401
from .backward import append_backward, gradients  # noqa: F401
from .core import (CPUPlace, CUDAPinnedPlace, CUDAPlace, LoDTensor, Scope, SelectedRows,  # noqa: F401
                   create_lod_tensor, global_scope, is_compiled_with_cuda, scope_guard)
from .data_feeder import DataFeeder  # noqa: F401
from .device_guard import device_guard  # noqa: F401
from .executor import CompiledProgram, Executor, ParallelExecutor  # noqa: F401
from .framework import (OpRole, Parameter, Program, Variable, default_main_program,  # noqa: F401
                        default_startup_program, name_scope, program_guard)
from .param_attr import ParamAttr, WeightNormParamAttr  # noqa: F401
from . import compiler  # noqa: F401
from .transpiler import (DistributeTranspiler, DistributeTranspilerConfig, HashName,  # noqa: F401
                         RoundRobin, memory_optimize, release_memory)

# Fluid 1.6+ names: fluid.data, fluid.embedding, Python readers, datasets, version gate.
from . import dataset, reader  # noqa: F401
from .compiler import BuildStrategy, ExecutionStrategy  # noqa: F401
from .core import cpu_places, cuda_places  # noqa: F401
from .data import data  # noqa: F401
from .dataset import DatasetFactory  # noqa: F401
from .input import embedding  # noqa: F401
from .version import require_version  # noqa: F401

from .ops import load_all as _load_all_ops

_load_all_ops()  # every op kernel registered, before any program is built

Tensor = LoDTensor
