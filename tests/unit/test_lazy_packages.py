"""psjob.fluid and psjob.distributed.fleet load their API on first use (psjob.foundation.lazy).

A dataset's pipe_command runs a reader script per file, per epoch, per trainer; the script
imports the fleet (PaddleRec) or fluid.incubate.data_generator (Fluid 1.x) for
MultiSlotDataGenerator only. Each entry point is imported in a fresh interpreter, as a
pipe_command is, and must leave the engine unloaded; the same process then uses the full
API. The rest checks that the lazy packages hold the same objects the eager ones did.
"""
import json
import os
import pkgutil
import subprocess
import sys
import textwrap
import types

import pytest

import psjob.distributed.fleet as fleet
import psjob.fluid as fluid
from psjob.distributed.fleet import fleet_api
from psjob.distributed.fleet.util import UtilBase
from psjob.fluid import fluid_api
from psjob.launcher import aspaddle

HEAVY = ("psjob.fluid.fluid_api", "psjob.fluid.executor", "psjob.fluid.framework", "psjob.fluid.layers",
         "psjob.distributed.fleet.fleet_api", "psjob.fleet", "psjob.cluster", "grpc", "numpy")

# A reader as PaddleRec's queuedataset_reader.py writes one (a label, two sparse slots, a dense one).
READER = """
class Reader(GENERATOR):
    def generate_sample(self, line):
        def reader():
            ids = [int(v) for v in line.split()]
            yield [("click", [ids[0]]), ("c1", ids[1:3]), ("dense", [v / 4 for v in ids[3:]])]
        return reader
import io
out, sys.stdout, sys.stdin = sys.stdout, io.StringIO(), io.StringIO("1 7 8 2 6\\n0 9 9 4 1\\n")
Reader().run_from_stdin()
written, sys.stdout = sys.stdout.getvalue(), out
"""
REPORT = """
loaded = sorted({m for m in sys.modules for h in HEAVY if m == h or m.startswith(h + ".")})
"""


