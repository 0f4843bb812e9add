"""Fluid 1.8's linear_chain_crf, crf_decoding and chunk_eval, LoD and padded. Paddle 1.8.5
(paddle.fluid, CPU) ran the same programs on the same feeds and printed these values: the
costs, Viterbi paths and chunk counts as they are, each gradient as two numbers (the sum of
absolute values, and the sum weighted by sin(1..n) over the flattened values)."""
import numpy as np
import pytest

import psjob.fluid as fluid

L = fluid.layers

PADDLE_185 = {"cost": [4.85334, 1.5, 8.99417], "costp": [6.47734, 6.27963, 4.40672],
              "path": [0, 1, 3, 0, 2, 1, 1, 3], "hit": [1, 0, 0, 0, 0, 0, 1, 0],
              "pathp": [2, 3, 1, 2, 2, 4, 0, 0, 3, 2, 4, 0],
              "chunk": [1 / 3, 1 / 3, 1 / 3, 6, 6, 2]}
GRADS_185 = {"em": [9.988438, -2.479992], "crfw": [11.76409, 0.71896], "emp": [4.31921, 0.198992],
             "crfw2": [4.543361, -1.480137]}
NAMES_185 = ["linear_chain_crf_0.tmp_3", "crf_decoding_0.tmp_0", "linear_chain_crf_1.tmp_3"] + [
    f"chunk_eval_0.tmp_{i}" for i in range(6)]
# chunk_eval of 5 random sequences (lengths 7, 5, 9, 1, 6; about 30% of the labels changed) per
# scheme, without and with chunk type 1 excluded: precision, recall, F1, inferred, labelled, correct
CHUNKS_185 = {("IOB", None): [0.692308, 0.75, 0.72, 26, 24, 18], ("IOB", 1): [0.857143, 0.8, 0.827586, 14, 15, 12],
              ("IOE", None): [0.904762, 0.863636, 0.883721, 21, 22, 19], ("IOE", 1): [0.75, 0.692308, 0.72, 12, 13, 9],
              ("IOBES", None): [0.769231, 0.8, 0.784314, 26, 25, 20],
              ("IOBES", 1): [0.857143, 0.857143, 0.857143, 14, 14, 12],
              ("plain", None): [0.5, 0.533333, 0.516129, 16, 15, 8], ("plain", 1): [0.642857, 0.6, 0.62069, 14, 15, 9]}


def _fingerprint(v):
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    return [float(np.abs(v).sum()), float((v * np.sin(np.arange(v.size) + 1.0)).sum())]


def test_crf_cost_decoding_and_gradients_equal_paddle_185():
    rng = np.random.RandomState(3)
    d, lens = 5, [3, 1, 4]
    em_v = rng.randn(sum(lens), d).astype("float32")
    lab_v = rng.randint(0, d, size=(sum(lens), 1)).astype("int64")
    w_v = (rng.randn(d + 2, d) * 0.5).astype("float32")
    emp_v = rng.randn(3, 4, d).astype("float32")
    labp_v = rng.randint(0, d, size=(3, 4)).astype("int64")
    place = fluid.CPUPlace()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        em = fluid.data(name="em", shape=[-1, d], dtype="float32", lod_level=1)
        em.stop_gradient = False
        lab = fluid.data(name="lab", shape=[-1, 1], dtype="int64", lod_level=1)
        init = fluid.initializer.NumpyArrayInitializer(w_v)
        cost = L.linear_chain_crf(em, lab, param_attr=fluid.ParamAttr(name="crfw", initializer=init))
        path = L.crf_decoding(em, param_attr=fluid.ParamAttr(name="crfw"))
        hit = L.crf_decoding(em, param_attr=fluid.ParamAttr(name="crfw"), label=lab)
        emp = fluid.data(name="emp", shape=[-1, 4, d], dtype="float32")
        emp.stop_gradient = False
        labp = fluid.data(name="labp", shape=[-1, 4], dtype="int64")
        lenp = fluid.data(name="lenp", shape=[-1], dtype="int64")
        costp = L.linear_chain_crf(emp, labp, param_attr=fluid.ParamAttr(name="crfw2", initializer=init), length=lenp)
        pathp = L.crf_decoding(emp, param_attr=fluid.ParamAttr(name="crfw2"), length=lenp)
        loss = (L.reduce_sum(cost * L.assign(np.array([[1.0], [2.0], [0.5]], "float32")))
                + L.reduce_sum(costp) * 0.3)
        block = main.global_block()
        grads = fluid.gradients([loss], [em, block.var("crfw"), emp, block.var("crfw2")])
        chunk = L.chunk_eval(input=path, label=lab, chunk_scheme="IOB", num_chunk_types=2)
    exe = fluid.Executor(place)
    exe.run(startup)
    feed = {"em": fluid.create_lod_tensor(em_v, [lens], place), "lab": fluid.create_lod_tensor(lab_v, [lens], place),
            "emp": emp_v, "labp": labp_v, "lenp": np.array([4, 2, 3], "int64")}
    res = exe.run(main, feed=feed, fetch_list=[cost, path, hit, costp, pathp] + grads + list(chunk))
    np.testing.assert_allclose(res[0].reshape(-1), PADDLE_185["cost"], rtol=1e-5)
    np.testing.assert_allclose(res[3].reshape(-1), PADDLE_185["costp"], rtol=1e-5)
    assert res[0].shape == (3, 1) and res[3].shape == (3, 1)
    assert res[1].reshape(-1).tolist() == PADDLE_185["path"] and res[1].shape == (8, 1)
    assert res[2].reshape(-1).tolist() == PADDLE_185["hit"]
    assert res[4].reshape(-1).tolist() == PADDLE_185["pathp"] and res[4].shape == (3, 4)
    for name, g in zip(["em", "crfw", "emp", "crfw2"], res[5:9]):
        np.testing.assert_allclose(_fingerprint(g), GRADS_185[name], rtol=1e-5, atol=1e-5, err_msg=name)
    np.testing.assert_allclose([float(v.reshape(-1)[0]) for v in res[9:]], PADDLE_185["chunk"], rtol=1e-6)
    assert [v.name for v in (cost, path, costp, *chunk)] == NAMES_185


