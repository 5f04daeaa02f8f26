"""Python AST expressions for single primitives: how each node is spelled in generated code.

Invariant: :func:`node_expr` returns an expression computing exactly ``evaluate(prim, ...)``
with the array module bound to the name ``xp_name`` (``np`` for NumPy, ``cp`` for CuPy).
"""

from __future__ import annotations

import ast
import functools

import astor
import numpy as np

from ..ir import Literal
from ..ir.primitives import PRIMS, writes_once
from .scatters import rows_call, rows_form

_BINOPS = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div, "**": ast.Pow,
           "@": ast.MatMult, "%": ast.Mod, "//": ast.FloorDiv}  # astor parenthesises by precedence
_CMPOPS = {">": ast.Gt, ">=": ast.GtE, "<": ast.Lt, "<=": ast.LtE, "==": ast.Eq, "!=": ast.NotEq}


def const(value):
    """An AST for a static Python value (numbers, tuples, None, slices are handled by callers)."""
    if isinstance(value, tuple):
        return ast.Tuple([const(v) for v in value], ast.Load())
    if isinstance(value, float) and not np.isfinite(value):
        return ast.Call(_name("float"), [ast.Constant(repr(value))], [])
    return ast.Constant(value)


def _name(n):
    return ast.Name(n, ast.Load())


def _attr(dotted: str, xp_name: str):
    parts = dotted.split(".")
    if parts[0] == "np":   # Dask code: NumPy's name where dask.array has none (np.float64)
        parts[0] = xp_name if xp_name != "da" or _in_dask(tuple(parts[1:])) else "np"
    elif parts[0] == "scipy" and xp_name == "cp":   # CuPy's SciPy: cupyx.scipy.special.erf
        parts.insert(0, "cupyx")
    node = _name(parts[0])
    for p in parts[1:]:
        node = ast.Attribute(node, p, ast.Load())
    return node


@functools.lru_cache(maxsize=None)
def _in_dask(path: tuple) -> bool:
    """Whether ``dask.array`` has the attribute ``path`` (``("linalg", "solve")``), a function
    (dtypes stay NumPy's: ``np.float64``)."""
    import dask.array as da
    obj = da
    for name in path:
        obj = getattr(obj, name, None)
    return callable(obj) and not isinstance(obj, type)


def ufunc_callee(name: str, xp_name: str):
    """The ufunc ``name`` (a primitive's, or NumPy's: ``square``) as generated code calls it:
    ``np.tanh``, ``scipy.special.erf`` (``cupyx.scipy.special.erf`` in CuPy code)."""
    spell = PRIMS[name].spell if name in PRIMS else ""
    return _attr(spell if spell.startswith("scipy.") else f"np.{name}", xp_name)


def _call(func, args, keywords=None):
    return ast.Call(func, args, [ast.keyword(k, v) for k, v in (keywords or {}).items()])


def dtype_expr(dtype: str, xp_name: str):
    name = np.dtype(dtype).name
    if name == "bool" and xp_name == "cp":
        name = "bool_"   # CuPy before v14 has no cupy.bool (NumPy 2's name), only bool_
    return _attr(f"np.{name}", xp_name)


def index_expr(spec, arrays, in_call=False):
    """The index as a subscript (``x[1:, i]``), or as a value (``(slice(1, None), i)``) for
    ``np.add.at``, where the ``:`` syntax is not allowed."""
    items = []
    for item in spec:
        tag = item[0]
        if tag == "s" and in_call:
            items.append(_call(_name("slice"), [const(v) for v in item[1:]]))
        elif tag == "s":
            items.append(ast.Slice(*(None if v is None else const(v) for v in item[1:])))
        elif tag == "i":
            items.append(const(item[1]))
        elif tag == "n":
            items.append(ast.Constant(None))
        elif tag == "e":
            items.append(ast.Constant(Ellipsis))
        else:
            items.append(arrays[item[1]])
    return items[0] if len(items) == 1 else ast.Tuple(items, ast.Load())


