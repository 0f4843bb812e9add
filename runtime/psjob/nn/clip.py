"""Gradient clipping for the `grad_clip` argument of paddle.optimizer.* (Paddle 2.x names
over Fluid's clip attributes, so they also work with fluid.clip.set_gradient_clip)."""
from __future__ import annotations

from psjob.fluid import clip as _fc

__all__ = ["ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue"]


class ClipGradByGlobalNorm(_fc.GradientClipByGlobalNorm):
    """Scale every gradient by clip_norm / max(global_norm, clip_norm)."""

    def __init__(self, clip_norm, group_name="default_group", auto_skip_clip=False):
        super().__init__(clip_norm, group_name)


class ClipGradByNorm(_fc.GradientClipByNorm):
    def __init__(self, clip_norm):
        super().__init__(clip_norm)


class ClipGradByValue(_fc.GradientClipByValue):
    def __init__(self, max, min=None):  # noqa: A002 (Paddle's names)
        super().__init__(max, min)
