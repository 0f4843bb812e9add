"""InMemoryDataset.set_fea_eval / slots_shuffle (Paddle's feature-importance shuffle): the named
int64 slots of every loaded example are replaced, values and count together, by those of a
candidate drawn as Paddle's RecordCandidateList draws it; every other slot, the instance ids and
the example order stay. Checked against Paddle 3.0.0 on a 12-line file (tests below say what it
showed): the shuffled slot's lists are whole lists of the slot from earlier-or-same examples, two
named slots come from the same candidate, a float slot or a name that is no slot is left alone
(psjob names them instead), each call starts from the loaded data, and without set_fea_eval the
call fails."""
import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.distributed import InMemoryDataset
from psjob.distributed.dataset import candidate_sources
from psjob.fluid.dataset_trainer import INS_ID_KEY

N = 400


@pytest.fixture
def data_file(tmp_path):
    """N lines: label, `a` (ids 1000*i + k, 1..3 of them), `b` (one id: i), `f` (float i + 0.5);
    an instance id leads each line."""
    lines = []
    for i in range(N):
        a = [1000 * i + k for k in range(i % 3 + 1)]
        lines.append(f"1 ins{i} 1 {i % 2} {len(a)} {' '.join(map(str, a))} 1 {i} 1 {i}.5\n")
    path = tmp_path / "part-0"
    path.write_text("".join(lines))
    return str(path)


def _loaded(data_file, batch_size=7):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        a = fluid.data(name="a", shape=[None, 1], dtype="int64", lod_level=1)
        b = fluid.data(name="b", shape=[None, 1], dtype="int64", lod_level=1)
        f = fluid.data(name="f", shape=[None, 1], dtype="float32")
    ds = fluid.DatasetFactory().create_dataset("InMemoryDataset")  # PaddleRec's feature_importance.py's way
    assert isinstance(ds, InMemoryDataset)  # paddle.distributed's, which has them too
    ds.set_use_var([label, a, b, f])
    ds.set_batch_size(batch_size)
    ds.set_parse_ins_id(True)
    ds.set_pipe_command("cat")
    ds.set_filelist([data_file])
    ds.load_into_memory()
    return ds


def _examples(ds):
    """[(ins id, label, a list, b list, f)] in the order a pass feeds them."""
    out = []
    for feed in ds._thread_feeds(1)[0]:
        a_vals, (a_off,) = feed["a"]
        b_vals, (b_off,) = feed["b"]
        for j in range(len(a_off) - 1):
            out.append((str(feed[INS_ID_KEY][j]), int(feed["label"][j, 0]),
                        tuple(a_vals[a_off[j]:a_off[j + 1], 0].tolist()), tuple(b_vals[b_off[j]:b_off[j + 1], 0].tolist()),
                        float(feed["f"][j, 0])))
    return out


def _reservoir(count, capacity, rng):
    """Paddle's RecordCandidateList, example by example, from the draws candidate_sources makes."""
    fill = rng.integers(0, np.arange(min(count, capacity)) + 1)
    later = np.arange(capacity, count)
    place = rng.integers(0, later + 1) if count > capacity else None
    drawn = rng.integers(0, capacity, size=later.size) if count > capacity else None
    reservoir, sources = [], []
    for i in range(count):
        if i < capacity:
            reservoir.append(i)
            sources.append(reservoir[fill[i]])
            continue
        if place[i - capacity] < capacity:
            reservoir[place[i - capacity]] = i
        sources.append(reservoir[drawn[i - capacity]])
    return np.array(sources, dtype=np.int64)


@pytest.mark.parametrize("count,capacity", [(0, 5), (1, 1), (7, 10), (10, 10), (50, 1), (500, 10), (2000, 333)])
def test_the_vectorised_draw_is_paddles_reservoir_example_by_example(count, capacity):
    for seed in range(3):
        got = candidate_sources(count, capacity, np.random.default_rng(seed))
        np.testing.assert_array_equal(got, _reservoir(count, capacity, np.random.default_rng(seed)))
        assert np.all(got <= np.arange(count))  # a candidate is an example already seen, or itself


def test_each_example_draws_uniformly_from_those_seen_so_far():
    # reservoir sampling keeps every example seen with equal chance, so example i's source is
    # uniform over 0..i whatever the capacity
    rng = np.random.default_rng(7)
    last = np.array([candidate_sources(20, 4, rng)[-1] for _ in range(8000)])
    counts = np.bincount(last, minlength=20)
    assert counts.min() > 8000 / 20 * 0.75 and counts.max() < 8000 / 20 * 1.25, counts