def node_expr(node, args, xp_name="np"):
    """The expression for ``node`` given its inputs' expressions ``args``."""
    prim, p = node.prim, node.params
    spell = PRIMS[prim].spell
    if xp_name == "cp":
        args = _device_args(node, args)
    if p.get("py"):
        return _call(_attr(f"math.{p['py']}", xp_name), args)
    if prim == "negative":
        return ast.UnaryOp(ast.USub(), args[0])
    if prim == "add" and node.outputs[0].aval.kind == "list":  # `+` would concatenate lists
        return _call(_attr("np.add", xp_name), args)
    if prim == "power" and _cube_of_a_name(node, args):   # x * x * x, not libm's pow
        return ast.BinOp(ast.BinOp(args[0], ast.Mult(), args[0]), ast.Mult(), args[0])
    if spell in _BINOPS:
        return ast.BinOp(args[0], _BINOPS[spell](), args[1])
    if spell in _CMPOPS:
        return ast.Compare(args[0], [_CMPOPS[spell]()], [args[1]])
    if prim == "getitem":
        return ast.Subscript(args[0], index_expr(p["index"], args[1:]), ast.Load())
    if prim == "list_get":
        return ast.Subscript(args[0], args[1], ast.Load())
    if prim == "empty_list":
        return ast.List([], ast.Load())
    if prim == "transpose" and p.get("axes") is None and not isinstance(node.inputs[0], Literal):
        return ast.Attribute(args[0], "T", ast.Load())   # (a number has no .T: np.transpose)
    if prim == "astype":
        if isinstance(args[0], ast.Constant) or node.inputs[0].aval.is_scalar:
            # a Python number has no .astype: np.float32(1.0), np.float32(a); on the device a
            # 0-d array (CuPy's functions take no host scalar): cp.full((), 1.0, dtype=...)
            if xp_name == "cp":
                return _call(_attr("np.full", xp_name), [const(()), args[0]],
                             {"dtype": dtype_expr(p["dtype"], xp_name)})
            return _call(dtype_expr(p["dtype"], xp_name), args)
        return _call(ast.Attribute(args[0], "astype", ast.Load()), [dtype_expr(p["dtype"], xp_name)])
    if prim in ("to_float", "to_int"):
        return _call(_name(PRIMS[prim].spell), args)
    return _SPECIAL.get(prim, _generic)(node, args, xp_name)


def _cube_of_a_name(node, args) -> bool:
    """``x ** 3`` of a float array named ``x``: spelled ``x * x * x`` (as JAX's integer powers;
    NumPy's ``x ** 3`` calls libm's pow, ~40x slower on negative bases)."""
    exponent = node.inputs[1]
    return (isinstance(exponent, Literal) and type(exponent.value) in (int, float)
            and exponent.value == 3 and isinstance(args[0], ast.Name)
            and node.out.aval.is_float and node.out.aval.kind == "array")


def _generic(node, args, xp_name):
    keywords = {k: const(v) for k, v in sorted(node.params.items()) if v is not None}
    return _call(_attr(PRIMS[node.prim].spell, xp_name), args, keywords)


def _positional(key):
    def spell(node, args, xp_name):
        return _call(_attr(PRIMS[node.prim].spell, xp_name), args + [const(node.params[key])])
    return spell


def _seq(node, args, xp_name):
    keywords = {"axis": const(node.params["axis"])} if node.params.get("axis", 0) != 0 else {}
    return _call(_attr(PRIMS[node.prim].spell, xp_name), [ast.List(args, ast.Load())], keywords)


def _creation(node, args, xp_name):
    p = node.params
    if node.prim == "full":
        keywords = {"dtype": dtype_expr(p["dtype"], xp_name)} if p.get("dtype") else {}
        return _call(_attr("np.full", xp_name), [const(p["shape"]), args[0]], keywords)
    keywords = {}
    like = node.prim in ("zeros_like", "ones_like")
    default = np.dtype(node.inputs[0].aval.dtype) if like else np.float64  # what NumPy gives
    if p.get("dtype") and np.dtype(p["dtype"]) != default:
        keywords["dtype"] = dtype_expr(p["dtype"], xp_name)
    if like:
        return _call(_attr(PRIMS[node.prim].spell, xp_name), args, keywords)
    return _call(_attr(PRIMS[node.prim].spell, xp_name), [const(p["shape"])], keywords)


