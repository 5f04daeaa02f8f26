"""What a call means: NumPy, ``math`` and builtin callables and array methods mapped to primitives.

Each handler takes ``(b, args, kwargs)`` (a Builder and lowered arguments, Values or static
Python objects), binds them the way NumPy's own signature would, pops the keywords it
understands and returns the lowered result. Invariants: a callable missing here is rejected by
the lowering with a located error, never silently run; a keyword a handler leaves in
``kwargs`` is reported by the caller (:func:`call`), never ignored.
"""

from __future__ import annotations

import builtins
import math
import weakref
from typing import NamedTuple

import numpy as np

from ..ir import Value
from ..ir.primitives import MATH_PRIMS, PRIMS

ELEMENTWISE = ["add", "subtract", "multiply", "divide", "power", "negative", "exp", "log",
               "log1p", "expm1", "sqrt", "square", "sin", "cos", "tan", "tanh", "arctan",
               "arcsin", "arccos", "sinh", "cosh", "abs", "sign", "maximum", "minimum", "where",
               "greater", "greater_equal", "less", "less_equal", "equal", "not_equal",
               "logical_and", "logical_or", "logical_not", "reciprocal", "remainder",
               "floor_divide", "isfinite", "isnan", "isinf"]


class CallError(Exception):
    """A call the compiler understands but whose arguments it cannot compile."""

    def __init__(self, message, hint=""):
        super().__init__(message)
        self.hint = hint


class Method(NamedTuple):
    """An array method looked up but not yet called: ``x.sum`` is ``Method("sum", x)``."""

    name: str
    base: Value


def call(handler, b, args, kwargs):
    """Run ``handler``; a keyword it did not take is an error, never silently dropped."""
    kwargs = dict(kwargs)
    out = handler(b, list(args), kwargs)
    if kwargs:
        raise CallError(f"got an unsupported keyword argument `{next(iter(kwargs))}=`",
                        "adcompiler takes the arguments that change values (axis=, keepdims=, "
                        "dtype=...), not out=, where= or order=")
    return out


def static(x, what):
    """``x`` must be known when compiling (an axis, a shape): not a traced value."""
    if isinstance(x, (tuple, list)):
        for item in x:
            static(item, what)
    elif isinstance(x, Value):
        raise CallError(f"needs {what} known when compiling, not computed from the inputs",
                        "use a Python constant, or a shape attribute such as x.shape[0]")
    return x


def bind(args, kwargs, names, required=1):
    """``{name: value}`` of positional ``args``, then keywords, by NumPy's parameter ``names``;
    the first ``required`` names must be given."""
    if len(args) > len(names):
        raise CallError(f"takes at most {len(names)} positional arguments here, "
                        f"but {len(args)} were given", _SIGNATURE_HINT)
    out = dict(zip(names, args))
    for name in names:
        if name in kwargs:
            if name in out:
                raise CallError(f"got multiple values for argument `{name}`", _SIGNATURE_HINT)
            out[name] = kwargs.pop(name)
    missing = [n for n in names[:required] if n not in out]
    if missing:
        raise CallError(f"is missing the required argument `{missing[0]}`", _SIGNATURE_HINT)
    return out


_SIGNATURE_HINT = "call it as you would call NumPy's function of that name"


def _positional(args, n):
    if len(args) != n:
        raise CallError(f"takes {n} positional argument{'s' * (n != 1)} here, "
                        f"but {len(args)} {'was' if len(args) == 1 else 'were'} given",
                        "out= and other extra arguments are not supported")
    return args


def _axis(val):
    val = static(val, "`axis=`")
    return tuple(val) if isinstance(val, list) else val


def _shape(val):
    val = static(val, "the shape")
    return tuple(val) if isinstance(val, (list, tuple)) else (val,)


def _dtype(val):
    return np.dtype(static(val, "the dtype")).name


# ---- elementwise ----------------------------------------------------------------------------
def _ufunc(name):
    """``np.<name>(...)``: a NumPy result even for Python numbers (np.add(2.0, 3.0) is an
    np.float64, where ``2.0 + 3.0`` is a float)."""
    def handler(b, args, kwargs):
        out = b.emit(name, _positional(args, PRIMS[name].arity))
        if isinstance(out, Value) and out.aval.is_scalar:
            out = b.emit("asarray", (out,))
        return out
    return handler


