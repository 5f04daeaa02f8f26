"""``np.linalg.solve``, ``inv``, ``det`` and ``slogdet`` on tensors: the primitives the compiler
records for them (``adcompiler/frontend/library/solvers.py``), with the rules of
``templates/linalg.py``.

Invariants: values are NumPy's (CuPy's on the device), and so are its errors (a singular matrix
raises LinAlgError, a non-square one too); ``slogdet`` returns NumPy's pair ``(sign,
logabsdet)``, of which only ``logabsdet`` records a node (the sign carries no gradient, as in
PyTorch), each computed by its own call. A stack of matrices with a ``b`` of one dimension fewer
than it ending in ``n``, which NumPy 1 and 2 read differently, runs on the values only.
"""

from __future__ import annotations

import numpy as np

from adcompiler.compositions.solvers import SlogdetResult, ambiguous

from . import mode, numpy_api
from .numpy_api import _any_requires, run_plain
from .record import apply

_AMBIGUOUS = ("np.linalg.solve of a stack of matrices and a `b` of one dimension fewer is not "
              "differentiable on the tape: NumPy 1 reads that `b` as vectors, NumPy 2 as one "
              "matrix; solve for columns, np.linalg.solve(a, b[..., None])[..., 0]")


def solve(a, b):
    if ambiguous(np.shape(a), np.shape(b)):
        if mode.is_grad_enabled() and _any_requires((a, b)):
            raise TypeError(_AMBIGUOUS)
        return run_plain("np.linalg.solve", np.linalg.solve, (a, b), {})
    return apply("solve", (a, b))


def slogdet(a):
    return SlogdetResult(apply("slogdet_sign", (a,)), apply("logabsdet", (a,)))


numpy_api.FUNCTIONS.update({
    np.linalg.solve: solve, np.linalg.slogdet: slogdet,
    np.linalg.inv: lambda a: apply("inv", (a,)), np.linalg.det: lambda a: apply("det", (a,)),
})
