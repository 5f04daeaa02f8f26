"""What a call means: NumPy, ``math`` and builtin callables and array methods mapped to primitives.

Each handler takes ``(b, args, kwargs)`` (a Builder and lowered arguments, Values or static
Python objects), binds them the way NumPy's own signature would, pops the keywords it
understands and returns the lowered result. Invariants: a callable missing here is rejected by
the lowering with a located error, never silently run; a keyword a handler leaves in
``kwargs`` is reported by the caller (:func:`adcompiler.frontend.library.binding.call`), never
ignored. Array creation and conversion live in :mod:`adcompiler.frontend.library.creation`.
"""

from __future__ import annotations

import builtins
import math
from typing import NamedTuple

import numpy as np

from ..ir import Value
from ..ir.primitives import ELEMENTWISE as ELEMENTWISE_ROWS
from ..ir.primitives import PRIMS
from .library import (compositions, creation, diagonal, einsum, norms, products, scans,
                      signals, solvers, sorting, splits, statistics)
from .library import comparisons, positions, real_parts, rotations
from .library import factorizations
from .library import aliases
from .library.binding import CallError, axis_arg, bind, positional, shape_arg, static

# np.<name> for every elementwise primitive that user code calls so (ir.primitives rows;
# SciPy's are looked up where first called: frontend.library.special)
ELEMENTWISE = [row.name for row in ELEMENTWISE_ROWS if row.np_call and row.module == "numpy"]


class Method(NamedTuple):
    """An array method looked up but not yet called: ``x.sum`` is ``Method("sum", x)``."""

    name: str
    base: Value


# ---- elementwise ----------------------------------------------------------------------------
def _ufunc(name):
    """``np.<name>(...)``: a NumPy result even for Python numbers (np.add(2.0, 3.0) is an
    np.float64, where ``2.0 + 3.0`` is a float)."""
    def handler(b, args, kwargs):
        out = b.emit(name, positional(args, PRIMS[name].arity))
        if isinstance(out, Value) and out.aval.is_scalar:
            out = b.emit("asarray", (out,))
        return out
    return handler


def _int(b, args, kwargs):
    """``int(x)``: a traced 0-d value becomes a traced Python int (a trip count, an index)."""
    (x,) = positional(args, 1)
    if not isinstance(x, Value):
        return int(x)
    if x.aval.known_shape != ():
        raise CallError("of an array: only a 0-d value converts to int", "reduce it first")
    return b.emit("to_int", (x,))


def _builtin_abs(b, args, kwargs):
    """``abs(x)``: a Python number for a Python number (math.fabs), else np.abs."""
    (x,) = positional(args, 1)
    if isinstance(x, Value) and x.aval.kind == "float":
        return b.emit("abs", (x,), {"py": "fabs"})
    return b.emit("abs", (x,)) if isinstance(x, Value) else abs(x)


def _builtin_extreme(name):
    """``max(a, b, ...)`` / ``min(...)`` of traced numbers: a chain of np.maximum (np.minimum),
    whose rule splits the gradient evenly at a tie (as jnp.maximum and torch.maximum; Python's
    max on PyTorch tensors gives it all to the first). A Python float (int) when every
    argument is one, as Python's. ``max(v)`` of a traced 1-D array is np.max(v); of one item
    (``max(x[i] for i in range(1))``) it is that item, even an array, as Python compares none."""
    pyfn, prim = getattr(builtins, name), {"max": "maximum", "min": "minimum"}[name]

    def handler(b, args, kwargs):
        if not any(isinstance(x, Value) for x in [*args, *_items(args), *kwargs.values()]):
            given = dict(kwargs)
            kwargs.clear()
            return pyfn(*args, **given)  # known while compiling: Python's own
        if kwargs:
            raise CallError("with `key=` or `default=` is not supported on traced values",
                            f"compute the keys first, or use np.{name}/np.arg{name}")
        if len(args) == 1 and isinstance(args[0], Value):
            return _extreme_of_array(b, name, args[0])
        items = _items(args) or list(args)
        if len(items) > 1 and not all(_is_number(x) for x in items):  # one: Python's is it
            raise CallError("of arrays compares them with `>`, whose truth value is ambiguous",
                            f"use np.{prim}(a, b) for the elementwise {name}")
        out = items[0]
        for x in items[1:]:
            out = b.emit(prim, (out, x))
        kinds = {x.aval.kind if isinstance(x, Value) else type(x).__name__ for x in items}
        if kinds <= {"float", "int", "bool"}:  # Python numbers only: a Python number
            return b.emit("to_float" if "float" in kinds else "to_int", (out,))
        return out
    return handler


def _items(args) -> list:
    """The items of ``max([a, b])``'s one list or tuple argument, else []."""
    return list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else []


def _is_number(x) -> bool:
    return x.aval.known_shape == () if isinstance(x, Value) else np.ndim(x) == 0


