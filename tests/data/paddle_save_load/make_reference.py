"""Writes the reference files of tests/unit/test_paddle_save_load.py with real Paddle 3.0.0
(legacy IR, FLAGS_enable_pir_api=0, static mode): what paddle.save writes for a state dict, a
tensor, a nested object and a Program, and what the other save APIs write, plus expected.json
(the values and key sets Paddle reports). Run it from this directory:

    FLAGS_enable_pir_api=0 /path/to/paddle-3.0.0/bin/python make_reference.py
"""
import json
import os
import shutil

os.environ["FLAGS_enable_pir_api"] = "0"
import numpy as np  # noqa: E402
import paddle  # noqa: E402

paddle.enable_static()
paddle.seed(7)
main, startup = paddle.static.Program(), paddle.static.Program()
with paddle.static.program_guard(main, startup):
    x = paddle.static.data("x", [None, 3], "float32")
    y = paddle.static.nn.fc(x, 2)
    loss = paddle.mean(y)
    paddle.optimizer.Adam(0.01).minimize(loss)
exe = paddle.static.Executor(paddle.CPUPlace())
exe.run(startup)
exe.run(main, feed={"x": np.arange(6, dtype="float32").reshape(2, 3)}, fetch_list=[loss])

for d in ("inf", "fluid_dir"):
    shutil.rmtree(d, ignore_errors=True)
state = main.state_dict("all")
w = state["fc_0.w_0"]
paddle.save(main.state_dict("param"), "param.pdparams")
paddle.save(w, "w.pdtensor")
paddle.save({"a": [w, np.arange(3)], "b": (1, 2.5, "s"), "c": {"d": w}}, "nested.pd")
paddle.save(main, "main.pdmodel")
paddle.save(w, "w_binary.pdtensor", use_binary_format=True)
paddle.static.save(main, "static_save/model")
paddle.static.save_inference_model("inf/model", [x], [y], exe, program=main)
paddle.static.io.save_vars(exe, "fluid_dir", main, predicate=lambda v: v.persistable and v.name.startswith("fc_0."))
os.remove("static_save/model.pdmodel")  # psjob reads Paddle's .pdparams/.pdopt by full name; keep the files small

expected = {
    "keys": {m: sorted(main.state_dict(m)) for m in ("param", "opt", "all")},
    "values": {n: np.array(t).tolist() for n, t in state.items()},
    "dtypes": {n: str(np.array(t).dtype) for n, t in state.items()},
    "load_type_static": type(paddle.load("param.pdparams")["fc_0.w_0"]).__name__,
    "load_type_return_numpy": type(paddle.load("param.pdparams", return_numpy=True)["fc_0.w_0"]).__name__,
    "inference_prefix_type": type(next(iter(paddle.load("inf/model").values()))).__name__,
    "program_ops": [op.type for op in paddle.load("main.pdmodel").global_block().ops],
}
with open("expected.json", "w") as f:
    json.dump(expected, f, indent=1, sort_keys=True)
print(json.dumps(expected)[:400])
