"""fleet.util's collectives wait for the live members, not the job's capacity
(psjob/ps/trainer_gather.py): trainers are threads calling TrainerGather as pserver 0's
Gather handler does; joins and leaves come as the pserver passes them on."""
import threading

import numpy as np
import pytest

from psjob.cluster.pserver.trainer_gather import TrainerGather


def call(gather, trainer, round_, value, results, name="fleet.util.all_reduce"):
    thread = threading.Thread(target=lambda: results.__setitem__(
        (trainer, round_), [float(v[0]) for v in gather.gather(trainer, name, round_,
                                                               np.array([value]))]))
    thread.start()
    return thread


def test_a_member_that_left_is_not_waited_for():
    gather = TrainerGather(3, timeout_s=30, members={0, 1})  # capacity 3, two live members
    results = {}
    waiting = call(gather, 0, 0, 1.0, results)  # opened while 1 was a member: waits for it
    waiting.join(0.2)
    assert waiting.is_alive()
    gather.leave(1)  # scaled away (Complete) without contributing
    waiting.join(10)
    assert results[(0, 0)] == [1.0]
    call(gather, 0, 1, 2.0, results).join(10)  # the next one: trainer 0 alone, at once
    assert results[(0, 1)] == [2.0]


def test_a_joiner_pairs_its_first_collective_with_the_members_next_one():
    gather = TrainerGather(2, timeout_s=30, members=set())
    gather.join(0)
    results = {}
    for round_ in range(3):  # trainer 0 alone, rounds 0..2
        call(gather, 0, round_, 1.0, results).join(10)
    assert [results[(0, r)] for r in range(3)] == [[1.0]] * 3
    gather.join(1)  # its rounds start at 0; trainer 0 is at 3
    threads = [call(gather, 1, 0, 10.0, results), call(gather, 0, 3, 1.0, results)]
    for t in threads:
        t.join(10)
    assert results[(0, 3)] == results[(1, 0)] == [1.0, 10.0]
    threads = [call(gather, 0, 4, 2.0, results), call(gather, 1, 1, 20.0, results)]
    for t in threads:
        t.join(10)
    assert results[(0, 4)] == results[(1, 1)] == [2.0, 20.0]


def test_a_collective_opened_before_a_join_completes_without_the_joiner():
    gather = TrainerGather(3, timeout_s=30, members={0, 1})
    results = {}
    first = call(gather, 0, 5, 1.0, results)
    first.join(0.2)
    gather.join(2)  # joins while round 5 waits for trainer 1
    joiner = call(gather, 2, 0, 100.0, results)  # goes to round 6, not 5
    call(gather, 1, 5, 2.0, results).join(10)
    first.join(10)
    assert results[(0, 5)] == results[(1, 5)] == [1.0, 2.0]
    threads = [call(gather, 0, 6, 1.0, results), call(gather, 1, 6, 2.0, results)]
    for t in [*threads, joiner]:
        t.join(10)
    assert results[(2, 0)] == results[(0, 6)] == [1.0, 2.0, 100.0]


def test_a_job_of_fixed_size_still_waits_for_every_trainer_and_names_the_missing():
    gather = TrainerGather(2, timeout_s=0.05)
    with pytest.raises(TimeoutError, match=r"round 0: trainers \[1\] did not contribute"):
        gather.gather(0, "fleet.util.barrier", 0, np.zeros(0))


def test_trainers_calling_different_collectives_in_one_round_both_fail_naming_the_calls():
    # PaddleRec's write_model_donefile returns before its barrier_worker() on the first worker
    # only (when the donefile is new): the workers' next calls then differ. Both fail at once
    # instead of waiting for each other until the timeout.
    gather = TrainerGather(2, timeout_s=60)
    errors = {}

    def contribute(trainer, name):
        try:
            gather.gather(trainer, name, 7, np.zeros(0, np.int8))
        except ValueError as exc:
            errors[trainer] = str(exc)

    threads = [threading.Thread(target=contribute, args=(0, "fleet.util.all_gather")),
               threading.Thread(target=contribute, args=(1, "fleet.util.barrier"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert not any(t.is_alive() for t in threads)
    assert set(errors) == {0, 1}
    for message in errors.values():
        assert "collective #7" in message and "'fleet.util.all_gather'" in message \
            and "'fleet.util.barrier'" in message and "in the same order" in message