def _int(b, args, kwargs):
    """``int(x)``: a traced 0-d value becomes a traced Python int (a trip count, an index)."""
    (x,) = _positional(args, 1)
    if not isinstance(x, Value):
        return int(x)
    if x.aval.known_shape != ():
        raise CallError("of an array: only a 0-d value converts to int", "reduce it first")
    return b.emit("to_int", (x,))


def _builtin_abs(b, args, kwargs):
    """``abs(x)``: a Python number for a Python number (math.fabs), else np.abs."""
    (x,) = _positional(args, 1)
    if isinstance(x, Value) and x.aval.kind == "float":
        return b.emit("abs", (x,), {"py": "fabs"})
    return b.emit("abs", (x,)) if isinstance(x, Value) else abs(x)


def _clip(b, args, kwargs):
    """np.clip(x, lo, hi) or x.clip(lo, hi); a None bound clips on one side only."""
    p = bind(args, kwargs, ("a", "a_min", "a_max"))
    lo = p.get("a_min", kwargs.pop("min", None))
    hi = p.get("a_max", kwargs.pop("max", None))
    if lo is None and hi is None:
        return b.emit("copy", (p["a"],))
    if lo is None:
        return b.emit("minimum", (p["a"], hi))
    if hi is None:
        return b.emit("maximum", (p["a"], lo))
    return b.emit("clip", (p["a"], lo, hi))


def _where(b, args, kwargs):
    if len(args) == 1:
        raise CallError("with one argument (the indices of true entries) is not supported: "
                        "its shape depends on the data", "use np.where(cond, a, b)")
    return b.emit("where", _positional(args, 3))


# ---- reductions -----------------------------------------------------------------------------
_REDUCE_PARAMS = {"sum": ("a", "axis", "dtype", "out", "keepdims"),
                  "mean": ("a", "axis", "dtype", "out", "keepdims"),
                  "prod": ("a", "axis", "dtype", "out", "keepdims"),
                  "max": ("a", "axis", "out", "keepdims"), "min": ("a", "axis", "out", "keepdims"),
                  # bool and integer results, no gradient (as comparisons): still reductions
                  "all": ("a", "axis", "out", "keepdims"), "any": ("a", "axis", "out", "keepdims"),
                  "argmax": ("a", "axis", "out", "keepdims"),
                  "argmin": ("a", "axis", "out", "keepdims")}


def _reduce(name):
    def handler(b, args, kwargs):
        p = bind(args, kwargs, _REDUCE_PARAMS[name])
        if p.get("dtype") is not None or p.get("out") is not None:
            raise CallError("does not support `dtype=` or `out=` here",
                            "cast first with .astype(...), and use the returned value")
        params = {}
        if p.get("axis") is not None:
            params["axis"] = _axis(p["axis"])
            if name.startswith("arg") and not isinstance(params["axis"], (int, np.integer)):
                raise CallError("takes one axis (an int) or None", "NumPy takes no tuple here")
        if static(p.get("keepdims", False), "`keepdims=`"):
            params["keepdims"] = True
        return b.emit(name, (p["a"],), params)
    return handler


def _argsort(b, args, kwargs):
    """np.argsort(a, axis=-1, kind=None) and x.argsort(...): integer positions, no gradient.
    ``axis=None`` sorts the flattened array, as NumPy does."""
    p = bind(args, kwargs, ("a", "axis", "kind", "order"))
    if p.get("order") is not None:
        raise CallError("with `order=` (fields of a structured array) is not supported",
                        "sort plain arrays of numbers")
    axis = _axis(p.get("axis", -1))
    kind = "stable" if static(kwargs.pop("stable", None), "`stable=`") else p.get("kind")
    x = p["a"]
    if axis is None:
        x, axis = _reshape_to(b, x, -1, {}), -1
    if not isinstance(axis, (int, np.integer)):
        raise CallError("takes one axis (an int) or None", "NumPy takes no tuple here")
    params = {} if axis == -1 else {"axis": int(axis)}
    if kind is not None:
        params["kind"] = static(kind, "`kind=`")
    return b.emit("argsort", (x,), params)


