"""The ParameterServerJob.

One YAML document describes a job, whether the operator runs it on Kubernetes
or `psjob run` runs it on this machine. This package turns that document into
frozen dataclasses, or raises `JobSpecError` naming the field path (for
example `spec.pserver.replicas`) and the fix.

Every dataclass field carries a `Schema` (JSON key, description, range,
pattern, CEL rules). The parser enforces it here; the operator's CRD
generator (`psjob_operator.crd`) walks the same metadata to emit the CRD's
openAPIV3Schema, so the cluster's validation and this parser cannot drift
(a test compares the checked-in CRD with the generated one). A cross-field
rule is one `Rule`: a CEL expression for the API server, a Python predicate
for `psjob run` and the operator, and one error message both report.

Stdlib only at import time; `load_job_file` imports PyYAML when called.

The package, by job:

- `schema`: the API identity, Schema/Rule/spec_field, describe/fields_of;
- `model`: the frozen dataclasses (ParameterServerJob, JobSpec, the role specs, ...);
- `parser`: parse_job, load_job_file;
- `serializer`: to_manifest.

`psjob.foundation.jobspec` re-exports their public names: the operator and `psjob run` import
from here.
"""
from psjob.foundation.jobspec.model import (
                     NAME_RULES,
                     AccessMode,
                     CheckpointSpec,
                     CleanPodPolicy,
                     DataSpec,
                     Device,
                     EnvVar,
                     HeterWorkerSpec,
                     ImagePullPolicy,
                     IncrementalCheckpoints,
                     JobSpec,
                     Mode,
                     NetworkPolicySpec,
                     ParameterServerJob,
                     PserverSpec,
                     Resources,
                     RoleSpec,
                     RunPolicy,
                     SchedulingPolicy,
                     SecuritySpec,
                     StreamSpec,  # noqa: F401
                     TaintEffect,
                     TlsSpec,
                     Toleration,
                     TolerationOperator,
                     WorkerSpec,
)
from psjob.foundation.jobspec.parser import POD_TEMPLATE_KEYS, POD_TEMPLATE_METADATA_KEYS, load_job_file, parse_job  # noqa: F401
from psjob.foundation.jobspec.schema import (
                     API_GROUP,
                     API_VERSION,
                     API_VERSION_FULL,
                     DEFAULT_GEO_K_STEPS,
                     DNS_1035,
                     DNS_1123_SUBDOMAIN,
                     ENV_NAME,
                     KIND,
                     LABEL_VALUE,
                     MAX_JOB_NAME_LENGTH,
                     PLURAL,
                     QUANTITY,
                     S3_URI,
                     SHORT_NAMES,  # noqa: F401
                     SINGULAR,
                     FieldInfo,
                     JobSpecError,
                     PodTemplate,
                     RawObject,
                     Rule,
                     Schema,
                     TypeInfo,
                     describe,
                     fields_of,
                     spec_field,
)
from psjob.foundation.jobspec.serializer import to_manifest  # noqa: F401
