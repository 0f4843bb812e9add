"""fluid.transpiler — the DistributeTranspiler and the pieces its users reach for.

`DistributeTranspiler` turns a single-machine program into trainer and
pserver programs (see distribute_transpiler.py for the lifecycle and
docs/dev/transpiler.md for the program shapes). `slice_variable`, the
dispatchers, the name helpers and `VarsDistributed` are public because the
I/O and checkpoint code read transpiled programs with them.
"""
from psjob.fluid.transpiler.config import DistributeTranspilerConfig, TranspilerConfigError
from psjob.fluid.transpiler.distribute_transpiler import DistributeTranspiler
from psjob.fluid.transpiler.optimize_pass import SUPPORTED_OPTIMIZERS, UnsupportedOptimizerError
from psjob.fluid.transpiler.overview import find_distributed_lookup_tables
from psjob.fluid.transpiler.ps_dispatcher import HashName, PSDispatcher, RoundRobin, stable_hash
from psjob.fluid.transpiler.serialization import (
    deserialize_dist_program,
    dist_program_from_dict,
    dist_program_to_dict,
    serialize_dist_program,
)
from psjob.fluid.transpiler.slicing import VarBlock, get_varname_parts, orig_varname, same_or_split_var, slice_variable
from psjob.fluid.transpiler.vars_distributed import VarDistributed, VarsDistributed, VarStruct

_get_varname_parts = get_varname_parts  # the name Fleet's code imports


def memory_optimize(input_program, skip_opt_set=None, print_log=False, level=0, skip_grads=True):
    """Accepted for compatibility: psjob's executor keeps no memory pool to optimize."""


def release_memory(input_program, skip_opt_set=None):
    """Accepted for compatibility (see memory_optimize)."""
