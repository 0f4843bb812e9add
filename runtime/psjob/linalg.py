"""paddle.linalg: the norms (Paddle 2.x API docs, paddle.linalg.norm / vector_norm /
matrix_norm), built from ops psjob has, and inv (paddle.inverse). The decompositions (svd, qr,
eig, ...) are not in psjob: a static recommendation graph does not use them."""
from __future__ import annotations

from psjob.tensor import inverse as inv
from psjob.tensor import matrix_norm, norm, vector_norm

__all__ = ["norm", "vector_norm", "matrix_norm", "inv"]
