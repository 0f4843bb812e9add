"""A dense model with paddle.static.nn.cond in its forward, trained by Fleet in sync mode
(feed-driven exe.run); trainer 0 saves its parameters. The model and batches are
`build` and `batches`, which tests/component/test_control_flow_ps.py also trains in one
process."""
import argparse
import os

import numpy as np

import psjob as paddle
import psjob.distributed.fleet as fleet
import psjob.fluid as fluid
from psjob.distributed.fleet.base import role_maker


def build():
    x = paddle.static.data("x", [None, 13], "float32")
    y = paddle.static.data("y", [None, 1], "float32")
    pred = paddle.static.nn.fc(x, 1, weight_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(0.1)))
    positive = paddle.mean(pred) > 0
    # the true branch has a layer of its own: a parameter only a sub-block reads
    branch = paddle.ParamAttr(name="branch_w", initializer=paddle.nn.initializer.Constant(0.3))
    out = paddle.static.nn.cond(positive, lambda: pred * 2.0 + paddle.static.nn.fc(x, 1, weight_attr=branch),
                                lambda: pred * 0.5 - 0.1)
    loss = paddle.mean(paddle.square(out - y))
    return loss, positive


def batches(n=12, size=16):
    rng = np.random.default_rng(3)
    w = rng.normal(size=(13, 1)).astype("float32")
    for _ in range(n):
        x = rng.normal(size=(size, 13)).astype("float32")
        yield x, (x @ w).astype("float32")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--async", dest="a_sync", action="store_true")
    args = p.parse_args()
    paddle.enable_static()
    fleet.init(role_maker.PaddleCloudRoleMaker())
    strategy = fleet.DistributedStrategy()
    strategy.a_sync = args.a_sync
    main, startup = fluid.default_main_program(), fluid.default_startup_program()
    main.random_seed = startup.random_seed = 7
    loss, _ = build()
    fleet.distributed_optimizer(paddle.optimizer.SGD(0.01), strategy).minimize(loss)
    if fleet.is_server():
        fleet.init_server()
        fleet.run_server()
    else:
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        fleet.init_worker()
        losses = [float(exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss])[0].reshape(-1)[0])
                  for x, y in batches()]
        scope = fluid.global_scope()
        np.savez(os.path.join(args.out, "trainer0.npz"), losses=np.array(losses),
                 **{p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters()})
        fleet.stop_worker()
