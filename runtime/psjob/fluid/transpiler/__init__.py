"""fluid.transpiler — the DistributeTranspiler (in progress this session)."""


def memory_optimize(input_program, skip_opt_set=None, print_log=False, level=0, skip_grads=True):
    """Accepted for compatibility: psjob's executor keeps no memory pool to optimize."""


def release_memory(input_program, skip_opt_set=None):
    """Accepted for compatibility (see memory_optimize)."""


DistributeTranspiler = DistributeTranspilerConfig = HashName = RoundRobin = None
