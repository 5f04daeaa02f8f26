"""``np.einsum`` of traced arrays: the subscripts (a string known while compiling) brought to the
normal form of the primitive ``einsum``, which its rules (``templates/einsum.py``) assume.

Normal form: an explicit output (``"ij,jk"`` becomes ``"ij,jk->ik"``, NumPy's implicit rule:
the ellipsis's axes, then the letters that appear once, sorted); letters only (an ellipsis is
spelled in letters the subscripts do not use, its axes broadcast from the right as NumPy's);
no letter twice in one operand; each letter one size wherever it appears. To get there, each
operand is prepared by views and gathers whose rules exist: an axis of length 1 whose letter is
longer elsewhere (NumPy broadcasts it) is squeezed out; a letter repeated within an operand
(``"ii->i"``, ``"ii"``) takes its diagonal, a gather from the flattened operand at distinct flat
positions made while compiling (as ``np.diagonal``'s: the adjoint writes into those positions).
A lone operand keeping all its letters is a transpose (:func:`templates.einsum.contract`).

Choices: ``optimize=`` (False, True, ``'greedy'``, ``'optimal'``) is passed on to NumPy, in the
forward and the adjoint einsums; an explicit contraction path is refused (it fits the forward
contraction only). ``out=`` and ``dtype=`` are refused; NumPy's sublist form
(``np.einsum(a, [0, 1], b, [1, 2], [0, 2])``) is spelled as the subscripts it stands for. The
result is a new array where NumPy returns a writable view of a diagonal (``"ii->i"``): reading the operand
after writing into that result is refused, located, by the check of shared memory (``"i->i"``
is the operand itself, which the compiler's aliasing follows). The plan is written once
(:mod:`adcompiler.compositions.einsum_plan`); the tape (``adcompiler/tape/einsum.py``) uses it
too, and there a diagonal is a writable view.
"""

from __future__ import annotations

import numpy as np

from ...compositions.einsum_plan import HINT, EinsumError, from_sublists, optimize_arg, plan
from ...ir import Value
from ...templates.einsum import contract
from .binding import CallError, static
from .creation import _stacked, contains_value

_REFUSED_KEYWORDS = (("out", None, "use the returned value"),
                     ("dtype", None, "cast the operands first with .astype(...)"),
                     ("order", "K", "NumPy's default order='K' is the one taken"),
                     ("casting", "safe", "cast the operands first with .astype(...)"))


def _einsum(b, args, kwargs):
    try:
        optimize = optimize_arg(static(kwargs.pop("optimize", False), "`optimize=`"))
    except EinsumError as exc:
        raise CallError(str(exc), exc.hint) from None
    for name, default, hint in _REFUSED_KEYWORDS:
        value = kwargs.pop(name, default)
        if value is not default and not (isinstance(value, str) and value == default):
            raise CallError(f"does not support `{name}=` here", hint)
    if not args:
        raise CallError("takes the subscripts and the operands", HINT)
    try:
        subscripts, operands = (args[0], args[1:]) if isinstance(args[0], str) else \
            from_sublists([static(a, "the sublists") if k % 2 else a
                           for k, a in enumerate(args)])
        xs = [_as_array(b, x) for x in operands]
        p = plan(subscripts, tuple(tuple(b.shape(x)) for x in xs))
    except EinsumError as exc:
        raise CallError(str(exc), exc.hint) from None
    xs = [_prepared(b, x, op) for x, op in zip(xs, p.operands)]
    return contract(b, [op.letters for op in p.operands], p.out, xs, optimize)


def _as_array(b, x):
    """An operand as NumPy's einsum takes it: an array (a Python number is a 0-d float64
    array, which promotes float32 operands as NumPy's einsum does; a list holding traced
    values is their stack, as ``np.array`` of them)."""
    if contains_value(x):
        x = _stacked(b, x)
    if isinstance(x, Value):
        return x if x.aval.kind == "array" else b.emit("asarray", (x,))
    return b.constant(np.asarray(x))


def _prepared(b, x, op):
    """The operand with its broadcast axes squeezed out and its diagonal taken."""
    if op.squeeze:
        x = b.emit("squeeze", (x,), {"axis": op.squeeze})
    if op.positions is None:
        return x
    flat = b.emit("reshape", (x,), {"shape": (int(np.prod(b.shape(x))),)})
    positions = next((v for v, data in b.graph.consts.items() if data is op.positions), None)
    if positions is None:
        positions = b.constant(op.positions, "diagonal")
    return b.getitem(flat, [positions], (("u", 0),))


FUNCTIONS = {np.einsum: _einsum}
