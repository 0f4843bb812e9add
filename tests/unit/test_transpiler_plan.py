"""The transpiler's pure planning pieces: slicing, dispatch, names, overview, config."""
import os
import subprocess
import sys
import zlib

import pytest

from psjob.fluid.transpiler import (
    DistributeTranspilerConfig,
    HashName,
    RoundRobin,
    TranspilerConfigError,
    VarsDistributed,
    VarStruct,
    get_varname_parts,
    slice_variable,
)


class _Var:
    def __init__(self, name, shape):
        self.name, self.shape = name, shape


# -- slice_variable -----------------------------------------------------------------------

def test_a_large_matrix_is_cut_into_whole_row_blocks_printed_as_name_id_size():
    blocks = slice_variable([_Var("w", (100, 300))], 3, 8192)
    # 30000 elements / 3 = 10000, rounded up to whole rows of 300 → 10200 (34 rows).
    assert [str(b) for b in blocks] == ["w:0:10200", "w:1:10200", "w:2:9600"]
    assert all(b.size % 300 == 0 for b in blocks)
    assert sum(b.size for b in blocks) == 30000


def test_the_minimum_block_size_caps_the_number_of_blocks():
    blocks = slice_variable([_Var("w", (64, 256))], 3, 8192)  # 16384 elements: at most 2 blocks
    assert [str(b) for b in blocks] == ["w:0:8192", "w:1:8192"]
    assert [str(b) for b in slice_variable([_Var("b", (1000,))], 4, 8192)] == ["b:0:1000"]


def test_vectors_split_by_elements_and_each_variable_keeps_its_own_blocks():
    blocks = slice_variable([_Var("v", (20000,)), _Var("u", (10,))], 2, 8192)
    assert [str(b) for b in blocks] == ["v:0:10000", "v:1:10000", "u:0:10"]


def test_slicing_a_variable_without_a_known_shape_is_refused():
    with pytest.raises(ValueError, match="fully known positive shape"):
        slice_variable([_Var("x", (-1, 13))], 2, 8192)


# -- dispatchers --------------------------------------------------------------------------

def test_round_robin_places_blocks_in_turn_and_continues_across_calls():
    rr = RoundRobin(["a:1", "b:2", "c:3"])
    assert rr.dispatch(["w.block0", "w.block1"]) == ["a:1", "b:2"]
    assert rr.dispatch(["v", "u"]) == ["c:3", "a:1"]
    rr.reset()
    assert rr.dispatch(["x"]) == ["a:1"]


def test_hash_name_places_each_block_by_the_crc32_of_its_name():
    eps = ["a:1", "b:2", "c:3"]
    names = ["fc_0.w_0.block0", "fc_0.w_0.block1", "emb", "fc_1.b_0"]
    assert HashName(eps).dispatch(names) == [eps[zlib.crc32(n.encode()) % 3] for n in names]


def test_hash_name_gives_the_same_placement_in_processes_with_different_hash_seeds():
    code = ("from psjob.fluid.transpiler import HashName;"
            "print(HashName(['a:1','b:2','c:3']).dispatch(['w.block0','w.block1','emb','b']))")
    outs = set()
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                check=True).stdout)
    assert len(outs) == 1


# -- names --------------------------------------------------------------------------------

@pytest.mark.parametrize("name,parts", [
    ("w", ("w", "", "")),
    ("w.block2", ("w", "block2", "")),
    ("w@GRAD.trainer_1", ("w@GRAD", "", "trainer_1")),
    ("w@GRAD.block0.trainer_3", ("w@GRAD", "block0", "trainer_3")),
    ("fc_0.w_0_moment1_0.block1", ("fc_0.w_0_moment1_0", "block1", "")),
])
def test_varname_parts_split_origin_block_and_trainer(name, parts):
    assert get_varname_parts(name) == parts


# -- the overview -------------------------------------------------------------------------

def _overview():
    vd = VarsDistributed()
    w = VarStruct("w", (64, 256), "float32")
    vd.add_distributed_var(w, VarStruct("w.block0", (32, 256), "float32"), True, 0, 0, "Param", "a:1")
    vd.add_distributed_var(w, VarStruct("w.block1", (32, 256), "float32"), True, 1, 8192, "Param", "b:2")
    m = VarStruct("w_moment1_0", (64, 256), "float32")
    vd.add_distributed_var(m, VarStruct("w_moment1_0.block1", (32, 256), "float32"), True, 1, 8192,
                           "Optimizer", "b:2")
    return vd


def test_the_overview_answers_lookups_by_slice_origin_endpoint_and_kind():
    vd = _overview()
    assert vd.get_distributed_var_by_slice("w.block1").offset == 8192
    assert vd.get_distributed_var_by_origin_and_ep("w", "a:1").slice.name == "w.block0"
    assert [d.slice.name for d in vd.get_distributed_vars_by_ep("b:2")] == ["w.block1", "w_moment1_0.block1"]
    assert [d.slice.name for d in vd.get_distributed_vars_by_ep("b:2", "Param")] == ["w.block1"]
    grouped = vd.get_distributed_vars_by_vtypes(["Optimizer", "RemotePrefetch"], groupby=True)
    assert list(grouped) == ["w_moment1_0"]
    with pytest.raises(ValueError, match="unknown vtype"):
        vd.get_distributed_vars_by_vtypes(["Params"])


def test_the_overview_survives_a_round_trip_through_plain_data():
    vd = _overview()
    back = VarsDistributed.from_dict(vd.to_dict())
    assert back.overview() == vd.overview()


# -- config -------------------------------------------------------------------------------

def test_an_unknown_mode_is_refused_naming_the_modes():
    cfg = DistributeTranspilerConfig()
    cfg.mode = "nccl2"
    cfg.validate()  # collective (docs/user/collective.md)
    cfg.mode = "collective"
    with pytest.raises(TranspilerConfigError, match="not supported.*'pserver'.*'nccl2'"):
        cfg.validate()


def test_a_block_size_below_8192_elements_is_refused():
    cfg = DistributeTranspilerConfig()
    cfg.min_block_size = 4096
    with pytest.raises(TranspilerConfigError, match="below the minimum of 8192"):
        cfg.validate()


def test_split_method_must_be_a_dispatcher_class():
    cfg = DistributeTranspilerConfig()
    cfg.split_method = "RoundRobin"
    with pytest.raises(TranspilerConfigError, match="PSDispatcher class"):
        cfg.validate()


def test_async_flags_make_the_programs_asynchronous():
    cfg = DistributeTranspilerConfig()
    assert cfg.effective_sync_mode(True) is True
    cfg.half_async = True
    assert cfg.effective_sync_mode(True) is False
    cfg = DistributeTranspilerConfig()
    cfg.sync_mode = False
    assert cfg.effective_sync_mode(True) is False
