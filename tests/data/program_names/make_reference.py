"""Prints the names and values tests/unit/test_program_names.py pins, with real Paddle 3.0.0
(legacy IR, FLAGS_enable_pir_api=0, static mode, CPU): the same net built in two fresh
Programs, the trained program's loss and the rebuilt test program's prediction in one scope,
the optimizer's learning_rate names, two nets under two unique_name.guard()s in one program,
and a layer added to a clone and to its original. Run it from anywhere:

    FLAGS_enable_pir_api=0 /path/to/paddle-3.0.0/bin/python make_reference.py
"""
import os

os.environ["FLAGS_enable_pir_api"] = "0"
import numpy as np  # noqa: E402
import paddle  # noqa: E402
from paddle.utils import unique_name  # noqa: E402

paddle.enable_static()


def net():
    x = paddle.static.data("x", [-1, 4], "float32")
    lab = paddle.static.data("lab", [-1, 1], "int64")
    h = paddle.nn.functional.relu(paddle.static.nn.fc(x, 3))
    c = paddle.concat([h, x], axis=1)
    p = paddle.nn.functional.sigmoid(paddle.static.nn.fc(c, 1))
    auc, _, stats = paddle.static.auc(paddle.concat([1 - p, p], axis=1), lab, num_thresholds=15, slide_steps=1)
    return paddle.mean(p), p, auc, stats


def build(train):
    main, start = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, start):
        loss, p, auc, stats = net()
        if train:
            paddle.optimizer.SGD(0.5).minimize(loss)
    return main, start, loss, p, auc, stats


def params(program):
    return sorted(v.name for v in program.global_block().all_parameters())


def main():
    m1, s1, loss1, p1, auc1, st1 = build(True)
    m2, s2, _, p2, auc2, st2 = build(False)
    print("params", params(m1), params(m2))
    print("auc statistics", [v.name for v in st1], [v.name for v in st2])
    print("outputs", p1.name, p2.name, auc1.name, auc2.name, loss1.name)
    print("second startup", sorted(s2.global_block().vars))
    exe = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.global_scope()
    exe.run(s1)
    for name in params(m1):
        t = scope.find_var(name).get_tensor()
        shape = np.array(t).shape
        t.set(np.linspace(-1, 1, int(np.prod(shape))).reshape(shape).astype("float32"), paddle.CPUPlace())
    x = np.array([[0.1, -0.2, 0.3, 0.4], [1.0, 0.5, -0.5, 0.0]], "float32")
    lab = np.array([[1], [0]], "int64")
    for _ in range(2):
        loss, = exe.run(m1, feed={"x": x, "lab": lab}, fetch_list=[loss1])
    pred, = exe.run(m2, feed={"x": x, "lab": lab}, fetch_list=[p2])
    print("loss after two steps", np.ravel(loss).tolist())
    print("rebuilt test program's prediction", pred.ravel().tolist())
    print("fc_1.w_0", np.array(scope.find_var("fc_1.w_0").get_tensor()).ravel().tolist())

    with unique_name.guard():
        a, b = build(True)[0], build(True)[0]
    print("learning rates", [[n for n in m.global_block().vars if n.startswith("learning_rate_")] for m in (a, b)])

    prog, start = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(prog, start):
        with unique_name.guard():
            net()
        with unique_name.guard():
            net()
    print("two guards in one program", sorted(n for n in prog.global_block().vars if n.startswith(("fc_", "_gen"))))

    prog, start = build(False)[:2]
    test = prog.clone(for_test=True)
    for program in (test, prog):
        with paddle.static.program_guard(program, start):
            print("fc added after clone", paddle.static.nn.fc(program.global_block().var("x"), 3).name)


if __name__ == "__main__":
    main()
