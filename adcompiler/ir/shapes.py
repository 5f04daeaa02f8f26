"""Shape and dtype inference: the abstract value of a node's output from its inputs' avals.

Invariant: for concrete inputs with the given avals, ``evaluate`` returns values whose avals
equal what :func:`infer` says. Unknown shapes propagate as ``None``. Dtypes follow NumPy's own
promotion: they are found by running the primitive on empty stand-ins, which costs nothing.
"""

from __future__ import annotations

import numpy as np

from .graph import Aval
from .primitives import PRIMS, evaluate

_SCALAR_STANDIN = {"float": 1.0, "int": 1, "bool": True}


def _standin(aval: Aval, literal=None, empty=True):
    """A cheap concrete object with this aval's dtype (and its shape, unless ``empty``: then ones)."""
    if aval.is_scalar:
        return _SCALAR_STANDIN[aval.kind] if literal is None else literal
    if empty or aval.shape is None:
        ndim = 1 if aval.shape is None else len(aval.shape)
        return np.zeros((1,) * ndim, dtype=aval.dtype)
    # A zero-strided view: the right shape without the memory.
    return np.broadcast_to(np.zeros((), dtype=aval.dtype), aval.shape)


def _dtype_of(prim, avals, literals, params):
    """The dtype NumPy gives ``prim`` on stand-ins of these avals, remembered per key: a compile
    asks the same question many times (a quarter of the MLP's compile time went here)."""
    key = _dtype_key(prim, avals, literals, params)
    known = _DTYPES.get(key) if key is not None else None
    if known is not None:
        return known
    args = [_standin(a, lit) for a, lit in zip(avals, literals)]
    if prim in _SQUARE or prim in _FACTORED:   # a 1x1 matrix of zeros is singular; one of
        args = [np.ones_like(a) for a in args]   # ones solves, inverts and factors
    if prim == "argpartition":   # a stand-in's axis has one entry: kth 0 is in bounds
        params = {**params, "kth": 0}
    with np.errstate(all="ignore"):
        out = evaluate(prim, args, params)
    name = np.result_type(out).name
    if key is not None:
        if len(_DTYPES) >= 4096:
            _DTYPES.clear()
        _DTYPES[key] = name
    return name


_DTYPES: dict = {}


def _dtype_key(prim, avals, literals, params):
    """What the stand-ins' dtype depends on: each input's kind, dtype and ndim (``1``, ``1.0``
    and ``True`` are equal as values; their kinds tell them apart), each literal's value (uint8
    + 300 overflows, + 3 does not), and the params; None where one cannot be a key (an array
    literal, a list param)."""
    key = (prim, tuple(sorted(params.items())),
           tuple((a.kind, a.dtype, None if a.shape is None else len(a.shape), lit)
                 for a, lit in zip(avals, literals)))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _broadcast(avals):
    shapes = [a.known_shape for a in avals]
    if any(s is None for s in shapes):
        return None
    return tuple(np.broadcast_shapes(*shapes))


def _reduced(shape, axis, keepdims):
    if shape is None:
        return None
    nd = len(shape)
    # NumPy lets a 0-d array reduce over axis 0 or -1: nothing is reduced.
    axes = range(nd) if axis is None else [a % nd for a in np.atleast_1d(axis).tolist() if nd]
    axes = set(axes)
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _contract(a, b, name):
    """Check that the contracted axes of ``a @ b`` (or ``np.dot``) agree, as NumPy does."""
    k_b = b[0] if len(b) == 1 else b[-2]
    if not a or not b or a[-1] != k_b:
        raise ValueError(f"{name}: shapes {a} and {b} are not aligned "
                         f"({a[-1] if a else None} != {k_b if b else None})")


def _matmul_shape(a, b):
    if a is None or b is None:
        return None
    _contract(a, b, "matmul")
    if len(a) == 1 and len(b) == 1:
        return ()
    if len(a) == 1:
        return b[:-2] + b[-1:]
    if len(b) == 1:
        return a[:-1]
    batch = tuple(np.broadcast_shapes(a[:-2], b[:-2]))
    return batch + (a[-2], b[-1])


def _dot_shape(a, b):
    if a is None or b is None:
        return None
    if len(a) == 0:
        return b
    if len(b) == 0:
        return a
    _contract(a, b, "dot")
    if len(b) == 1:
        return a[:-1]
    return a[:-1] + b[:-2] + b[-1:]


def _concat_shape(shapes, axis, stack):
    if any(s is None for s in shapes):
        return None
    first = list(shapes[0])
    if stack:
        if any(tuple(s) != tuple(first) for s in shapes):
            raise ValueError(f"stack: all inputs must have the same shape, got {list(shapes)}")
        nd = len(first) + 1
        first.insert(axis % nd, len(shapes))
        return tuple(first)
    ax = axis % len(first)
    for s in shapes:
        if len(s) != len(first) or any(d != e for i, (d, e) in enumerate(zip(s, first))
                                       if i != ax):
            raise ValueError(f"concatenate: shapes {list(shapes)} differ outside axis {axis}")
    first[ax] = sum(s[ax] for s in shapes)
    return tuple(first)