def _sum_to(node, args, xp_name):
    """``sum_to`` spelled as the plain sums a person would write, from the known shapes."""
    (g,) = node.inputs
    shape, gshape = node.params["shape"], g.aval.known_shape
    if gshape is None:
        return _call(_name("_sum_to"), args + [const(shape)])
    lead = len(gshape) - len(shape)
    out = args[0]
    if lead:
        axes = tuple(range(lead))
        out = _call(_attr("np.sum", xp_name), [out],
                    {"axis": const(axes[0] if len(axes) == 1 else axes)} if shape else {})
    kept = tuple(i for i, d in enumerate(shape) if d == 1 and gshape[i + lead] != 1)
    if kept:
        out = _call(_attr("np.sum", xp_name), [out],
                    {"axis": const(kept[0] if len(kept) == 1 else kept),
                     "keepdims": ast.Constant(True)})
    return out


def _last_writes(node, args, xp_name):
    """``_last_writes(shape, index)``: the helper (see :mod:`.emit`) takes the indexed shape."""
    shape = node.inputs[0].aval.known_shape
    shape = const(shape) if shape is not None else ast.Attribute(args[0], "shape", ast.Load())
    return _call(_name("_last_writes"), [shape, index_expr(node.params["index"], args[1:],
                                                           in_call=True)])


def _broadcast_to(node, args, xp_name):
    """``np.broadcast_to(x, shape)``; CuPy's takes arrays only, so a scalar is ``cp.full``."""
    if xp_name == "cp" and _is_scalar(node.inputs[0]):
        return _call(_attr("np.full", xp_name), [const(node.params["shape"]), args[0]],
                     {"dtype": dtype_expr(node.out.aval.dtype, xp_name)})
    return _positional("shape")(node, args, xp_name)


# CuPy's functions that are not ufuncs take arrays only (cupy.sum(2.0) raises): the positions
# where a Python scalar is wrapped as ``cp.asarray(...)`` ("all": every argument).
_CUPY_ARRAY_ARGS = {**{p: (0,) for p in ("sum", "mean", "prod", "max", "min", "sum_to",
                                         "transpose", "reshape", "expand_dims", "squeeze",
                                         "where", "clip", "zeros_like", "ones_like", "copy",
                                         "all", "any", "argmax", "argmin", "argsort",
                                         "inv", "det", "slogdet_sign", "logabsdet")},
                    "solve": (0, 1),
                    "dot": (0, 1), "outer": (0, 1), "concatenate": "all", "stack": "all",
                    "einsum": "all"}


def _is_scalar(x) -> bool:
    return isinstance(x, Literal) or x.aval.kind != "array"


def _device_args(node, args):
    positions = _CUPY_ARRAY_ARGS.get(node.prim, ())
    return [_call(_attr("np.asarray", "cp"), [a])
            if (positions == "all" or i in positions) and _is_scalar(x) else a
            for i, (x, a) in enumerate(zip(node.inputs, args))]


def _clip(node, args, xp_name):
    """A clip with an infinite bound (``np.clip(x, 0.0, None)``) is a maximum or minimum: the
    same values, without np.clip's microsecond of overhead on small arrays."""
    lo, hi = (x.value if isinstance(x, Literal) else None for x in node.inputs[1:])
    if hi == float("inf"):
        return _call(_attr("np.maximum", xp_name), args[:2])
    if lo == float("-inf"):
        return _call(_attr("np.minimum", xp_name), [args[0], args[2]])
    return _generic(node, args, xp_name)


def _slogdet_item(k):
    """``np.linalg.slogdet(a)[k]``: its sign (0) or its log of ``|det|`` (1)."""
    def spell(node, args, xp_name):
        return ast.Subscript(_generic(node, args, xp_name), const(k), ast.Load())
    return spell


def _result_item(k, **fixed):
    """``np.linalg.<f>(a, **fixed, **params)[k]``: one result of a factorization (its other
    results are their own nodes, each its own call)."""
    def spell(node, args, xp_name):
        keywords = {**{key: const(v) for key, v in fixed.items()},
                    **{key: const(v) for key, v in sorted(node.params.items()) if v is not None}}
        call = _call(_attr(PRIMS[node.prim].spell, xp_name), args, keywords)
        return call if k is None else ast.Subscript(call, const(k), ast.Load())
    return spell


