"""Pure builders: exact child manifests, valid against the Kubernetes OpenAPI schema."""
from __future__ import annotations

import base64
import json
import pathlib
import textwrap

import kubernetes_validate
import pytest
import yaml

from psjob.foundation import roles
from psjob.foundation.jobspec import JobSpecError, load_job_file, parse_job
from psjob_operator import builders, pods
from psjob_operator.validation import validate_for_cluster

K8S_VERSION = kubernetes_validate.latest_version()
# The chart's kubeVersion floor, a 1.33 cluster (schemas differ: 1.26-1.34 require
# podFailurePolicy's onPodConditions[].status) and the newest published schema.
K8S_VERSIONS = ("1.26.0", "1.33.0", K8S_VERSION)
EXAMPLES = sorted((pathlib.Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))
OWNER = builders.Owner("ctr", "0b7e6c1e-uid")


def job(**spec):
    body = {"image": "psjob:1", "args": ["--model", "ctr"], "pserver": {"replicas": 2},
            "worker": {"replicas": 3}}
    body.update(spec)
    return parse_job({"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                      "metadata": {"name": "ctr", "namespace": "ml"}, "spec": body})


def by_kind(children, kind, name=None):
    return next(c for c in children if c["kind"] == kind
                and (name is None or c["metadata"]["name"] == name))


def env_dict(container):
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_a_job_builds_its_children_in_dependency_order():
    kids = builders.build_children(job(), OWNER, "s3cret")
    assert [(c["kind"], c["metadata"]["name"]) for c in kids] == [
        ("Secret", "ctr-auth"), ("ConfigMap", "ctr-config"),
        ("PersistentVolumeClaim", "ctr-checkpoint"), ("NetworkPolicy", "ctr-network"),
        ("Service", "ctr-pserver"), ("StatefulSet", "ctr-pserver"), ("Job", "ctr-worker")]
    for child in kids:
        assert child["metadata"]["namespace"] == "ml"
        assert child["metadata"]["labels"]["psjob.dev/job-name"] == "ctr"
        assert child["metadata"]["ownerReferences"] == [{
            "apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob", "name": "ctr",
            "uid": "0b7e6c1e-uid", "controller": True, "blockOwnerDeletion": True}]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_built_manifest_validates_against_the_kubernetes_schema(example):
    parsed = load_job_file(str(example))
    for activity in (builders.RUNNING, builders.SUSPENDED):
        for child in builders.build_children(parsed, OWNER, "token", activity):
            for version in K8S_VERSIONS:
                kubernetes_validate.validate(child, version, strict=True)


def test_heter_workers_and_extra_peers_also_build_valid_manifests():
    parsed = job(heterWorker={"replicas": 2},
                 networkPolicy={"allowFrom": [{"namespaceSelector": {"matchLabels":
                                                                     {"team": "eval"}}}],
                                "metricsFrom": [{"namespaceSelector": {"matchLabels": {
                                    "kubernetes.io/metadata.name": "monitoring"}}}]})
    kids = builders.build_children(parsed, OWNER, "token")
    assert ("StatefulSet", "ctr-heter") in [(c["kind"], c["metadata"]["name"]) for c in kids]
    for child in kids:
        kubernetes_validate.validate(child, K8S_VERSION, strict=True)


def test_the_pserver_statefulset_has_stable_names_probes_and_the_role_environment():
    parsed = job()
    sts = by_kind(builders.build_children(parsed, OWNER, "t"), "StatefulSet")
    spec = sts["spec"]
    assert (spec["serviceName"], spec["replicas"], spec["podManagementPolicy"]) == \
        ("ctr-pserver", 2, "Parallel")
    assert spec["selector"] == {"matchLabels": {"psjob.dev/job-name": "ctr",
                                                "psjob.dev/role": "pserver"}}
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Always" and pod["terminationGracePeriodSeconds"] == 60
    c = pod["containers"][0]
    assert c["command"] == ["psjob", "pserver"] and c["args"] == ["--model", "ctr"]
    assert c["ports"] == [{"name": "pserver", "containerPort": 6174, "protocol": "TCP"},
                          {"name": "metrics", "containerPort": 9100, "protocol": "TCP"}]
    assert c["readinessProbe"] == {"grpc": {"port": 6174}, "periodSeconds": 5,
                                   "failureThreshold": 3, "timeoutSeconds": 5}
    assert c["startupProbe"]["failureThreshold"] * c["startupProbe"]["periodSeconds"] == 600
    env = env_dict(c)
    expected = roles.role_environment(roles.kubernetes_topology(parsed, "ml"), roles.PSERVER, None)
    assert {k: env[k] for k in expected} == expected
    assert env["POD_IP"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert env["PSJOB_TOPOLOGY_FILE"] == "/etc/psjob/topology.json"


def test_the_worker_job_is_indexed_and_its_index_is_the_trainer_id():
    batch = by_kind(builders.build_children(job(), OWNER, "t"), "Job")
    spec = batch["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"],
            spec["backoffLimit"], spec["suspend"]) == ("Indexed", 3, 3, 3, False)
    assert spec["podFailurePolicy"] == {"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        {"action": "Ignore", "onPodConditions": [],
         "onExitCodes": {"containerName": "psjob", "operator": "In", "values": [75, 76]}}]}
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    c = pod["containers"][0]
    assert c["command"] == ["psjob", "worker"] and "readinessProbe" not in c
    env = env_dict(c)
    index = {"fieldRef": {"fieldPath":
                          "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}
    assert env["PADDLE_TRAINER_ID"] == env["PSJOB_TRAINER_ID"] == index
    assert env["PADDLE_TRAINING_ROLE"] == "TRAINER" and env["PADDLE_TRAINERS"] == "3"


def test_pods_run_non_root_read_only_without_privileges_or_api_tokens():
    for child in builders.build_children(job(heterWorker={"replicas": 1}), OWNER, "t"):
        if child["kind"] not in ("StatefulSet", "Job"):
            continue
        pod = child["spec"]["template"]["spec"]
        assert pod["automountServiceAccountToken"] is False
        assert pod["enableServiceLinks"] is False
        assert pod["securityContext"] == {
            "runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001,
            "fsGroupChangePolicy": "OnRootMismatch", "seccompProfile": {"type": "RuntimeDefault"}}
        c = pod["containers"][0]
        assert c["securityContext"] == {"allowPrivilegeEscalation": False,
                                        "readOnlyRootFilesystem": True, "privileged": False,
                                        "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}}
        mounts = {m["name"]: m for m in c["volumeMounts"]}
        assert mounts["tmp"]["mountPath"] == "/tmp"
        assert mounts["auth"] == {"name": "auth", "mountPath": "/var/run/psjob/auth",
                                  "readOnly": True}
        assert mounts["checkpoints"]["mountPath"] == "/var/lib/psjob/checkpoints"
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["auth"]["secret"] == {"secretName": "ctr-auth", "items": [
            {"key": "token", "path": "token"}], "defaultMode": 0o440}
        assert volumes["checkpoints"] == {"name": "checkpoints",
                                          "persistentVolumeClaim": {"claimName": "ctr-checkpoint"}}


def test_the_auth_secret_holds_the_token_and_is_immutable():
    secret = by_kind(builders.build_children(job(), OWNER, "s3cret"), "Secret")
    assert secret["immutable"] is True
    assert base64.b64decode(secret["data"]["token"]) == b"s3cret"


def test_the_network_policy_admits_only_the_jobs_pods_and_metrics_scrapers():
    policy = by_kind(builders.build_children(job(), OWNER, "t"), "NetworkPolicy")
    assert policy["spec"] == {
        "podSelector": {"matchLabels": {"psjob.dev/job-name": "ctr"}},
        "policyTypes": ["Ingress"],
        "ingress": [
            {"from": [{"podSelector": {"matchLabels": {"psjob.dev/job-name": "ctr"}}}]},
            {"ports": [{"protocol": "TCP", "port": 9100}]},
        ]}
    disabled = builders.build_children(job(networkPolicy={"enabled": False}), OWNER, "t")
    assert "NetworkPolicy" not in [c["kind"] for c in disabled]


def test_the_checkpoint_claim_is_one_shared_read_write_many_volume():
    claim = by_kind(builders.build_children(
        job(checkpoint={"storageClassName": "nfs", "size": "50Gi"}), OWNER, "t"),
        "PersistentVolumeClaim")
    assert claim["spec"] == {"accessModes": ["ReadWriteMany"], "volumeMode": "Filesystem",
                             "resources": {"requests": {"storage": "50Gi"}},
                             "storageClassName": "nfs"}
    own = builders.build_children(job(checkpoint={"existingClaim": "team-ckpt"}), OWNER, "t")
    assert "PersistentVolumeClaim" not in [c["kind"] for c in own]
    sts = by_kind(own, "StatefulSet")
    volumes = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
    assert volumes["checkpoints"]["persistentVolumeClaim"] == {"claimName": "team-ckpt"}


def test_an_object_store_uri_needs_no_claim_and_gives_every_pod_the_uri_and_the_credentials_secret():
    kids = builders.build_children(job(checkpoint={"uri": "s3://team-ckpt/jobs/ctr", "credentialsSecret": "ckpt-s3"}),
                                   OWNER, "t")
    assert "PersistentVolumeClaim" not in [c["kind"] for c in kids]
    for kind in ("StatefulSet", "Job"):
        pod = by_kind(kids, kind)["spec"]["template"]["spec"]
        assert "checkpoints" not in {v["name"] for v in pod["volumes"]}
        container, = pod["containers"]
        assert "checkpoints" not in {m["name"] for m in container["volumeMounts"]}
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["PSJOB_CHECKPOINT_DIR"] == "s3://team-ckpt/jobs/ctr"
        assert container["envFrom"] == [{"secretRef": {"name": "ckpt-s3"}}]
        kubernetes_validate.validate(by_kind(kids, kind), K8S_VERSION, strict=True)


def test_gpu_roles_get_one_gpu_by_default_and_a_shared_memory_volume():
    kids = builders.build_children(job(worker={"replicas": 2, "device": "gpu"}), OWNER, "t")
    pod = by_kind(kids, "Job")["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "1"}}
    assert {"name": "dshm", "emptyDir": {"medium": "Memory"}} in pod["volumes"]
    assert env_dict(pod["containers"][0])["PSJOB_DEVICE"] == "gpu"


def test_suspension_scales_servers_to_zero_and_suspends_the_workers():
    kids = builders.build_children(job(heterWorker={"replicas": 1}), OWNER, "t",
                                   builders.SUSPENDED)
    assert [c["spec"]["replicas"] for c in kids if c["kind"] == "StatefulSet"] == [0, 0]
    assert by_kind(kids, "Job")["spec"]["suspend"] is True


def test_a_custom_command_replaces_the_psjob_entrypoint_for_every_role():
    kids = builders.build_children(job(command=["python", "train.py"], args=[]), OWNER, "t")
    for kind in ("StatefulSet", "Job"):
        c = by_kind(kids, kind)["spec"]["template"]["spec"]["containers"][0]
        assert c["command"] == ["python", "train.py"] and "args" not in c
    # The user's script serves through psjob's pserver: it must listen on the pod's
    # interfaces, not only on the address its DNS name resolves to.
    pserver = by_kind(kids, "StatefulSet")["spec"]["template"]["spec"]["containers"][0]
    assert env_dict(pserver)["PSJOB_BIND_ALL"] == "1"
    worker = by_kind(kids, "Job")["spec"]["template"]["spec"]["containers"][0]
    assert "PSJOB_BIND_ALL" not in env_dict(worker)


def test_as_paddle_runs_every_roles_command_under_psjob_as_paddle():
    kids = builders.build_children(job(command=["python", "train.py"], args=["--epochs", "2"],
                                       asPaddle=True, worker={"replicas": 3, "command": ["python", "w.py"]}),
                                   OWNER, "t")
    pserver = by_kind(kids, "StatefulSet")["spec"]["template"]["spec"]["containers"][0]
    worker = by_kind(kids, "Job")["spec"]["template"]["spec"]["containers"][0]
    assert pserver["command"] == ["psjob", "as-paddle", "--", "python", "train.py"]
    assert worker["command"] == ["psjob", "as-paddle", "--", "python", "w.py"]
    assert pserver["args"] == worker["args"] == ["--epochs", "2"]
    # The pod's environment is the one a job without asPaddle gets: the wrapper sets PYTHONPATH.
    plain = builders.build_children(job(command=["python", "train.py"], args=["--epochs", "2"],
                                        worker={"replicas": 3, "command": ["python", "w.py"]}), OWNER, "t")
    assert by_kind(plain, "Job")["spec"]["template"]["spec"]["containers"][0]["env"] == worker["env"]
    for child in kids:
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(child, version, strict=True)


def test_the_paddlerec_job_of_docs_paddle2_builds_pods_that_run_it_under_as_paddle():
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "user" / "paddle2.md").read_text()
    walkthrough = doc[doc.index('<a id="paddlerec"></a>'):]
    block = walkthrough[walkthrough.index("```yaml"):].split("\n", 1)[1].split("```", 1)[0]
    parsed = parse_job(yaml.safe_load(textwrap.dedent(block)))
    assert parsed.spec.as_paddle
    validate_for_cluster(parsed)  # raises naming the field if the operator would refuse it
    kids = builders.build_children(parsed, OWNER, "t")
    worker = by_kind(kids, "Job")["spec"]["template"]["spec"]["containers"][0]
    assert worker["command"] == ["psjob", "as-paddle", "--", "python", "tools/static_ps_trainer.py", "-m",
                                 "models/rank/dnn/config.yaml"]


def test_psjobs_own_pserver_entrypoint_decides_its_bind_address_itself():
    pserver = by_kind(builders.build_children(job(), OWNER, "t"), "StatefulSet")
    assert "PSJOB_BIND_ALL" not in env_dict(pserver["spec"]["template"]["spec"]["containers"][0])


def test_the_config_map_carries_the_topology_as_json():
    parsed = job()
    cm = by_kind(builders.build_children(parsed, OWNER, "t"), "ConfigMap")
    topology = roles.topology_from_dict(json.loads(cm["data"]["topology.json"]))
    assert topology == roles.kubernetes_topology(parsed, "ml")


def test_user_environment_follows_psjobs_and_home_defaults_to_tmp():
    parsed = job(worker={"env": [{"name": "DATA_DIR", "value": "/data"}]})
    c = pods.container(parsed.spec, roles.kubernetes_topology(parsed, "ml"), "worker",
                       parsed.spec.worker, None)
    names = [e["name"] for e in c["env"]]
    assert names[-1] == "DATA_DIR" and names.index("HOME") < names.index("DATA_DIR")


def _worker_container(parsed):
    worker_job = by_kind(builders.build_children(parsed, OWNER, "t"), "Job")
    return worker_job["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize("resources, source", [
    ({"requests": {"cpu": "4"}, "limits": {"cpu": "6"}}, "limits.cpu"),
    # No limit: the downward API's limits.cpu would be the node's allocatable CPUs.
    ({"requests": {"cpu": "500m"}}, "requests.cpu"),
])
def test_math_threads_follow_the_cpu_limit_else_the_cpu_request(resources, source):
    c = _worker_container(job(worker={"resources": resources}))
    threads = {e["name"]: e for e in c["env"] if e["name"] in roles.MATH_THREAD_ENV}
    assert set(threads) == set(roles.MATH_THREAD_ENV)
    for var in threads.values():
        assert var["valueFrom"]["resourceFieldRef"] == {
            "containerName": c["name"], "resource": source, "divisor": "1"}


def test_math_threads_are_one_without_any_cpu_resource_and_a_users_value_wins():
    c = _worker_container(job())
    assert {e["name"]: e.get("value") for e in c["env"]
            if e["name"] in roles.MATH_THREAD_ENV} == dict.fromkeys(roles.MATH_THREAD_ENV, "1")
    c = _worker_container(job(worker={"env": [{"name": "OMP_NUM_THREADS", "value": "3"}]}))
    assert [e for e in c["env"] if e["name"] == "OMP_NUM_THREADS"] == [
        {"name": "OMP_NUM_THREADS", "value": "3"}]


def test_math_threads_count_a_cpu_request_given_in_the_pod_template():
    template = {"spec": {"containers": [{"name": "psjob",
                                         "resources": {"requests": {"cpu": "3"}}}]}}
    c = _worker_container(job(worker={"template": template}))
    assert c["resources"] == {"requests": {"cpu": "3"}}
    omp = next(e for e in c["env"] if e["name"] == "OMP_NUM_THREADS")
    assert omp["valueFrom"]["resourceFieldRef"]["resource"] == "requests.cpu"


@pytest.mark.parametrize("spec, expected", [
    ({"worker": {"resources": {"requests": {"cpu": "4"}, "limits": {"cpu": "2"}}}},
     "spec.worker.resources.requests.cpu: 4 exceeds the limit 2: lower the request or raise "
     "spec.worker.resources.limits.cpu"),
    ({"pserver": {"device": "gpu", "resources": {"limits": {"nvidia.com/gpu": 0}}}},
     "spec.pserver.resources.limits.nvidia.com/gpu: is 0 but spec.pserver.device is gpu: "
     "request at least 1 GPU or set device: cpu"),
    ({"worker": {"resources": {"limits": {"nvidia.com/gpu": 1}}}},
     "spec.worker.device: is cpu but the pods request 1 nvidia.com/gpu: set spec.worker.device: "
     "gpu so psjob uses the GPU, or drop the GPU resource"),
])
def test_cluster_checks_name_the_field_and_the_fix(spec, expected):
    with pytest.raises(JobSpecError) as info:
        validate_for_cluster(job(**spec))
    assert str(info.value) == expected


# -- spec.tls -------------------------------------------------------------------------------

TLS_DIR = "/var/run/psjob/tls"


def _pod(kids, kind):
    return by_kind(kids, kind)["spec"]["template"]["spec"]


def test_tls_mounts_the_secret_read_only_and_names_its_files_in_the_environment():
    parsed = job(heterWorker={"replicas": 1}, tls={"secretName": "ctr-tls", "serverName": "ps.example"})
    kids = builders.build_children(parsed, OWNER, "t")
    for child in kids:
        kubernetes_validate.validate(child, K8S_VERSION, strict=True)
    servers = [c for c in kids if c["kind"] == "StatefulSet"]
    assert [s["metadata"]["name"] for s in servers] == ["ctr-pserver", "ctr-heter"]
    for sts in servers:  # pservers and heter workers serve TLS: certificate, key and CA
        pod = sts["spec"]["template"]["spec"]
        c = pod["containers"][0]
        assert {"name": "tls", "mountPath": TLS_DIR, "readOnly": True} in c["volumeMounts"]
        assert {"name": "tls", "secret": {"secretName": "ctr-tls", "items": [
            {"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"},
            {"key": "ca.crt", "path": "ca.crt"}], "defaultMode": 0o440}} in pod["volumes"]
        env = env_dict(c)
        assert (env["PSJOB_TLS_CERT_FILE"], env["PSJOB_TLS_KEY_FILE"], env["PSJOB_TLS_CA_FILE"],
                env["PSJOB_TLS_SERVER_NAME"]) == (f"{TLS_DIR}/tls.crt", f"{TLS_DIR}/tls.key",
                                                  f"{TLS_DIR}/ca.crt", "ps.example")
        # The kubelet's gRPC probe cannot speak TLS: a TCP probe on the same port instead.
        port = c["ports"][0]["containerPort"]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert c[probe]["tcpSocket"] == {"port": port} and "grpc" not in c[probe], probe
    # Trainers are clients only: the CA, never the private key.
    pod = _pod(kids, "Job")
    c = pod["containers"][0]
    assert {"name": "tls", "secret": {"secretName": "ctr-tls", "items": [
        {"key": "ca.crt", "path": "ca.crt"}], "defaultMode": 0o440}} in pod["volumes"]
    env = env_dict(c)
    assert env["PSJOB_TLS_CA_FILE"] == f"{TLS_DIR}/ca.crt"
    assert "PSJOB_TLS_CERT_FILE" not in env and "PSJOB_TLS_KEY_FILE" not in env


def test_tls_variables_are_read_back_by_the_runtime_as_one_configuration():
    from psjob.cluster.rpc.tls import TlsFiles
    from psjob.foundation.settings import tls_files
    parsed = job(tls={"secretName": "ctr-tls"})
    kids = builders.build_children(parsed, OWNER, "t")
    server = {k: v for k, v in env_dict(_pod(kids, "StatefulSet")["containers"][0]).items()
              if isinstance(v, str)}
    trainer = {k: v for k, v in env_dict(_pod(kids, "Job")["containers"][0]).items()
               if isinstance(v, str)}
    assert tls_files(server) == TlsFiles(f"{TLS_DIR}/tls.crt", f"{TLS_DIR}/tls.key", f"{TLS_DIR}/ca.crt")
    assert tls_files(trainer) == TlsFiles(ca_file=f"{TLS_DIR}/ca.crt")
    assert "PSJOB_TLS_SERVER_NAME" not in server


def test_without_tls_nothing_is_mounted_and_the_probes_stay_grpc():
    kids = builders.build_children(job(), OWNER, "t")
    for kind in ("StatefulSet", "Job"):
        pod = _pod(kids, kind)
        assert "tls" not in [v["name"] for v in pod["volumes"]]
        assert not [e for e in pod["containers"][0]["env"] if e["name"].startswith("PSJOB_TLS_")]
    assert _pod(kids, "StatefulSet")["containers"][0]["livenessProbe"]["grpc"] == {"port": 6174}


def test_tls_keeps_the_users_environment_last():
    parsed = job(tls={"secretName": "ctr-tls"}, worker={"env": [{"name": "DATA_DIR", "value": "/d"}]})
    c = pods.container(parsed.spec, roles.kubernetes_topology(parsed, "ml"), "worker",
                       parsed.spec.worker, None)
    assert [e["name"] for e in c["env"]][-3:] == ["HOME", "PSJOB_TLS_CA_FILE", "DATA_DIR"]


@pytest.mark.parametrize("tls, expected", [
    ({}, "spec.tls.secretName: is required: name a Secret holding tls.crt, tls.key and ca.crt"),
    ({"secretName": "Bad_Name"}, "spec.tls.secretName: 'Bad_Name' does not match"),
    ({"secretname": "x"}, "spec.tls.secretname: unknown field: did you mean 'secretName'?"),
])
def test_a_bad_tls_block_names_the_field(tls, expected):
    with pytest.raises(JobSpecError) as info:
        job(tls=tls)
    assert str(info.value).startswith(expected)


def test_tls_variables_set_by_hand_next_to_spec_tls_are_refused():
    with pytest.raises(JobSpecError) as info:
        validate_for_cluster(job(tls={"secretName": "ctr-tls"}, pserver={
            "env": [{"name": "X", "value": "1"}, {"name": "PSJOB_TLS_CA_FILE", "value": "/ca"}]}))
    assert str(info.value) == ("spec.pserver.env[1]: PSJOB_TLS_CA_FILE is set by spec.tls (the "
                               "Secret's files are mounted and named for you): remove it, or "
                               "remove spec.tls")
    validate_for_cluster(job(pserver={"env": [{"name": "PSJOB_TLS_CA_FILE", "value": "/ca"}]}))


def collective(**spec):
    body = {"image": "psjob:1", "mode": "collective", "command": ["python", "/app/train.py"],
            "worker": {"replicas": 3}}
    body.update(spec)
    return parse_job({"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                      "metadata": {"name": "ring", "namespace": "ml"}, "spec": body})


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_a_collective_jobs_children_are_valid_and_have_no_pservers(version):
    kids = builders.build_children(collective(worker={"replicas": 3, "port": 7000},
                                              networkPolicy={"allowFrom": [{"podSelector": {}}]}),
                                   OWNER, "t")
    for child in kids:
        kubernetes_validate.validate(child, version, strict=True)
    assert sorted((c["kind"], c["metadata"]["name"]) for c in kids) == [
        ("ConfigMap", "ring-config"), ("Job", "ring-worker"), ("NetworkPolicy", "ring-network"),
        ("PersistentVolumeClaim", "ring-checkpoint"), ("Secret", "ring-auth"), ("Service", "ring-worker")]
    topology = json.loads(by_kind(kids, "ConfigMap")["data"]["topology.json"])
    assert topology["mode"] == "collective" and topology["pserver_endpoints"] == []
    assert topology["trainer_endpoints"] == [f"ring-worker-{i}.ring-worker.ml.svc:7000" for i in range(3)]
    # Extra peers reach the ring port (the only server port of a collective job).
    extra = by_kind(kids, "NetworkPolicy")["spec"]["ingress"][1]
    assert extra["ports"] == [{"protocol": "TCP", "port": 7000}]


def test_a_collective_jobs_trainers_serve_tls_on_their_ring():
    """Every trainer accepts its ring neighbour's connection: certificate and key, not only the CA."""
    kids = builders.build_children(collective(tls={"secretName": "ring-tls"}), OWNER, "t")
    pod = _pod(kids, "Job")
    assert {"name": "tls", "secret": {"secretName": "ring-tls", "items": [
        {"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"},
        {"key": "ca.crt", "path": "ca.crt"}], "defaultMode": 0o440}} in pod["volumes"]
    env = env_dict(pod["containers"][0])
    assert (env["PSJOB_TLS_CERT_FILE"], env["PSJOB_TLS_KEY_FILE"]) == (f"{TLS_DIR}/tls.crt", f"{TLS_DIR}/tls.key")