@pytest.mark.parametrize("scheme,excluded", sorted(CHUNKS_185, key=str))
def test_chunk_eval_schemes_equal_paddle_185(scheme, excluded):
    rng = np.random.RandomState(11)
    lens = [7, 5, 9, 1, 6]
    total = sum(lens)
    place = fluid.CPUPlace()
    for s, tags in (("IOB", 2), ("IOE", 2), ("IOBES", 4), ("plain", 1)):  # the draws, in order
        for excl in (None, 1):
            hi = 3 * tags + 1
            inf = rng.randint(0, hi, size=(total, 1)).astype("int64")
            lab = inf.copy()
            flip = rng.rand(total) < 0.3
            lab[flip, 0] = rng.randint(0, hi, size=flip.sum())
            if (s, excl) == (scheme, excluded):
                break
        else:
            continue
        break
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        a = fluid.data(name="a", shape=[-1, 1], dtype="int64", lod_level=1)
        b = fluid.data(name="b", shape=[-1, 1], dtype="int64", lod_level=1)
        lod_out = L.chunk_eval(a, b, scheme, 3, excluded_chunk_types=None if excluded is None else [excluded])
        ap = fluid.data(name="ap", shape=[-1, 9], dtype="int64")
        bp = fluid.data(name="bp", shape=[-1, 9], dtype="int64")
        sl = fluid.data(name="sl", shape=[-1], dtype="int64")
        pad_out = L.chunk_eval(ap, bp, scheme, 3, excluded_chunk_types=None if excluded is None else [excluded],
                               seq_length=sl)
    pad, padl = np.full((5, 9), 3 * tags, "int64"), np.full((5, 9), 3 * tags, "int64")
    offsets = np.cumsum([0] + lens)
    for i, n in enumerate(lens):
        pad[i, :n], padl[i, :n] = inf[offsets[i]:offsets[i + 1], 0], lab[offsets[i]:offsets[i + 1], 0]
    res = fluid.Executor(place).run(main, feed={
        "a": fluid.create_lod_tensor(inf, [lens], place), "b": fluid.create_lod_tensor(lab, [lens], place),
        "ap": pad, "bp": padl, "sl": np.array(lens, "int64")}, fetch_list=list(lod_out) + list(pad_out))
    got = [float(v.reshape(-1)[0]) for v in res]
    np.testing.assert_allclose(got[:6], CHUNKS_185[(scheme, excluded)], rtol=2e-6, atol=1e-6)
    assert got[6:] == got[:6]
    assert res[0].dtype == np.float32 and res[3].dtype == np.int64


def test_crf_bad_input():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        em = fluid.data(name="em", shape=[-1, 4], dtype="float32", lod_level=1)
        lab = fluid.data(name="lab", shape=[-1, 1], dtype="int32", lod_level=1)
        with pytest.raises(TypeError, match="label"):
            L.linear_chain_crf(em, lab)
        with pytest.raises(ValueError, match="existing transition parameter"):
            L.crf_decoding(em, param_attr=fluid.ParamAttr(name="nope"))
        with pytest.raises(ValueError, match="chunk_scheme"):
            L.chunk_eval(fluid.data(name="i", shape=[-1, 1], dtype="int64"),
                         fluid.data(name="j", shape=[-1, 1], dtype="int64"), "BIO", 2)
