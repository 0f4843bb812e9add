"""paddle.incubate: the part recommendation code reaches, `paddle.incubate.layers.shuffle_batch`
(PaddleRec's graph models draw negatives with it). The rest of Paddle's incubate package
(fused ops, its optimizers, autograd, ...) is not in psjob."""
from psjob.incubate import layers

__all__ = ["layers"]
