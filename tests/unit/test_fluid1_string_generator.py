"""MultiSlotStringDataGenerator takes a str as a slot's values, as Paddle's does: its
_gen_str extends the line with the characters ('1' writes "1 1"). PaddleRec's
multi_task/esmm yields its click/buy labels that way. The expected line is what Paddle
1.8.5's generator writes for the same sample."""
import pytest

from psjob.distributed.fleet import data_generator as dg


def test_a_str_slot_is_its_characters():
    g = dg.MultiSlotStringDataGenerator()
    line = g._gen_str([("a", ["x", "y"]), ("ctr", "1"), ("cvr", "10")])
    assert line == "2 x y 1 1 2 1 0\n"  # Paddle 1.8.5: '2 x y 1 1 2 1 0\n'


def test_the_numeric_generator_still_wants_lists():
    with pytest.raises(ValueError, match="values must be a list"):
        dg.MultiSlotDataGenerator()._gen_str([("ctr", "1")])
