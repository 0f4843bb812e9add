"""The names of psjob.fluid (`import psjob.fluid as fluid`), loaded on first use.

psjob/fluid/__init__.py makes the package lazy (psjob.foundation.lazy): the first
read of one of these names imports this module, which loads the framework — the
IR, every op kernel, the layers, the executor, the transpiler — and the package
takes its public names.
"""
# Fluid 1.6+ names: fluid.data, fluid.embedding, Python readers, datasets, version gate.
from psjob.fluid import (
                   clip,
                   compiler,
                   contrib,
                   core,
                   dataset,
                   dygraph,
                   framework,
                   initializer,
                   io,
                   layers,
                   metrics,
                   nets,
                   optimizer,
                   reader,
                   regularizer,
                   unique_name,
)
from psjob.fluid.backward import append_backward, gradients
from psjob.fluid.compiler import BuildStrategy, ExecutionStrategy
from psjob.fluid.core import (
                   CPUPlace,
                   CUDAPinnedPlace,
                   CUDAPlace,
                   LoDTensor,
                   LoDTensorArray,
                   Scope,
                   SelectedRows,
                   cpu_places,
                   create_lod_tensor,
                   create_random_int_lodtensor,
                   cuda_places,
                   global_scope,
                   is_compiled_with_cuda,
                   scope_guard,
)
from psjob.fluid.data import data
from psjob.fluid.data_feeder import DataFeeder
from psjob.fluid.dataset import DatasetFactory
from psjob.fluid.device_guard import device_guard
from psjob.fluid.executor import CompiledProgram, Executor, ParallelExecutor
from psjob.fluid.flags import (
                   disable_dygraph,
                   disable_imperative,
                   enable_dygraph,
                   enable_imperative,
                   get_flags,
                   in_dygraph_mode,
                   set_flags,
)
from psjob.fluid.framework import (
                   OpRole,
                   Parameter,
                   Program,
                   Variable,
                   default_main_program,
                   default_startup_program,
                   name_scope,
                   program_guard,
)
from psjob.fluid.input import embedding, one_hot
from psjob.fluid.io import load, load_program_state, save, set_program_state
from psjob.fluid.ops import load_all as _load_all_ops
from psjob.fluid.param_attr import ParamAttr, WeightNormParamAttr
from psjob.fluid.transpiler import (
                   DistributeTranspiler,
                   DistributeTranspilerConfig,
                   HashName,
                   RoundRobin,
                   memory_optimize,
                   release_memory,
)
from psjob.fluid.version import require_version

_load_all_ops()  # every op kernel registered, before any program is built

Tensor = LoDTensor
