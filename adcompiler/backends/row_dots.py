"""A sum (or mean) over the last axis of a product of two arrays of one shape, ``np.sum(a *
b, axis=1)`` (a batch of dot products: the matrix factorization's predictions), as
``np.einsum('ij,ij->i', a, b)`` (with ``keepdims``, ``[..., None]`` of it: a softmax's adjoint
``sum(g * q, axis=2, keepdims=True)`` over (4, 128, 128), 14 us against 42 us multiplied then
summed; for a mean, a layer norm's ``np.mean(xc * xc, axis=1, keepdims=True)``, the einsum
over the axis' length): no temporary of the product's size (25.6 MB at 10^5 x 32, the forward
part's peak) and one pass (about a third of the multiply-then-sum's time there).

Invariants: NumPy code only, never plain code; the product is read by the sum alone (inlined
into it), both operands have its shape (no broadcasting), a float dtype, and it holds at least
the planner's ``MIN_BYTES`` (below, the two forms cost the same NumPy calls); the value is the
sum's (the mean's) up to the order of the terms (rounding, about 1e-16 relative).
"""

from __future__ import annotations

import ast

import numpy as np

from .planner import large

_LETTERS = "ijklmnop"


def row_dot_expr(node, args, producer, xp_name):
    """``np.einsum('ij,ij->i', a, b)`` for ``node`` (a ``sum``; over the count for a ``mean``),
    or None where it does not qualify; ``args`` its input's expression, the inlined ``a * b``."""
    if xp_name != "np" or node.prim not in ("sum", "mean") or len(node.inputs) != 1:
        return None
    product = producer.get(node.inputs[0])
    if (product is None or product.prim != "multiply" or len(product.inputs) != 2
            or not isinstance(args[0], ast.BinOp)
            or not isinstance(args[0].op, ast.Mult)):
        return None
    aval = product.outputs[0].aval
    ndim = aval.ndim or 0
    if (not 2 <= ndim <= len(_LETTERS) or np.dtype(aval.dtype).kind != "f" or not large(aval)
            or node.params.get("axis") not in (ndim - 1, -1, (ndim - 1,), (-1,))
            or any(getattr(x, "aval", None) is None or x.aval.known_shape != aval.known_shape
                   or x.aval.dtype != aval.dtype for x in product.inputs)):
        return None
    axes = _LETTERS[:ndim]
    spec = ast.Constant(f"{axes},{axes}->{axes[:-1]}")
    func = ast.Attribute(ast.Name("np", ast.Load()), "einsum", ast.Load())
    call = ast.Call(func, [spec, args[0].left, args[0].right], [])
    if node.prim == "mean":   # a layer norm's mean(xc * xc, axis=1): the sums over the count
        call = ast.BinOp(call, ast.Div(), ast.Constant(aval.known_shape[-1]))
    if not node.params.get("keepdims"):
        return call
    # keepdims (a softmax's adjoint, sum(g * q, axis=2, keepdims=True)): a view of the sums
    index = ast.Tuple([ast.Constant(Ellipsis), ast.Constant(None)], ast.Load())
    return ast.Subscript(call, index, ast.Load())
