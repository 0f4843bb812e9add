#!/usr/bin/env bash
# Builds psjob's two images, named by the one scheme the chart, the examples and
# the docs use (tests/unit/test_image_references.py checks them against --dry-run):
#   <registry>/psjob:<version>              CPU: pservers, CPU trainers, the operator
#   <registry>/psjob:<version>-cuda<X.Y>    CUDA: GPU trainers
# <version> is pyproject.toml's, X.Y the CUDA version of Dockerfile.worker's base.
#
#   scripts/build-images.sh [--registry R] [--push] [--cpu-only] [--dry-run]
#
# --registry R  image prefix (default ghcr.io/psjob); e.g. registry.example.com/team
# --push        push both images after building them
# --cpu-only    skip the CUDA image (a CPU job and the operator need only the CPU image)
# --dry-run     print the image references it would build, one per line; build nothing
# Uses docker, else podman ($CONTAINER_ENGINE chooses).
set -euo pipefail
cd "$(dirname "$0")/.."

registry=ghcr.io/psjob push=0 dry_run=0 cpu_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --registry) registry=${2?--registry needs a value}; shift 2 ;;
    --registry=*) registry=${1#--registry=}; shift ;;
    --push) push=1; shift ;;
    --cpu-only) cpu_only=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) sed -n '2,14s/^# \{0,1\}//p' "$0"; exit 0 ;;
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
cuda_image="${prefix}psjob:${version}-cuda${cuda}"
images=("$cpu_image")
[ "$cpu_only" = 1 ] || images+=("$cuda_image")

if [ "$dry_run" = 1 ]; then
  printf '%s\n' "${images[@]}"
  exit 0
fi

engine=${CONTAINER_ENGINE:-$(command -v docker || command -v podman || true)}
if [ -z "$engine" ]; then
  echo "build-images: neither docker nor podman is installed (or set CONTAINER_ENGINE)" >&2
  exit 1
fi
"$engine" build -f Dockerfile.server -t "$cpu_image" .
[ "$cpu_only" = 1 ] || "$engine" build -f Dockerfile.worker -t "$cuda_image" .
if [ "$push" = 1 ]; then
  for image in "${images[@]}"; do "$engine" push "$image"; done
fi
printf 'built: %s\n' "${images[@]}"
