"""fluid.device_guard, the heter trainer's device choice and the Fleet's heter-job checks.

Real: the framework and layers, the strategy resolution, role makers, places.
Faked: nothing; no process is started and no socket opened.
"""
import importlib.util

import pytest

import psjob.fluid as fluid
from psjob.fleet import DistributedStrategy, strategy
from psjob.fleet.heter import HeterDeviceError, HeterRuntime, heter_place
from psjob.fleet.role_maker import Role, UserDefinedRoleMaker
from psjob.fluid.core import CPUPlace
from psjob.fluid.framework import OpRole
from psjob.fluid.transpiler.heter_split import HeterSplitError
from psjob.foundation.settings import Settings


def build(device="gpu", minimize_inside=False):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4])
        h = fluid.layers.fc(x, 3)
        with fluid.device_guard(device):
            h = fluid.layers.fc(h, 2, act="relu")
            loss = fluid.layers.mean(h)
            if minimize_inside:
                fluid.optimizer.SGD(0.1).minimize(loss)
        if not minimize_inside:
            fluid.optimizer.SGD(0.1).minimize(loss)
    return main


def devices(main):
    return [(op.type, op.attr("op_device")) for op in main.global_block().ops
            if not int(op.attr("op_role", 0)) & (OpRole.Backward | OpRole.Optimize)]


def test_device_guard_marks_the_forward_ops_built_inside_it():
    assert devices(build()) == [("mul", None), ("elementwise_add", None), ("mul", "gpu"),
                                ("elementwise_add", "gpu"), ("relu", "gpu"), ("mean", "gpu")]


def test_backward_and_optimizer_ops_are_never_marked_even_when_minimize_runs_inside_the_guard():
    main = build(minimize_inside=True)
    late = [op for op in main.global_block().ops if op.type in ("fill_constant", "sgd")]
    assert {op.type for op in late} == {"fill_constant", "sgd"}
    assert all(op.attr("op_device") is None for op in late)


def test_guards_nest_and_none_means_no_device():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4])
        with fluid.device_guard("GPU:1"):
            a = fluid.layers.relu(x)
            with fluid.device_guard("cpu"):
                b = fluid.layers.relu(a)
            with fluid.device_guard(None):
                c = fluid.layers.relu(b)
            fluid.layers.relu(c)
        fluid.layers.relu(c)
    assert [op.attr("op_device") for op in main.global_block().ops] == ["gpu:1", "cpu", None, "gpu:1", None]


@pytest.mark.parametrize("device,message", [
    ("tpu", "unknown device 'tpu'; accepted: 'cpu', 'gpu', 'xpu'"),
    ("cpu:0", "the CPU takes no device index"),
    ("gpu:first", "index must be a non-negative integer"),
])
def test_device_guard_refuses_devices_it_does_not_know(device, message):
    with pytest.raises(ValueError, match=message):
        with fluid.device_guard(device):
            pass


def test_device_guard_refuses_a_non_string_and_leaves_no_device_behind():
    with pytest.raises(TypeError, match="device name"):
        with fluid.device_guard(3):
            pass
    main = build(device=None)
    assert all(d is None for _, d in devices(main))


def test_the_strategy_accepts_cpu_gpu_and_xpu_for_heter_trainers_and_nothing_else():
    s = DistributedStrategy()
    s.a_sync = True
    for guard in ("cpu", "GPU", "xpu"):
        s.a_sync_configs = {"heter_worker_device_guard": guard}
        assert strategy.resolve(s).heter_worker_device_guard == guard.lower()
    with pytest.raises(ValueError, match="cpu, gpu, xpu"):  # named when set, and nothing changes
        s.a_sync_configs = {"heter_worker_device_guard": "npu"}
    assert strategy.resolve(s).heter_worker_device_guard == "xpu"


def test_heter_trainers_run_on_the_cpu_place_the_guard_names():
    assert heter_place("cpu") == CPUPlace()
    with pytest.raises(ValueError, match="one of cpu, gpu, xpu"):
        heter_place("tpu")


def test_an_xpu_heter_trainer_is_a_clear_not_available_error():
    with pytest.raises(HeterDeviceError, match="'xpu': XPU devices are not available"):
        heter_place("xpu")


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="cupy is installed here")
def test_a_gpu_heter_trainer_without_cupy_is_a_clear_error():
    with pytest.raises(HeterDeviceError, match="'gpu': CUDAPlace\\(0\\) needs cupy and an NVIDIA GPU"):
        heter_place("gpu", Settings({"FLAGS_selected_gpus": "0"}))
    with pytest.raises(HeterDeviceError, match="is not a GPU index"):
        heter_place("gpu", Settings({"FLAGS_selected_gpus": "all"}))


def role(heter_endpoints, kind=Role.WORKER):
    return UserDefinedRoleMaker(current_id=0, role=kind, worker_num=2, server_endpoints=["127.0.0.1:6170"],
                                heter_worker_endpoints=heter_endpoints)


def resolved(a_sync=True, k_steps=0):
    s = DistributedStrategy()
    s.a_sync = a_sync
    s.a_sync_configs = {"k_steps": k_steps}
    return strategy.resolve(s)


def test_a_plain_job_without_heter_ops_needs_no_heter_runtime():
    assert HeterRuntime.for_job(role([]), resolved(), build(device=None)) is None


def test_heter_ops_without_heter_workers_fail_naming_the_launcher_flag():
    with pytest.raises(HeterSplitError, match="heter_worker_num=0.*--heter_worker_num K"):
        HeterRuntime.for_job(role([]), resolved(), build())


def test_heter_workers_without_heter_ops_fail_as_a_section_with_no_ops():
    with pytest.raises(HeterSplitError, match="a heter section with no ops"):
        HeterRuntime.for_job(role(["127.0.0.1:7170"]), resolved(), build(device=None))


def test_geo_mode_is_refused_for_heter_jobs():
    with pytest.raises(HeterSplitError, match="geo mode"):
        HeterRuntime.for_job(role(["127.0.0.1:7170"]), resolved(k_steps=4), build())
    runtime = HeterRuntime.for_job(role(["127.0.0.1:7170"], Role.HETER_WORKER), resolved(), build())
    assert runtime.device == "gpu" and runtime.heter_endpoints == ["127.0.0.1:7170"]
