"""Writes the Fluid 1.x saves the tests load (run under real Paddle 1.8.5):

    <paddle 1.8.5 python> tests/data/paddle_format/make_fluid18_reference.py

A small Fluid CTR model (a LoD embedding sum-pooled by sequence_pool, dense features, fc layers):
fluid/ holds fluid.io.save_inference_model's directory (__model__ and one file a parameter),
combined/ the same with params_filename="__params__", persistables/ fluid.io.save_persistables'
directory of the training program (parameters and SGD's learning rate); expected.json the inputs
and Paddle's outputs, and the persistables' values.
"""
import json
import os

import numpy as np
import paddle.fluid as fluid

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fluid18")


def main():
    main_prog, startup = fluid.Program(), fluid.Program()
    main_prog.random_seed = startup.random_seed = 5
    with fluid.program_guard(main_prog, startup):
        dense = fluid.layers.data(name="dense", shape=[4], dtype="float32")
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        emb = fluid.layers.embedding(ids, size=[20, 3], is_sparse=True)
        pooled = fluid.layers.sequence_pool(emb, "sum")
        h = fluid.layers.fc(fluid.layers.concat([dense, pooled], axis=1), 6, act="relu")
        prob = fluid.layers.fc(h, 2, act="softmax")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(prob, label))
        fluid.optimizer.SGD(0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    fluid.io.save_inference_model(os.path.join(HERE, "fluid"), ["dense", "ids"], [prob], exe, main_program=main_prog)
    fluid.io.save_inference_model(os.path.join(HERE, "combined"), ["dense", "ids"], [prob], exe,
                                  main_program=main_prog, params_filename="__params__")
    fluid.io.save_persistables(exe, os.path.join(HERE, "persistables"), main_program=main_prog)
    rng = np.random.RandomState(3)
    dense_v = rng.normal(size=(3, 4)).astype("float32")
    ids_v = np.array([[1], [2], [7], [19], [0], [5]], dtype="int64")
    lod = [[0, 2, 3, 6]]
    prog, feeds, fetches = fluid.io.load_inference_model(os.path.join(HERE, "fluid"), exe)
    ids_t = fluid.create_lod_tensor(ids_v, [[2, 1, 3]], fluid.CPUPlace())
    out = exe.run(prog, feed={"dense": dense_v, "ids": ids_t}, fetch_list=fetches)[0]
    scope = fluid.global_scope()
    persist = {v.name: np.array(scope.find_var(v.name).get_tensor()).tolist()
               for v in main_prog.list_vars() if v.persistable and v.name not in ("feed", "fetch")}
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump({"feeds": feeds, "feed": {"dense": dense_v.tolist(), "ids": ids_v.tolist(), "ids_lod": lod},
                   "fetch": out.tolist(), "persistables": persist}, f)


if __name__ == "__main__":
    main()
