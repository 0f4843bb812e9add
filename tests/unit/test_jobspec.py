"""Parsing ParameterServerJob documents: defaults, and errors that name field and fix."""
from __future__ import annotations

import pathlib

import pytest

from psjob.foundation import jobspec, roles
from psjob.foundation.jobspec import CleanPodPolicy, Device, JobSpecError, Mode, load_job_file, parse_job, to_manifest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def manifest(spec=None, name="ctr", **top):
    doc = {"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
           "metadata": {"name": name, "namespace": "ml"},
           "spec": {"image": "psjob:1", **(spec or {})}}
    doc.update(top)
    return doc


def error_of(doc) -> str:
    with pytest.raises(JobSpecError) as info:
        parse_job(doc)
    return str(info.value)


def test_a_minimal_job_gets_every_default():
    job = parse_job(manifest())
    s = job.spec
    assert (job.name, job.namespace) == ("ctr", "ml")
    assert s.mode is Mode.SYNC and s.k_steps is None and s.effective_k_steps == 0
    assert (s.pserver.replicas, s.pserver.port, s.pserver.device) == (1, 6174, Device.CPU)
    assert (s.worker.replicas, s.worker.device) == (1, Device.CPU)
    assert s.heter_worker is None
    assert s.metrics_port == 9100
    c = s.checkpoint
    assert (c.enabled, c.size, c.interval_steps, c.interval_seconds, c.keep) == \
        (True, "10Gi", 0, 600, 3)
    r = s.run_policy
    assert (r.backoff_limit, r.active_deadline_seconds, r.ttl_seconds_after_finished,
            r.clean_pod_policy, r.suspend) == (3, None, None, CleanPodPolicy.RUNNING, False)
    assert s.network_policy.enabled and s.security_context.run_as_user == 10001


def test_geo_mode_defaults_k_steps_to_one_hundred():
    assert parse_job(manifest({"mode": "geo"})).spec.effective_k_steps == 100
    assert parse_job(manifest({"mode": "geo", "kSteps": 8})).spec.effective_k_steps == 8


