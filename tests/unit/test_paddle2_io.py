"""paddle.io in static mode: DataLoader batches feed exe.run exactly as hand-made feeds do."""
import numpy as np
import pytest

import psjob
import psjob.fluid as fluid
from psjob.io import BatchSampler, DataLoader, Dataset, IterableDataset, TensorDataset

N = 50
RNG = np.random.default_rng(4)
X = RNG.normal(size=(N, 5)).astype("float32")
Y = RNG.integers(0, 2, size=N)  # int64 scalars per sample: the loader shapes them [B, 1]


class Pairs(Dataset):
    def __getitem__(self, i):
        return X[i], Y[i]

    def __len__(self):
        return N


class Stream(IterableDataset):
    def __iter__(self):
        return ((X[i], Y[i]) for i in range(N))


def build():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[5], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="int64")
        prob = fluid.layers.sigmoid(fluid.layers.fc(x, 1))
        loss = fluid.layers.mean(fluid.layers.log_loss(prob, fluid.layers.cast(y, "float32")))
        fluid.optimizer.SGD(0.5).minimize(loss)
    return main, startup, x, y, loss


def train(feeds_of):
    main, startup, x, y, loss = build()
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    losses = [exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0].item() for feed in feeds_of(x, y)]
    return losses, {p.name: np.array(scope.vars[p.name]) for p in main.all_parameters()}


def by_hand(x, y, batch=8):
    return ({"x": X[i:i + batch], "y": Y[i:i + batch].reshape(-1, 1)} for i in range(0, N, batch))


@pytest.mark.parametrize("source", ["dataset", "iterable", "tensors", "sample_generator", "sample_list",
                                    "batch_generator"])
def test_dataloader_feeds_train_exactly_as_hand_made_feeds(source):
    def loader(x, y):
        if source == "dataset":
            return DataLoader(Pairs(), feed_list=[x, y], return_list=False, batch_size=8)
        if source == "iterable":
            return DataLoader(Stream(), feed_list=[x, y], return_list=False, batch_size=8)()
        if source == "tensors":
            return DataLoader(TensorDataset([X, Y]), feed_list=[x, y], return_list=False, batch_size=8)
        gen = psjob.io.DataLoader.from_generator(feed_list=[x, y], capacity=4)
        if source == "sample_generator":
            return gen.set_sample_generator(lambda: iter(Pairs()[i] for i in range(N)), 8, drop_last=False)
        if source == "sample_list":
            return gen.set_sample_list_generator(lambda: ([Pairs()[j] for j in range(i, min(i + 8, N))]
                                                          for i in range(0, N, 8)))
        return gen.set_batch_generator(lambda: ((X[i:i + 8], Y[i:i + 8]) for i in range(0, N, 8)))
    got_losses, got = train(loader)
    want_losses, want = train(by_hand)
    assert len(got_losses) == 7 and got_losses == want_losses
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


def test_shuffling_batching_and_return_list():
    main, startup, x, y, loss = build()
    loader = DataLoader(Pairs(), feed_list=[x, y], return_list=False, batch_size=8, shuffle=True, drop_last=True)
    feeds = [f[0] for f in loader()]
    assert len(loader) == len(feeds) == 6 and all(f["x"].shape == (8, 5) and f["y"].shape == (8, 1) for f in feeds)
    rows = np.concatenate([f["x"] for f in feeds])
    assert len({r.tobytes() for r in rows}) == 48 and not np.array_equal(rows, X[:48])
    (first,) = list(DataLoader(Pairs(), feed_list=[x, y], return_list=True, batch_size=N))
    np.testing.assert_array_equal(first[0], X)
    # return_list=True is Paddle 2.x's default, with or without a feed_list (PaddleRec's
    # static_trainer makes its loader with neither and zips the arrays with its input names).
    (by_default,) = list(DataLoader(Pairs(), feed_list=[x, y], batch_size=N))
    (no_feed_list,) = list(DataLoader(Pairs(), batch_size=N))
    for batch in (by_default, no_feed_list):
        assert isinstance(batch, list) and len(batch) == 2
        np.testing.assert_array_equal(batch[0], X)
    sampler = BatchSampler(Pairs(), batch_size=20)
    assert [len(f[0]["x"]) for f in DataLoader(Pairs(), feed_list=[x, y], return_list=False, batch_sampler=sampler)] == [20, 20, 10]
    with pytest.raises(ValueError, match="a batch has 2 fields but feed_list names 1"):
        list(DataLoader(Pairs(), feed_list=[x], batch_size=4))
    with pytest.raises(ValueError, match="cannot be shuffled"):
        DataLoader(Stream(), feed_list=[x, y], shuffle=True)
    # iterable=False is Fluid's start()/reset() loader (tests/unit/test_fluid1x_names.py)
    with fluid.program_guard(fluid.Program(), fluid.Program()):  # its read op goes to a program
        assert not DataLoader.from_generator(feed_list=[x, y], capacity=2, iterable=False).iterable


def test_paddle_core_is_the_framework_core_so_a_non_iterable_loaders_pass_ends_as_paddle_3s():
    """Paddle 2.x/3.x scripts end a pass of a non-iterable loader with `except paddle.core.EOFException`
    (PaddleRec's tools/static_ps_trainer.py, reader_type DataLoader): paddle.core is paddle.base.core
    (an attribute, `import paddle.core` fails in Paddle 3.0.0 too)."""
    assert psjob.core is fluid.core and psjob.core.EOFException is fluid.core.EOFException
    psjob.enable_static()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = psjob.static.data("x", [None, 5], "float32")
        loader = DataLoader.from_generator(feed_list=[x], capacity=4, iterable=False, use_double_buffer=False)
        total = psjob.sum(x)
    loader.set_sample_generator(lambda: ((X[i],) for i in range(N)), batch_size=20, drop_last=True,
                                places=psjob.static.cpu_places())
    exe = psjob.static.Executor(psjob.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    for _ in range(2):  # a second pass after reset(), as the trainer's epochs
        loader.start()
        sums = []
        while True:
            try:
                sums.append(exe.run(main, fetch_list=[total], scope=scope)[0].item())
            except psjob.core.EOFException:
                loader.reset()
                break
        np.testing.assert_allclose(sums, [X[:20].sum(), X[20:40].sum()], rtol=1e-5)
