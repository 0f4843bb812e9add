#!/usr/bin/env bash
# End to end on a real Kubernetes: a kind cluster, the chart, examples/ctr-cpu.yaml and
# examples/byo-fleet run until Succeeded. Needs docker (or podman), kind, kubectl, helm.
# It cannot run in the test suite (no container engine there); docs/user/install.md explains
# each step. KIND_CLUSTER names the cluster (default psjob-e2e; created if missing),
# E2E_TIMEOUT bounds each job in seconds (default 900).
set -euo pipefail
cd "$(dirname "$0")/.."
cluster=${KIND_CLUSTER:-psjob-e2e}
deadline_seconds=${E2E_TIMEOUT:-900}

# The CPU image (pservers, trainers) and the operator's image.
mapfile -t images < <(scripts/build-images.sh --cpu-only --dry-run)
scripts/build-images.sh --cpu-only
kind get clusters | grep -qx "$cluster" || kind create cluster --name "$cluster"
kubectl config use-context "kind-$cluster"
if [ "${CONTAINER_ENGINE:-docker}" = docker ] && docker info >/dev/null 2>&1; then
  kind load docker-image --name "$cluster" "${images[@]}"
else  # podman (build-images.sh's choice when no docker daemon answers): an image archive
  archive=$(mktemp --suffix=.tar)
  trap 'rm -f "$archive"' EXIT
  podman save --multi-image-archive -o "$archive" "${images[@]}"
  kind load image-archive --name "$cluster" "$archive"
fi

helm upgrade --install psjob charts/psjob-operator --namespace psjob-system \
  --create-namespace --wait
kubectl apply -f examples/ctr-cpu.yaml
kubectl apply -k examples/byo-fleet/

wait_for_success() {  # JOB: poll the phase; stop at Succeeded, Failed or the deadline
  local job=$1 phase="" waited=0
  while [ "$waited" -lt "$deadline_seconds" ]; do
    phase=$(kubectl get psjob "$job" -o jsonpath='{.status.phase}')
    case "$phase" in
      Succeeded) echo "e2e-kind: $job Succeeded after ${waited}s"; return 0 ;;
      Failed) break ;;
    esac
    sleep 5; waited=$((waited + 5))
  done
  echo "e2e-kind: $job is ${phase:-without a phase} after ${waited}s" >&2
  kubectl describe psjob "$job" >&2
  kubectl get pods -l "psjob.dev/job-name=$job" -o wide >&2
  return 1
}
wait_for_success ctr-cpu
wait_for_success byo-fleet
