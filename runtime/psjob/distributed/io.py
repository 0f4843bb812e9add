"""paddle.distributed.io: Fluid's distributed-inference loader under Paddle 2.x's name
(`load_inference_model_distributed`: a model saved from a transpiled trainer, its table looked
up on the pservers), and the persistables check."""
from psjob.fluid.io import is_persistable, load_inference_model_distributed

__all__ = ["load_inference_model_distributed", "is_persistable"]
