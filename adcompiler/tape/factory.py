"""Tensor constructors (``tensor ones zeros full randn``) and PyTorch-style functions on
tensors (``tape.exp(x)``, ``tape.log(x)``, ``tape.sum(x, dim=0)``), as in the seeds' ``torch.*``.

Invariant: every function here is a constructor or one primitive, exactly as the methods.
"""

from __future__ import annotations

import numpy as np

from .methods import _UNARY, Methods
from .record import apply
from .tensor import Tensor, tensor
from .xp import on_device


def _shape(size):
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size


def _leaf(array, requires_grad, device):
    return Tensor._make(on_device(array, device)).requires_grad_(requires_grad)


def ones(*size, requires_grad=False, dtype=np.float64, device=None) -> Tensor:
    return _leaf(np.ones(_shape(size), dtype=dtype), requires_grad, device)


def zeros(*size, requires_grad=False, dtype=np.float64, device=None) -> Tensor:
    return _leaf(np.zeros(_shape(size), dtype=dtype), requires_grad, device)


def full(size, fill_value, requires_grad=False, dtype=np.float64, device=None) -> Tensor:
    return _leaf(np.full(size, fill_value, dtype=dtype), requires_grad, device)


def randn(*size, requires_grad=False, dtype=np.float64, device=None, generator=None) -> Tensor:
    """Standard normal samples (from ``generator``, a ``np.random.Generator``, if given)."""
    rng = generator if generator is not None else np.random.default_rng()
    return _leaf(rng.standard_normal(_shape(size)).astype(dtype), requires_grad, device)


def ones_like(t, requires_grad=False) -> Tensor:
    return Tensor._make(np.ones_like(t._data)).requires_grad_(requires_grad)


def zeros_like(t, requires_grad=False) -> Tensor:
    return Tensor._make(np.zeros_like(t._data)).requires_grad_(requires_grad)


def _function(name):
    method = getattr(Methods, name)

    def function(x, *args, **kwargs):
        x = x if isinstance(x, Tensor) else tensor(x)
        return method(x, *args, **kwargs)
    function.__name__ = name
    function.__doc__ = method.__doc__
    return function


def _binary(prim):
    def function(x, y):
        return apply(prim, (x, y))
    function.__name__ = prim
    return function


FUNCTIONS = {name: _function(name) for name in
             _UNARY + ["atan", "asin", "acos", "neg", "sum", "mean", "prod", "amax", "amin",
                       "clamp", "clip", "reshape", "transpose", "squeeze", "unsqueeze", "clone",
                       "permute"]}
FUNCTIONS.update({p: _binary(p) for p in ["add", "subtract", "multiply", "divide", "matmul",
                                          "maximum", "minimum", "dot", "outer", "remainder",
                                          "floor_divide"]})
FUNCTIONS.update(sub=FUNCTIONS["subtract"], mul=FUNCTIONS["multiply"], div=FUNCTIONS["divide"],
                 pow=_binary("power"), mm=FUNCTIONS["matmul"],
                 where=lambda condition, x, y: apply("where", (condition, x, y)),
                 cat=lambda tensors, dim=0: apply("concatenate", tuple(tensors), {"axis": dim}),
                 stack=lambda tensors, dim=0: apply("stack", tuple(tensors), {"axis": dim}))
