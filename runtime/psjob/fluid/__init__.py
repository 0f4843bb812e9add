"""psjob.fluid: a Fluid-style static-graph framework (`import psjob.fluid as fluid`).

Build a Program with `layers` and an `optimizer`, run it with an `Executor`
on a Place, save it with `io`, and distribute it with the
`DistributeTranspiler` — the API Fluid 1.x scripts use.
"""
from . import core, framework, initializer, layers, unique_name
from . import io, optimizer, regularizer, clip, metrics
from .backward import append_backward, gradients
from .core import (CPUPlace, CUDAPinnedPlace, CUDAPlace, LoDTensor, Scope, SelectedRows,
                   create_lod_tensor, global_scope, is_compiled_with_cuda, scope_guard)
from .data_feeder import DataFeeder
from .device_guard import device_guard
from .executor import CompiledProgram, Executor, ParallelExecutor
from .framework import (OpRole, Parameter, Program, Variable, default_main_program,
                        default_startup_program, name_scope, program_guard)
from .param_attr import ParamAttr, WeightNormParamAttr
from . import compiler
from .transpiler import (DistributeTranspiler, DistributeTranspilerConfig, HashName,
                         RoundRobin, memory_optimize, release_memory)

# Fluid 1.6+ names: fluid.data, fluid.embedding, Python readers, datasets, version gate.
from . import dataset, reader
from .compiler import BuildStrategy, ExecutionStrategy
from .core import cpu_places, cuda_places
from .data import data
from .dataset import DatasetFactory
from .input import embedding
from .version import require_version

from .ops import load_all as _load_all_ops

_load_all_ops()  # every op kernel registered, before any program is built

Tensor = LoDTensor
