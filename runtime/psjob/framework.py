"""paddle.framework: the framework-level names Paddle 2.x also exports there
(paddle.framework.ParamAttr, get_default_dtype, seed, in_dynamic_mode, CPUPlace, ...),
the same objects as the top-level paddle.* ones."""
from psjob._paddle2 import ParamAttr, get_default_dtype, no_grad
from psjob.device import CPUPlace, CUDAPinnedPlace, CUDAPlace, in_dynamic_mode, seed

__all__ = ["ParamAttr", "get_default_dtype", "no_grad", "seed", "in_dynamic_mode", "CPUPlace", "CUDAPlace",
           "CUDAPinnedPlace"]
