"""Reductions and reshapes spelled as array methods where the value is surely an ndarray:
``dt.sum(axis=0)``, ``dt.reshape((32,))``, ``dt[:, None]``, ``p.transpose((0, 2, 1, 3))``.

``np.sum(a, axis=0)`` goes through NumPy's Python-level dispatch (``_wrapreduction``) before it
reaches the ufunc's reduce; ``a.sum(axis=0)`` skips it and computes the same values. Measured
(Python 3.11, NumPy 2.4, a float64 array of 8 x 32, timeit): ``np.sum(a, axis=0)`` 1.77 µs,
``a.sum(axis=0)`` 0.81 µs, ``np.add.reduce(a, 0)`` 0.70 µs. On the small MLP workload
(two bias gradients) that is 2 µs of a 13 µs gradient; on large arrays it is noise.

The method exists only on arrays, so it is written only where the value is known to be a
NumPy array when the code runs: an array of at least one axis computed by a NumPy operation
(an elementwise ufunc, a matmul, a reduction...), or taken from such an array by indexing or
reshaping. Parameters keep the function form (a list passed for an argument that is not
differentiated reaches the generated code as the list), and so do 0-d values (which may be
Python numbers or NumPy scalars), the results of ``if``/loops (which may be a parameter), and
custom functions' results. CuPy code keeps the function form (``cp.sum``), whose cost is the
kernel launch.
"""

from __future__ import annotations

import ast

import numpy as np

from ..ir import Literal
from ..ir.primitives import PRIMS
from .expressions import const

# Python operators with a meaning on lists that is not NumPy's (see _operator_gives_ndarray)
_LIST_OPERATORS = frozenset(("+", "*", "==", "!=", "<", "<=", ">", ">="))
REDUCTIONS = frozenset(("sum", "mean", "prod", "max", "min", "all", "any"))

# Operations whose result is a new ndarray (for a result of at least one axis) whatever their
# inputs were: NumPy converts lists and scalars before computing.
_NEW_ARRAY_FAMILIES = frozenset(("elementwise", "linalg", "reduction", "index"))
_NEW_ARRAY_PRIMS = frozenset(("concatenate", "stack", "broadcast_to", "zeros", "ones", "full",
                              "zeros_like", "ones_like", "copy", "asarray", "fused",
                              "scatter_add", "index_add", "last_writes"))
# Operations that keep their first input's kind: an ndarray where it was one (indexing a list
# gives a list; ``x.T`` or a reshape of an ndarray gives a view, still an ndarray).
_SAME_KIND_PRIMS = frozenset(("getitem", "transpose", "reshape", "expand_dims", "squeeze",
                              "astype", "sum_to", "setitem"))


def method_expr(node, args, producer):
    """``args[0].<prim>(axis=..., keepdims=...)`` for a reduction of a surely-NumPy array (and
    ``x.reshape(shape)``, ``x.transpose(axes)``, ``x[:, None]`` for its reshapes); None
    otherwise (the caller spells it ``np.<prim>(...)``)."""
    spell = _SHAPES.get(node.prim)
    if (spell is None and node.prim not in REDUCTIONS) or not is_ndarray(node.inputs[0],
                                                                          producer):
        return None
    if spell is not None:
        return spell(node, args[0])
    keywords = [ast.keyword(k, const(v)) for k, v in sorted(node.params.items()) if v is not None]
    return ast.Call(ast.Attribute(args[0], node.prim, ast.Load()), [], keywords)


def _sum_to(node, g):
    """``sum_to`` as the sums a person would write (as :func:`.expressions._sum_to`), in
    method form; None where the shapes are not known."""
    shape, gshape = node.params["shape"], node.inputs[0].aval.known_shape
    if gshape is None:
        return None
    lead = len(gshape) - len(shape)
    if lead:
        axes = tuple(range(lead))
        keywords = [ast.keyword("axis", const(axes[0] if lead == 1 else axes))] if shape else []
        g = ast.Call(ast.Attribute(g, "sum", ast.Load()), [], keywords)
    kept = tuple(i for i, d in enumerate(shape) if d == 1 and gshape[i + lead] != 1)
    if kept:
        g = ast.Call(ast.Attribute(g, "sum", ast.Load()), [],
                     [ast.keyword("axis", const(kept[0] if len(kept) == 1 else kept)),
                      ast.keyword("keepdims", ast.Constant(True))])
    return g


def _operator_gives_ndarray(node, producer, depth) -> bool:
    """``a + b``, ``a * b``, ``a == b``... where a list may be an operand: ``[..] + [..]``
    concatenates and ``[..] * 2`` repeats (a list), ``[..] == 1.0`` is a bool. So ``+`` is an
    ndarray unless both operands may be lists, ``*`` unless one may be a list and the other an
    integer, a comparison only where an operand surely is an ndarray (any other mix raises
    TypeError, as the user's own code would, or NumPy converts the list)."""
    if any(is_ndarray(a, producer, depth - 1) for a in node.inputs):
        return True
    may_be_list = [not isinstance(a, Literal) and a.aval.kind == "array" and bool(a.aval.ndim)
                   for a in node.inputs]
    if node.prim == "add":
        return not all(may_be_list)
    if node.prim == "multiply":
        return all(np.dtype(a.aval.dtype).kind in "fc" for a in node.inputs)
    return False


def _method(x, name, *args):
    return ast.Call(ast.Attribute(x, name, ast.Load()), [const(a) for a in args], [])


def _expand_dims(node, x):
    """``x[:, None]``: a None at each new axis (trailing ``:`` left out)."""
    ndim = len(node.out.aval.shape)
    axis = node.params["axis"]
    axes = {a % ndim for a in (axis if isinstance(axis, tuple) else (axis,))}
    items = [ast.Constant(None) if k in axes else ast.Slice() for k in range(ndim)]
    while not isinstance(items[-1], ast.Constant):
        items.pop()
    index = items[0] if len(items) == 1 else ast.Tuple(items, ast.Load())
    return ast.Subscript(x, index, ast.Load())


def _transpose(node, x):
    axes = node.params.get("axes")
    return ast.Attribute(x, "T", ast.Load()) if axes is None else _method(x, "transpose", axes)


def _squeeze(node, x):
    axis = node.params.get("axis")
    return _method(x, "squeeze") if axis is None else _method(x, "squeeze", axis)


# np.reshape, np.expand_dims and np.transpose are Python functions before the array's method:
# 0.6, 1.6 and 0.3 µs against 0.12, 0.09 and 0.05 (a (8, 32) array; timeit)
_SHAPES = {"sum_to": _sum_to,
           "reshape": lambda node, x: _method(x, "reshape", node.params["shape"]),
           "expand_dims": _expand_dims, "transpose": _transpose, "squeeze": _squeeze}


def is_ndarray(x, producer, depth=32) -> bool:
    """Whether ``x`` surely holds a NumPy ndarray when the generated code runs (see the module
    docstring); False where unsure."""
    if depth == 0 or isinstance(x, Literal) or x.aval.kind != "array" or not x.aval.ndim:
        return False
    node = producer.get(x)
    if node is None:
        return False
    if PRIMS[node.prim].spell in _LIST_OPERATORS:
        return _operator_gives_ndarray(node, producer, depth)
    if node.prim in _NEW_ARRAY_PRIMS or PRIMS[node.prim].family in _NEW_ARRAY_FAMILIES:
        return True
    return (node.prim in _SAME_KIND_PRIMS and bool(node.inputs)
            and is_ndarray(node.inputs[0], producer, depth - 1))
