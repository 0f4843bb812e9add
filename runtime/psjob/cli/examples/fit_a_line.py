"""Fit a line: single-machine linear regression on UCI housing (the Fluid guide's first example).

    python -m psjob.cli.examples.fit_a_line [--epochs 200] [--save_dir DIR]

Builds y = fc(x, 1), minimizes the mean squared error with SGD, reports the
train/test loss per epoch and, at the end, the gap to the closed-form
least-squares optimum computed with numpy on the same data.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np

import psjob
import psjob.fluid as fluid


def least_squares_loss(train_rows: list[tuple], test_rows: list[tuple]) -> tuple[float, float]:
    """MSE of the numpy least-squares fit (with intercept) on train and test."""
    x = np.array([r[0] for r in train_rows], dtype=np.float64)
    y = np.array([r[1] for r in train_rows], dtype=np.float64).reshape(-1)
    a = np.hstack([x, np.ones((len(x), 1))])
    w, *_ = np.linalg.lstsq(a, y, rcond=None)
    xt = np.array([r[0] for r in test_rows], dtype=np.float64)
    yt = np.array([r[1] for r in test_rows], dtype=np.float64).reshape(-1)
    at = np.hstack([xt, np.ones((len(xt), 1))])
    return float(np.mean((a @ w - y) ** 2)), float(np.mean((at @ w - yt) ** 2))


def build(learning_rate: float) -> tuple:
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 90
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[13], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="float32")
        y_predict = fluid.layers.fc(input=x, size=1, act=None)
        cost = fluid.layers.square_error_cost(input=y_predict, label=y)
        avg_cost = fluid.layers.mean(cost)
        test_program = main.clone(for_test=True)
        fluid.optimizer.SGD(learning_rate=learning_rate).minimize(avg_cost)
    return main, startup, test_program, x, y, y_predict, avg_cost


def evaluate(exe: fluid.Executor, program: fluid.Program, feeder: fluid.DataFeeder, rows: list[tuple],
             avg_cost: fluid.Variable, batch_size: int = 101) -> float:
    total, n = 0.0, 0
    for i in range(0, len(rows), batch_size):
        batch = rows[i:i + batch_size]
        loss, = exe.run(program, feed=feeder.feed(batch), fetch_list=[avg_cost])
        total += float(loss[0]) * len(batch)
        n += len(batch)
    return total / n


def train(epochs: int = 200, batch_size: int = 20, learning_rate: float = 0.05, save_dir: str | None = None,
          log: Callable[[str], object] = print) -> dict[str, float]:
    main, startup, test_program, x, y, y_predict, avg_cost = build(learning_rate)
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        feeder = fluid.DataFeeder(place=place, feed_list=[x, y], program=main)
        train_reader = psjob.batch(psjob.reader.shuffle(psjob.dataset.uci_housing.train(), buf_size=500),
                                   batch_size=batch_size)
        train_rows = list(psjob.dataset.uci_housing.train()())
        test_rows = list(psjob.dataset.uci_housing.test()())
        t0 = time.perf_counter()
        for epoch in range(epochs):
            for batch in train_reader():
                exe.run(main, feed=feeder.feed(batch), fetch_list=[avg_cost])
            if epoch % max(1, epochs // 10) == 0 or epoch == epochs - 1:
                tr = evaluate(exe, test_program, feeder, train_rows, avg_cost)
                te = evaluate(exe, test_program, feeder, test_rows, avg_cost)
                log(f"epoch {epoch:4d}  train loss {tr:8.4f}  test loss {te:8.4f}")
        elapsed = time.perf_counter() - t0
        train_loss = evaluate(exe, test_program, feeder, train_rows, avg_cost)
        test_loss = evaluate(exe, test_program, feeder, test_rows, avg_cost)
        opt_train, opt_test = least_squares_loss(train_rows, test_rows)
        if save_dir:
            fluid.io.save_inference_model(save_dir, ["x"], [y_predict], exe, main)
    return {"train_loss": train_loss, "test_loss": test_loss, "lstsq_train_loss": opt_train,
            "lstsq_test_loss": opt_test, "seconds": elapsed, "epochs": epochs}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--batch_size", type=int, default=20)
    p.add_argument("--learning_rate", type=float, default=0.05)
    p.add_argument("--save_dir", default=None, help="write an inference model here")
    args = p.parse_args(argv)
    r = train(args.epochs, args.batch_size, args.learning_rate, args.save_dir)
    print(f"final train MSE {r['train_loss']:.4f} (least squares {r['lstsq_train_loss']:.4f}), "
          f"test MSE {r['test_loss']:.4f} (least squares {r['lstsq_test_loss']:.4f}), "
          f"{r['seconds']:.1f}s for {r['epochs']} epochs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
