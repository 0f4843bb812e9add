"""fluid.embedding on ids whose dimensions after the first are unknown ([None, None]: padded
sequences fed at any length, as PaddleRec/ctr/din declares them): the output is
ids.shape + [dim] (Paddle's lookup_table_v2, Fluid 1.8 API docs of fluid.embedding), and
the table's gradient sums the output gradient over every occurrence of an id."""
import numpy as np

import psjob.fluid as fluid


def test_rows_for_ids_of_any_fed_length():
    main, startup = fluid.Program(), fluid.Program()
    table = np.arange(12, dtype="float32").reshape(6, 2)
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.data(name="ids", shape=[None, None], dtype="int64")
        emb = fluid.embedding(ids, size=[6, 2], param_attr=fluid.ParamAttr(
            name="t", initializer=fluid.initializer.NumpyArrayInitializer(table)))
        assert list(emb.shape) == [-1, -1, 2]
        loss = fluid.layers.reduce_sum(emb)
        fluid.optimizer.SGD(learning_rate=1.0).minimize(loss)
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(startup)
        for batch in (np.array([[1, 2, 2]]), np.array([[0, 5], [5, 5]])):
            out, = exe.run(main, feed={"ids": batch}, fetch_list=[emb])
            np.testing.assert_array_equal(out, table[batch])
            counts = np.bincount(batch.reshape(-1), minlength=6)[:, None]
            table = table - counts  # SGD, lr 1, d(sum)/d(row) = its number of occurrences
            np.testing.assert_array_equal(np.array(scope.find_var("t").get_tensor()), table)