# ---- linear algebra -------------------------------------------------------------------------
def _dot(b, args, kwargs):
    x, y = _positional(args, 2)
    nds = [v.ndim if isinstance(v, Value) else np.ndim(v) for v in (x, y)]
    if 0 in nds:
        out = b.emit("multiply", (x, y))
        if isinstance(out, Value) and out.aval.is_scalar:
            out = b.emit("asarray", (out,))  # np.dot of two floats is an np.float64
        return out
    if max(nds) > 2:
        raise CallError("of arrays with more than 2 dimensions is not supported",
                        "use np.matmul (or @), which broadcasts over leading axes")
    return b.emit("dot", (x, y))


def _binary(name):
    def handler(b, args, kwargs):
        return b.emit(name, _positional(args, 2))
    return handler


# ---- shapes ---------------------------------------------------------------------------------
def _reshape_to(b, x, shape, kwargs):
    if kwargs.pop("order", "C") != "C":
        raise CallError("supports only order='C'", "reshape in C order")
    return b.emit("reshape", (x,), {"shape": _shape(shape)})


def _reshape(b, args, kwargs):
    """np.reshape(x, shape)."""
    if "newshape" in kwargs:
        kwargs["shape"] = kwargs.pop("newshape")
    p = bind(args, kwargs, ("a", "shape"), required=2)
    return _reshape_to(b, p["a"], p["shape"], kwargs)


def _method_reshape(b, x, args, kwargs):
    """x.reshape(shape) or x.reshape(*shape)."""
    shape = args[0] if len(args) == 1 else tuple(args)
    if "shape" in kwargs:
        shape = kwargs.pop("shape")
    return _reshape_to(b, x, shape, kwargs)


def _transpose_by(b, x, axes):
    if axes is None:
        return b.emit("transpose", (x,))
    return b.emit("transpose", (x,), {"axes": _shape(static(axes, "the axes"))})


def _transpose(b, args, kwargs):
    """np.transpose(x, axes=None)."""
    p = bind(args, kwargs, ("a", "axes"))
    return _transpose_by(b, p["a"], p.get("axes"))


def _method_transpose(b, x, args, kwargs):
    """x.transpose(), x.transpose(axes) or x.transpose(*axes)."""
    axes = args[0] if len(args) == 1 else (tuple(args) or None)
    return _transpose_by(b, x, axes)


def _with_axis(name, required):
    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("a", "axis"), required=2 if required else 1)
        params = {} if p.get("axis") is None else {"axis": _axis(p["axis"])}
        return b.emit(name, (p["a"],), params)
    return handler


def _broadcast_to(b, args, kwargs):
    p = bind(args, kwargs, ("array", "shape"), required=2)
    return b.emit("broadcast_to", (p["array"],), {"shape": _shape(p["shape"])})


def _seq(name):
    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("arrays", "axis"))
        if not isinstance(p["arrays"], (tuple, list)):
            raise CallError("takes a list or tuple of arrays here",
                            f"write np.{name}([a, b, ...])")
        axis = p.get("axis", 0)
        if axis is None:
            raise CallError("with axis=None is not supported", "flatten with .reshape(-1)")
        return getattr(b, name)(list(p["arrays"]), axis=_axis(axis))
    return handler


# ---- creation and conversion ----------------------------------------------------------------
def _creation(name):
    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("shape", "dtype"))
        params = {"shape": _shape(p["shape"]), "dtype": _dtype(p.get("dtype", float))}
        return b.emit(name, (), params)
    return handler


def _full(b, args, kwargs):
    p = bind(args, kwargs, ("shape", "fill_value", "dtype"), required=2)
    dtype = _dtype(p["dtype"]) if p.get("dtype") is not None else None
    return b.emit("full", (p["fill_value"],), {"shape": _shape(p["shape"]), "dtype": dtype})


def _like(name):
    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("a", "dtype"))
        dtype = p.get("dtype")
        return b.emit(name, (p["a"],), {"dtype": _dtype(dtype)} if dtype is not None else {})
    return handler


