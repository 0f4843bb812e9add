#!/usr/bin/env bash
# Builds psjob's images, named by the one scheme the chart, the examples and
# the docs use (tests/unit/test_image_references.py checks them against --dry-run):
#   <registry>/psjob:<version>              CPU: pservers, CPU trainers
#   <registry>/psjob:<version>-operator     the operator (the CPU image + kopf, kubernetes)
#   <registry>/psjob:<version>-cuda<X.Y>    CUDA: GPU trainers
# <version> is pyproject.toml's, X.Y the CUDA version of Dockerfile.worker's base.
#
#   scripts/build-images.sh [--registry R] [--push] [--cpu-only] [--dry-run]
#
# --registry R  image prefix (default ghcr.io/psjob); e.g. registry.example.com/team
# --push        push the images after building them
# --cpu-only    skip the CUDA image (a CPU job and the operator need only the other two)
# --dry-run     print the image references it would build, one per line; build nothing
#
# The engine: $CONTAINER_ENGINE (docker, podman or buildah) if set, else the first
# of docker, podman, buildah whose `info` answers (a docker CLI without a daemon is
# skipped). podman and buildah build in Docker's image format: their default, OCI,
# has no HEALTHCHECK.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

registry=ghcr.io/psjob push=0 dry_run=0 cpu_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --registry) registry=${2?--registry needs a value}; shift 2 ;;
    --registry=*) registry=${1#--registry=}; shift ;;
    --push) push=1; shift ;;
    --cpu-only) cpu_only=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build-images: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

version=$(sed -n 's/^version = "\([^"]*\)"$/\1/p' pyproject.toml | head -n 1)
cuda=$(sed -n 's|^ARG CUDA_IMAGE=nvidia/cuda:\([0-9]*\.[0-9]*\)\..*|\1|p' Dockerfile.worker)
if [ -z "$version" ] || [ -z "$cuda" ]; then
  echo "build-images: cannot read the version from pyproject.toml or CUDA_IMAGE from Dockerfile.worker" >&2
  exit 1
fi
prefix=${registry:+${registry%/}/}
cpu_image="${prefix}psjob:${version}"
operator_image="${prefix}psjob:${version}-operator"
cuda_image="${prefix}psjob:${version}-cuda${cuda}"
images=("$cpu_image" "$operator_image")
[ "$cpu_only" = 1 ] || images+=("$cuda_image")

if [ "$dry_run" = 1 ]; then
  printf '%s\n' "${images[@]}"
  exit 0
fi

find_engine() {  # prints the engine to build with, or explains why there is none
  if [ -n "${CONTAINER_ENGINE:-}" ]; then
    if ! command -v "$CONTAINER_ENGINE" >/dev/null 2>&1; then
      echo "build-images: CONTAINER_ENGINE=$CONTAINER_ENGINE is not installed" >&2
      return 1
    fi
    printf '%s\n' "$CONTAINER_ENGINE"
    return 0
  fi
  local candidate failed=""
  for candidate in docker podman buildah; do
    command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" info >/dev/null 2>&1; then
      printf '%s\n' "$candidate"
      return 0
    fi
    failed+="${failed:+, }'$candidate info'"
  done
  if [ -z "$failed" ]; then
    echo "build-images: no container engine: install docker, podman or buildah (or set CONTAINER_ENGINE)" >&2
  else
    echo "build-images: no working container engine: $failed failed (a docker CLI without" \
         "a running daemon?); start its daemon, install podman or buildah, or set CONTAINER_ENGINE" >&2
  fi
  return 1
}

engine=$(find_engine) || exit 1
format=()
case "$(basename "$engine")" in
  podman|buildah) format=(--format docker) ;;
esac
echo "build-images: building with $engine" >&2
build() {  # DOCKERFILE TARGET IMAGE
  "$engine" build ${format[@]+"${format[@]}"} -f "$1" --target "$2" -t "$3" .
}
build Dockerfile.server server "$cpu_image"
build Dockerfile.server operator "$operator_image"
[ "$cpu_only" = 1 ] || build Dockerfile.worker worker "$cuda_image"
if [ "$push" = 1 ]; then
  for image in "${images[@]}"; do "$engine" push "$image"; done
fi
printf 'built: %s\n' "${images[@]}"
