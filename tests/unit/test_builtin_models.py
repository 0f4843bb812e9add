"""The built-in job's model registry (psjob.training.models.BUILT_IN, `--model`)."""
import dataclasses

import pytest

import psjob.fluid as fluid
from psjob.training.models import BUILT_IN, ctr
from psjob.training.options import MODELS, UsageError, parse


def parameter_names(config):
    main, startup = fluid.Program(), fluid.Program()
    ctr.build(config, main, startup, with_optimizer=False)
    return {p.name for p in main.all_parameters()}


def test_the_registry_names_the_ctr_dnn_and_a_wide_and_deep_model():
    assert MODELS == ("ctr", "wide_deep")
    small = {"sparse_feature_dim": 100, "num_slots": 2}
    deep = parameter_names(dataclasses.replace(BUILT_IN["ctr"], **small))
    wide = parameter_names(dataclasses.replace(BUILT_IN["wide_deep"], **small))
    assert ctr.TABLE_NAME in deep and ctr.WIDE_TABLE_NAME not in deep
    assert ctr.WIDE_TABLE_NAME in wide and deep < wide


def test_model_flags_are_checked():
    assert parse(["--model", "wide_deep"]).model == "wide_deep"
    with pytest.raises(UsageError, match="invalid choice: 'dnn'"):
        parse(["--model", "dnn"])
    with pytest.raises(UsageError, match="--model wide_deep .* use --id_mode dense or --model ctr"):
        parse(["--model", "wide_deep", "--id_mode", "hash", "--distributed_table"])
