"""Optimisations never change what a program means: every variable stays fetchable.

The executor runs a table's lookups, pools or reshapes, concat and their gradients as
one fused pair (fluid/embedding_fusion.py: `embedding_pool` for a table in the process,
`merge_ids_pool` for a distributed one, whose lookups the trainer pass turned into
split_ids → prefetch → merge_ids). Each model here runs twice, the fusion on (the
default) and off (what PSJOB_EMBEDDING_FUSION=0 sets), and fetches every variable of
the user's program (not persistable, not fed; tests/fetchkit.py): first the loss alone
for a few steps (the fused path), then everything at once, then each variable with
the loss. Every fetch must succeed and equal the op-by-op run's value.

Real: the models users run, the transpiler, the executor, the kernels; the distributed
runs use pserver programs in memory (psjob.cluster.inmemory: only the wire is left out;
tests/component/test_fetch_every_variable.py runs the same through Fleet and real
pserver processes).
"""
import os
import sys

import pytest

import psjob.fluid as fluid
from psjob.cluster.inmemory import InMemoryCluster
from psjob.cluster.pserver.pserver_state import PserverOptions
from psjob.fluid import embedding_fusion
from psjob.fluid.transpiler import DistributeTranspiler
from psjob.fluid.transpiler import deserialize_dist_program as load
from psjob.fluid.transpiler import serialize_dist_program as dump

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fetchkit

EPS = ["127.0.0.1:6170", "127.0.0.1:6171"]


def single_process(name):
    main, startup, loss = fetchkit.build(name)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    return fetchkit.fetch_everything(exe, main, loss, fetchkit.user_variables(main), fetchkit.feeds(name, 4), scope)


def transpiled(name, names, trainers=1):
    """`trainers` trainers (sync) and two in-memory pservers, the programs shipped as bytes
    as separate processes would get them; each trainer fetches `names` from its own
    batches. Trainer 0's fetch_everything answer."""
    programs = []
    for t in range(trainers):
        main, startup, loss = fetchkit.build(name, distributed=True)
        tr = DistributeTranspiler()
        tr.transpile(t, program=main, startup_program=startup, pservers=",".join(EPS), trainers=trainers,
                     sync_mode=True)
        programs.append((load(dump(tr.get_trainer_program(wait_port=False))), load(dump(startup)), loss))
    cluster = InMemoryCluster({ep: tuple(load(dump(p)) for p in tr.get_pserver_programs(ep)) for ep in EPS},
                              options=PserverOptions(30.0))

    def body(t, exe):
        trainer, trainer_startup, loss = programs[t]
        scope = fluid.Scope()
        exe.run(trainer_startup, scope=scope)
        return fetchkit.fetch_everything(exe, trainer, loss, names, fetchkit.feeds(name, 4, seed=t), scope)
    return cluster.run_trainers(body, trainers)[0]


@pytest.mark.parametrize("name", fetchkit.MODELS)
def test_every_variable_of_a_single_process_program_is_fetched_as_op_by_op_execution_gives(name, monkeypatch):
    runs = {}
    for fused in (True, False):
        monkeypatch.setattr(embedding_fusion, "enabled", fused)
        runs[fused] = single_process(name)
    assert fetchkit.FUSED_OPS & runs[True][1] == {"embedding_pool"}  # the default path ran fused
    assert not fetchkit.FUSED_OPS & runs[False][1] and "lookup_table" in runs[False][1]
    fetchkit.assert_same(runs[True][0], runs[False][0])


@pytest.mark.parametrize("trainers", [1, 2])
@pytest.mark.parametrize("name", fetchkit.DISTRIBUTED)
def test_every_variable_of_a_program_with_a_distributed_table_is_fetched_from_its_trainer_program(
        name, trainers, monkeypatch):
    """The names come from the program as the user built it (optimizer included) before
    transpiling: an embedding's output among them (fetched to inspect embeddings), and
    the parameters' gradients, which two sync trainers send under per-trainer names."""
    main, _, _ = fetchkit.build(name, distributed=True)
    names = fetchkit.user_variables(main)
    lookups = [op.output("Out")[0] for op in main.global_block().ops
               if op.type == "lookup_table" and op.attr("is_distributed")]
    assert lookups and set(lookups) <= set(names)
    runs = {}
    for fused in (True, False):
        monkeypatch.setattr(embedding_fusion, "enabled", fused)
        runs[fused] = transpiled(name, names, trainers)
    assert "merge_ids_pool" in runs[True][1] and "merge_ids" not in runs[True][1]
    assert not fetchkit.FUSED_OPS & runs[False][1] and "merge_ids" in runs[False][1]
    fetchkit.assert_same(runs[True][0], runs[False][0])


def test_the_switch_reads_psjob_embedding_fusion_and_names_a_bad_value():
    from psjob.foundation.settings import Settings

    def switch(environ):
        return Settings(environ).switches.embedding_fusion
    assert switch({}) and switch({"PSJOB_EMBEDDING_FUSION": "1"})
    assert not switch({"PSJOB_EMBEDDING_FUSION": "0"})
    with pytest.raises(ValueError, match="PSJOB_EMBEDDING_FUSION='off': expected 1"):
        switch({"PSJOB_EMBEDDING_FUSION": "off"})
