"""The compiler's handlers of the NumPy functions that cut, pad and repeat arrays, written once
in :mod:`adcompiler.compositions.splits` and :mod:`adcompiler.compositions.stacks`:
``np.split``/``array_split``/``hsplit``/``vsplit``/``dsplit``, ``np.atleast_1d``/``2d``/``3d``,
``np.tile``, ``np.repeat``, ``np.append``, ``np.take`` and ``np.pad`` (constant mode).

Invariants: the counts, indices, repeats, pad widths, fill values and axes are known while
compiling (a traced one is a located error; the indices of ``take`` and the widths of ``pad``
may be an array the function made from literals, not one from outside it, which could change
in place after compiling); the composition is the tape's too, so both record the same
primitives.
"""

from __future__ import annotations

import numpy as np

from ...compositions.splits import PAD_HINT, pad, repeat, split, split_along, take, tile
from ...compositions.stacks import append, at_least
from ...ir import Value
from .binding import CallError, bind, static
from .compositions import _array
from .creation import made_while_compiling

def _axis_param(p):
    axis = static(p.get("axis"), "`axis=`")
    return tuple(axis) if isinstance(axis, list) else axis


def _known(b, x, what):
    """``x`` known while compiling: Python values, or an array the function made from literals
    (``np.array([0, 2])``); a module-level array could change in place after compiling."""
    if isinstance(x, Value) and x in b.graph.consts:
        if made_while_compiling(b.graph.consts[x]):
            return b.graph.consts[x]
        raise CallError(f"needs {what} made in the function while compiling, not an array "
                        "from outside it, which could change in place after compiling",
                        "write the indices as a list or np.array([...]) in the function")
    return static(x, what)


# ---- the calls ------------------------------------------------------------------------------
def _split_call(equal):
    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("ary", "indices_or_sections", "axis"), required=2)
        sections = static(p["indices_or_sections"], "the sections (a count or indices)")
        axis = static(p.get("axis", 0), "`axis=`")
        return split(b, _array(b, p["ary"]), sections, axis, equal)
    return handler


def _fixed_split_call(name, least, axis):
    fixed = split_along(name, least, axis)

    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("ary", "indices_or_sections"), required=2)
        sections = static(p["indices_or_sections"], "the sections (a count or indices)")
        return fixed(b, _array(b, p["ary"]), sections)
    return handler


def _at_least_call(ndim):
    def handler(b, args, kwargs):
        if not args:
            raise CallError("needs at least one array", f"np.atleast_{ndim}d(x)")
        out = tuple(at_least(b, _array(b, x), ndim) for x in args)
        return out[0] if len(out) == 1 else out
    return handler


def _tile_call(b, args, kwargs):
    p = bind(args, kwargs, ("A", "reps"), required=2)
    return tile(b, _array(b, p["A"]), static(p["reps"], "`reps`"))


def _repeat_call(b, args, kwargs):
    p = bind(args, kwargs, ("a", "repeats", "axis"), required=2)
    axis = static(p.get("axis"), "`axis=`")
    return repeat(b, _array(b, p["a"]), static(p["repeats"], "`repeats`"), axis)


def _append_call(b, args, kwargs):
    p = bind(args, kwargs, ("arr", "values", "axis"), required=2)
    axis = static(p.get("axis"), "`axis=`")
    return append(b, _array(b, p["arr"]), _array(b, p["values"]), axis)


def _take(b, args, kwargs):
    p = bind(args, kwargs, ("a", "indices", "axis", "out", "mode"), required=2)
    if p.get("out") is not None or p.get("mode", "raise") != "raise":
        raise CallError("takes only `a`, `indices` and `axis` here (mode='raise')",
                        "np.take(a, indices, axis)")
    indices = _known(b, p["indices"], "the indices (a list or an array made while compiling)")
    return take(b, _array(b, p["a"]), indices, _axis_param(p))


def _pad(b, args, kwargs):
    p = bind(args, kwargs, ("array", "pad_width", "mode"), required=2)
    mode = static(p.get("mode", "constant"), "`mode=`")
    if mode != "constant":
        raise CallError(f"supports mode='constant' only, not mode={mode!r}", PAD_HINT)
    values = static(kwargs.pop("constant_values", 0), "`constant_values=`")
    return pad(b, _array(b, p["array"]), _known(b, p["pad_width"], "`pad_width`"), values)


FUNCTIONS = {
    np.split: _split_call(True), np.array_split: _split_call(False),
    np.hsplit: _fixed_split_call("hsplit", 1, 1), np.vsplit: _fixed_split_call("vsplit", 2, 0),
    np.dsplit: _fixed_split_call("dsplit", 3, 2),
    np.atleast_1d: _at_least_call(1), np.atleast_2d: _at_least_call(2),
    np.atleast_3d: _at_least_call(3),
    np.tile: _tile_call, np.repeat: _repeat_call, np.append: _append_call,
    np.take: _take, np.pad: _pad,
}
