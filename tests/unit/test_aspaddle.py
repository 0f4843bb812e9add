"""psjob's `paddle` alias (psjob.launcher.aspaddle): what `psjob launch --as-paddle`, `psjob as-paddle`
and spec.asPaddle give a process. The alias changes sys.modules and sys.meta_path, so every
check of it runs in a fresh interpreter with the alias directory on PYTHONPATH, as the
launchers start processes."""
import os
import subprocess
import sys
import textwrap

import pytest

import psjob
from psjob.launcher import aspaddle

NOTICE = f"paddle -> psjob {psjob.__version__} (--as-paddle)"


def run(code, *, path=(aspaddle.SHIM_DIR,), argv=None, cwd=None):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if path:
        env["PYTHONPATH"] = os.pathsep.join(path)
    return subprocess.run(argv or [sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_paddle_and_each_submodule_are_psjobs_own_module_objects():
    r = run("""
        import sys
        import paddle
        import paddle.fluid as fluid
        import paddle.distributed.fleet as fleet
        import paddle.nn.functional as F
        from paddle.fluid import core, layers
        from paddle.distributed.fleet.base import role_maker
        import paddle.static
        import psjob, psjob.fluid, psjob.distributed.fleet, psjob.nn.functional, psjob.static
        assert paddle is psjob and sys.modules["paddle"] is psjob
        assert fluid is psjob.fluid and sys.modules["paddle.fluid"] is sys.modules["psjob.fluid"]
        assert fleet is psjob.distributed.fleet and F is psjob.nn.functional
        assert core is psjob.fluid.core and layers.fc is psjob.fluid.layers.fc
        assert role_maker is sys.modules["psjob.distributed.fleet.base.role_maker"]
        assert paddle.static is psjob.static
        # Each module keeps its own name and spec: one module object under two names, not a copy.
        assert fluid.__name__ == "psjob.fluid" and fluid.__spec__.name == "psjob.fluid"
        assert fleet.__spec__.name == "psjob.distributed.fleet"
        assert len({id(m) for m in sys.modules.values() if getattr(m, "__file__", None) == fluid.__file__}) == 1
        print("ok")
    """)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    # One line says which paddle the process got, however many paddle imports it made.
    assert r.stderr.splitlines() == [NOTICE]


def test_names_are_mapped_generically_including_a_module_psjob_exposes_as_an_attribute():
    # psjob.base stands for a name another version of psjob may add (an alias of psjob.fluid,
    # as Paddle 2.5+ renamed fluid to base): the alias finds it whether it is a submodule or,
    # as here, a module bound as an attribute; nothing in the alias lists the names.
    r = run("""
        import psjob, psjob.fluid
        if not hasattr(psjob, "base"):
            psjob.base = psjob.fluid
        from paddle.base import core
        import paddle.base.framework as framework
        assert core is psjob.base.core and framework is psjob.base.framework
        print("ok")
    """)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_a_name_psjob_lacks_is_an_import_error_naming_it():
    r = run("""
        import paddle
        try:
            import paddle.fluid.contrib.slim
        except ImportError as exc:
            assert isinstance(exc, ModuleNotFoundError) and exc.name == "paddle.fluid.contrib.slim", exc
            print(exc)
        try:
            from paddle.fluid.layers import fc
            import paddle.fluid.layers.fc
        except ImportError as exc:
            print(exc)
    """)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.splitlines()
    assert first.startswith("No module named 'paddle.fluid.contrib.slim': psjob stands in for paddle here "
                            "(--as-paddle) and has no module psjob.fluid.contrib.slim;")
    assert "psjob compat" in first
    assert second.startswith("No module named 'paddle.fluid.layers.fc'")
    assert "(psjob.fluid.layers.fc is a function, not a module)" in second


def test_a_real_paddle_later_on_the_path_is_named_and_shadowed(tmp_path):
    fake = tmp_path / "site" / "paddle"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise SystemExit('the real paddle was imported')\n")
    r = run("import paddle, psjob; assert paddle is psjob; print('ok')",
            path=(aspaddle.SHIM_DIR, str(tmp_path / "site")))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    assert r.stderr.splitlines() == [
        NOTICE, f"WARNING: paddle -> psjob shadows the Paddle installed at {fake}; run without "
                "--as-paddle (or spec.asPaddle) to use that Paddle"]


def test_without_the_alias_directory_there_is_no_paddle():
    r = run("import paddle", path=())
    assert r.returncode != 0 and "No module named 'paddle'" in r.stderr


def test_the_alias_cannot_be_imported_under_another_name():
    with pytest.raises(ImportError, match="it is imported as `paddle`"):
        __import__("psjob.launcher.aspaddle.shim.paddle")
    assert "paddle" not in sys.modules or sys.modules["paddle"] is not psjob


def test_psjob_as_paddle_runs_a_command_whose_children_get_paddle_too(tmp_path):
    child = tmp_path / "reader.py"
    child.write_text("import paddle.distributed.fleet as fleet\nprint(fleet.__name__)\n")
    parent = tmp_path / "train.py"
    parent.write_text("import subprocess, sys\nimport paddle\n"
                      f"print(paddle.__name__, subprocess.run([sys.executable, {str(child)!r}], "
                      "capture_output=True, text=True).stdout.strip())\n")
    r = run("", path=(), argv=[sys.executable, "-m", "psjob.cli", "as-paddle", "--", "python", str(parent)])
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "psjob psjob.distributed.fleet"
    missing = run("", path=(), argv=[sys.executable, "-m", "psjob.cli", "as-paddle", "no-such-command-x"])
    assert missing.returncode == 127
    assert "psjob as-paddle: cannot run 'no-such-command-x'" in missing.stderr


def test_python_path_puts_the_alias_first_once():
    assert aspaddle.python_path("") == aspaddle.SHIM_DIR
    assert aspaddle.python_path(f"/a{os.pathsep}{aspaddle.SHIM_DIR}{os.pathsep}/b") == \
        os.pathsep.join([aspaddle.SHIM_DIR, "/a", "/b"])
    assert aspaddle.environment({"PYTHONPATH": "/a"}) == {"PYTHONPATH": aspaddle.SHIM_DIR + os.pathsep + "/a"}


def test_lookup_walks_attributes_and_submodules_and_names_the_missing_part():
    import psjob.distributed.fleet.base.role_maker as role_maker
    import psjob.fluid
    assert aspaddle.lookup("paddle.fluid.layers.fc") is psjob.fluid.layers.fc
    assert aspaddle.lookup("paddle.distributed.fleet.base.role_maker.PaddleCloudRoleMaker") is \
        role_maker.PaddleCloudRoleMaker
    with pytest.raises(aspaddle.MissingName) as info:
        aspaddle.lookup("paddle.fluid.no_such_layer.x")
    assert info.value.missing == "psjob.fluid.no_such_layer" and info.value.found is psjob.fluid
    with pytest.raises(ValueError, match="not a paddle"):
        aspaddle.lookup("numpy.zeros")