def _einsum_shape(shapes, subscripts):
    """The output of an einsum in normal form ("ij,jk->ik": one size per letter)."""
    if any(s is None for s in shapes):
        return None
    terms, out = subscripts.split("->")
    sizes = {}
    for term, shape in zip(terms.split(","), shapes):
        for letter, d in zip(term, shape):
            if sizes.setdefault(letter, d) != d:
                raise ValueError(f"einsum: index '{letter}' has sizes {sizes[letter]} and {d}")
    return tuple(sizes[letter] for letter in out)


_SQUARE = ("solve", "inv", "det", "slogdet_sign", "logabsdet")


def _square_shape(prim, shapes):
    """NumPy 2's shapes of the solvers: ``a`` is (..., n, n); ``solve``'s ``b`` is one vector
    (n,) or a stack of matrices (..., n, k), broadcast against ``a``'s batch axes."""
    a = shapes[0]
    if a is None or (prim == "solve" and shapes[1] is None):
        return None
    if len(a) < 2 or a[-1] != a[-2]:
        raise ValueError(f"{prim}: an array of shape {a} is not a square matrix (..., n, n)")
    if prim != "solve":
        return a if prim == "inv" else a[:-2]
    b = shapes[1]
    rows, batch = (b, ()) if len(b) == 1 else (b[-2:], b[:-2])
    if not rows or rows[0] != a[-1]:
        raise ValueError(f"solve: shapes {a} and {b} do not match ({a[-1]} rows != "
                         f"{rows[0] if rows else None})")
    return tuple(np.broadcast_shapes(a[:-2], batch)) + tuple(rows)


# The factorizations' results (adcompiler/frontend/library/factorizations.py checks the shapes)
_FACTORED = ("tril", "cholesky", "cho_inverse_lower", "solve_triangular",
             "eigh_values", "eigh_vectors", "eigvalsh", "svd_u", "svd_s", "svd_vh", "svdvals",
             "qr_q", "qr_r", "pinv", "lstsq_x")


def _factored_shape(prim, shapes):
    """The shape of a factorization's result: ``a`` is (..., m, n), k = min(m, n)."""
    a = shapes[0]
    if a is None or any(s is None for s in shapes):
        return None
    batch, (m, n) = a[:-2], a[-2:]
    k = min(m, n)
    if prim in ("tril", "cholesky", "cho_inverse_lower", "eigh_vectors"):
        return a
    if prim == "solve_triangular":   # b: one vector (n,), or matrices (..., n, k)
        b = shapes[1]
        rows = b[-1:] if len(b) == 1 else b[-2:]
        return tuple(np.broadcast_shapes(batch, b[:-len(rows)])) + rows
    if prim in ("eigh_values", "eigvalsh"):
        return batch + (n,)
    if prim in ("svd_s", "svdvals"):
        return batch + (k,)
    if prim == "lstsq_x":
        return (n,) + tuple(shapes[1][1:])
    return {"svd_u": batch + (m, k), "svd_vh": batch + (k, n), "qr_q": batch + (m, k),
            "qr_r": batch + (k, n), "pinv": batch + (n, m)}[prim]


def _shape_of(prim, avals, params):
    """The output shape (None when unknown) for one-output primitives."""
    fam = PRIMS[prim].family
    shapes = [a.known_shape for a in avals]
    if fam == "elementwise":
        return _broadcast(avals)
    if fam == "reduction" or prim in ("argmax", "argmin"):
        return _reduced(shapes[0], params.get("axis"), params.get("keepdims", False))
    if prim == "argsort":  # along one axis (axis=None is lowered as a flattened array's)
        return None if shapes[0] is None else (tuple(shapes[0]) or (1,))  # 0-d: NumPy gives [0]
    if prim == "matmul":
        return _matmul_shape(*shapes)
    if prim == "dot":
        return _dot_shape(*shapes)
    if prim == "outer":
        return None if None in shapes else (int(np.prod(shapes[0])), int(np.prod(shapes[1])))
    if prim == "einsum":
        return _einsum_shape(shapes, params["subscripts"])
    if prim in ("concatenate", "stack"):
        return _concat_shape(shapes, params.get("axis", 0), prim == "stack")
    if prim in _SQUARE:
        return _square_shape(prim, shapes)
    if prim in _FACTORED:
        return _factored_shape(prim, shapes)
    if prim in ("zeros", "ones", "full", "sum_to", "scatter_add"):
        shape = params["shape"]
        return (shape,) if isinstance(shape, int) else tuple(shape)
    if prim in ("zeros_like", "ones_like", "astype", "copy", "index_add", "setitem", "asarray",
                "cumsum", "cumprod", "argpartition", "maximum_accumulate", "minimum_accumulate"):
        return shapes[0]
    if prim == "searchsorted":   # one position per value
        return shapes[1]
    if prim == "to_float":
        return ()
    if any(s is None for s in shapes):
        return None
    if prim in ("getitem", "last_writes") and not avals[0].is_scalar:   # x[index]'s shape
        return _indexed_shape(avals, params)
    # Views (transpose, reshape, expand/squeeze, broadcast_to): run them on zero-strided
    # stand-ins, which allocate nothing.
    args = [_standin(a, empty=False) for a in avals]
    return tuple(np.shape(evaluate(prim, args, params)))


