"""What a call means: NumPy, ``math`` and builtin callables and array methods mapped to primitives.

Each handler takes ``(b, args, kwargs)`` (a Builder and lowered arguments, Values or static
Python objects) and returns the lowered result. Invariant: a callable missing here is rejected
by the lowering with a located error, never silently run.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from ..ir import Value
from ..ir.primitives import MATH_PRIMS

ELEMENTWISE = ["add", "subtract", "multiply", "divide", "power", "negative", "exp", "log",
               "log1p", "expm1", "sqrt", "square", "sin", "cos", "tan", "tanh", "arctan",
               "arcsin", "arccos", "sinh", "cosh", "abs", "sign", "maximum", "minimum", "where",
               "clip", "greater", "greater_equal", "less", "less_equal", "equal", "not_equal",
               "logical_and", "logical_or", "logical_not", "reciprocal"]


class CallError(Exception):
    """A call the compiler understands but whose arguments it cannot compile."""

    def __init__(self, message, hint=""):
        super().__init__(message)
        self.hint = hint


def static(x, what):
    """``x`` must be known when compiling (an axis, a shape): not a traced value."""
    if isinstance(x, Value):
        raise CallError(f"{what} must be known when compiling, not computed from the inputs",
                        "use a Python constant, or a shape attribute such as x.shape[0]")
    return x


def _prim(name, nargs=None, params=()):
    """A handler for a primitive taking positional inputs and static keyword parameters."""
    def handler(b, args, kwargs):
        extra = list(args[nargs:]) if nargs is not None else []
        inputs = args[:nargs] if nargs is not None else args
        p = {}
        for key, default in params:
            val = extra.pop(0) if extra else kwargs.pop(key, default)
            if val is not default:
                p[key] = static(_axis(val) if key == "axis" else val, f"`{key}=`")
        if kwargs or extra:
            raise CallError(f"unsupported arguments to np.{name}: "
                            f"{', '.join(kwargs) or len(extra)}")
        return b.emit(name, inputs, p)
    return handler


def _axis(val):
    return tuple(val) if isinstance(val, list) else val


_REDUCE = (("axis", None), ("keepdims", False))


def _seq(name):
    def handler(b, args, kwargs):
        (seq, *rest) = args
        axis = static(rest[0] if rest else kwargs.pop("axis", 0), "`axis=`")
        return getattr(b, name)(list(seq), axis=axis)
    return handler


def _reshape(b, args, kwargs):
    x, *shape = args
    shape = kwargs.pop("newshape", kwargs.pop("shape", shape[0] if len(shape) == 1 else shape))
    shape = static(tuple(shape) if isinstance(shape, (list, tuple)) else (shape,), "the shape")
    return b.emit("reshape", (x,), {"shape": shape})


def _transpose(b, args, kwargs):
    x, *axes = args
    axes = kwargs.pop("axes", axes[0] if len(axes) == 1 else (axes or None))
    params = {} if axes is None else {"axes": tuple(static(axes, "the axes"))}
    return b.emit("transpose", (x,), params)


def _creation(name):
    def handler(b, args, kwargs):
        shape = static(args[0] if args else kwargs.pop("shape"), "the shape")
        params = {"shape": tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)}
        if name == "full":
            fill = args[1] if len(args) > 1 else kwargs.pop("fill_value")
            dtype = kwargs.pop("dtype", None)
            params["dtype"] = np.dtype(dtype).name if dtype else None
            return b.emit("full", (fill,), params)
        params["dtype"] = np.dtype(kwargs.pop("dtype", float)).name
        return b.emit(name, (), params)
    return handler


def _like(name):
    def handler(b, args, kwargs):
        dtype = kwargs.pop("dtype", None)
        return b.emit(name, args[:1], {"dtype": np.dtype(dtype).name} if dtype else {})
    return handler


def _dot(b, args, kwargs):
    x, y = args
    nds = [getattr(v, "ndim", 0) if isinstance(v, Value) else np.ndim(v) for v in (x, y)]
    if 0 in nds:
        return b.emit("multiply", (x, y))
    if max(nds) > 2:
        raise CallError("np.dot of arrays with more than 2 dimensions is not supported",
                        "use np.matmul (or @), which broadcasts over leading axes")
    return b.emit("dot", (x, y))


def _math(name):
    prim = "arctan" if name == "atan" else name

    def handler(b, args, kwargs):
        (x,) = args
        if isinstance(x, Value) and not x.aval.is_scalar:
            raise CallError(f"math.{name} takes a Python number, but this is an array",
                            f"use np.{prim}, which works elementwise on arrays")
        return b.emit(prim, (x,), {"py": name})
    return handler


def _float(b, args, kwargs):
    (x,) = args
    return b.emit("to_float", (x,)) if isinstance(x, Value) else float(x)


def _len(b, args, kwargs):
    (x,) = args
    return x.shape[0] if isinstance(x, Value) else len(x)


FUNCTIONS = {getattr(np, n): _prim(n) for n in ELEMENTWISE}
FUNCTIONS.update({np.absolute: _prim("abs"), np.power: _prim("power"), np.clip: _prim("clip"),
                  np.where: _prim("where"), np.arctan: _prim("arctan")})
FUNCTIONS.update({getattr(np, n): _prim(n, 1, _REDUCE) for n in ["sum", "mean", "prod"]})
FUNCTIONS.update({np.max: _prim("max", 1, _REDUCE), np.amax: _prim("max", 1, _REDUCE),
                  np.min: _prim("min", 1, _REDUCE), np.amin: _prim("min", 1, _REDUCE)})
FUNCTIONS.update({
    np.matmul: _prim("matmul"), np.dot: _dot, np.outer: _prim("outer"),
    np.transpose: _transpose, np.reshape: _reshape,
    np.expand_dims: _prim("expand_dims", 1, (("axis", None),)),
    np.squeeze: _prim("squeeze", 1, (("axis", None),)),
    np.broadcast_to: _prim("broadcast_to", 1, (("shape", None),)),
    np.concatenate: _seq("concatenate"), np.stack: _seq("stack"),
    np.zeros_like: _like("zeros_like"), np.ones_like: _like("ones_like"),
    np.zeros: _creation("zeros"), np.ones: _creation("ones"), np.full: _creation("full"),
    np.copy: _prim("copy"),
    builtins.float: _float, builtins.len: _len, builtins.abs: _prim("abs"),
})
FUNCTIONS.update({getattr(math, n): _math(n) for n in MATH_PRIMS})


def _method_reduce(name):
    h = _prim(name, 1, _REDUCE)
    return lambda b, x, args, kwargs: h(b, [x, *args], kwargs)


def _astype(b, x, args, kwargs):
    dtype = np.dtype(static(args[0] if args else kwargs.pop("dtype"), "the dtype")).name
    return b.emit("astype", (x,), {"dtype": dtype})


METHODS = {
    **{n: _method_reduce(n) for n in ["sum", "mean", "prod", "max", "min"]},
    "reshape": lambda b, x, args, kwargs: _reshape(b, [x, *args], kwargs),
    "transpose": lambda b, x, args, kwargs: _transpose(b, [x, *args], kwargs),
    "dot": lambda b, x, args, kwargs: _dot(b, [x, *args], kwargs),
    "copy": lambda b, x, args, kwargs: b.emit("copy", (x,)),
    "astype": _astype,
    "squeeze": lambda b, x, args, kwargs: FUNCTIONS[np.squeeze](b, [x, *args], kwargs),
    "clip": lambda b, x, args, kwargs: FUNCTIONS[np.clip](b, [x, *args], kwargs),
}

ATTRIBUTES = {
    "T": lambda b, x: b.emit("transpose", (x,)),
    "shape": lambda b, x: b.shape(x),
    "ndim": lambda b, x: b.ndim(x),
    "size": lambda b, x: b.size(x),
}
