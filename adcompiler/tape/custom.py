"""``custom_vjp`` functions on the tape: a call records one node whose backward is the user's.

Invariants: the forward runs the user's ``fwd`` on the arrays and keeps its residuals in the
node (as ``torch.autograd.Function``'s ``ctx``); the backward calls ``bwd(residuals, g)`` and
hands each input the cotangent at its position, which must have that input's shape and dtype
(as in the compiled gradient; anything else raises, naming the function); forward mode through
such a call raises, as in JAX (there is only a reverse rule).
"""

from __future__ import annotations

import numpy as np

from . import checks, mode
from .node import Node, node_class
from .tensor import Tensor
from .xp import array_module


class CustomBackward(Node):
    """The node of one custom_vjp call; named ``<function>Backward`` (``LogsumexpBackward``)."""

    def __init__(self, fn, residuals, edges, input_meta):
        super().__init__(edges, input_meta)
        self.fn, self.residuals = fn, residuals

    def apply(self, g, ops, as_tensor, wanted):
        if self.released:
            raise RuntimeError("Trying to backward through the graph a second time (custom_vjp "
                               f"{self.fn.__name__}): its residuals have been freed")
        cts = _cotangents(self.fn, self.fn.bwd(self.residuals, g), len(wanted))
        return [None if ct is None or not want else
                checks.cotangent(self.fn, self.name(), i, ct, self.input_meta[i])
                for i, (ct, want) in enumerate(zip(cts, wanted))]

    def release(self):
        super().release()
        self.residuals = None


def _cotangents(fn, cts, n):
    if not isinstance(cts, (tuple, list)) or len(cts) != n:
        raise TypeError(f"{fn.bwd.__name__} must return a tuple of {n} cotangents (one per "
                        f"argument of {fn.__name__}), got {type(cts).__name__}")
    return list(cts)


def call_on_tape(fn, args):
    """``fn(*args)`` where some arguments are tensors: ``fn.fwd`` on the arrays, recorded."""
    if mode.dual_level_token() is not None and any(
            isinstance(a, Tensor) and a._tangents for a in args):
        raise RuntimeError(f"forward-mode AD through the custom_vjp function {fn.__name__} is "
                           "not supported: it has a reverse-mode rule only")
    data = [a._data if isinstance(a, Tensor) else a for a in args]
    value, residuals = fn.run_fwd(data)
    out = Tensor._make(array_module(value).asarray(value))
    needs = [isinstance(a, Tensor) and a._requires_grad for a in args]
    if mode.is_grad_enabled() and any(needs) and out._data.dtype.kind in "fc":
        edges = [a._edge() if need else None for a, need in zip(args, needs)]
        meta = [(tuple(getattr(d, "shape", ())), _dtype(d)) for d in data]
        name = fn.__name__[:1].upper() + fn.__name__[1:] + "Backward"
        out._grad_fn = node_class(CustomBackward, name)(fn, residuals, edges, meta)
        out._requires_grad = True
    return out


def _dtype(x):
    return np.dtype(getattr(x, "dtype", None) or np.result_type(x))


def stop_gradient(t):
    """The tensor's value, outside the graph (``detach``)."""
    return t.detach()
