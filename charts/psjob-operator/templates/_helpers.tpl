{{/*
Names and labels shared by every template.
*/}}

{{- define "psjob-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The resource name prefix: "<release>-<chart>", or the release name when it already contains the chart name. */}}
{{- define "psjob-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "psjob-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "psjob-operator.labels" -}}
helm.sh/chart: {{ include "psjob-operator.chart" . }}
{{ include "psjob-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: psjob
{{- end }}

{{/* Labels that select the operator pod; never change them in an upgrade (Deployment selectors are immutable). */}}
{{- define "psjob-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "psjob-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "psjob-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "psjob-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* psjob's CPU image (<registry>/psjob:<version>): pservers and CPU trainers. */}}
{{- define "psjob-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* psjob's operator image (<registry>/psjob:<version>-operator): the CPU image plus kopf and the Kubernetes client. */}}
{{- define "psjob-operator.operatorImage" -}}
{{- printf "%s-operator" (include "psjob-operator.image" .) }}
{{- end }}

{{/* psjob's CUDA image (<registry>/psjob:<version>-cuda<X.Y>, Dockerfile.worker's CUDA version): GPU trainers. */}}
{{- define "psjob-operator.cudaImage" -}}
{{- printf "%s-cuda12.8" (include "psjob-operator.image" .) }}
{{- end }}

{{/* The namespaces watched in "namespace" scope, as a JSON list (the release namespace when none is given). */}}
{{- define "psjob-operator.watchNamespaces" -}}
{{- if .Values.rbac.watchNamespaces }}
{{- toJson .Values.rbac.watchNamespaces }}
{{- else }}
{{- toJson (list .Release.Namespace) }}
{{- end }}
{{- end }}

{{/*
The RBAC rules of the operator, read from files/rbac-rules.yaml (kept equal to
psjob_operator.rbac.REQUIRED_RBAC by charts/sync-from-sources.py and a test).
"cluster" holds cluster-scoped resources; "namespaced" the rest.
*/}}
{{- define "psjob-operator.rbacRules" -}}
{{- $rules := .Files.Get "files/rbac-rules.yaml" | fromYaml }}
{{- if or (not $rules) (hasKey $rules "Error") }}
{{- fail "files/rbac-rules.yaml is missing or not valid YAML" }}
{{- end }}
{{- toYaml $rules }}
{{- end }}
