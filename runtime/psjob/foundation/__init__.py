"""Foundations: what every other layer stands on, and what the operator shares.

Bottom to top (docs/dev/layers.md): hooks, progress, metrics, roles and role_env (the
process environment contract) → jobspec (the ParameterServerJob) → kernels and cuda
(optimizer math) → tables (sparse tables keyed by id) → checkpoint (the on-disk format).
Nothing here imports gRPC, the Fluid IR or anything above it.
"""
