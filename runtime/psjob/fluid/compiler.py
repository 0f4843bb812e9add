"""fluid.compiler: CompiledProgram (it lives with the Executor), BuildStrategy, ExecutionStrategy.

psjob runs a program's ops in order on one device per process, so the graph passes
and thread settings these strategies tune have nothing to act on; their fields are
kept (Paddle's names and defaults) so scripts that set them run. One field does
matter: `num_trainers` > 1 outside a parameter-server program means NCCL2 collective
training (executor.py: collective_program; docs/user/collective.md).
"""
import enum

from psjob.fluid.executor import CompiledProgram  # noqa: F401


class BuildStrategy:
    class ReduceStrategy(enum.IntEnum):
        AllReduce = 0
        Reduce = 1

    class GradientScaleStrategy(enum.IntEnum):
        CoeffNumDevice = 0
        One = 1
        Customized = 2

    def __init__(self):
        self.reduce_strategy = BuildStrategy.ReduceStrategy.AllReduce
        self.gradient_scale_strategy = BuildStrategy.GradientScaleStrategy.CoeffNumDevice
        self.num_trainers = 1
        self.trainer_id = 0
        self.trainers_endpoints = []
        self.nccl_comm_num = 1
        self.use_hierarchical_allreduce = False
        self.hierarchical_allreduce_inter_nranks = 0
        self.sync_batch_norm = False
        self.fuse_all_reduce_ops = False
        self.fuse_all_optimizer_ops = False
        self.fuse_elewise_add_act_ops = False
        self.fuse_bn_act_ops = False
        self.fuse_relu_depthwise_conv = False
        self.fuse_broadcast_ops = False
        self.enable_auto_fusion = False
        self.enable_inplace = False
        self.memory_optimize = False
        self.enable_sequential_execution = False
        self.remove_unnecessary_lock = True
        self.cache_runtime_context = False
        self.enable_backward_optimizer_op_deps = True
        self.is_distribution = False
        self.async_mode = False
        self.debug_graphviz_path = ""
        self.mkldnn_enabled_op_types = set()


class ExecutionStrategy:
    def __init__(self):
        self.num_threads = 0
        self.use_cuda = False
        self.allow_op_delay = False
        self.num_iteration_per_drop_scope = 100
        self.num_iteration_per_run = 1
        self.use_thread_barrier = False
        self.use_experimental_executor = False
