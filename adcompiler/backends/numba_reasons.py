"""Why a gradient is not numba loops: the sentence the NumPy code's docstring then carries.

:mod:`adcompiler.backends.loop_plan` plans a gradient as one scalar expression per output
element; these sentences name the construct that has no such form, quote the user's line where
the IR knows it, and say what kind of thing it is (docs/reference/backends.md has the table, and
benchmarks/NUMBA.md what numba loops written by hand for such code measured).
"""

from __future__ import annotations

from ..ir.primitives import PRIMS

_FAMILY = {
    "linalg": "a matrix product or factorization, which stays with NumPy's BLAS and LAPACK",
    "reduction": "a reduction inside an expression, along an axis or in a loop step: only a "
                 "whole array's sum or mean that is itself a scalar output has a loop form",
    "index": "an index computation (sort, argmax...), which has no elementwise loop form",
    "shape": "a change of layout (transpose, concatenate, roll...), which the loops do not "
             "follow",
    "creation": "an array built from its shape (arange, eye...)",
    "custom": "a call of a user function the loops cannot inline",
}
_NAMED = {
    "sum_to": "sum_to (the adjoint of a broadcast: a reduction over the broadcast axes)",
    "index_add": "index_add (the adjoint of an index: a scatter-add)",
    "scatter_add": "scatter_add (the adjoint of an index: a scatter-add)",
}
_LOOPS = {"loop": "a Python `for` loop", "while": "a Python `while` loop",
          "cond": "an `if` on array values"}


def control_flow(node, nested=False, exit=False) -> str:
    """A loop or branch that step loops (:mod:`adcompiler.backends.numba_steps`) do not take:
    only counted ``for`` loops of known trip count, without ``break``, none inside another."""
    what = _LOOPS.get(node.prim, f"control flow ({node.prim})")
    quoted = _quoted(node)
    why = ("it sits inside another loop, and step loops do not nest" if nested else
           "it has a `break` or a trip count known only at run time" if exit else
           "only counted `for` loops become step loops")
    return f"it has {what}{f' ({quoted})' if quoted else ''}; {why}"


def no_loop_form(node, fused=False) -> str:
    """A primitive with no elementwise loop form: its name, its kind, the user's line."""
    row = PRIMS.get(node.prim)
    kind = None if node.prim in _NAMED or row is None else _FAMILY.get(row.family)
    text = (f"{'a fused chain computes' if fused else 'it computes'} "
            f"{_NAMED.get(node.prim, node.prim)}, which has no loop form")
    quoted = _quoted(node)
    return text + (f" ({kind})" if kind else "") + (f"; from {quoted}" if quoted else "")


def parameter(p) -> str:
    """A parameter that is neither a float64 array nor a Python number."""
    a = p.aval
    if a.kind == "array" and a.dtype and (a.dtype.startswith("int") or a.dtype.startswith("uint")
                                          or a.dtype == "bool"):
        return (f"parameter {p.name} is {a}, an index or mask array: gathers and np.add.at "
                "scatter-adds are loop nests only outside `for` loops (numba_nests)")
    return f"parameter {p.name} is {a}, not a float64 array or a Python number"


def _quoted(node) -> str:
    """The user's line the node came from, in backticks ("" where the IR does not know it)."""
    text = " ".join((node.source or "").split())
    if not text:
        return ""
    return f"`{text[:60]}{'...' if len(text) > 60 else ''}`"