def _solve_triangular(node, args, xp_name):
    """SciPy's ``solve_triangular``; in adjoint code with ``check_finite=False``: its operands
    are made from forward values already computed, and the check is a pass over each operand
    per call (the Cholesky rule's two n x n solves at n = 300: 2.86 -> 2.51 ms, one thread). A
    NaN then propagates into the gradient, as through NumPy's ``solve``, not a ValueError."""
    if xp_name == "da":
        return _dask_solve_triangular(node, args)
    call = _generic(node, args, xp_name)
    if node.phase == "adjoint" and xp_name == "np":
        call.keywords.append(ast.keyword("check_finite", const(False)))
    return call


def _cholesky(node, args, xp_name):
    """``np.linalg.cholesky(a)``, the lower factor; Dask's returns the upper one unless asked
    (``da.linalg.cholesky(a, lower=True)``)."""
    call = _generic(node, args, xp_name)
    if xp_name == "da":
        call.keywords.append(ast.keyword("lower", const(True)))
    return call


def _dask_solve_triangular(node, args):
    """``da.linalg.solve_triangular``, which takes no ``trans=``: solving with ``a.T`` is
    solving with the transpose, whose triangle is the other one (SciPy's would compute a Dask
    operand into NumPy and hand ``da.`` calls after it a NumPy array)."""
    a, b = args
    trans = bool(node.params.get("trans"))
    if trans:
        a = ast.Attribute(a, "T", ast.Load())
    lower = bool(node.params.get("lower")) != trans
    func = ast.parse("da.linalg.solve_triangular", mode="eval").body
    return _call(func, [a, b], {"lower": const(lower)})


def _cho_inverse_lower(node, args, xp_name):
    """``scipy.linalg.lapack.dpotri(L.T, lower=0)[0].T`` (``cho_inverse_lower`` in
    :mod:`adcompiler.ir.primitives`): the lower triangle of ``K^-1``."""
    transposed = ast.Attribute(args[0], "T", ast.Load())
    call = _call(_attr(PRIMS[node.prim].spell, xp_name), [transposed], {"lower": const(0)})
    return ast.Attribute(ast.Subscript(call, const(0), ast.Load()), "T", ast.Load())


def _einsum(node, args, xp_name):
    """``np.einsum('ij,jk->ik', a, b)``: the subscripts first, as NumPy takes them."""
    optimize = node.params.get("optimize", False)
    keywords = {"optimize": const(optimize)} if optimize else {}
    return _call(_attr("np.einsum", xp_name), [const(node.params["subscripts"]), *args], keywords)


_SPECIAL = {
    "slogdet_sign": _slogdet_item(0), "logabsdet": _slogdet_item(1),
    "eigh_values": _result_item(0), "eigh_vectors": _result_item(1),
    "svd_u": _result_item(0, full_matrices=False), "svd_s": _result_item(1, full_matrices=False),
    "svd_vh": _result_item(2, full_matrices=False), "svdvals": _result_item(None, compute_uv=False),
    "qr_q": _result_item(0), "qr_r": _result_item(1), "lstsq_x": _result_item(0, rcond=None),
    "svd": _result_item(None, full_matrices=False),   # the whole (passes.factorizations)
    "clip": _clip, "einsum": _einsum, "solve_triangular": _solve_triangular,
    "cholesky": _cholesky,
    "cho_inverse_lower": _cho_inverse_lower,
    "reshape": _positional("shape"), "broadcast_to": _broadcast_to,
    "concatenate": _seq, "stack": _seq, "sum_to": _sum_to, "last_writes": _last_writes,
    "zeros": _creation, "ones": _creation, "full": _creation,
    "zeros_like": _creation, "ones_like": _creation,
}


def _adds_once(spec, arrays, plain=False) -> bool:
    """Whether the subscript ``t[idx] += g`` adds what ``np.add.at`` does: no entry of the index
    repeats. Slices, ints and 0-d arrays (a loop counter) never do, nor does a window's array
    (tagged ``("u", k)``); plain code keeps np.add.at for that one, since the frontend reads it
    back as ``index_add`` (adjoint: one gather) but an indexed ``+=`` as a masked setitem."""
    avals = [x.aval for x in arrays]
    if all(a.known_shape == () for a in avals):
        return True
    return not plain and writes_once(spec, [a.ndim for a in avals])


