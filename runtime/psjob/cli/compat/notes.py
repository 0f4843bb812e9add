"""The hand-kept half of `psjob compat`: Paddle names psjob has but where it behaves
differently (or refuses), each with the reason, and the surface docs/user/paddle2.md reports on.

Whether a name exists is never written here: psjob.cli.compat looks every name up on
psjob itself. A note whose name psjob lacks shows up as missing (and fails
tests/unit/test_compat.py), so the notes cannot outlive the code they describe.
A note on a function applies to every name of that function; one on a class or a
module, to its own name only.
"""
DIFFERS = "differs"
REFUSED = "refused"

NOTES = {
    # The package itself.
    "paddle.__version__": (DIFFERS, "psjob's version, not Paddle's: code comparing it with a Paddle "
                                    "release reads another number"),
    "paddle.in_dynamic_mode": (DIFFERS, "True until paddle.enable_static(), as in Paddle, but psjob has "
                                        "static graphs only: no eager ops run in dynamic mode"),
    "paddle.Tensor": (DIFFERS, "the static-graph Variable (paddle.static.Variable): no eager tensors"),
    "paddle.save": (DIFFERS, "static mode only, in Paddle's files (state dicts, tensors, nested objects, "
                             "Programs; real Paddle 3.0.0 loads them); psjob refuses objects its load cannot "
                             "read back (Layers, arbitrary classes) instead of pickling them"),
    "paddle.load": (DIFFERS, "static mode only: Paddle's pickles, tensors, Programs, save_inference_model "
                             "prefixes and Fluid directories; arrays come back as detached LoDTensors "
                             "(return_numpy=True: ndarrays); only containers, numbers, strings and arrays "
                             "are unpickled, never arbitrary classes; a prefix load keeps the saved names"),
    "paddle.to_tensor": (DIFFERS, "static mode only (a constant of the graph, as Paddle's static to_tensor); "
                                  "a scalar is [1], not 0-D; refused in dynamic mode (no eager tensors)"),
    "paddle.DataParallel": (REFUSED, "dygraph data parallelism: static-graph collective training is "
                                     "fleet.init(is_collective=True) or ParallelExecutor(num_trainers=N)"),
    "paddle.Model": (REFUSED, "hapi: build a static Program and run it with paddle.static.Executor"),
    "paddle.fluid.dygraph.guard": (REFUSED, "Fluid 1.x dygraph: the module imports (scripts that also hold "
                                            "static code run), its names raise when used"),
    "paddle.fluid.dygraph.to_variable": (REFUSED, "Fluid 1.x dygraph: build static Variables (fluid.data)"),
    "paddle.fluid.dygraph.DataParallel": (REFUSED, "Fluid 1.x dygraph data parallelism: use fleet or "
                                                   "DistributeTranspiler"),
    "paddle.fluid.profiler.profiler": (DIFFERS, "checks its arguments as Paddle and prints the wall time "
                                                "between start and stop; no per-op profile, nothing written"),
    "paddle.fluid.profiler.cuda_profiler": (REFUSED, "nvprof: psjob runs no CUDA kernels of its own there"),
    # Files (docs/user/paddle2.md, docs/user/checkpoints.md).
    "paddle.static.save": (DIFFERS, ".pdparams/.pdopt are Paddle's pickles (real Paddle's load reads "
                                    "them); the .pdmodel is psjob's JSON program with a sha256 per array"),
    "paddle.static.load": (DIFFERS, "reads psjob's saves, checking every array against its record "
                                    "before writing any, and Paddle's own (its pickled .pdparams/.pdopt)"),
    "paddle.static.load_inference_model": (DIFFERS, "reads Paddle's .pdmodel/.pdiparams (psjob's and Paddle "
                                                    "2.x/3.x legacy-IR saves), Paddle 3's PIR .json programs "
                                                    "of fc/CTR ops where no .pdmodel is next to them (other "
                                                    "ops refused by name), and a directory saved by "
                                                    "fluid.io/fleet when model_filename= or params_filename= "
                                                    "is passed"),
    "paddle.fluid.io.save_persistables": (DIFFERS, "Paddle's tensor files plus psjob's checksum manifest "
                                                   "(Paddle's load_persistables reads them); a transpiled "
                                                   "program's distributed save is psjob's own format"),
    "paddle.fluid.io.save_inference_model": (DIFFERS, "Paddle's __model__ and tensor files (Paddle Inference "
                                                      "loads them), plus psjob's checksum manifest; a "
                                                      "transpiled (distributed) program's model is psjob's "
                                                      "own format"),
    # Fleet in parameter-server mode.
    "paddle.distributed.fleet.init": (DIFFERS, "is_collective=True all-reduces gradients over a CPU ring "
                                               "over TCP, not NCCL (docs/user/collective.md)"),
    "paddle.distributed.init_parallel_env": (DIFFERS, "joins psjob's CPU ring over TCP (docs/user/collective.md); "
                                                      "for static programs only"),
    "paddle.distributed.fleet.util.all_reduce": (DIFFERS, "meets on pserver 0 instead of over gloo; "
                                                          "comm_world='worker' only"),
    "paddle.distributed.fleet.util.all_gather": (DIFFERS, "meets on pserver 0 instead of over gloo; "
                                                          "comm_world='worker' only"),
    "paddle.distributed.fleet.util.barrier": (DIFFERS, "meets on pserver 0 instead of over gloo; "
                                                       "comm_world='worker' only"),
    "paddle.distributed.fleet.barrier_worker": (DIFFERS, "also sends this worker's queued updates first "
                                                         "and refreshes its parameters after"),
    # Paddle's own parameter-server test programs (test/ps; docs/user/paddle2.md).
    "paddle.distributed.ps.utils.public.debug_program": (DIFFERS, "writes psjob's program listing (each "
                                                                  "block's variables, then its ops), not "
                                                                  "Paddle's Program text"),
    "paddle.distributed.ps.utils.public.new_pass": (REFUSED, "Paddle's program passes for its brpc "
                                                             "parameter servers: fleet.distributed_optimizer"
                                                             "(...).minimize builds psjob's programs"),
    "paddle.distributed.fleet.meta_optimizers.ps_optimizer.ParameterServerOptimizer": (
        DIFFERS, "minimize_impl builds the job as fleet.distributed_optimizer(...).minimize; Paddle's pass "
                 "context (pass_ctx, _init_ps_pass_context) is refused"),
    "paddle.distributed.ps.the_one_ps.TheOnePSRuntime": (REFUSED, "Paddle's internal brpc runtime and its "
                                                                  "C++ table descriptors: psjob's servers start "
                                                                  "with fleet.init_server/run_server"),
    "paddle.distributed.fleet.save_dense_params": (REFUSED, "in a job: psjob saves the dense parameters "
                                                            "with the whole model (fleet.save_persistables); "
                                                            "a non-distributed run does nothing, as Paddle's"),
    "paddle.distributed.fleet.save_cache_model": (REFUSED, "in a job: psjob's sparse tables have no cache tier "
                                                           "(PSLib/GPU-PS); a non-distributed run does nothing, "
                                                           "as Paddle's"),
    "paddle.distributed.fleet.save_cache_table": (REFUSED, "in a job: psjob's sparse tables have no cache tier "
                                                           "(PSLib/GPU-PS); a non-distributed run does nothing, "
                                                           "as Paddle's"),
    "paddle.distributed.fleet.set_date": (REFUSED, "in a job: psjob's sparse tables keep no date; a "
                                                   "non-distributed run does nothing, as Paddle's"),
    "paddle.distributed.fleet.print_table_stat": (REFUSED, "in a job: psjob's pservers keep no per-pass table "
                                                           "statistics; a non-distributed run does nothing, "
                                                           "as Paddle's"),
    "paddle.distributed.fleet.DistributedStrategy.save_to_prototxt": (
        DIFFERS, "sparse_table_configs is refused (Paddle writes downpour_table_param messages); psjob's own "
                 "a_sync_configs keys are written too, which Paddle's reader does not know"),
    "paddle.distributed.InMemoryDataset": (DIFFERS, "global_shuffle shuffles each trainer's own examples "
                                                    "(trainers exchange no data); an hdfs:// file is refused "
                                                    "(fs_name/fs_ugi are kept, as Paddle reads local files "
                                                    "whatever they say); a file that does not exist is "
                                                    "named by set_filelist (Paddle reads nothing from it); "
                                                    "slots_shuffle refuses a float slot or an unknown name, "
                                                    "which Paddle leaves as it is"),
    "paddle.static.normalize_program": (DIFFERS, "the pruned inference program without Paddle's feed and fetch "
                                                 "ops (psjob's Executor feeds and fetches by name); "
                                                 "serialize_program writes them"),
    "paddle.static.deserialize_program": (DIFFERS, "drops the program's feed and fetch ops, as "
                                                   "load_inference_model does"),
    "paddle.static.nn.data_norm": (DIFFERS, "summary_decay_rate, sync_stats and in_place have no effect, as on "
                                            "Paddle's CPU: the statistics are parameters the optimizer updates "
                                            "with the batch's count, sum and square sum"),
    "paddle.static.nn.sparse_embedding": (DIFFERS, "entry, table_class and slot are accepted and have no "
                                                   "effect: psjob's table admits every id"),
    "paddle.nn.ClipGradByGlobalNorm": (DIFFERS, "refused by the transpiler (Fleet): a global norm couples "
                                                "every parameter's update; use ClipGradByNorm or ClipGradByValue"),
    "paddle.io.DataLoader": (DIFFERS, "num_workers > 0 loads in the training process (no loader "
                                      "subprocesses)"),
    # Inference (docs/user/paddle2.md "paddle.inference").
    "paddle.inference.create_predictor": (DIFFERS, "runs inference models in Paddle's format "
                                                   "(save_inference_model's files) with psjob's Executor on "
                                                   "the CPU"),
    "paddle.inference.Config.enable_use_gpu": (REFUSED, "CPU inference only (so are enable_xpu, "
                                                        "enable_tensorrt_engine and the other devices)"),
    "paddle.inference.Config.enable_mkldnn": (DIFFERS, "accepted, no effect (as are switch_ir_optim, "
                                                       "enable_memory_optim, switch_use_feed_fetch_ops)"),
    "paddle.inference.Config.set_cpu_math_library_num_threads": (DIFFERS, "recorded, no effect: the BLAS "
                                                                          "threads are set at process start"),

    "paddle.numel": (DIFFERS, "int64 of shape [1], not 0-D (psjob's full reductions are [1])"),
    "paddle.unique": (DIFFERS, "of the flattened x only: axis= is refused"),
    "paddle.repeat_interleave": (DIFFERS, "repeats must be an int: a repeats tensor is refused"),
    "paddle.norm": (DIFFERS, "the matrix 2-norm, -2 and 'nuc' (axis of two ints) are refused: psjob has no svd; "
                             "a full reduction is [1], not 0-D"),
    "paddle.linalg.matrix_norm": (DIFFERS, "p=2, -2 and 'nuc' are refused: psjob has no svd"),
    "paddle.fluid.layers.rank": (DIFFERS, "int32 of shape [1], where Paddle 1.8 gives a 0-D tensor"),
    "paddle.fluid.layers.Print": (DIFFERS, "prints in the forward pass only (print_phase is accepted)"),
    # Fluid 1.8 (checked against Paddle 1.8.5 with its own API examples).
    "paddle.fluid.optimizer.Ftrl": (DIFFERS, "l2 is applied as given; Paddle 1.8.5's FtrlOptimizer passes l1 "
                                             "as the op's l2 (its l2 argument has no effect)"),
    "paddle.fluid.optimizer.RecomputeOptimizer": (DIFFERS, "keeps the activations instead of recomputing them "
                                                           "(checkpoints are checked and recorded): the "
                                                           "gradients and trained values are the wrapped "
                                                           "optimizer's"),
    "paddle.fluid.set_flags": (DIFFERS, "Paddle 1.8's public flags are recorded and read back by get_flags; "
                                        "they tune Paddle's C++ allocator and executor, so nothing else "
                                        "changes; unknown flags are refused as in Paddle"),
    "paddle.fluid.enable_dygraph": (REFUSED, "Fluid 1.8 dygraph: psjob runs static graphs only "
                                             "(disable_dygraph is a no-op, in_dygraph_mode() is False)"),
    # Control flow (docs/user/paddle2.md "Control flow").
    "paddle.fluid.layers.StaticRNN": (DIFFERS, "unrolled when its step is built (the step's ops once per time "
                                               "step), not a recurrent op: the same values and gradients"),
}

