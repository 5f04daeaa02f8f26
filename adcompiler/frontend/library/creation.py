"""Calls that make arrays or convert values: ``np.zeros``/``ones``/``full`` and their ``_like``
forms, ``np.array``/``asarray``, ``astype``, ``float()``, ``math`` functions of Python numbers,
NumPy's scalar types, the constructors computed once while compiling (``np.arange``,
``np.eye``, ...) whose results are constants the function itself made, and ``np.tril``/``triu``,
masks applied when the code runs."""

from __future__ import annotations

import builtins
import math
import weakref

import numpy as np

from ...ir import Value
from ...ir.primitives import ELEMENTWISE, MATH_PRIMS
from .binding import CallError, bind, dtype_arg, positional, shape_arg, static


def _creation(name):
    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("shape", "dtype"))
        params = {"shape": shape_arg(p["shape"]), "dtype": dtype_arg(p.get("dtype", float))}
        return b.emit(name, (), params)
    return handler


def _full(b, args, kwargs):
    p = bind(args, kwargs, ("shape", "fill_value", "dtype"), required=2)
    dtype = dtype_arg(p["dtype"]) if p.get("dtype") is not None else None
    return b.emit("full", (p["fill_value"],), {"shape": shape_arg(p["shape"]), "dtype": dtype})


def _like(name):
    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("a", "dtype"))
        dtype = p.get("dtype")
        return b.emit(name, (p["a"],), {"dtype": dtype_arg(dtype)} if dtype is not None else {})
    return handler


def _astype(b, x, args, kwargs):
    """``x.astype(dtype)``: a new array; with ``copy=False`` and ``x``'s own dtype, ``x``
    itself, as NumPy returns it (``z = x.astype(np.float64, copy=False); z += 1`` changes
    ``x``)."""
    p = bind(args, kwargs, ("dtype", "order", "casting", "subok", "copy"))
    if set(p) - {"dtype", "copy"}:
        raise CallError(f"unsupported keyword {min(set(p) - {'dtype', 'copy'})}=",
                        "pass the dtype (and copy=) only")
    dtype = dtype_arg(p["dtype"])
    if not static(p.get("copy", True), "`copy=`") and isinstance(x, Value) \
            and x.aval.dtype == dtype:
        return x
    return b.emit("astype", (x,), {"dtype": dtype})


# math.atan(x) is the primitive arctan (math.fabs: abs), and so on for every row with a math name
_MATH_PRIM = {r.math_name: r.name for r in ELEMENTWISE if r.math and r.math_name != r.name}


# math functions whose derivative is one of SciPy's (gammaln' is scipy.special.digamma)
_MATH_SLOPE_IN_SCIPY = {"lgamma": "scipy.special.digamma", "gamma": "scipy.special.digamma"}


def _math(name):
    prim = _MATH_PRIM.get(name, name)
    row = next(r for r in ELEMENTWISE if r.name == prim)   # its spell: np.tanh, scipy.special.erf

    def handler(b, args, kwargs):
        if name in _MATH_SLOPE_IN_SCIPY:
            from .special import require_scipy
            require_scipy(f"its derivative, {_MATH_SLOPE_IN_SCIPY[name]}")
        xs = [_math_number(b, x, row.spell) for x in positional(args, row.arity)]
        return b.emit(prim, tuple(xs), {"py": name})
    return handler


def _math_number(b, x, spell):
    """An argument of a ``math`` function: a Python number (a 0-d array or NumPy scalar
    converted, as math converts it); an array is refused, with NumPy's elementwise function."""
    if isinstance(x, Value) and not x.aval.is_scalar:
        if x.aval.kind != "array" or x.aval.known_shape != ():
            raise CallError("takes a Python number, but this is an array",
                            f"use {spell}, which works elementwise on arrays")
        return b.emit("to_float", (x,))
    return float(x) if isinstance(x, (int, np.integer)) and not isinstance(x, bool) else x


def _float(b, args, kwargs):
    (x,) = positional(args, 1)
    return b.emit("to_float", (x,)) if isinstance(x, Value) else float(x)


def _item(b, x, args, kwargs):
    """``x.item()`` of a one-element array: a Python number (float for floating ``x``, its
    gradient flowing back into that element), as NumPy gives."""
    if args or kwargs:
        raise CallError("takes no arguments here", "index first: x[i, j].item()")
    shape = x.aval.known_shape
    if shape is None or math.prod(shape) != 1:
        raise CallError(f"of an array of shape {shape} needs exactly one element",
                        "index it first (x[0].item()), or use np.sum(x) for a total")
    one = b.emit("reshape", (x,), {"shape": ()}) if shape != () else x
    kind = np.dtype(x.aval.dtype).kind
    return b.emit("to_float" if kind in "fc" else "to_int", (one,))