_NO_BYTES = np.dtype([])   # a dtype whose items take no bytes


def _indexed_shape(avals, params) -> tuple:
    """``x[index]``'s shape, on stand-ins that hold no bytes: ``x`` zero-strided of a dtype of
    size 0, the index arrays zero-strided zeros (index 0 is valid along any non-empty axis).
    A gather copies, so real stand-ins made the whole result: 26 MB at compile time for the
    matrix factorization's ``U[iu]`` of 10^5 rows of 32 (#33)."""
    x = np.broadcast_to(np.zeros((), dtype=_NO_BYTES), avals[0].known_shape)
    arrays = [np.broadcast_to(np.zeros((), dtype=a.dtype if not a.is_scalar else "int64"),
                              a.known_shape) for a in avals[1:]]
    return tuple(np.shape(evaluate("getitem", [x, *arrays], params)))


# What may take a list (kind "list": a while loop's stack of unknown length, or an array of one
# row per element of one, such as its cotangent), and only as the first input (both for add).
_LIST_PRIMS = ("zeros_like", "copy", "asarray", "add", "setitem", "index_add")


def _list_result(prim, avals, params) -> Aval:
    first, rest = avals[0], avals[1:]
    if prim == "add" and first.kind == rest[0].kind == "list" and first.shape == rest[0].shape:
        return Aval("list", np.result_type(first.dtype, rest[0].dtype).name, first.shape)
    if prim not in _LIST_PRIMS or first.kind != "list" or any(a.kind == "list" for a in rest):
        raise ValueError(f"`{PRIMS[prim].spell}` cannot take a list (a while loop's stack): it "
                         "is read by index, xs[k]")
    if prim == "zeros_like" and params.get("dtype"):
        return Aval("list", np.dtype(params["dtype"]).name, first.shape)
    return first


def infer(prim: str, avals: list, literals: list, params: dict) -> Aval:
    """The aval of ``prim[params](*inputs)``; ``literals`` holds literal values or None."""
    if prim != "list_get" and any(a.kind == "list" for a in avals):
        return _list_result(prim, avals, params)
    if params.get("py") or prim == "to_float":
        return Aval("float", "float64")
    if prim == "to_int":
        return Aval("int", "int64")
    if PRIMS[prim].abstract is not None:  # a user function's (adcompiler.custom.vjp)
        return PRIMS[prim].abstract(avals, literals)
    if PRIMS[prim].members:  # a whole factorization: the tuple of its results
        return Aval("tuple", "object", tuple(infer(m, avals, literals, {})
                                             for m in PRIMS[prim].members))
    if prim == "list_get" and avals[0].kind == "tuple":  # an item of a custom call's tuple
        return avals[0].shape[literals[1]]
    if prim == "list_get" and avals[0].dtype == "object":  # a list of lists: its item's aval
        return avals[0].shape[0]
    if prim == "list_get":  # an element of a list stack (kind "list": shape of its elements)
        return Aval("array", avals[0].dtype, avals[0].shape)
    if prim == "empty_list":
        return Aval("list", params["dtype"], params["shape"])
    fam = PRIMS[prim].family
    if fam == "elementwise" and all(a.is_scalar for a in avals) and not PRIMS[prim].spell[0].isalpha():
        # Python operators on Python scalars give Python scalars.
        value = evaluate(prim, [_standin(a, lit) for a, lit in zip(avals, literals)], params)
        return Aval.of(value)
    if prim in ("zeros", "ones", "full"):
        dtype = np.dtype(params.get("dtype") or (avals[0].dtype if avals else "float64")).name
    elif prim == "astype":
        dtype = np.dtype(params["dtype"]).name
    elif prim in ("sum_to", "scatter_add", "index_add", "setitem") or (
            fam == "shape" and prim not in ("concatenate", "stack")):
        dtype = avals[0].dtype
    else:
        dtype = _dtype_of(prim, avals, literals, params)
    return Aval("array", dtype, _shape_of(prim, avals, params))