def run(*parts, alias=False, args=()):
    """Run the parts of a script (each dedented) in a fresh interpreter; its last line of output is JSON."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if alias:
        env["PYTHONPATH"] = aspaddle.SHIM_DIR
    code = "\n".join(textwrap.dedent(part) for part in parts)
    r = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


ENTRY_POINTS = {
    # PaddleRec under rewrite_imports.sh, and Fluid 1.x CTR-DNN's reader.
    "psjob.distributed.fleet": ("import psjob.distributed.fleet as fleet", "fleet.MultiSlotDataGenerator", False),
    "psjob.fluid.incubate.data_generator": ("import psjob.fluid.incubate.data_generator as dg",
                                            "dg.MultiSlotDataGenerator", False),
    # The same scripts unmodified under psjob launch --as-paddle.
    "paddle.distributed.fleet": ("import paddle.distributed.fleet as fleet", "fleet.MultiSlotDataGenerator", True),
    "paddle.fluid.incubate.data_generator": ("import paddle.fluid.incubate.data_generator as dg",
                                             "dg.MultiSlotDataGenerator", True),
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_a_pipe_command_reader_loads_no_engine_and_the_process_can_still_use_it(entry):
    statement, generator, alias = ENTRY_POINTS[entry]
    out = run(f"import json, sys\nHEAVY = {HEAVY!r}\n{statement}", READER.replace("GENERATOR", generator),
              REPORT, """
        before = loaded
        # The full API, in the same process: a fleet worker of one, and a fluid program run.
        import psjob.distributed.fleet as fleet
        import psjob.fluid as fluid
        fleet.init(fleet.UserDefinedRoleMaker(current_id=0, role=fleet.Role.WORKER, worker_num=1,
                                              server_endpoints=["127.0.0.1:1"]))
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            x = fluid.data("x", [None, 2], "float32")
            y = fluid.layers.reduce_sum(x * 2.0)
        import numpy as np
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        (total,) = exe.run(main, feed={"x": np.array([[1, 2], [3, 4]], "float32")}, fetch_list=[y])
        print(json.dumps({"written": written, "before": before, "total": float(np.asarray(total).sum()),
                          "util": type(fleet.util).__name__, "workers": fleet.worker_num(),
                          "reduced": fleet.util.all_reduce(np.array([5, 6])).tolist()}))
    """, alias=alias)
    assert out["before"] == []
    assert out["written"] == "1 1 2 7 8 2 0.5 1.5\n1 0 2 9 9 2 1.0 0.25\n"
    assert (out["total"], out["util"], out["workers"], out["reduced"]) == (20.0, "UtilBase", 1, [5, 6])


def test_importing_paddle_under_the_alias_loads_no_engine():
    out = run(f"import json, sys\nHEAVY = {HEAVY!r}\nimport paddle", REPORT, """
        print(json.dumps({"before": loaded, "fleet": paddle.distributed.fleet.util.__class__.__name__}))
    """, alias=True)
    assert out == {"before": [], "fleet": "UtilBase"}


def test_a_submodule_imported_first_does_not_hide_the_api_value_of_its_name():
    # fleet.util is the UtilBase instance, fluid.data and fluid.device_guard the functions,
    # even when the modules of those names were imported before the API was loaded.
    out = {name: run("""
        import json, sys
        import psjob.fluid.data, psjob.fluid.device_guard
        import psjob.fluid as fluid
        early = "psjob.fluid.fluid_api" in sys.modules
        # Each read on its own: the first that loads the API makes the next right anyway.
        name = sys.argv[1]
        print(json.dumps({"api_loaded_early": early, name: type(getattr(fluid, name)).__name__}))
    """, args=[name]) for name in ("data", "device_guard")}
    for name in ("data", "device_guard"):
        assert out[name] == {"api_loaded_early": False, name: "function"}
    out = run("""
        import json, sys
        import psjob.distributed.fleet.util
        import psjob.distributed.fleet as fleet
        early = "psjob.distributed.fleet.fleet_api" in sys.modules
        print(json.dumps({"api_loaded_early": early, "util": type(fleet.util).__name__}))
    """)
    assert out == {"api_loaded_early": False, "util": "UtilBase"}


def test_ops_run_in_a_process_that_imports_fluid_modules_but_not_the_api():
    # The pserver and the trainer's client import framework and executor directly: the op
    # registry imports the kernel modules on its first lookup.
    out = run("""
        import json, sys
        import numpy as np
        from psjob.fluid.core import Scope
        from psjob.fluid.executor import Executor
        from psjob.fluid.framework import Program
        from psjob.fluid.ops import registry
        main = Program()
        block = main.global_block()
        x = block.create_var(name="x", shape=[2], dtype="float32")
        out = block.create_var(name="out", shape=[2], dtype="float32")
        block.append_op(type="scale", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"scale": 3.0})
        (value,) = Executor().run(main, feed={"x": np.array([1, 2], "float32")}, fetch_list=[out], scope=Scope())
        print(json.dumps({"value": value.tolist(), "api": "psjob.fluid.fluid_api" in sys.modules,
                          "ops": len(registry.registered_ops())}))
    """)
    assert out["value"] == [3.0, 6.0] and not out["api"] and out["ops"] > 100


def test_threads_looking_ops_up_first_at_once_all_find_them():
    # The first lookups of a pserver's handler threads may come together: each must wait for
    # the kernel modules, not see the registry while another thread is filling it.
    out = run("""
        import json, threading
        from psjob.fluid.ops import registry
        start, found, errors = threading.Barrier(8), [], []
        def look(kind):
            start.wait()
            try:
                found.append(registry.get_op_def(kind).type)
            except Exception as e:
                errors.append(repr(e))
        kinds = ["scale", "mul", "sgd", "adam", "lookup_table", "relu", "sigmoid", "mean"]
        threads = [threading.Thread(target=look, args=(k,)) for k in kinds]
        [t.start() for t in threads]
        [t.join() for t in threads]
        print(json.dumps({"found": sorted(found), "errors": errors, "kinds": sorted(kinds)}))
    """)
    assert out["errors"] == [] and out["found"] == out["kinds"]


def test_the_packages_hold_the_api_modules_objects():
    assert isinstance(fleet.util, UtilBase) and fleet.util is fleet_api.util
    for name in ("init", "fleet", "DistributedStrategy", "PaddleCloudRoleMaker", "save_persistables",
                 "MultiSlotDataGenerator", "is_worker", "base"):
        assert getattr(fleet, name) is getattr(fleet_api, name), name
    for name in ("Executor", "Program", "layers", "data", "device_guard", "io", "Tensor", "DatasetFactory"):
        assert getattr(fluid, name) is getattr(fluid_api, name), name
    assert fluid.Tensor is fluid.LoDTensor
    from psjob.distributed.fleet import DistributedStrategy, init
    from psjob.fluid import data, layers
    assert (init, DistributedStrategy, data, layers) == (fleet_api.init, fleet_api.DistributedStrategy,
                                                          fluid_api.data, fluid_api.layers)


def test_private_module_state_is_the_api_modules_live_state(monkeypatch):
    strategy = fleet.DistributedStrategy()
    monkeypatch.setattr(fleet_api, "_init_strategy", strategy)
    assert fleet._init_strategy is strategy  # what fleet.init() keeps: read there, not copied
    monkeypatch.setattr(fleet, "_init_strategy", None)  # a patch of the package reaches the API
    assert fleet_api._init_strategy is None


def test_a_patch_of_a_public_name_reaches_the_api_and_is_undone():
    original = fleet_api.REFETCH_CHUNK
    with pytest.MonkeyPatch.context() as m:
        m.setattr(fleet, "REFETCH_CHUNK", 7)
        assert fleet_api.REFETCH_CHUNK == fleet.REFETCH_CHUNK == 7
    assert fleet_api.REFETCH_CHUNK == fleet.REFETCH_CHUNK == original
    with pytest.MonkeyPatch.context() as m:
        m.setattr(fleet, "not_an_api_name", 1, raising=False)
        assert fleet.not_an_api_name == 1 and not hasattr(fleet_api, "not_an_api_name")
    assert not hasattr(fleet, "not_an_api_name")


def test_dir_and_star_import_list_the_api():
    assert {"init", "util", "MultiSlotDataGenerator", "distributed_optimizer"} <= set(dir(fleet))
    assert {"Executor", "layers", "data", "DistributeTranspiler"} <= set(dir(fluid))
    namespace = {}
    exec("from psjob.distributed.fleet import *", namespace)
    assert namespace["init"] is fleet_api.init and isinstance(namespace["util"], UtilBase)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        fluid.no_such_name  # noqa: B018


@pytest.mark.parametrize("package, api", [(fluid, fluid_api), (fleet, fleet_api)], ids=["fluid", "fleet"])
def test_every_submodule_named_like_an_api_value_is_declared_shadowed(package, api):
    """A submodule the import system binds before the API loads would hide an API value of
    the same name; the package must list such names (make_lazy's `shadowed`)."""
    clashes = {m.name for m in pkgutil.iter_modules(package.__path__)
               if m.name in vars(api) and not (isinstance(vars(api)[m.name], types.ModuleType)
                                               and vars(api)[m.name].__name__ == f"{package.__name__}.{m.name}")}
    assert clashes == type(package)._lazy_shadowed


def test_threads_reading_the_package_at_once_all_get_the_api():
    # One thread imports the API; the others wait for that import, none sees a half-loaded package.
    out = run("""
        import json, threading
        import psjob.distributed.fleet as fleet, psjob.fluid as fluid
        start, got = threading.Barrier(6), []
        def read(name, package):
            start.wait()
            got.append(type(getattr(package, name)).__name__)
        threads = [threading.Thread(target=read, args=(n, p)) for n, p in
                   [("Executor", fluid), ("layers", fluid), ("data", fluid), ("util", fleet), ("init", fleet),
                    ("DistributedStrategy", fleet)]]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(json.dumps(sorted(got)))
    """)
    assert out == sorted(["type", "module", "function", "UtilBase", "function", "type"])
