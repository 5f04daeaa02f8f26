"""Returned products written into the arrays the function returned last time, where nothing
holds those any more: a weight gradient ``dW1 = a2.T @ dt4`` as ``np.matmul(a2.T, dt4,
out=_recycled(_kept, 0, (128, 512), np.float64))``.

A fresh result array is page-faulted in on every call: glibc gives the heap's top back once the
caller drops the previous results, and the next call's arrays fault back in (a transformer
block's eight weight gradients, 1.5 MB: about 400 faults, a tenth of its gradient's time on one
thread; the products computing them took 1.5x the same products into a reused array). The
arrays a call returns are kept (``_<fname>_returned``, one tuple per concurrent call, like the
planner's buffers); the next call takes a tuple and writes a product into its array only if
that array's reference count says nothing but the tuple holds it: no name, no view (a view
holds its base), no buffer export (a memoryview holds its object), no result tuple. Else, and
on the first call, a new array. The count's baseline is measured once, by the same helper on a
probe held the same way, so it holds for any CPython's counting.

Invariants: NumPy code only, never plain or poisoned code, never sizes that vary (a body
serving every size: ``adcompiler compile``); only a top-level 2-D or batched ``matmul`` whose
Value is returned as it is (no copy, once among the outputs), large (the planner's
``MIN_BYTES``) and of a float dtype; a kept array is reused only with the shape and dtype
asked for. So a caller never sees an array it holds change, and every result is an array of
the caller's own, as before.
"""

from __future__ import annotations

import ast

import numpy as np

from ..ir import sizing
from .planner import large

HELPER = '''
def _refs(kept, k):
    a = kept[k]
    return _sys.getrefcount(a)


# what _refs counts where only its tuple holds the array; None (never reused) without counts
_FREE = _refs((np.empty(0),), 0) if hasattr(_sys, "getrefcount") else None


def _recycled(kept, k, shape, dtype):
    """kept[k], an array returned by an earlier call, where nothing but kept holds it (no one
    can see it overwritten), if it has this shape and dtype; else a new array."""
    if kept is not None and _FREE is not None and _refs(kept, k) == _FREE \\
            and kept[k].shape == shape and kept[k].dtype == dtype:
        return kept[k]
    return np.empty(shape, dtype=dtype)
'''
NAMES = ("_refs", "_FREE", "_recycled", "_sys", "_kept")


def recycled_outputs(graph, copies, xp_name, plain, poison) -> dict:
    """``{Value: slot}`` for the returned products written into kept arrays."""
    if xp_name != "np" or plain or poison or sizing.is_symbolic():
        return {}
    outputs = list(graph.outputs)
    found = {}
    for node in graph.nodes:
        v = node.outputs[0] if len(node.outputs) == 1 else None
        if (node.prim == "matmul" and v is not None and outputs.count(v) == 1
                and outputs.index(v) not in copies and _eligible(node, v)):
            found[v] = len(found)
    return found


def _eligible(node, v) -> bool:
    operands = [getattr(x, "aval", None) for x in node.inputs]
    return (v.aval.kind == "array" and v.aval.known_shape is not None and v.aval.is_float
            and len(v.aval.known_shape) >= 2 and large(v.aval)
            and all(a is not None and a.ndim is not None and a.ndim >= 2 for a in operands))


def product_into_kept(node, args, slot, xp_name):
    """The call ``np.matmul(a, b, out=_recycled(_kept, slot, shape, dtype))``."""
    v = node.outputs[0]
    np_name = ast.Name(xp_name, ast.Load())
    target = ast.Call(ast.Name("_recycled", ast.Load()),
                      [ast.Name("_kept", ast.Load()), ast.Constant(slot),
                       ast.Constant(tuple(v.aval.known_shape)),
                       ast.Attribute(np_name, str(np.dtype(v.aval.dtype)), ast.Load())], [])
    return ast.Call(ast.Attribute(np_name, "matmul", ast.Load()), list(args),
                    [ast.keyword("out", target)])


def kept_lines(fname, names) -> tuple:
    """The module's pool, the line taking a kept tuple and the line keeping this call's."""
    pool = f"_{fname}_returned"
    kept = ", ".join(names) + ("," if len(names) == 1 else "")
    module = [f"{pool} = []  # arrays {fname} returned: one tuple per concurrent call"]
    return module, [f"_kept = {pool}.pop() if {pool} else None"], [f"{pool}.append(({kept}))"]
