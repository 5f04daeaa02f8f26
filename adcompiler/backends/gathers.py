"""Gathers of rows whose array the code overwrites later, written ``np.take(x, idx, axis=0)``.

A gather ``x[idx]`` (``idx`` an integer array of 1-D or more, on the leading axis) copies; a
planned elementwise result may then be written into the gathered array where it dies there
(``dt5 = np.multiply(t3, t2, out=t2)``: no pool buffer of the gather's size, the matrix
factorization's two ``(pairs, rank)`` buffers). The plan checker reads ``x[idx]`` as a view
(``idx`` might be an int), so the gathers that are overwritten are spelled ``np.take``, which
it knows makes a new array. Invariant: ``np.take(x, idx, axis=0)`` equals ``x[idx]``, negative
indices and NumPy's IndexError for an index out of bounds included.
"""

from __future__ import annotations

import ast

import numpy as np

from ..ir import Value


def gathers_rows(node) -> bool:
    """Whether ``node`` is ``x[idx]`` or ``x[idx, :, ...]`` with one integer index array."""
    if node.prim != "getitem" or len(node.inputs) != 2:
        return False
    spec, idx = node.params["index"], node.inputs[1].aval
    return (spec[0] == ("a", 0) and all(i == ("s", None, None, None) for i in spec[1:])
            and idx.kind == "array" and bool(idx.ndim) and np.dtype(idx.dtype).kind in "iu"
            and bool(node.inputs[0].aval.ndim))


def overwritten_gathers(planned, producer, live, sharing) -> set:
    """The gathers of rows (their nodes) that a planned single elementwise node of the same
    shape and dtype reads last, so it may write its result into the gathered array."""
    out = set()
    for node in planned:
        if node.prim == "fused" or len(node.outputs) != 1:
            continue
        at, path = live.pos[node], live.path[node]
        for x in node.inputs:
            gather = producer.get(x) if isinstance(x, Value) else None
            if (gather is not None and gathers_rows(gather) and x.aval == node.outputs[0].aval
                    and not any(live.read_after(v, at, path)
                                for v in sharing.aliases(x, frozenset(), path))):
                out.add(gather)
    return out


def take_expr(args, xp_name):
    """``np.take(x, idx, axis=0)``."""
    func = ast.Attribute(ast.Name(xp_name, ast.Load()), "take", ast.Load())
    return ast.Call(func, list(args[:2]), [ast.keyword("axis", ast.Constant(0))])