def _array(copy):
    """``np.array``/``np.asarray``: of literals, a constant made while compiling; of a traced
    array, a copy (np.array) or the array itself (np.asarray); of a list holding traced
    values, their ``np.stack``."""
    def handler(b, args, kwargs):
        (x,) = positional(args, 1)
        dtype = kwargs.pop("dtype", None)
        copying = static(kwargs.pop("copy", copy), "`copy=`")  # NumPy 2: True, None or False
        if kwargs:
            raise CallError(f"unsupported keyword {next(iter(kwargs))}=", "pass the data only")
        if not contains_value(x):
            return made(np.array(x, dtype=dtype))
        fresh = not isinstance(x, Value)
        if fresh:  # a list of traced values (and numbers): a new array
            x = _stacked(b, x)
        if dtype is not None and np.dtype(dtype).name != x.aval.dtype:
            if copying is False:
                raise CallError(f"with copy=False of a {x.aval.dtype} value as "
                                f"{np.dtype(dtype).name} needs a copy, so NumPy raises "
                                "ValueError", "pass copy=None (a copy where needed)")
            return b.emit("astype", (x,), {"dtype": np.dtype(dtype).name})
        return b.emit("copy", (x,)) if copying and not fresh else x
    return handler


def _stacked(b, items):
    """``np.array([a, b, ...])`` of traced values: ``np.stack`` of the items (nested lists
    row by row), which NumPy computes alike where every item has one shape."""
    if not isinstance(items, (list, tuple)):
        return items
    if not items:
        raise CallError("of an empty list mixed with traced values is not supported",
                        "give every row the same number of entries")
    rows = [_stacked(b, item) for item in items]
    shapes = {r.aval.known_shape if isinstance(r, Value) else np.shape(r) for r in rows}
    if len(shapes) > 1:
        raise CallError(f"of a list whose items have different shapes ({sorted(shapes)}) is "
                        "ragged, which NumPy refuses too", "give every item the same shape")
    return b.stack([r if isinstance(r, Value) or np.ndim(r) == 0 else b.constant(made(
        np.asarray(r))) for r in rows])


def _scalar_type(dtype):
    """``np.float64(v)``, ``np.float32(v)``: a 0-d array of that dtype, which NumPy 2 promotes
    as it does the scalar (not weakly, as a Python float); of an array, ``astype``."""
    name = np.dtype(dtype).name

    def handler(b, args, kwargs):
        (x,) = positional(args, 1)
        if isinstance(x, Value) and not x.aval.is_scalar:
            return x if x.aval.dtype == name else b.emit("astype", (x,), {"dtype": name})
        if not isinstance(x, Value) and not isinstance(x, (int, float, np.number)):
            raise CallError(f"np.{name} takes a number here", f"write np.{name}(float(...))")
        return b.emit("full", (x,), {"shape": (), "dtype": name})
    return handler


# Arrays made while compiling from literals (np.array([True, False])) or by a constructor: no
# name outside the function holds them, so they cannot change after compiling, as a module
# array may; by id, while they live (a boolean one indexes as its positions, frontend.indexing).
_MADE = weakref.WeakValueDictionary()


def made(array):
    if isinstance(array, np.ndarray):
        _MADE[id(array)] = array
    return array


def made_while_compiling(array) -> bool:
    """Whether ``array`` is one the function itself made while compiling."""
    return _MADE.get(id(array)) is array


def contains_value(x) -> bool:
    if isinstance(x, (list, tuple)):
        return any(contains_value(v) for v in x)
    return isinstance(x, Value)


# Array constructors computed while compiling when every argument is known then (Python numbers,
# shapes, constant arrays): pure functions of their arguments, so the result is a constant.
CONSTANT_ONLY = ("arange", "linspace", "logspace", "geomspace", "eye", "identity", "diag",
                 "diagflat", "tri", "triu", "tril", "vander", "indices", "hanning", "hamming",
                 "blackman", "bartlett")


def _folded(fn):
    def handler(b, args, kwargs):
        args = [known(b, a) for a in args]
        kwargs = {k: known(b, v) for k, v in kwargs.items()}
        if contains_value(args) or contains_value(list(kwargs.values())):
            raise CallError("of an array the function computes has no derivative rule in "
                            "adcompiler", "pass it Python numbers, shapes or arrays the "
                            "function makes from literals (computed once, while compiling)")
        try:
            out = fn(*args, **kwargs)
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise CallError(f"raised {type(exc).__name__}: {exc}", "NumPy raises this too") \
                from None
        held = [a for a in _arrays([args, list(kwargs.values())]) if not made_while_compiling(a)]
        if not held:
            return made(out)
        if all(np.shares_memory(out, a) for a in held):
            return out  # a view (np.diag of a matrix): it follows the array, as a read does
        raise CallError("of an array that can change after compiling (a module-level array, a "
                        "closure's or an attribute) would be computed once, while compiling, "
                        "and miss its in-place changes",
                        "compute it outside the function and pass it in as an argument, or "
                        "make it inside the function from literals")
    return handler