def test_integer_quantities_and_full_role_specs_are_accepted():
    job = parse_job(manifest({"worker": {
        "replicas": 4, "device": "gpu",
        "resources": {"requests": {"cpu": 2, "memory": "8Gi"},
                      "limits": {"nvidia.com/gpu": 1}},
        "env": [{"name": "DATA", "value": "/data"},
                {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
        "nodeSelector": {"pool": "gpu"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                         "effect": "NoSchedule"}]}}))
    w = job.spec.worker
    assert w.resources.requests == {"cpu": "2", "memory": "8Gi"}
    assert w.resources.limits == {"nvidia.com/gpu": "1"}
    assert w.env[1].value_from == {"secretKeyRef": {"name": "s", "key": "k"}}
    assert w.tolerations[0].operator.value == "Exists"


@pytest.mark.parametrize("spec, expected", [
    ({"pserver": {"replicas": 0}}, "spec.pserver.replicas: is 0, must be >= 1"),
    ({"worker": {"replicas": "4"}}, "spec.worker.replicas: must be an integer, got '4'"),
    ({"mode": "asynch"},
     "spec.mode: is 'asynch'; use one of sync, async, half_async, geo, collective (did you mean 'async'?)"),
    ({"kSteps": 10}, "spec.kSteps: kSteps only applies to mode geo: remove kSteps or set mode: geo"),
    ({"pserver": {"replica": 2}}, "spec.pserver.replica: unknown field: did you mean 'replicas'?"),
    ({"pserver": {"port": 80}}, "spec.pserver.port: is 80, must be >= 1024: pods run as non-root: "
                                "pick a port from 1024 to 65535"),
    ({"metricsPort": 6174}, "spec.metricsPort: metricsPort and pserver.port must differ: change "
                            "one of them"),
    ({"worker": {"env": [{"name": "PADDLE_TRAINERS", "value": "9"}]}},
     "spec.worker.env: PADDLE_TRAINERS is set by psjob from the job topology: remove it (set "
     "replicas, mode, ports or checkpoint fields instead)"),
    ({"worker": {"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}},
     "spec.worker.env[1].name: duplicate 'A': each name once"),
    ({"worker": {"resources": {"limits": {"memory": "lots"}}}},
     "spec.worker.resources.limits.memory: 'lots' is not a quantity: use a Kubernetes quantity "
     "such as 500m, 2, 8Gi"),
    ({"checkpoint": {"intervalSteps": 0, "intervalSeconds": 0}},
     "spec.checkpoint.intervalSeconds: checkpoints are enabled but intervalSteps and "
     "intervalSeconds are both 0: set one, or set enabled: false"),
    ({"checkpoint": {"existingClaim": "mine", "storageClassName": "nfs"}},
     "spec.checkpoint.existingClaim: existingClaim and storageClassName exclude each other: "
     "keep one"),
    ({"checkpoint": {"uri": "s3://team-ckpt/ctr", "existingClaim": "mine"}},
     "spec.checkpoint.uri: uri stores checkpoints in object storage, without a claim: drop "
     "existingClaim and storageClassName, or drop uri"),
    ({"checkpoint": {"credentialsSecret": "ckpt-s3"}},
     "spec.checkpoint.credentialsSecret: credentialsSecret is for an object store: set uri "
     "(s3://BUCKET/PREFIX) too"),
    ({"checkpoint": {"uri": "gs://team-ckpt/ctr"}},
     "spec.checkpoint.uri: 'gs://team-ckpt/ctr' does not match ^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$: "
     "use s3://BUCKET/PREFIX with a valid bucket name"),
    ({"runPolicy": {"cleanPodPolicy": "Some"}},
     "spec.runPolicy.cleanPodPolicy: is 'Some'; use one of All, Running, None"),
    ({"runPolicy": {"suspend": "yes"}}, "spec.runPolicy.suspend: must be true or false, got 'yes'"),
    ({"worker": {"tolerations": [{"key": "a", "operator": "Exists", "value": "b"}]}},
     "spec.worker.tolerations[0].value: operator Exists must not set value: remove value or use "
     "operator Equal"),
    ({"image": ""}, "spec.image: must not be empty: set spec.image to an image with psjob "
                    "installed"),
    ({"asPaddle": True}, "spec.asPaddle: asPaddle runs the job's own Paddle script: set spec.command "
                         "(or a role's command), or remove asPaddle"),
    ({"asPaddle": True, "command": []}, "spec.asPaddle: asPaddle runs the job's own Paddle script: set "
                                        "spec.command (or a role's command), or remove asPaddle"),
    ({"asPaddle": "yes"}, "spec.asPaddle: must be true or false, got 'yes'"),
])
def test_spec_errors_name_the_field_and_the_fix(spec, expected):
    assert error_of(manifest(spec)) == expected


@pytest.mark.parametrize("spec", [{"command": ["python", "train.py"]},
                                  {"worker": {"command": ["python", "train.py"]}},
                                  {"pserver": {"command": ["python", "serve.py"]}},
                                  {"heterWorker": {"command": ["python", "heter.py"]}}])
def test_as_paddle_is_accepted_with_any_roles_command(spec):
    assert parse_job(manifest({"asPaddle": True, **spec})).spec.as_paddle is True
    assert parse_job(manifest(spec)).spec.as_paddle is False


def test_a_missing_image_is_reported_as_required():
    doc = manifest()
    del doc["spec"]["image"]
    assert error_of(doc) == ("spec.image: is required: set spec.image to an image with psjob "
                             "installed")


def test_document_level_errors_name_the_field():
    assert error_of(manifest(apiVersion="psjob.dev/v1")) == \
        "apiVersion: is 'psjob.dev/v1': set apiVersion: psjob.dev/v1alpha1"
    assert error_of(manifest(kind="TFJob")) == "kind: is 'TFJob': set kind: ParameterServerJob"
    assert error_of(manifest(name="CTR_job")).startswith(
        "metadata.name: 'CTR_job': the job name must be lower-case letters, digits and '-'")
    assert error_of(manifest(name="a" * 45)).endswith(
        "must be at most 44 characters (children append -pserver-N): shorten metadata.name")
    assert error_of([1, 2]) == "(document): must be a mapping, got list"


def test_a_job_round_trips_through_its_manifest():
    job = parse_job(manifest({"mode": "geo", "heterWorker": {"replicas": 2},
                              "worker": {"env": [{"name": "A", "value": "1"}]}}))
    assert parse_job(to_manifest(job)) == job


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_every_example_parses(example):
    job = load_job_file(str(EXAMPLES / example))
    assert job.name == pathlib.Path(example).stem


def test_load_job_file_refuses_several_documents(tmp_path):
    path = tmp_path / "two.yaml"
    path.write_text("a: 1\n---\nb: 2\n")
    with pytest.raises(JobSpecError, match="must hold exactly one YAML document, found 2"):
        load_job_file(str(path))


def test_every_schema_field_has_a_description():
    def walk(cls):
        for info in jobspec.fields_of(cls):
            assert info.schema.doc, f"{cls.__name__}.{info.name}"
            if info.type.kind == "object":
                walk(info.type.inner)
            if info.type.kind == "list" and info.type.inner.kind == "object":
                walk(info.type.inner.inner)
    walk(jobspec.JobSpec)


def test_worker_max_replicas_below_replicas_is_refused_naming_the_field():
    manifest = {"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                "metadata": {"name": "elastic"},
                "spec": {"image": "psjob:1", "worker": {"replicas": 3, "maxReplicas": 2}}}
    with pytest.raises(jobspec.JobSpecError, match=r"worker.maxReplicas.*at least replicas"):
        jobspec.parse_job(manifest)
    manifest["spec"]["worker"]["maxReplicas"] = 4
    job = jobspec.parse_job(manifest)
    env = roles.role_environment(roles.kubernetes_topology(job, "default"), roles.PSERVER, 0)
    assert env["PSJOB_MAX_TRAINERS"] == env["PADDLE_TRAINERS"] == "4"  # no replica count in it


@pytest.mark.parametrize("spec, expected", [
    ({"worker": {"env": [{"name": "A", "value": "x" * (128 << 10)}]}},
     "spec.worker.env[0].value: is 131,074 bytes; Linux starts no process with an argument or "
     "NAME=value entry of 128 KiB or more"),
    ({"pserver": {"env": [{"name": "A", "value": "nul\0"}]}}, "spec.pserver.env[0].value: contains a NUL"),
    ({"args": ["--data", "a\0b"]}, "spec.args[1]: contains a NUL"),
    ({"worker": {"args": ["x" * (130 << 10)]}}, "spec.worker.args[0]: is 133,120 bytes"),
    ({"command": [" "]}, "spec.command[0]: is empty: name the program to run"),
    ({"worker": {"env": [{"name": f"V{i}", "value": "x" * (100 << 10)} for i in range(11)]}},
     "spec.worker: the command, arguments and environment of its processes add up to"),
])
def test_what_no_process_can_be_started_with_is_refused_naming_the_field(spec, expected):
    assert expected in error_of(manifest(spec))


def test_an_env_value_just_under_the_exec_limit_is_accepted():
    value = "x" * ((128 << 10) - len("A=") - 1)
    assert parse_job(manifest({"worker": {"env": [{"name": "A", "value": value}]}})).spec.worker.env[0].value == value


@pytest.mark.parametrize("raw, expected", [
    (b"a: \xff\n", "is not UTF-8 text: byte 0xff on line 1"),
    (b"a: " + b"1" * 4400 + b"\n", "holds a value YAML cannot read on line 1"),
    (b"a:\n  b: " + b"[" * 70 + b"]" * 70 + b"\n",
     "nests mappings and lists more than 64 levels deep"),
])
def test_load_job_file_names_what_makes_a_file_unreadable(tmp_path, raw, expected):
    path = tmp_path / "job.yaml"
    path.write_bytes(raw)
    with pytest.raises(JobSpecError, match=expected):
        load_job_file(str(path))


@pytest.mark.parametrize("checkpoint, expected", [
    ({"incremental": {"enabled": True, "baseEvery": 0}},
     "spec.checkpoint.incremental.baseEvery: is 0, must be >= 1"),
    ({"incremental": {"enable": True}}, "spec.checkpoint.incremental.enable: unknown field: did you mean 'enabled'?"),
    ({"enabled": False, "incremental": {"enabled": True}},
     "spec.checkpoint.incremental.enabled: incremental.enabled needs checkpoints"),
])
def test_a_bad_incremental_checkpoint_policy_is_refused_naming_the_field(checkpoint, expected):
    assert expected in error_of(manifest({"checkpoint": checkpoint}))


def test_the_incremental_checkpoint_policy_defaults_off_and_round_trips():
    job = parse_job(manifest())
    assert job.spec.checkpoint.incremental == jobspec.IncrementalCheckpoints(enabled=False, base_every=10)
    job = parse_job(manifest({"checkpoint": {"incremental": {"enabled": True, "baseEvery": 5}}}))
    assert parse_job(jobspec.to_manifest(job)) == job and job.spec.checkpoint.incremental.base_every == 5


@pytest.mark.parametrize("stream, extra, expected", [
    ({"root": "/data/ctr", "layout": "%H%M"}, {}, "spec.data.stream.layout: layout must contain %Y, %m and %d"),
    ({"root": "/data/ctr", "layout": "%Y%m%d/%S"}, {}, "spec.data.stream.layout: "),
    ({"root": "/data/ctr", "start": "2026-11-28"}, {}, "spec.data.stream.start: start '2026-11-28' is no folder"),
    ({"root": ""}, {}, "spec.data.stream.root: must not be empty"),
    ({"root": "/d", "doneFile": "a/b"}, {}, "spec.data.stream.doneFile: "),
    ({"root": "/d", "pollSeconds": 0}, {}, "spec.data.stream.pollSeconds"),
    ({"root": "/d"}, {"worker": {"replicas": 1, "maxReplicas": 2}},
     "spec.data.stream: a stream job deals each folder's batches over a fixed trainer count"),
    ({"root": "/d"}, {"checkpoint": {"intervalSeconds": 0, "intervalSteps": 10}},
     "spec.checkpoint.intervalSeconds: a stream job publishes a checkpoint every"),
])
def test_a_bad_stream_is_refused_naming_the_field(stream, extra, expected):
    assert expected in error_of(manifest({"data": {"stream": stream}, **extra}))


def test_a_stream_reaches_every_process_as_json():
    import json
    job = parse_job(manifest({"data": {"stream": {"root": "s3://clicks/ctr", "start": "20261128/2300"}}}))
    topology = roles.local_topology(job, [6174], "/tmp/w")
    env = roles.role_environment(topology, roles.TRAINER, 0)
    assert json.loads(env["PSJOB_DATA_STREAM"]) == {"root": "s3://clicks/ctr", "layout": "%Y%m%d/%H%M",
                                                     "doneFile": "_SUCCESS", "pollSeconds": 10,
                                                     "start": "20261128/2300"}
    assert "PSJOB_DATA_STREAM" not in roles.role_environment(
        roles.local_topology(parse_job(manifest()), [6174], "/tmp/w"), roles.TRAINER, 0)


def test_a_rule_reports_its_one_message_and_needs_exactly_one_python_side():
    from psjob.foundation.jobspec.schema import Rule
    rule = Rule("self.x > 0", "x must be positive: raise x", lambda o: o <= 0)
    assert rule.check(0) == "x must be positive: raise x" and rule.check(1) is None
    for bad in ({}, {"broken": lambda o: True, "problem": lambda o: None}):
        with pytest.raises(TypeError, match="exactly one of broken and problem"):
            Rule("self.x > 0", "x", **bad)
