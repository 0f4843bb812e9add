"""fleet.util.get_file_shard in an elastic job shards among the live trainers, not the job's
capacity: real processes (one pserver, two of a capacity of three trainers) running a Paddle 2.x
fleet script (scripts/elastic_shard.py)."""
import json
import os
import subprocess
import sys

from psjob.foundation import roles
from psjob.launcher.launch import loopback_endpoints

SCRIPT = os.path.join(os.path.dirname(__file__), "scripts", "elastic_shard.py")
BOUND_S = 120


def test_an_elastic_jobs_trainers_shard_files_among_the_live_members(tmp_path):
    topology = roles.JobTopology(job_name="shard", namespace="default", pserver_endpoints=tuple(loopback_endpoints(1)),
                                 trainers=2, max_trainers=3, mode="async", metrics_port=0)
    procs = {}

    def start(name, role, index):
        env = dict(os.environ, **roles.role_environment(topology, role, index))
        log = open(tmp_path / f"{name}.log", "w")
        procs[name] = subprocess.Popen([sys.executable, SCRIPT, "--files", "7", "--members", "2"], env=env,
                                       stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)

    def logs():
        return "\n".join(f"--- {n}\n{(tmp_path / f'{n}.log').read_text()[-3000:]}" for n in procs)

    try:
        start("pserver.0", roles.PSERVER, 0)
        start("trainer.0", roles.TRAINER, 0)
        start("trainer.1", roles.TRAINER, 1)
        for name in ("trainer.0", "trainer.1"):
            assert procs[name].wait(timeout=BOUND_S) == 0, logs()
    finally:
        for proc in procs.values():  # the pserver of an elastic job waits for the capacity's third trainer
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    shards = {}
    for name in ("trainer.0", "trainer.1"):
        (line,) = [x for x in (tmp_path / f"{name}.log").read_text().splitlines() if x.startswith("SHARD ")]
        got = json.loads(line[len("SHARD "):])
        assert (got["worker_num"], got["members"]) == (3, [0, 1]), got  # capacity 3, two live
        shards[got["trainer"]] = got["shard"]
    # Seven files between the two live trainers (by capacity it would be 3, 2 and 2 files,
    # and part-5, part-6 would be read by nobody).
    assert shards == {0: [f"part-{i}" for i in range(4)], 1: [f"part-{i}" for i in range(4, 7)]}