def _extreme_of_array(b, name, x):
    if x.aval.kind == "list":
        raise CallError("of a list built by a while loop is not supported",
                        f"keep a running {name} in the loop")
    if x.aval.ndim == 1:  # Python iterates the entries
        return b.emit(name, (x,))
    what = "a 0-d value, which is not iterable" if x.aval.known_shape == () else (
        "an array of more than one dimension: Python compares its rows")
    raise CallError(f"of {what}", f"use np.{name}(x) (with axis= for rows)")


def _pow(b, args, kwargs):
    """builtin ``pow(base, exp)``: ``base ** exp`` (Python's, as the operator); with a modulus
    only of numbers known while compiling."""
    p = bind(args, kwargs, ("base", "exp", "mod"), required=2)
    base, exp, mod = (p.get(k) for k in ("base", "exp", "mod"))
    if not any(isinstance(v, Value) for v in (base, exp, mod)):
        return builtins.pow(base, exp, mod)
    if mod is not None:
        raise CallError("with a modulus of traced values is not supported (a modular power "
                        "is integer arithmetic)", "write (base ** exp) % mod")
    base, exp = (v.item() if isinstance(v, np.generic) else v for v in (base, exp))
    return b.emit("power", (base, exp))


def _clip(b, args, kwargs):
    """np.clip(x, lo, hi) or x.clip(lo, hi); a None bound clips on one side only."""
    p = bind(args, kwargs, ("a", "a_min", "a_max"))
    lo = p.get("a_min", kwargs.pop("min", None))
    hi = p.get("a_max", kwargs.pop("max", None))
    if lo is None and hi is None:
        return b.emit("copy", (p["a"],))
    # A missing bound is an infinite one, not minimum/maximum: those split the gradient at a
    # tie, while clip gives x all of it at the bound (as the tape and PyTorch's clamp do).
    lo = -math.inf if lo is None else lo
    hi = math.inf if hi is None else hi
    return b.emit("clip", (p["a"], lo, hi))


def _where(b, args, kwargs):
    if len(args) == 1:
        raise CallError("with one argument (the indices of true entries) is not supported: "
                        "its shape depends on the data", "use np.where(cond, a, b)")
    return b.emit("where", positional(args, 3))


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
            params["axis"] = axis_arg(p["axis"])
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
    axis = axis_arg(p.get("axis", -1))
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
    x, y = positional(args, 2)
    nds = [v.ndim if isinstance(v, Value) else np.ndim(v) for v in (x, y)]
    if 0 in nds:
        out = b.emit("multiply", (x, y))
        if isinstance(out, Value) and out.aval.is_scalar:
            out = b.emit("asarray", (out,))  # np.dot of two floats is an np.float64
        return out
    if max(nds) > 2:   # the last axis of x with the second-to-last of y: an einsum
        return products.dot_nd(b, x, y)
    return b.emit("dot", (x, y))


def _binary(name):
    def handler(b, args, kwargs):
        return b.emit(name, positional(args, 2))
    return handler


# ---- shapes ---------------------------------------------------------------------------------
def _reshape_to(b, x, shape, kwargs):
    if kwargs.pop("order", "C") != "C":
        raise CallError("supports only order='C'", "reshape in C order")
    return b.emit("reshape", (x,), {"shape": shape_arg(shape)})


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
    return b.emit("transpose", (x,), {"axes": shape_arg(static(axes, "the axes"))})


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
        params = {} if p.get("axis") is None else {"axis": axis_arg(p["axis"])}
        return b.emit(name, (p["a"],), params)
    return handler


def _broadcast_to(b, args, kwargs):
    p = bind(args, kwargs, ("array", "shape"), required=2)
    return b.emit("broadcast_to", (p["array"],), {"shape": shape_arg(p["shape"])})


def _seq(name):
    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("arrays", "axis"))
        if not isinstance(p["arrays"], (tuple, list)):
            raise CallError("takes a list or tuple of arrays here",
                            f"write np.{name}([a, b, ...])")
        axis = p.get("axis", 0)
        if axis is None:
            raise CallError("with axis=None is not supported", "flatten with .reshape(-1)")
        return getattr(b, name)(list(p["arrays"]), axis=axis_arg(axis))
    return handler


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
    (x,) = positional(args, 1)
    if not isinstance(x, Value):
        return len(x)
    if x.aval.kind == "list":
        raise CallError("of a list built by a while loop is known only when it runs",
                        "count the iterations in the loop (n = n + 1)")
    if not x.shape:
        raise CallError(f"of a scalar: a {x.aval} value has no length",
                        "use len() on arrays with at least one dimension")
    return x.shape[0]


def _issubdtype(b, args, kwargs):
    """``np.issubdtype(x.dtype, np.floating)``: decided while compiling (``x.dtype`` is)."""
    a, kind = positional(args, 2)
    if isinstance(a, Value) or isinstance(kind, Value):
        raise CallError("takes dtypes (x.dtype), not arrays", "np.issubdtype(x.dtype, "
                        "np.floating)")
    return np.issubdtype(a, kind)