_LINSPACE = ("start", "stop", "num", "endpoint", "retstep", "dtype", "axis")


def _linspace(b, args, kwargs):
    """``np.linspace`` of traced 0-d ``start``/``stop`` (a time horizon being fitted): NumPy's
    own steps, ``arange(num) * ((stop - start) / div) + start`` with the last entry ``stop``
    exactly, so values are NumPy's and each entry's gradient is its weight on each end.
    Without traced ends, the constant computed while compiling."""
    if not contains_value(list(args) + list(kwargs.values())):
        return _folded(np.linspace)(b, args, kwargs)
    p = bind(args, kwargs, _LINSPACE, required=2)
    num, endpoint = static(p.get("num", 50), "`num=`"), static(p.get("endpoint", True), "`endpoint=`")
    if p.get("retstep") or p.get("axis", 0) != 0 or p.get("dtype") not in (None, float, np.float64):
        raise CallError("of traced ends takes only `num=` and `endpoint=` here",
                        "compute the step as (stop - start) / (num - 1) yourself")
    ends = [p["start"], p["stop"]]
    if any(isinstance(e, Value) and e.aval.known_shape != () for e in ends):
        raise CallError("of traced ends takes scalars (0-d values) here",
                        "write start + (stop - start) * np.linspace(0.0, 1.0, num)[:, None]")
    start, stop = ends
    div = num - 1 if endpoint else num
    steps = b.constant(made(np.arange(num, dtype=np.float64)))
    if div > 0:
        step = b.emit("divide", (b.emit("subtract", (stop, start)), float(div)))
        y = b.emit("add", (b.emit("multiply", (steps, step)), start))
    else:   # num == 1 with the end point: NumPy's y * delta + start, the start alone
        y = b.emit("add", (b.emit("multiply", (steps, 0.0)), start))
    if endpoint and num > 1:
        y = b.setitem(y, stop, (), (("i", num - 1),))
    return y


def _arrays(x):
    if isinstance(x, (list, tuple)):
        return [a for item in x for a in _arrays(item)]
    return [x] if isinstance(x, np.ndarray) else []


def _triangle(name):
    """``np.tril``/``np.triu``: ``np.where(mask, m, 0)``, the mask made while compiling, so that
    ``m`` is read when the code runs: a traced ``m`` has a gradient, and a module-level array
    (or attribute) changed in place is seen as it is. Of a constant the function made, the
    result is itself such a constant."""
    fold = _folded(getattr(np, name))

    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("m", "k"))
        m, k = p["m"], static(p.get("k", 0), "`k=`")
        if not isinstance(m, Value) or (m in b.graph.consts
                                        and made_while_compiling(b.graph.consts[m])):
            return fold(b, [m, k], {})
        shape = m.aval.known_shape
        rows, cols = (shape[-1], shape[-1]) if len(shape) < 2 else shape[-2:]
        mask = (np.tri(rows, cols, k, dtype=bool) if name == "tril"
                else ~np.tri(rows, cols, k - 1, dtype=bool))
        return b.emit("where", (b.constant(made(mask), f"{name}_mask"), m, 0))
    return handler


def known(b, x):
    """``x`` with the constants the function reads (module-level arrays) as their arrays."""
    if isinstance(x, (list, tuple)):
        return type(x)(known(b, v) for v in x)
    return b.graph.consts.get(x, x) if isinstance(x, Value) else x


FUNCTIONS = {
    np.zeros_like: _like("zeros_like"), np.ones_like: _like("ones_like"),
    np.zeros: _creation("zeros"), np.ones: _creation("ones"), np.full: _full,
    np.array: _array(copy=True), np.asarray: _array(copy=False),
    builtins.float: _float,
    **{t: _scalar_type(t) for t in (np.float64, np.float32, np.float16)},
}
FUNCTIONS.update({getattr(math, n): _math(n) for n in MATH_PRIMS})
FUNCTIONS.update({getattr(np, n): _folded(getattr(np, n)) for n in CONSTANT_ONLY})
FUNCTIONS[np.linspace] = _linspace
FUNCTIONS.update({np.tril: _triangle("tril"), np.triu: _triangle("triu")})
METHODS = {"astype": _astype, "item": _item}
