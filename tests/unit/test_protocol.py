"""The trainer <-> pserver seam (psjob.cluster.protocol) is the one both sides implement.

Real: the gRPC client (constructed, never connected), an in-memory cluster running a
transpiled pserver program, the PserverState behind it. Checked: each implementation is an
instance of its Protocol and every Protocol method has the same parameters (names, kinds,
defaults) in the implementation; no other module redeclares the Protocols. mypy checks
the types of the same methods (each implementation subclasses its Protocol;
tests/unit/test_lint.py runs it).
"""
import ast
import inspect
import os

import pytest

import psjob.fluid as fluid
from psjob.cluster import protocol
from psjob.cluster.inmemory import InMemoryClient, InMemoryCluster
from psjob.cluster.pserver.pserver_state import PserverState
from psjob.cluster.rpc import server as rpc_server
from psjob.cluster.rpc.client import GrpcPSClient
from psjob.fluid.transpiler import DistributeTranspiler
from psjob.foundation.settings import Settings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EP = "127.0.0.1:7001"


def _cluster(trainers=2):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4])
        loss = fluid.layers.mean(fluid.layers.fc(x, 1))
        fluid.optimizer.SGD(0.1).minimize(loss)
    t = DistributeTranspiler()
    t.transpile(0, program=main, pservers=EP, trainers=trainers, startup_program=startup)
    return InMemoryCluster.from_transpiler(t)


def _members(proto):
    return [name for name, value in vars(proto).items()
            if inspect.isfunction(value) and not name.startswith("_")]


def _parameters(fn):
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("proto, impl", [(protocol.PSClient, GrpcPSClient),
                                         (protocol.PSClient, InMemoryClient),
                                         (protocol.ServerHandler, PserverState)])
def test_each_implementation_has_every_method_of_its_protocol_with_the_same_parameters(proto, impl):
    methods = _members(proto)
    assert methods, f"{proto.__name__} declares no methods"
    assert proto in impl.__mro__  # explicitly: mypy then checks the signatures against it
    for name in methods:
        ours = getattr(impl, name)
        assert ours is not getattr(proto, name), f"{impl.__name__}.{name} is the Protocol's empty body"
        assert _parameters(ours) == _parameters(getattr(proto, name)), f"{impl.__name__}.{name}"


def test_the_clients_and_the_pserver_state_are_instances_of_their_protocols():
    cluster = _cluster()
    in_memory = cluster.client(1)
    grpc_client = GrpcPSClient([EP], 1, tls=None, settings=Settings({}))
    try:
        for client in (in_memory, grpc_client):
            assert isinstance(client, protocol.PSClient)
            assert (client.trainer_id, client.endpoints) == (1, [EP])
    finally:
        grpc_client.close()
    assert isinstance(cluster.handler(EP), protocol.ServerHandler)
    assert not isinstance(object(), protocol.ServerHandler)


def test_the_in_memory_client_answers_through_the_protocol_as_typed():
    cluster = _cluster(trainers=1)
    client: protocol.PSClient = cluster.client(0)
    state = cluster.handler(EP)
    param = next(n for n in state.scope.vars if n.endswith(".w_0"))
    pulled = client.pull(EP, [param]).wait()
    assert list(pulled) == [param] and pulled[param].shape == (4, 1)
    assert client.barrier("send") == [1]  # the one trainer's round applied: version 1
    assert client.barrier("fetch") == [1]
    client.complete()
    assert state.on_status()["state"] == "STOPPING"


def test_only_the_protocol_module_declares_the_seams_protocols():
    found = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, "runtime", "psjob")):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(dirpath, f)
            with open(path) as fh:
                tree = ast.parse(fh.read(), path)
            found += [os.path.relpath(path, ROOT) for node in ast.walk(tree)
                      if isinstance(node, ast.ClassDef) and node.name in ("PSClient", "ServerHandler")]
    assert found == [os.path.join("runtime", "psjob", "cluster", "protocol.py")] * 2
    assert rpc_server.ServerHandler is protocol.ServerHandler