FUNCTIONS = {getattr(np, n): _ufunc(n) for n in ELEMENTWISE}
FUNCTIONS.update({np.absolute: _ufunc("abs"), np.mod: _ufunc("remainder"),  # (= np.remainder)
                  builtins.abs: _builtin_abs, builtins.int: _int, builtins.pow: _pow,
                  builtins.max: _builtin_extreme("max"),
                  builtins.min: _builtin_extreme("min"),
                  np.clip: _clip, np.argsort: _argsort,
                  np.where: _where})
FUNCTIONS.update({getattr(np, n): _reduce(n) for n in _REDUCE_PARAMS})
FUNCTIONS.update({np.amax: _reduce("max"), np.amin: _reduce("min")})
FUNCTIONS.update({
    np.matmul: _binary("matmul"), np.dot: _dot, np.outer: _binary("outer"),
    np.transpose: _transpose, np.reshape: _reshape, np.ravel: _ravel,
    np.expand_dims: _with_axis("expand_dims", True), np.squeeze: _with_axis("squeeze", False),
    np.broadcast_to: _broadcast_to, np.concatenate: _seq("concatenate"), np.stack: _seq("stack"),
    np.copy: lambda b, args, kwargs: b.emit("copy", positional(args, 1)),
    builtins.len: _len, np.issubdtype: _issubdtype,
})
FUNCTIONS.update(creation.FUNCTIONS)
FUNCTIONS.update(diagonal.FUNCTIONS)  # np.diag of a traced array (else folded, as above)
FUNCTIONS.update(compositions.FUNCTIONS)  # np.var, np.diff, np.roll...: other primitives
FUNCTIONS.update(scans.FUNCTIONS)  # np.cumsum, np.cumprod
FUNCTIONS.update(norms.FUNCTIONS)  # np.linalg.norm
FUNCTIONS.update(einsum.FUNCTIONS)  # np.einsum
FUNCTIONS.update(solvers.FUNCTIONS)  # np.linalg.solve, inv, det, slogdet
FUNCTIONS.update(factorizations.FUNCTIONS)  # np.linalg.cholesky, eigh, svd, qr, pinv, np.kron...
FUNCTIONS.update(sorting.FUNCTIONS)  # np.sort, take_along_axis, median, quantile, percentile
FUNCTIONS.update(positions.FUNCTIONS)  # np.searchsorted, np.digitize: integers
FUNCTIONS.update(comparisons.FUNCTIONS)  # np.isclose, allclose, count_nonzero...: no gradient
FUNCTIONS.update(rotations.FUNCTIONS)  # np.rot90, np.rollaxis
FUNCTIONS.update(real_parts.FUNCTIONS)  # np.real, imag, conj of real arrays
FUNCTIONS.update(splits.FUNCTIONS)  # np.split, atleast_2d, tile, repeat, append, take, pad
FUNCTIONS.update(products.FUNCTIONS)  # np.add.outer, inner, vdot, tensordot, trapezoid, cross
FUNCTIONS.update(statistics.FUNCTIONS)  # np.average, nansum, nanmean, nanmax, nanmin
FUNCTIONS.update(signals.FUNCTIONS)  # np.polyval, convolve, interp


def register_call(fn, handler):
    """Lower calls of ``fn`` (a hashable callable) with ``handler(b, args, kwargs)``: how
    ``adcompiler.stop_gradient`` and ``custom_vjp`` functions reach the compiler."""
    FUNCTIONS[fn] = handler


# Callable objects whose call is inlined as another function: (their type, resolve), where
# ``resolve(obj, args, kwargs)`` gives ``(the def to inline, args, kwargs)``, or raises
# CallError. The packages above the frontend that make such objects register them
# (adcompiler.api: a gradient object called inside a compiled function, G(x), is its
# generated gradient).
CALLABLE_TYPES: list = []


def register_callable_type(kind: type, resolve):
    CALLABLE_TYPES.append((kind, resolve))


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
    "copy": lambda b, x, args, kwargs: b.emit("copy", (x, *positional(args, 0))),
    **creation.METHODS,
    **diagonal.METHODS,
    **compositions.METHODS,
    **scans.METHODS,
    **sorting.METHODS,  # x.sort() in place: refused
    **positions.METHODS,
    **real_parts.METHODS,
    "squeeze": _as_method(FUNCTIONS[np.squeeze]),
    "clip": _as_method(_clip),
    "argsort": _as_method(_argsort),
}

ATTRIBUTES = {
    "T": lambda b, x: b.emit("transpose", (x,)),
    "shape": lambda b, x: b.shape(x),
    "ndim": lambda b, x: b.ndim(x),
    "size": lambda b, x: b.size(x),
    **real_parts.ATTRIBUTES,
}

FUNCTIONS.update(aliases.handlers(FUNCTIONS, ATTRIBUTES, METHODS))  # np.radians, np.cov...