# The names docs/user/paddle2.md's generated table reports on, beside every note's: the Paddle API that
# parameter-server scripts use: every name `psjob compat` reads in PaddleRec's rank models
# (github.com/PaddlePaddle/PaddleRec models/rank/{dnn,wide_deep,deepfm}: static_model.py, net.py,
# the readers), its PS trainer (tools/static_ps_trainer.py, tools/utils/static_ps/*), its serving
# script (tools/paddle_infer.py's paddle.inference names), and
# PaddlePaddle/models' Fluid 1.x CTR-DNN (PaddleRec/ctr/dnn). Extend it when psjob is checked
# on more code; whether psjob has each name is looked up, never written here.
SURFACE = (
    "paddle.CPUPlace", "paddle.CUDAPlace", "paddle.ParamAttr", "paddle.add", "paddle.batch",
    "paddle.cast", "paddle.concat", "paddle.core.EOFException", "paddle.create_parameter",
    "paddle.distributed.InMemoryDataset", "paddle.distributed.QueueDataset",
    "paddle.distributed.fleet", "paddle.distributed.fleet.DistributedStrategy",
    "paddle.distributed.fleet.MultiSlotDataGenerator",
    "paddle.distributed.fleet.barrier_worker", "paddle.distributed.fleet.base.role_maker",
    "paddle.distributed.fleet.base.role_maker.PaddleCloudRoleMaker",
    "paddle.distributed.fleet.distributed_optimizer", "paddle.distributed.fleet.init",
    "paddle.distributed.fleet.init_server", "paddle.distributed.fleet.init_worker",
    "paddle.distributed.fleet.is_server", "paddle.distributed.fleet.is_worker",
    "paddle.distributed.fleet.run_server", "paddle.distributed.fleet.save_inference_model",
    "paddle.distributed.fleet.save_persistables", "paddle.distributed.fleet.server_endpoints",
    "paddle.distributed.fleet.stop_worker", "paddle.distributed.fleet.util.all_reduce",
    "paddle.distributed.fleet.util.get_file_shard", "paddle.distributed.fleet.worker_index",
    "paddle.distributed.fleet.worker_num", "paddle.distributed.get_rank",
    "paddle.distributed.get_world_size", "paddle.enable_static", "paddle.fluid",
    "paddle.fluid.BuildStrategy", "paddle.fluid.BuildStrategy.ReduceStrategy.AllReduce",
    "paddle.fluid.BuildStrategy.ReduceStrategy.Reduce", "paddle.fluid.CPUPlace",
    "paddle.fluid.DistributeTranspiler", "paddle.fluid.ExecutionStrategy",
    "paddle.fluid.Executor", "paddle.fluid.ParallelExecutor", "paddle.fluid.ParamAttr",
    "paddle.fluid.core.EOFException", "paddle.fluid.data", "paddle.fluid.default_main_program",
    "paddle.fluid.default_startup_program", "paddle.fluid.embedding",
    "paddle.fluid.initializer.Normal", "paddle.fluid.initializer.Uniform",
    "paddle.fluid.io.save_persistables", "paddle.fluid.layers.accuracy",
    "paddle.fluid.layers.auc", "paddle.fluid.layers.concat",
    "paddle.fluid.layers.create_parameter", "paddle.fluid.layers.create_py_reader_by_data",
    "paddle.fluid.layers.cross_entropy", "paddle.fluid.layers.data",
    "paddle.fluid.layers.embedding", "paddle.fluid.layers.fc", "paddle.fluid.layers.matmul",
    "paddle.fluid.layers.read_file", "paddle.fluid.layers.reduce_sum",
    "paddle.fluid.layers.sequence_pool", "paddle.fluid.layers.square",
    "paddle.fluid.layers.squeeze", "paddle.fluid.optimizer.Adam",
    "paddle.fluid.param_attr.ParamAttr", "paddle.fluid.require_version", "paddle.full_like",
    "paddle.inference.Config", "paddle.inference.PrecisionType", "paddle.inference.create_predictor",
    "paddle.io.DataLoader", "paddle.io.DataLoader.from_generator", "paddle.io.IterableDataset",
    "paddle.is_compiled_with_custom_device", "paddle.mean", "paddle.multiply", "paddle.nn",
    "paddle.nn.Embedding", "paddle.nn.Layer", "paddle.nn.Linear", "paddle.nn.ReLU",
    "paddle.nn.functional", "paddle.nn.functional.cross_entropy",
    "paddle.nn.functional.log_loss", "paddle.nn.functional.sigmoid",
    "paddle.nn.functional.softmax", "paddle.nn.initializer.Constant",
    "paddle.nn.initializer.Normal", "paddle.nn.initializer.TruncatedNormal",
    "paddle.nn.initializer.Uniform", "paddle.optimizer.Adam", "paddle.reader.shuffle",
    "paddle.reshape", "paddle.set_device", "paddle.square", "paddle.static.Executor",
    "paddle.static.auc", "paddle.static.cpu_places", "paddle.static.data",
    "paddle.static.default_main_program", "paddle.static.default_startup_program",
    "paddle.static.global_scope", "paddle.static.nn.cond", "paddle.static.nn.continuous_value_model",
    "paddle.static.nn.sparse_embedding", "paddle.static.save_inference_model", "paddle.sum",
    "paddle.unsqueeze",
)