def _astype(b, x, args, kwargs):
    kwargs.pop("copy", None)  # the result is always a new array to the compiler
    return b.emit("astype", (x,), {"dtype": _dtype(bind(args, kwargs, ("dtype",))["dtype"])})


def _math(name):
    prim = "arctan" if name == "atan" else name

    def handler(b, args, kwargs):
        (x,) = _positional(args, 1)
        if isinstance(x, Value) and not x.aval.is_scalar:
            if x.aval.kind != "array" or x.aval.known_shape != ():
                raise CallError("takes a Python number, but this is an array",
                                f"use np.{prim}, which works elementwise on arrays")
            x = b.emit("to_float", (x,))  # a 0-d array or NumPy scalar, as math converts it
        return b.emit(prim, (x,), {"py": name})
    return handler


def _float(b, args, kwargs):
    (x,) = _positional(args, 1)
    return b.emit("to_float", (x,)) if isinstance(x, Value) else float(x)


def _array(copy):
    """``np.array``/``np.asarray``: of literals, a constant made while compiling; of a traced
    array, a copy (np.array) or the array itself (np.asarray)."""
    def handler(b, args, kwargs):
        (x,) = _positional(args, 1)
        dtype = kwargs.pop("dtype", None)
        if kwargs:
            raise CallError(f"unsupported keyword {next(iter(kwargs))}=", "pass the data only")
        if not _contains_value(x):
            return _made(np.array(x, dtype=dtype))
        if not isinstance(x, Value):
            raise CallError("np.array of a list of traced values is not supported",
                            "use np.stack([...])")
        if dtype is not None and np.dtype(dtype).name != x.aval.dtype:
            return b.emit("astype", (x,), {"dtype": np.dtype(dtype).name})
        return b.emit("copy", (x,)) if copy else x
    return handler


def _scalar_type(dtype):
    """``np.float64(v)``, ``np.float32(v)``: a 0-d array of that dtype, which NumPy 2 promotes
    as it does the scalar (not weakly, as a Python float); of an array, ``astype``."""
    name = np.dtype(dtype).name

    def handler(b, args, kwargs):
        (x,) = _positional(args, 1)
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


def _made(array):
    if isinstance(array, np.ndarray):
        _MADE[id(array)] = array
    return array


def made_while_compiling(array) -> bool:
    """Whether ``array`` is one the function itself made while compiling."""
    return _MADE.get(id(array)) is array


def _contains_value(x) -> bool:
    if isinstance(x, (list, tuple)):
        return any(_contains_value(v) for v in x)
    return isinstance(x, Value)


# Array constructors computed while compiling when every argument is known then (Python numbers,
# shapes, constant arrays): pure functions of their arguments, so the result is a constant.
CONSTANT_ONLY = ("arange", "linspace", "logspace", "geomspace", "eye", "identity", "diag",
                 "diagflat", "tri", "triu", "tril", "vander", "indices", "hanning", "hamming",
                 "blackman", "bartlett")


def _folded(fn):
    def handler(b, args, kwargs):
        args = [_known(b, a) for a in args]
        kwargs = {k: _known(b, v) for k, v in kwargs.items()}
        if _contains_value(args) or _contains_value(list(kwargs.values())):
            raise CallError("of an array the function computes has no derivative rule in "
                            "adcompiler", "pass it Python numbers, shapes or arrays made outside "
                            "the function (it is then computed once, while compiling)")
        try:
            return _made(fn(*args, **kwargs))
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise CallError(f"raised {type(exc).__name__}: {exc}", "NumPy raises this too") \
                from None
    return handler


def _known(b, x):
    """``x`` with the constants the function reads (module-level arrays) as their arrays."""
    if isinstance(x, (list, tuple)):
        return type(x)(_known(b, v) for v in x)
    return b.graph.consts.get(x, x) if isinstance(x, Value) else x


