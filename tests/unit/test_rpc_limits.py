"""The limits a pserver puts on its peers, as settings and as checks: the PSJOB_RPC_* bounds,
the freeze lease cap, the save roots of CheckpointNotify, and the data plane's byte budget.
(What they hold a real pserver to: tests/component/test_pserver_bounds.py.)"""
import threading
import time
from types import SimpleNamespace

import pytest

from psjob.cluster.pserver import checkpoint_service
from psjob.cluster.pserver.pserver import serve_options
from psjob.cluster.rpc.base_server import READ_TIMEOUT_S
from psjob.cluster.rpc.dataplane import ByteBudget
from psjob.cluster.rpc.server import MAX_PREFETCH_IDS
from psjob.foundation.settings import CHECKPOINT_FREEZE_LEASE_S, Settings


def options_from(environ):
    return serve_options(Settings(environ))


def test_the_rpc_bounds_come_from_the_settings_and_bad_values_are_named():
    o = options_from({})
    assert (o.read_timeout_s, o.max_in_flight_bytes, o.max_prefetch_ids, o.save_roots) == \
        (READ_TIMEOUT_S, 0, MAX_PREFETCH_IDS, ())
    o = options_from({"PSJOB_RPC_READ_TIMEOUT_S": "2.5", "PSJOB_RPC_MAX_IN_FLIGHT_BYTES": str(3 << 30),
                          "PSJOB_RPC_MAX_PREFETCH_IDS": "1000", "PSJOB_RPC_MAX_MESSAGE_BYTES": "0",
                          "PSJOB_SAVE_ROOTS": "/data/a,,s3://b/models"})
    assert (o.read_timeout_s, o.max_in_flight_bytes, o.max_prefetch_ids, o.max_message_bytes) == \
        (2.5, 3 << 30, 1000, 0)
    assert o.save_roots == ("/data/a", "s3://b/models")
    for name, raw, message in (("PSJOB_RPC_READ_TIMEOUT_S", "soon", "expected a float"),
                               ("PSJOB_RPC_READ_TIMEOUT_S", "0", "must be positive"),
                               ("PSJOB_RPC_MAX_PREFETCH_IDS", "-1", "must be positive"),
                               ("PSJOB_RPC_MAX_IN_FLIGHT_BYTES", "1.5", "expected a int")):
        with pytest.raises(ValueError, match=f"{name}='{raw}': {message}"):
            options_from({name: raw})
    with pytest.raises(ValueError, match="PSJOB_RPC_MAX_IN_FLIGHT_BYTES=1048576 is below the message cap 2097152"):
        options_from({"PSJOB_RPC_MAX_IN_FLIGHT_BYTES": str(1 << 20), "PSJOB_RPC_MAX_MESSAGE_BYTES": str(2 << 20)})


def test_a_freeze_lease_is_capped_where_it_is_set_and_where_it_is_granted():
    assert Settings({CHECKPOINT_FREEZE_LEASE_S: "600"}).checkpoint.freeze_lease_s == 600.0
    with pytest.raises(ValueError, match="at most 600 seconds"):
        Settings({CHECKPOINT_FREEZE_LEASE_S: "601"}).checkpoint
    assert checkpoint_service._lease({"lease": "600"}) == 600.0
    for raw in ("1e9", "601"):
        with pytest.raises(ValueError, match="exceeds the longest freeze a pserver grants, 600 seconds"):
            checkpoint_service._lease({"lease": raw})


def test_checkpoint_notify_writes_only_inside_the_save_roots(tmp_path, monkeypatch):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside)
    monkeypatch.chdir(root)
    state = SimpleNamespace(endpoint="127.0.0.1:1", save_roots=(str(root), "s3://bucket/jobs/ctr"))
    for ok in (str(root), str(root / "step-1"), "relative/step-2", str(root / "a" / ".." / "b"),
               "s3://bucket/jobs/ctr/step-3", "s3://bucket/jobs/ctr"):
        checkpoint_service.check_save_dir(state, ok)
    for bad in (str(outside), str(root / ".." / "outside"), str(root / "link" / "x"), "../outside", "/etc",
                "s3://bucket/jobs/ctr2", "s3://bucket/jobs/ctr/../../x", "s3://other/jobs/ctr", str(tmp_path)):
        with pytest.raises(PermissionError, match=f"saves only under .*not {bad!r}"):
            checkpoint_service.check_save_dir(state, bad)
    with pytest.raises(ValueError, match="no directory to save into"):
        checkpoint_service.check_save_dir(state, "")
    checkpoint_service.check_save_dir(SimpleNamespace(save_roots=None), "/anywhere")  # in-process: no roots


def test_the_byte_budget_admits_what_fits_and_makes_the_rest_wait_until_their_deadline():
    budget = ByteBudget(10)
    assert budget.acquire(6, time.monotonic() + 1)
    assert not budget.acquire(5, time.monotonic() + 0.05)  # 6 + 5 > 10: refused at its deadline
    got = threading.Event()
    waiter = threading.Thread(target=lambda: budget.acquire(5, time.monotonic() + 30) and got.set())
    waiter.start()
    budget.release(6)
    waiter.join(timeout=30)
    assert got.is_set() and budget.used == 5
