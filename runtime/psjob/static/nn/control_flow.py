"""paddle.static.nn.control_flow: Paddle's module of the static-graph control flow (cond,
while_loop, and the While class scripts import from here; fluid/layers/control_blocks.py)."""
from psjob.fluid.layers.control_blocks import While, case, cond, switch_case, while_loop

__all__ = ["cond", "case", "switch_case", "while_loop", "While"]