def _ravel(b, args, kwargs):
    """np.ravel(x): ``x.reshape(-1)``, a view to the compiler. NumPy copies a non-contiguous
    array instead; an update through either name is refused as sharing memory, so no program
    gets a different answer from the two."""
    p = bind(args, kwargs, ("a", "order"))
    return _reshape_to(b, p["a"], -1, {"order": p.get("order", "C")})


def _method_view(b, x, args, kwargs):
    """x.view(): the same array under another name (updates through either show in both)."""
    if args or kwargs:
        raise CallError("with a dtype or type reinterprets memory, which has no derivative",
                        "use .astype(dtype) to convert values, or .view() with no argument")
    return x


def _len(b, args, kwargs):
    (x,) = _positional(args, 1)
    if not isinstance(x, Value):
        return len(x)
    if x.aval.kind == "list":
        raise CallError("of a list built by a while loop is known only when it runs",
                        "count the iterations in the loop (n = n + 1)")
    if not x.shape:
        raise CallError(f"of a scalar: a {x.aval} value has no length",
                        "use len() on arrays with at least one dimension")
    return x.shape[0]


FUNCTIONS = {getattr(np, n): _ufunc(n) for n in ELEMENTWISE}
FUNCTIONS.update({np.absolute: _ufunc("abs"), np.mod: _ufunc("remainder"),  # (= np.remainder)
                  builtins.abs: _builtin_abs, builtins.int: _int,
                  np.clip: _clip, np.argsort: _argsort,
                  np.where: _where})
FUNCTIONS.update({getattr(np, n): _reduce(n) for n in _REDUCE_PARAMS})
FUNCTIONS.update({np.amax: _reduce("max"), np.amin: _reduce("min")})
FUNCTIONS.update({
    np.matmul: _binary("matmul"), np.dot: _dot, np.outer: _binary("outer"),
    np.transpose: _transpose, np.reshape: _reshape, np.ravel: _ravel,
    np.expand_dims: _with_axis("expand_dims", True), np.squeeze: _with_axis("squeeze", False),
    np.broadcast_to: _broadcast_to, np.concatenate: _seq("concatenate"), np.stack: _seq("stack"),
    np.zeros_like: _like("zeros_like"), np.ones_like: _like("ones_like"),
    np.zeros: _creation("zeros"), np.ones: _creation("ones"), np.full: _full,
    np.copy: lambda b, args, kwargs: b.emit("copy", _positional(args, 1)),
    np.array: _array(copy=True), np.asarray: _array(copy=False),
    builtins.float: _float, builtins.len: _len,
    **{t: _scalar_type(t) for t in (np.float64, np.float32, np.float16)},
})
FUNCTIONS.update({getattr(math, n): _math(n) for n in MATH_PRIMS})
FUNCTIONS.update({getattr(np, n): _folded(getattr(np, n)) for n in CONSTANT_ONLY})


def register_call(fn, handler):
    """Lower calls of ``fn`` (a hashable callable) with ``handler(b, args, kwargs)``: how
    ``adcompiler.stop_gradient`` and ``custom_vjp`` functions reach the compiler."""
    FUNCTIONS[fn] = handler


def _as_method(function):
    """A method handler ``(b, x, args, kwargs)`` from a function handler taking ``x`` first."""
    return lambda b, x, args, kwargs: function(b, [x, *args], kwargs)


METHODS = {
    **{n: _as_method(_reduce(n)) for n in _REDUCE_PARAMS},
    "reshape": _method_reshape,
    "ravel": _as_method(_ravel),
    "flatten": lambda b, x, args, kwargs: b.emit("copy", (_ravel(b, [x, *args], kwargs),)),
    "view": _method_view,
    "transpose": _method_transpose,
    "dot": _as_method(_dot),
    "copy": lambda b, x, args, kwargs: b.emit("copy", (x, *_positional(args, 0))),
    "astype": _astype,
    "squeeze": _as_method(FUNCTIONS[np.squeeze]),
    "clip": _as_method(_clip),
    "argsort": _as_method(_argsort),
}

ATTRIBUTES = {
    "T": lambda b, x: b.emit("transpose", (x,)),
    "shape": lambda b, x: b.shape(x),
    "ndim": lambda b, x: b.ndim(x),
    "size": lambda b, x: b.size(x),
}
