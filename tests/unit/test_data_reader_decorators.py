"""paddle.batch and paddle.reader decorators: Paddle's semantics, and failures that surface."""
import collections
import importlib
import threading
import time

import pytest

import psjob
from psjob import reader as rd
from psjob._batch import batch


def numbers(n):
    def reader():
        return iter(range(n))
    return reader


def test_batch_groups_items_in_order_and_keeps_the_short_last_batch():
    assert list(batch(numbers(7), 3)()) == [[0, 1, 2], [3, 4, 5], [6]]


def test_batch_with_drop_last_drops_the_short_last_batch():
    assert list(batch(numbers(7), 3, drop_last=True)()) == [[0, 1, 2], [3, 4, 5]]
    assert list(batch(numbers(6), 3, drop_last=True)()) == [[0, 1, 2], [3, 4, 5]]


def test_batch_reader_can_be_called_again_for_another_epoch():
    batched = batch(numbers(4), 2)
    assert list(batched()) == list(batched()) == [[0, 1], [2, 3]]


@pytest.mark.parametrize("size", [0, -2])
def test_batch_rejects_a_non_positive_batch_size(size):
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        batch(numbers(3), size)


def test_batch_rejects_a_generator_passed_instead_of_a_reader():
    with pytest.raises(TypeError, match="pass the function, not its result"):
        batch(numbers(3)(), 2)


def test_psjob_exposes_batch_and_reader_as_paddle_does():
    assert list(psjob.batch(numbers(3), 2)()) == [[0, 1], [2]]
    assert psjob.reader.shuffle is rd.shuffle


def test_psjob_batch_is_the_function_even_after_the_readers_were_imported():
    importlib.import_module("psjob.reader")
    importlib.import_module("psjob._batch")
    assert callable(psjob.batch) and psjob.batch.__name__ == "batch"


def test_shuffle_keeps_the_multiset_and_moves_items_only_within_their_window():
    out = list(rd.shuffle(numbers(100), buf_size=30, seed=7)())
    assert sorted(out) == list(range(100))
    assert out != list(range(100))
    for window_start in (0, 30, 60, 90):
        window = out[window_start:window_start + 30]
        assert sorted(window) == list(range(window_start, min(window_start + 30, 100)))


def test_shuffle_with_a_seed_is_reproducible_and_differs_between_epochs():
    first = rd.shuffle(numbers(50), buf_size=50, seed=3)
    second = rd.shuffle(numbers(50), buf_size=50, seed=3)
    epoch1 = list(first())
    assert epoch1 == list(second())
    assert list(first()) != epoch1


def test_shuffle_keeps_duplicates():
    def dupes():
        return iter([1, 1, 2, 2, 2, 3])
    out = list(rd.shuffle(dupes, buf_size=4)())
    assert collections.Counter(out) == collections.Counter([1, 1, 2, 2, 2, 3])


def test_chain_yields_each_reader_in_turn():
    assert list(rd.chain(numbers(2), numbers(3))()) == [0, 1, 0, 1, 2]


def test_firstn_stops_after_n_items_and_tolerates_short_readers():
    assert list(rd.firstn(numbers(10), 3)()) == [0, 1, 2]
    assert list(rd.firstn(numbers(2), 5)()) == [0, 1]


def test_compose_flattens_tuples_into_one_output():
    def pairs():
        return iter([(1, 2), (10, 20)])
    composed = rd.compose(pairs, numbers(2))
    assert list(composed()) == [(1, 2, 0), (10, 20, 1)]


def test_compose_raises_when_readers_are_not_aligned_unless_told_not_to_check():
    with pytest.raises(rd.ComposeNotAligned):
        list(rd.compose(numbers(2), numbers(3))())
    assert list(rd.compose(numbers(2), numbers(3), check_alignment=False)()) == [(0, 0), (1, 1)]


def test_compose_accepts_readers_that_yield_none():
    def nones():
        return iter([None, None])
    assert list(rd.compose(nones, numbers(2))()) == [(None, 0), (None, 1)]


def test_map_readers_applies_the_function_across_readers():
    assert list(rd.map_readers(lambda a, b: a * 10 + b, numbers(3), numbers(3))()) == [0, 11, 22]


def test_cache_reads_the_source_once():
    calls = []

    def source():
        calls.append(1)
        return iter([1, 2])
    cached = rd.cache(source)
    assert list(cached()) == list(cached()) == [1, 2]
    assert len(calls) == 1


def test_buffered_yields_the_same_items_in_order():
    assert list(rd.buffered(numbers(1000), 16)()) == list(range(1000))


def test_buffered_reraises_an_error_of_the_wrapped_reader_in_the_consumer():
    def broken():
        yield 1
        raise RuntimeError("disk went away")
    with pytest.raises(RuntimeError, match="disk went away"):
        list(rd.buffered(broken, 4)())


def _threads_named(prefix):
    return [t for t in threading.enumerate() if t.name.startswith(prefix)]


def test_buffered_releases_its_thread_when_the_consumer_stops_early():
    def endless():
        i = 0
        while True:
            yield i
            i += 1
    gen = rd.buffered(endless, 2)()
    assert next(gen) == 0
    gen.close()
    deadline = time.monotonic() + 5
    while _threads_named("psjob-buffered") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _threads_named("psjob-buffered")


def test_xmap_readers_in_order_mode_keeps_the_input_order():
    out = list(rd.xmap_readers(lambda x: x * x, numbers(200), 4, 8, order=True)())
    assert out == [x * x for x in range(200)]


def test_xmap_readers_unordered_keeps_the_multiset():
    out = list(rd.xmap_readers(lambda x: -x, numbers(200), 3, 5)())
    assert sorted(out) == sorted(-x for x in range(200))


def test_xmap_readers_reraises_a_mapper_error():
    def mapper(x):
        if x == 7:
            raise ValueError("bad sample 7")
        return x
    with pytest.raises(ValueError, match="bad sample 7"):
        list(rd.xmap_readers(mapper, numbers(50), 2, 4, order=True)())
