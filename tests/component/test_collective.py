"""Collective (NCCL2-mode) training on CPU: real trainer processes all-reducing over TCP.

Sync training of 2 trainers on their shards of each batch must equal one process on
the whole batch (the gradients are averaged, Paddle's CoeffNumDevice), through the three
forms of docs/user/collective.md; a lost peer fails the others with a named error; a wrong
token is refused.
"""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from psjob.cluster.collective.ring import CollectiveError, Ring
from psjob.foundation import roles
from psjob.launcher.launch import free_ports

from .conftest import SCRIPTS

TRAINER = os.path.join(SCRIPTS, "collective_trainer.py")
PEER = os.path.join(SCRIPTS, "ring_peer.py")


def _endpoints(n):
    return [f"127.0.0.1:{p}" for p in free_ports(n)]


def _trainer_env(rank, endpoints, token_file=""):
    env = dict(os.environ)
    env.update(PADDLE_TRAINER_ID=str(rank), PADDLE_TRAINERS_NUM=str(len(endpoints)),
               PADDLE_TRAINER_ENDPOINTS=",".join(endpoints), PADDLE_CURRENT_ENDPOINT=endpoints[rank],
               PSJOB_AUTH_TOKEN_FILE=token_file, PSJOB_COLLECTIVE_TIMEOUT_S="20")
    return env


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The single process on the concatenated batches, per optimizer."""
    out = {}
    for opt in ("sgd", "adam"):
        path = str(tmp_path_factory.mktemp("single") / f"{opt}.npz")
        subprocess.run([sys.executable, TRAINER, "single", opt, path], check=True, timeout=120,
                       capture_output=True)
        out[opt] = np.load(path)
    return out


@pytest.mark.parametrize("form,opt", [("transpiler", "sgd"), ("transpiler", "adam"), ("fleet", "sgd"),
                                      ("fleet", "adam"), ("fleet1x", "adam"), ("parallel_env", "sgd"),
                                      ("parallel_env", "adam")])
def test_two_trainers_equal_one_process_on_the_whole_batch(form, opt, reference, tmp_path):
    token = tmp_path / "token"
    token.write_text("collective-secret")
    eps = _endpoints(2)
    procs = [subprocess.Popen([sys.executable, TRAINER, form, opt, str(tmp_path / f"{r}.npz")],
                              env=_trainer_env(r, eps, str(token)), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    ref = reference[opt]
    got = [np.load(tmp_path / f"{r}.npz") for r in range(2)]
    names = [n for n in ref.files if n != "losses"]
    assert len(names) == 4
    for name in names:
        np.testing.assert_allclose(got[0][name], ref[name], rtol=0, atol=1e-5, err_msg=name)
        np.testing.assert_array_equal(got[0][name], got[1][name], err_msg=name)
    # Each trainer's loss is its own shard's; their mean is the whole batch's.
    np.testing.assert_allclose((got[0]["losses"] + got[1]["losses"]) / 2, ref["losses"], atol=1e-5)
    assert not np.allclose(got[0]["losses"], got[1]["losses"])
    if form == "fleet":  # trainer 0's fleet.save_persistables: the trained parameters, loadable
        import psjob.fluid as fluid
        prog, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(prog, startup):
            for name in names:
                prog.global_block().create_parameter(name, list(ref[name].shape), "float32")
        scope = fluid.core.Scope()
        with fluid.scope_guard(scope):
            fluid.io.load_persistables(fluid.Executor(fluid.CPUPlace()), str(tmp_path / "0.npz.saved"), prog)
        for name in names:
            np.testing.assert_array_equal(np.asarray(scope.find_var(name).get_tensor()), got[0][name])


def test_psjob_launch_server_num_0_runs_a_collective_job(tmp_path, launch, reference):
    """`psjob launch --server_num 0 --worker_num 2` gives the trainers the collective environment."""
    run = launch(["--server_num", "0", "--worker_num", "2", "--log_dir", str(tmp_path / "log"),
                  TRAINER, "fleet", "sgd", str(tmp_path / "out{rank}.npz")], timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 pserver(s) and 2 trainer(s), collective" in run.stdout + run.stderr
    for rank in range(2):
        got = np.load(tmp_path / f"out{rank}.npz")
        for name in (n for n in got.files if n != "losses"):
            np.testing.assert_allclose(got[name], reference["sgd"][name], atol=1e-5, err_msg=name)


def _peer(rank, eps, token, rounds=1, size=10, dtype="float32", env=None):
    return subprocess.Popen([sys.executable, PEER, str(rank), ",".join(eps), token, str(rounds), str(size), dtype],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **(env or {})})


def _line(proc):
    line = proc.stdout.readline()
    assert line, f"peer exited: {proc.wait()}"
    return line.strip()


@pytest.mark.parametrize("size,dtype", [(1, "float64"), (7, "float32"), (300_001, "float64")])
def test_three_processes_all_reduce(size, dtype):
    eps = _endpoints(3)
    peers = [_peer(r, eps, "t", rounds=2, size=size, dtype=dtype) for r in range(3)]
    try:
        want = float(np.arange(size, dtype=np.float64).sum() * 6)
        for p in peers:
            assert _line(p) == "joined"
            for _ in range(2):
                kind, got_dtype, value = _line(p).split()
                assert (kind, got_dtype) == ("sum", dtype)
                assert float(value) == pytest.approx(want, rel=1e-6)
            assert _line(p) == "idle"
    finally:
        for p in peers:
            p.stdin.close()
            p.wait(timeout=30)


def test_a_killed_trainer_fails_the_others_promptly():
    """Three trainers all-reduce in a loop; trainer 1 is killed: 0 and 2 fail at once, naming it."""
    eps = _endpoints(3)
    peers = [_peer(r, eps, "t", rounds=10**9) for r in range(3)]
    try:
        for p in peers:
            assert _line(p) == "joined"
            assert _line(p) == "sum float32 270.0"  # arange(10) * (1 + 2 + 3)
        peers[1].kill()
        start = time.monotonic()
        for p in (peers[0], peers[2]):
            out, _ = p.communicate(timeout=20)
            last = out.strip().splitlines()[-1]
            assert p.returncode == 3, out[-2000:]
            assert last.startswith("CollectiveError: ") and "trainer 1 (" in last, last
        assert time.monotonic() - start < 15  # the peers' 30 s timeout was not what ended it
    finally:
        for p in peers:
            p.kill()
            p.wait()


def test_a_killed_trainer_fails_the_other_trainers_step():
    """Training: trainer 1 dies; trainer 0's next step fails with the ring's error naming it."""
    eps = _endpoints(2)
    procs = [subprocess.Popen([sys.executable, TRAINER, "transpiler", "sgd", os.devnull, str(10**6)],
                              env=_trainer_env(r, eps), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for r in range(2)]
    try:
        for p in procs:
            while _line(p) != "step 2":
                pass
        procs[1].kill()
        out, _ = procs[0].communicate(timeout=20)
        # The uncaught lost-peer error exits PEER_LOST_EXIT: restarted without counting as a failure.
        assert procs[0].returncode == roles.PEER_LOST_EXIT, out[-3000:]
        assert "PeerLostError: trainer 0: lost trainer 1 (" in out, out[-3000:]
        assert "c_allreduce_sum" in out  # the failing op is named too
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_wrong_token_is_refused():
    eps = _endpoints(2)
    peer = _peer(1, eps, "right-token")
    try:
        with pytest.raises(CollectiveError, match="refused the ring hello: missing or wrong psjob auth token"):
            Ring(0, eps, "wrong-token", connect_timeout_s=15).connect()
    finally:
        peer.kill()
        peer.wait()


def test_a_peer_that_never_joins_times_out_by_name():
    eps = _endpoints(2)
    with pytest.raises(CollectiveError, match="cannot reach trainer 1"):
        Ring(0, eps, "", connect_timeout_s=0.5).connect()


def _make_certs(directory, **kw):
    import importlib.util

    from .conftest import SCRIPTS as scripts
    spec = importlib.util.spec_from_file_location("make_certs", os.path.join(scripts, "make_certs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_certs(directory, **kw)


def test_the_ring_speaks_tls_when_the_job_has_it_and_refuses_plaintext_and_strangers(tmp_path):
    """With PSJOB_TLS_* set the ring all-reduces over TLS; a plaintext peer and a peer whose
    certificate another CA signed are refused; the token is still checked inside TLS."""
    from psjob.cluster.rpc.tls import TlsFiles
    ca, cert, key = _make_certs(str(tmp_path / "certs"))
    other_ca, other_cert, other_key = _make_certs(str(tmp_path / "other"), ca_name="someone else's CA")
    tls = {"PSJOB_TLS_CERT_FILE": cert, "PSJOB_TLS_KEY_FILE": key, "PSJOB_TLS_CA_FILE": ca}
    files = TlsFiles(cert_file=cert, key_file=key, ca_file=ca)
    eps = _endpoints(2)
    peer = _peer(1, eps, "t", env=tls)
    try:
        ring = Ring(0, eps, "t", connect_timeout_s=30, tls=files).connect()
        assert _line(peer) == "joined"
        assert float(ring.allreduce(np.arange(10, dtype=np.float32)).sum()) == 135.0  # 45 * (1 + 2)
        assert _line(peer) == "sum float32 135.0"
        ring.close()
    finally:
        peer.kill()
        peer.wait()
    # Plaintext, and TLS that trusts another CA: the handshake fails, the ring does not form.
    for theirs in (None, TlsFiles(cert_file=other_cert, key_file=other_key, ca_file=other_ca)):
        eps = _endpoints(2)
        peer = _peer(1, eps, "t", env=tls)  # trainer 1 speaks TLS with the job's certificate
        try:
            with pytest.raises(CollectiveError, match="hello to trainer 1 at .* failed"):
                Ring(0, eps, "t", connect_timeout_s=3, tls=theirs).connect()
        finally:
            peer.kill()
            out = peer.communicate()[0]
        assert "joined" not in out, out


def test_a_peer_without_the_token_is_refused_over_tls(tmp_path):
    from psjob.cluster.rpc.tls import TlsFiles
    ca, cert, key = _make_certs(str(tmp_path / "certs"))
    eps = _endpoints(2)
    peer = _peer(1, eps, "right-token", env={"PSJOB_TLS_CERT_FILE": cert, "PSJOB_TLS_KEY_FILE": key,
                                              "PSJOB_TLS_CA_FILE": ca})
    try:
        with pytest.raises(CollectiveError, match="refused the ring hello: missing or wrong psjob auth token"):
            Ring(0, eps, "", connect_timeout_s=15, tls=TlsFiles(cert, key, ca)).connect()
    finally:
        peer.kill()
        peer.wait()


def test_the_nccl_unique_id_reaches_every_trainer_over_the_ring():
    """Trainer 0's NCCL unique id (128 signed bytes) is sent over the TCP ring; every trainer
    ends with exactly it. CPU only: the id maker stands in for nccl.get_unique_id."""
    import threading

    from psjob.cluster.collective.nccl import UNIQUE_ID_BYTES, exchange_unique_id
    uid = tuple(((i * 37) % 256) - 128 for i in range(UNIQUE_ID_BYTES))
    eps = _endpoints(3)
    got, errors = {}, []

    def trainer(rank):
        try:
            ring = Ring(rank, eps, "t", connect_timeout_s=30).connect()
            got[rank] = exchange_unique_id(ring, (lambda: uid) if rank == 0 else None)
            ring.close()
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=trainer, args=(r,)) for r in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert got == {0: uid, 1: uid, 2: uid}
    with pytest.raises(ValueError, match="an NCCL unique id is 128 bytes"):
        exchange_unique_id(Ring(0, ["127.0.0.1:1"]), lambda: (1, 2, 3))
