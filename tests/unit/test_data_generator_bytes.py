"""The bytes psjob's MultiSlot writers print (psjob.distributed.fleet.data_generator) and the
errors they raise for bad examples, pinned: the bytes are Paddle 3.0.0's for the same reader
(tests/multislotkit.py, run with Paddle's interpreter, prints them), the errors psjob's own."""
import hashlib
import os
import sys

import numpy as np
import pytest

import psjob.distributed.fleet as fleet
from psjob.distributed.fleet.data_generator import MultiSlotDataGenerator, MultiSlotStringDataGenerator

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import multislotkit  # noqa: E402


def test_a_paddlerec_style_reader_prints_paddles_bytes():
    written = multislotkit.write(fleet)
    assert written.count("\n") == 600
    assert hashlib.md5(written.encode()).hexdigest() == multislotkit.DIGEST


def test_values_print_as_str_prints_them():
    g = MultiSlotDataGenerator()
    assert g._gen_str([("click", [1]), ("dense", [0.5, 2.0, -0.0, 1e16, 5e-324])]) == \
        "1 1 5 0.5 2.0 -0.0 1e+16 5e-324\n"
    # The fast path and the checked one (a float subclass) print the same.
    assert g._gen_str([("click", [2 ** 63 - 1]), ("dense", [float("inf"), 3])]) == "1 9223372036854775807 2 inf 3\n"
    assert g._gen_str([("click", [0]), ("dense", [np.float64(0.25), 3])]) == "1 0 2 0.25 3\n"
    s = MultiSlotStringDataGenerator()
    assert s._gen_str([("click", ["1"]), ("words", ["a", "bc"])]) == "1 1 2 a bc\n"
    assert s._gen_str((["click", ["0"]], ["words", ["x"]])) == "1 0 1 x\n"


FIRST = [("click", [1]), ("dense", [0.5, 2.0])]
NUMBER_ERRORS = [
    ([("click", [True]), ("dense", [0.5])], ValueError,
     "slot 'click': value True must be an int or a float (MultiSlotStringDataGenerator takes strings)"),
    ([("click", [1]), ("dense", [0.5, "2.0"])], ValueError, "slot 'dense': value '2.0' must be an int or a float"),
    ([("click", [1]), ("dense", [np.float32(0.5)])], ValueError,
     "slot 'dense': value np.float32(0.5) must be an int or a float"),
    ([("click", [1]), ("dense", [np.int64(3)])], ValueError, "slot 'dense': value np.int64(3) must be an int or"),
    ([("click", [1]), ("dense", [])], ValueError,
     "slot 'dense' is empty: pad it in generate_sample (as Paddle requires)"),
    ([("click", [1]), ("dense", (0.5,))], ValueError, "slot 'dense': values must be a list, got tuple"),
    ([("click", [1]), (b"dense", [0.5])], ValueError, "slot name b'dense' must be a str"),
    ({"click": [1]}, ValueError, "generate_sample must yield a list or tuple of (name, values), got dict"),
    ([("click", [1], 2), ("dense", [0.5])], ValueError, "too many values to unpack (expected 2)"),
    ([("click", [1]), 5], TypeError, "cannot unpack non-iterable int object"),
]
ORDER_ERRORS = [
    ([("dense", [0.5]), ("click", [1])], "slots ['dense', 'click'] differ from the first example's ['click', 'dense']"),
    ([("click", [1])], "slots ['click'] differ from the first example's ['click', 'dense']: every example must "
                       "carry the same slots in the same order"),
]


@pytest.mark.parametrize("after_a_first_example", [False, True])
@pytest.mark.parametrize("bad, kind, message", NUMBER_ERRORS)
def test_a_bad_example_gets_the_error_naming_its_problem(bad, kind, message, after_a_first_example):
    g = MultiSlotDataGenerator()
    if after_a_first_example:
        g._gen_str(FIRST)
    with pytest.raises(kind) as err:
        g._gen_str(bad)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("bad, message", ORDER_ERRORS)
def test_slots_must_be_those_of_the_first_example(bad, message):
    for generator, first in ((MultiSlotDataGenerator(), FIRST),
                             (MultiSlotStringDataGenerator(), [("click", ["1"]), ("dense", ["a"])])):
        generator._gen_str(first)
        with pytest.raises(ValueError) as err:
            generator._gen_str(bad)
        assert str(err.value).startswith(message)


def test_a_string_slot_value_that_is_not_a_str_fails_the_join():
    s = MultiSlotStringDataGenerator()
    with pytest.raises(TypeError, match=r"^sequence item 4: expected str instance, int found$"):
        s._gen_str([("click", ["1"]), ("dense", ["a", 3])])
