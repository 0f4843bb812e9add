"""Run a Fluid 1.x example script with known initial parameters, for comparing psjob with
Paddle from the same start (RNGs differ, so the same seed is not enough).

    python fluid1zoo_init.py dump|load INIT.npz SCRIPT [ARGS...]

The script runs unmodified (runpy, as __main__, with sys.argv = [SCRIPT, ARGS...]); the
only addition is a wrapper around fluid.Executor.run: right after the first run of the
default startup program, `dump` writes the parameters it initialized to INIT.npz, `load`
overwrites them with INIT.npz's arrays. Run it with Paddle 1.8.5 to dump
(that run is the reference), then under `psjob as-paddle` to load. Python 3.7 syntax: it
runs under Paddle 1.8.5's interpreter too.
"""
import runpy
import sys

import numpy as np
import paddle.fluid as fluid


def _startup_vars(program):
    """The parameters the startup program initializes (the random part of the start: the
    optimizer's accumulators and the metrics' states start at constants in both)."""
    params = set(p.name for p in fluid.default_main_program().global_block().all_parameters())
    return [v.name for v in program.global_block().vars.values() if v.persistable and v.name in params]


def install(mode, path):
    original = fluid.Executor.run
    state = {"done": False}

    def run(self, program=None, *args, **kwargs):
        out = original(self, program, *args, **kwargs)
        if not state["done"] and program is fluid.default_startup_program():
            state["done"] = True
            scope = fluid.global_scope()
            if mode == "dump":
                arrays = {}
                for name in _startup_vars(program):
                    var = scope.find_var(name)
                    if var is not None:
                        arrays[name] = np.array(var.get_tensor())
                np.savez(path, **arrays)
            else:
                mine = set(_startup_vars(program))
                with np.load(path) as saved:
                    missing = sorted(set(saved.files) - mine)
                    if missing:
                        sys.stderr.write("fluid1zoo_init: not in this program, left as initialized: %s\n"
                                         % ", ".join(missing))
                    for name in sorted(set(saved.files) & mine):
                        scope.find_var(name).get_tensor().set(saved[name], fluid.CPUPlace())
                    unset = sorted(mine - set(saved.files))
                    if unset:
                        raise KeyError("fluid1zoo_init: no initial value for parameters %s" % unset)
        return out

    fluid.Executor.run = run


if __name__ == "__main__":
    mode, path, script = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode not in ("dump", "load"):
        sys.exit("usage: fluid1zoo_init.py dump|load INIT.npz SCRIPT [ARGS...]")
    install(mode, path)
    sys.argv = [script] + sys.argv[4:]
    sys.path.insert(0, ".")
    runpy.run_path(script, run_name="__main__")
