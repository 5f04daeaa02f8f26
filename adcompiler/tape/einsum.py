"""``np.einsum`` on tensors, as the compiler records it (``adcompiler/frontend/library/einsum.py``).

Invariants: the subscripts are brought to the primitive's normal form by the compiler's own plan
(:func:`~adcompiler.compositions.einsum_plan.plan`, one source of truth): each operand's broadcast
axes of length 1 squeezed out (views), a letter repeated within one operand taken as a diagonal (a
writable view, ``DiagonalBackward0``, as NumPy's and PyTorch's: ``y = np.einsum("ii->i", b); y[0]
*= 3`` writes ``b``; the view's step is the primitive ``einsum`` with the repeated letters, whose
adjoint puts the cotangent on the diagonal), then one ``einsum`` node (``EinsumBackward0``: one
primitive, one node, where PyTorch names the last step of its decomposition, ``ViewBackward0`` or
``SumBackward1``), or a transpose view where a lone operand keeps all its letters, as NumPy's
einsum returns a view there (a new one, never the operand itself, ``"i->i"`` too). A list holding
tensors is their stack, as the compiler's. Subscripts that are not a string (the operand-list form)
run on the values, refused where a gradient would be lost; ``dtype=`` is refused, ``out=`` stores
as a ufunc's does, and ``optimize=`` is passed on (an explicit contraction path is refused: it fits
the forward contraction only, not the adjoints). A Python number operand is a 0-d float64 array, as
NumPy's einsum takes it.

Layering: above :mod:`.numpy_api`, into whose ``FUNCTIONS`` it registers ``np.einsum`` (it is
loaded by :mod:`.assembly`); :mod:`.products` builds on it.
"""

from __future__ import annotations

import numpy as np

from adcompiler.compositions.einsum_plan import EinsumError, from_sublists, optimize_arg, plan
from adcompiler.templates.einsum import contract

from . import numpy_api, views
from .numpy_api import _extras, _into, _shape_of, run_plain
from .record import apply
from .tensor import Tensor


class _Forward:
    """:func:`contract`'s ops on tensors: a lone operand's permutation is a view."""

    @staticmethod
    def transpose(x, axes):
        return views.make("transpose", x, {"axes": axes})

    @staticmethod
    def einsum(*xs, **params):
        return apply("einsum", xs, params)

    @staticmethod
    def multiply(x, y):
        return apply("multiply", (x, y))


def _prepared(x, operand):
    """The operand with its broadcast axes squeezed out and its diagonal taken (a view, as
    NumPy's and PyTorch's: ``np.einsum("ii->i", a)`` writes into ``a`` when written)."""
    if operand.squeeze:
        x = views.make("squeeze", x, {"axis": operand.squeeze})
    if operand.positions is None:
        return x
    return views.make("einsum", x, {"subscripts": f"{operand.term}->{operand.letters}"},
                      name="DiagonalBackward0")


def _operand(x):
    """An operand as NumPy's einsum takes it: a tensor or an array as it is, a list holding
    tensors their stack (as the compiler's ``np.array`` of traced values), anything else an
    array (a Python number a 0-d float64 one)."""
    if isinstance(x, Tensor) or hasattr(x, "shape"):
        return x
    if isinstance(x, (list, tuple)) and _holds_tensor(x):
        return _stacked(x)
    return np.asarray(x)


def _holds_tensor(x):
    if isinstance(x, (list, tuple)):
        return any(_holds_tensor(v) for v in x)
    return isinstance(x, Tensor)


def _stacked(items):
    if not isinstance(items, (list, tuple)):
        return items
    if not items:
        raise ValueError("np.einsum: an empty list mixed with tensors is not supported")
    return apply("stack", tuple(_stacked(v) for v in items), {"axis": 0})


def einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    """``np.einsum(subscripts, *operands)`` on tensors (see the module docstring)."""
    if operands and not isinstance(operands[0], str):   # the sublist form: as its subscripts
        subscripts, xs = from_sublists(operands)
        operands = (subscripts, *xs)
    if not operands:
        kwargs = {"out": out, "dtype": dtype, "order": order, "casting": casting,
                  "optimize": optimize}
        return run_plain("np.einsum", np.einsum, operands, kwargs)
    _extras("einsum", dtype=dtype)
    if order != "K" or casting != "safe":
        raise TypeError("np.einsum: order= and casting= are not supported on tensors")
    optimize = optimize_arg(optimize)
    subscripts = operands[0]
    xs = [_operand(x) for x in operands[1:]]
    try:
        p = plan(subscripts, tuple(tuple(_shape_of(x)) for x in xs))
    except EinsumError as exc:
        raise ValueError(f"np.einsum {exc}") from None
    xs = [_prepared(x, op) for x, op in zip(xs, p.operands)]
    result = contract(_Forward, [op.letters for op in p.operands], p.out, xs, optimize)
    if isinstance(result, Tensor) and any(result is x for x in operands[1:]):
        # the subscripts leave the lone operand as it is ("i->i"): a new view of it, as
        # NumPy's and PyTorch's einsum return (never the operand itself)
        result = views.make("transpose", result, {"axes": tuple(range(result.ndim))})
    return _into(result, out)


numpy_api.FUNCTIONS[np.einsum] = einsum