def test_a_shuffled_slot_takes_whole_lists_of_earlier_examples_and_the_rest_stays(data_file):
    ds = _loaded(data_file)
    before = _examples(ds)
    ds.set_fea_eval(10, True)
    ds.slots_shuffle(["a"])
    after = _examples(ds)
    assert len(after) == N
    a_lists = [e[2] for e in before]
    moved = 0
    for i, (old, new) in enumerate(zip(before, after)):
        assert (new[0], new[1], new[3], new[4]) == (old[0], old[1], old[3], old[4])  # id, label, b, f stay
        assert new[2] in a_lists[:i + 1]  # a whole list (its length too) of an example seen so far
        moved += new[2] != old[2]
    assert moved > N // 2
    lengths = [len(e[2]) for e in after]
    assert set(lengths) == {1, 2, 3} and lengths != [len(x) for x in a_lists]


def test_slots_shuffled_together_come_from_one_candidate(data_file):
    ds = _loaded(data_file)
    ds.set_fea_eval(50)
    ds.slots_shuffle(["a", "b"])
    for ins, label, a, b, f in _examples(ds):
        source = b[0]
        assert a == tuple(1000 * source + k for k in range(source % 3 + 1))  # a and b of one example
        assert f == int(ins[3:]) + 0.5 and label == int(ins[3:]) % 2


def test_every_shuffle_starts_from_the_loaded_examples_and_repeats_under_a_seed(data_file):
    ds = _loaded(data_file)
    ds.set_fea_eval(10)
    ds.set_shuffle_seed(3)
    ds.slots_shuffle(["a"])
    first = _examples(ds)
    ds.slots_shuffle(["b"])  # the loaded `a` is back: only `b` moved this time
    second = _examples(ds)
    assert [e[2] for e in second] == [tuple(1000 * i + k for k in range(i % 3 + 1)) for i in range(N)]
    assert [e[3] for e in second] != [(i,) for i in range(N)]
    ds.set_shuffle_seed(3)
    ds.slots_shuffle(["a"])
    assert _examples(ds) == first
    # without a seed a new dataset draws the same as another (Paddle's draws repeat run to run)
    other, again = _loaded(data_file), _loaded(data_file)
    for d in (other, again):
        d.set_fea_eval(10)
        d.slots_shuffle(["a"])
    assert _examples(other) == _examples(again)


def test_a_local_shuffle_keeps_its_order_and_the_draw_follows_it(data_file):
    ds = _loaded(data_file)
    ds.set_shuffle_seed(1)
    ds.local_shuffle()
    order = [e[0] for e in _examples(ds)]
    before = {e[0]: e for e in _examples(ds)}
    ds.set_fea_eval(N)
    ds.slots_shuffle(["a"])
    after = _examples(ds)
    assert [e[0] for e in after] == order
    seen = []
    for e in after:
        seen.append(before[e[0]][2])
        assert e[2] in seen  # from an example earlier in the pass (or itself)


def test_the_shuffled_dataset_feeds_infer_from_dataset(data_file):
    ds = _loaded(data_file, batch_size=50)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        a = fluid.data(name="a", shape=[None, 1], dtype="int64", lod_level=1)
        b = fluid.data(name="b", shape=[None, 1], dtype="int64", lod_level=1)
        f = fluid.data(name="f", shape=[None, 1], dtype="float32")
        total = fluid.layers.reduce_sum(fluid.layers.cast(a, "float32"))
        acc = fluid.layers.create_global_var([1], 0.0, "float32", persistable=True, name="acc")
        fluid.layers.assign(fluid.layers.elementwise_add(acc, total), acc)
    ds.set_use_var([label, a, b, f])
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    ds.set_fea_eval(10)
    ds.slots_shuffle(["a"])
    exe.infer_from_dataset(main, ds, scope=scope)
    want = sum(sum(e[2]) for e in _examples(ds))
    assert float(np.asarray(scope.find_var("acc").get_tensor())[0]) == pytest.approx(want, rel=1e-6)


def test_what_slots_shuffle_refuses_is_named(data_file):
    ds = _loaded(data_file)
    with pytest.raises(ValueError, match=r"needs feature evaluation on: call set_fea_eval"):
        ds.slots_shuffle(["a"])
    for bad in (0, -3, True, 2.5, "10"):
        with pytest.raises(ValueError, match="candidate count must be an int >= 1"):
            ds.set_fea_eval(bad)
    ds.set_fea_eval(10)
    with pytest.raises(ValueError, match=r"'c' is not a slot of use_var \(label, a, b, f\)"):
        ds.slots_shuffle(["a", "c"])
    with pytest.raises(ValueError, match="'f' is a float slot"):
        ds.slots_shuffle(["f"])
    ds.set_fea_eval(10, False)
    with pytest.raises(ValueError, match="needs feature evaluation on"):
        ds.slots_shuffle(["a"])
    ds.update_settings(fea_eval=True, candidate_size=4)  # Paddle's update_settings turns it on
    ds.slots_shuffle(["a"])
    ds._set_fea_eval(5, True)  # paddle.distributed's name
    ds.release_memory()
    with pytest.raises(ValueError, match="load_into_memory"):
        ds.slots_shuffle(["a"])
