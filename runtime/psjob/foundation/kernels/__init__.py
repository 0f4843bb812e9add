"""Kernels: array math written once against an array module.

Every function here takes the array module (`numpy` on CPUPlace, `cupy` on
CUDAPlace) as its first argument `xp`; nothing in this package imports cupy,
grpc or kopf, so `import psjob.foundation.kernels...` works on any machine. The place
(and therefore `xp`) is chosen by the executor or the pserver at run time.

`psjob.foundation.kernels.optimizers` is the reference math of the nine Fluid
optimizers; `psjob.foundation.cuda` holds fused CUDA versions of some of them that are
checked against it.
"""
