"""paddle.static.nn.control_flow: Paddle's module of the static-graph control flow (cond,
while_loop, and the While class scripts import from here; fluid/layers/control_blocks.py)."""
from psjob.fluid.layers.control_blocks import While, cond, while_loop

__all__ = ["cond", "while_loop", "While"]
