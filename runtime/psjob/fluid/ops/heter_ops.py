"""Ops of a CPU trainer's program in a heterogeneous job (transpiler/heter_split.py).

`send_and_recv` is one stage of the heter section: it sends its inputs `X`
(activations, labels — with their LoD) to the heter trainer serving this
trainer, which runs the stage's ops (forward, or backward plus the pushes of
its parameters' gradients to the pservers) and answers with the values
named by `Out` (the section's outputs, or the gradients of its inputs).

It talks to `executor.service("heter")`, an object with
`run_stage(endpoint, trainer_id, stage, signature, values, lods)` →
{name: (value, lod or None)} and `complete(endpoints)`: the gRPC client
(psjob.cluster.rpc.heter_client, installed by the Fleet's init_worker or created by
the factory psjob.cluster.heter.heter registers as the "heter" hook, psjob.foundation.hooks) or the
in-process one of the tests (cluster/heter/heter_inmemory.py). Like every RPC kernel,
this module imports no transport.
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.ops.registry import register_op
from psjob.foundation.hooks import HETER_SERVICE


@register_op("send_and_recv")
def send_and_recv(ctx):
    svc = ctx.executor.service(HETER_SERVICE, ctx.op)
    names = ctx.ins.get("X", [])
    values = {n: ctx.vals[n] for n in names}
    lods = {n: ctx.lods[n] for n in names if n in ctx.lods}
    got = svc.run_stage(ctx.attr("endpoint"), int(ctx.attr("trainer_id")), int(ctx.attr("stage")),
                        ctx.attr("signature", ""), values, lods)
    for i, name in enumerate(ctx.outs.get("Out", [])):
        if name not in got:
            raise RuntimeError(f"heter stage {ctx.attr('stage')} did not return {name!r} "
                               f"(got {sorted(got)})")
        value, lod = got[name]
        lod = [np.asarray(level, dtype=np.int64) for level in lod] if lod else None
        if ctx.xp is not np and isinstance(value, np.ndarray):
            value = ctx.xp.asarray(value)
        ctx.set_output("Out", value, i=i, lod=lod)