def _add_at(target, idx, g, xp_name):
    adder = "cupyx.scatter_add" if xp_name == "cp" else "np.add.at"
    return ast.Expr(_call(_attr(adder, xp_name), [target, idx, g]))


def accumulate_statements(node, target: str, args, xp_name="np", plain=False):
    """``target[idx] += g`` (or ``np.add.at(target, idx, g)`` if indices may repeat, or the
    rows' sum from :mod:`.scatters`)."""
    p = node.params
    if _adds_once(p["index"], node.inputs[2:], plain):
        idx = index_expr(p["index"], args[2:])
        return [ast.AugAssign(ast.Subscript(_name(target), idx, ast.Store()), ast.Add(), args[1])]
    if rows_form(node, xp_name, plain):   # whole rows: ``t += _add_rows(idx, g, shape)``
        return [ast.AugAssign(ast.Name(target, ast.Store()), ast.Add(), rows_call(node, args, 2))]
    idx = index_expr(p["index"], args[2:], in_call=True)
    return [_add_at(_name(target), idx, args[1], xp_name)]


def assign_statements(node, target: str, args):
    """``target[idx] = v``."""
    idx = index_expr(node.params["index"], args[2:])
    return [ast.Assign([ast.Subscript(_name(target), idx, ast.Store())], args[1])]


def scatter_statements(node, target: str, args, xp_name="np", plain=False):
    """``scatter_add`` as statements: a zero array, then ``t[idx] = g`` or ``np.add.at``
    (or the rows' sum at once, :mod:`.scatters`)."""
    p = node.params
    zeros = _call(_attr("np.zeros", xp_name), [const(p["shape"])],
                  {"dtype": dtype_expr(node.out.aval.dtype, xp_name)})
    once = _adds_once(p["index"], node.inputs[1:], plain)
    if not once and rows_form(node, xp_name, plain):   # whole rows: ``t = _add_rows(...)``
        return [ast.Assign([ast.Name(target, ast.Store())], rows_call(node, args, 1))]
    idx = index_expr(p["index"], args[1:], in_call=not once)
    first = ast.Assign([ast.Name(target, ast.Store())], zeros)
    # np.empty, and zeros only where the slice does not write; plain code (read again by the
    # frontend, which takes no np.empty) fills np.zeros
    rest = _complement(p["index"], p["shape"]) if once and not plain else None
    if rest is not None:
        first.value.func = _attr("np.empty", xp_name)
        return [first, ast.Assign([ast.Subscript(_name(target), idx, ast.Store())], args[0])] + [
            ast.Assign([ast.Subscript(_name(target), ast.Slice(const(a) if a else None,
                                                               const(b) if b < n else None),
                                      ast.Store())], const(0.0))
            for a, b, n in rest]
    if not once:
        return [first, _add_at(_name(target), idx, args[0], xp_name)]
    return [first, ast.Assign([ast.Subscript(_name(target), idx, ast.Store())], args[0])]


def _complement(spec, shape):
    """For a scatter into one unit-step slice of axis 0 (``x[:-1]``, ``x[1:]``): the (start,
    stop, size) ranges of axis 0 it leaves unwritten, else None."""
    if len(spec) != 1 or spec[0][0] != "s" or spec[0][3] not in (None, 1) or not shape:
        return None
    n = shape[0]
    start, stop, _ = slice(spec[0][1], spec[0][2]).indices(n)
    if stop <= start:
        return None
    return [(a, b, n) for a, b in ((0, start), (stop, n)) if b > a]


def read_names(args) -> set:
    """Every name the expressions ``args`` read (an input inlined as ``dx_1 + dv2`` reads
    ``dx_1``): a result written before they are evaluated must take none of them."""
    return {n.id for a in args for n in ast.walk(a) if isinstance(n, ast.Name)}


def render(stmt) -> str:
    """One statement as one line of source (astor's pretty-printer would wrap long lines
    mid-call)."""
    return astor.to_source(stmt, pretty_source="".join).rstrip("\n")
