"""fluid.contrib.layers (Fluid 1.8's names): ctr_metric_bundle without the instance-tag weight,
fused_embedding_seq_pool (equal to embedding then sequence_pool 'sum', its table named after
the layer), partial_concat and partial_sum."""
import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid

paddle.enable_static()


def test_contrib_layers_compute_what_fluid_1_8s_do():
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        ids = fluid.data("ids", [-1, 1], "int64", lod_level=1)
        fused = fluid.contrib.layers.fused_embedding_seq_pool(ids, [10, 3], padding_idx=0)
        plain = fluid.layers.sequence_pool(fluid.layers.embedding(
            ids, [10, 3], padding_idx=0, param_attr="fused_embedding_seq_pool_0.w_0"), "sum")
        p = fluid.data("p", [-1, 1], "float32")
        label = fluid.data("l", [-1, 1], "float32")
        sums = fluid.contrib.layers.ctr_metric_bundle(p, label)
        a, b = fluid.data("a", [-1, 4], "float32"), fluid.data("b", [-1, 4], "float32")
        pc = fluid.contrib.layers.partial_concat([a, b], start_index=1, length=2)
        ps = fluid.contrib.layers.partial_sum([a, b], start_index=-3)
        with pytest.raises(ValueError, match="fall outside the 4 columns"):
            fluid.contrib.layers.partial_sum([a, b], start_index=3, length=2)
    assert [v.name for v in main.global_block().all_parameters()] == ["fused_embedding_seq_pool_0.w_0"]
    assert [list(v.shape) for v in sums] == [[1]] * 6  # Fluid 1.8's shapes (no [1, 1] tag product)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    t = fluid.create_lod_tensor(np.array([[1], [2], [0], [3]], "int64"), [[2, 1, 1]], fluid.CPUPlace())
    x = np.arange(8, dtype="float32").reshape(2, 4)
    got = exe.run(main, feed={"ids": t, "p": np.array([[0.9], [0.2]], "float32"),
                              "l": np.array([[1], [0]], "float32"), "a": x, "b": x * 10},
                  fetch_list=[fused, plain, pc, ps] + list(sums))
    np.testing.assert_array_equal(got[0], got[1])
    assert np.all(got[0][1] == 0)  # the padding id's row reads as zeros
    assert got[2].tolist() == [[1, 2, 10, 20], [5, 6, 50, 60]]
    assert got[3].tolist() == [[11, 22, 33], [55, 66, 77]]
    sig = 1 / (1 + np.exp(-np.array([0.9, 0.2])))
    np.testing.assert_allclose([float(v[0]) for v in got[4:]], [0.05, 0.3, 1.1, sig.sum(), 1.0, 2.0], rtol=1e-6)
