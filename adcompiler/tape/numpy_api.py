"""The NumPy protocols: ``np.exp(t)``, ``np.sum(t, axis=0)``, ``np.where(c, a, b)`` on tensors.

Invariants: a ufunc or function with a primitive records that primitive (the shape functions
give views where NumPy does, :mod:`.views`); composite functions (``np.linalg.norm`` here,
``np.var``, ``np.logaddexp``, ``np.trace``, ``np.add.at``... in :mod:`.compositions` and
:mod:`.matrices`, as the compiler spells them) record primitives; anything else runs on the
plain values (with CuPy's function of the same name on CuPy arrays) and is allowed only where
no gradient is lost (no input requires grad, or the result is integer or boolean); otherwise it
raises a TypeError naming the function.

Layering: above :mod:`.record`, :mod:`.views` and :mod:`.inplace` (``out=`` into a tensor);
the composite modules register into :data:`FUNCTIONS` and :data:`UFUNC_METHODS` from above
(:mod:`.assembly` imports them all), and :class:`NumpyProtocol`'s members are attached to
``Tensor`` by :mod:`.assembly`.
"""

from __future__ import annotations

import sys

import numpy as np

from ..compositions.elementwise import round_float
from ..ir.primitives import ELEMENTWISE
from . import mode, views
from .inplace import adopt
from .record import TENSOR_OPS, apply
from .tensor import Tensor
from .xp import common_module

# NumPy's function -> the primitive the tape records (np.absolute: abs, np.true_divide: divide)
_UFUNCS = {**{r.fn: r.name for r in ELEMENTWISE
              if r.tape and r.module == "numpy" and isinstance(r.fn, np.ufunc)},
           np.matmul: "matmul", np.positive: "copy"}
# scipy.special's ufuncs (erf...), entered in _UFUNCS once their module is imported (the
# user's code imported SciPy to call one): the tape never imports SciPy itself
_LIBRARY_ROWS = [r for r in ELEMENTWISE if r.tape and r.module != "numpy"]


def _ufunc_prim(ufunc):
    """The primitive the tape records for ``ufunc``: NumPy's, or an optional library's
    (``scipy.special.erf``, and ``psi``, its other name for ``digamma``), else None."""
    prim = _UFUNCS.get(ufunc)
    if prim is None and _LIBRARY_ROWS:
        for row in [r for r in _LIBRARY_ROWS if r.module in sys.modules]:
            _UFUNCS[row.fn.resolve()] = row.name
            _LIBRARY_ROWS.remove(row)
        prim = _UFUNCS.get(ufunc)
    return prim


def _is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def _unwrap(x):
    """Tensors replaced by their arrays, inside lists and tuples too."""
    if _is_tensor(x):
        return x._data
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v) for v in x)
    return x


def _any_requires(values) -> bool:
    for v in values:
        if _is_tensor(v) and v._requires_grad:
            return True
        if isinstance(v, (list, tuple)) and _any_requires(v):
            return True
    return False


def wrap_plain(result):
    """Arrays in a plain result become tensors (that need no grad); scalars stay as they are."""
    if isinstance(result, tuple):
        return tuple(wrap_plain(r) for r in result)
    if hasattr(result, "shape") and hasattr(result, "dtype") and getattr(result, "ndim", 0) > 0:
        return Tensor._make(result)
    return result


def run_plain(name, fn, args, kwargs):
    """``fn`` on the values (CuPy's function of that name on CuPy arrays); refused when that
    would drop a gradient (a float result)."""
    values, kwvalues = _unwrap(args), {k: _unwrap(v) for k, v in kwargs.items()}
    result = on_module(fn, name, [*values, *kwvalues.values()])(*values, **kwvalues)
    if mode.is_grad_enabled() and _any_requires(list(args) + list(kwargs.values())):
        kinds = {(r.dtype if hasattr(r, "dtype") else np.asarray(r).dtype).kind
                 for r in (result if isinstance(result, tuple) else (result,))}
        if kinds & set("fc") or result is None:   # None: it wrote in place (np.add.at)
            raise TypeError(f"{name} is not differentiable on the tape (it has no derivative "
                            "rule) and its input requires grad; use .detach() to drop the "
                            "gradient on purpose")
    return wrap_plain(result)


def on_module(fn, name, values):
    """``fn`` (a NumPy function), or CuPy's function of the same name where a value is a CuPy
    array (NumPy's functions are not handed CuPy arrays)."""
    flat = [x for v in values for x in (v if isinstance(v, (list, tuple)) else (v,))]
    xp = common_module(flat, name)
    if xp is np:
        return fn
    owner = xp.linalg if getattr(np.linalg, fn.__name__, None) is fn else xp
    found = getattr(owner, fn.__name__, None)
    if found is None:
        raise TypeError(f"{name} has no CuPy counterpart to run on CuPy arrays")
    return found


def _shape_of(a) -> tuple:
    a = _unwrap(a)
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def _dtype_of(a):
    a = _unwrap(a)
    return a.dtype if hasattr(a, "dtype") else np.result_type(a)


def logical(prim, *args):
    """``&``, ``|``, ``~``: logical on booleans, NumPy's bitwise operators on integers."""
    if all(_dtype_of(a) == np.bool_ for a in args):
        return apply(prim, args)
    bitwise = {"logical_and": np.bitwise_and, "logical_or": np.bitwise_or,
               "logical_not": np.invert}[prim]
    return run_plain(bitwise.__name__, bitwise, args, {})


# ---- functions with primitives (signatures as NumPy's) --------------------------------------
def _reduce(prim):
    def fn(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
        if dtype is not None or out is not None or kw:
            raise TypeError(f"np.{prim}: dtype=, out=, initial= and where= are not supported "
                            "on tensors")
        axis = tuple(axis) if isinstance(axis, list) else axis
        return apply(prim, (a,), {"axis": axis, "keepdims": bool(keepdims)})
    return fn


def _extras(name, **given):
    """Refuse NumPy arguments the tape does not take (given as anything but None): ignoring
    one would change the value silently."""
    extra = [f"{k}=" for k, v in given.items() if v is not None]
    if extra:
        raise TypeError(f"np.{name}: {', '.join(extra)} not supported on tensors")


def _order(name, order):
    if order not in ("C", None):
        raise TypeError(f"np.{name}: only order='C' is supported on tensors")


def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    _order("reshape", order)
    shape = newshape if shape is None else shape
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return views.make("reshape", a, {"shape": shape})


def _clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kw):
    _extras("clip", **kw)
    lo, hi = (min if a_min is None else a_min), (max if a_max is None else a_max)
    return _into(apply("clip", (a, lo, hi)), out)


def _where(condition, *xy):
    if not xy:
        return run_plain("np.where", np.where, (condition,), {})
    return apply("where", (condition, *xy))


def _join(prim):
    def fn(arrays, axis=0, out=None, **kw):
        if kw.get("casting") == "same_kind":
            del kw["casting"]
        _extras(prim, **kw)
        return _into(apply(prim, tuple(arrays), {"axis": axis}), out)
    return fn


def dot(a, b, out=None):
    """``np.dot``: a product with a 0-d operand is ``multiply``; N-D by N-D (N > 2) has no rule."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return _into(apply("multiply", (a, b)), out)
    if np.ndim(b) > 2:
        return run_plain("np.dot", np.dot, (a, b), {} if out is None else {"out": out})
    return _into(apply("dot", (a, b)), out)


def scan(prim):
    """``np.cumsum``/``np.cumprod`` (and the methods): one primitive along one axis, of the
    flattened array for ``axis=None``; ``dtype=`` converts first."""
    def fn(a, axis=None, dtype=None, out=None):
        _extras(prim, out=out)
        if dtype is not None and np.dtype(dtype) != _dtype_of(a):
            a = apply("astype", (a,), {"dtype": np.dtype(dtype)})
        if axis is None:
            a, axis = views.make("reshape", a, {"shape": (-1,)}), 0
        ndim = len(_shape_of(a))
        if not -ndim <= axis < ndim:
            raise np.exceptions.AxisError(axis, ndim)
        return apply(prim, (a,), {"axis": int(axis) % ndim})
    return fn


def rounded(a, decimals=0, out=None):
    """``np.round``: the compiler's :func:`~adcompiler.compositions.elementwise.round_float`
    (``rint``, of ``a * 10**d`` for other decimals, as NumPy); no gradient. Integers are
    returned as they are, as NumPy does."""
    if out is not None or _dtype_of(a).kind in "iub":
        return run_plain("np.round", np.round, (a, decimals), {} if out is None else {"out": out})
    return round_float(TENSOR_OPS, a, decimals)


def _creation(fn):
    """``np.zeros_like`` and friends: only the shape and dtype are read, so no gradient flows
    and none is lost; the result is a tensor that needs no grad."""
    def create(*args, **kwargs):
        values, kwvalues = _unwrap(args), {k: _unwrap(v) for k, v in kwargs.items()}
        result = on_module(fn, fn.__name__, [*values, *kwvalues.values()])(*values, **kwvalues)
        return Tensor._make(result)
    return create


FUNCTIONS = {
    np.sum: _reduce("sum"), np.mean: _reduce("mean"), np.prod: _reduce("prod"),
    np.max: _reduce("max"), np.min: _reduce("min"), np.amax: _reduce("max"),
    np.amin: _reduce("min"), np.reshape: _reshape, np.clip: _clip, np.where: _where,
    np.transpose: lambda a, axes=None: views.make("transpose", a, {"axes": axes}),
    np.expand_dims: lambda a, axis: views.make("expand_dims", a, {"axis": axis}),
    np.squeeze: lambda a, axis=None: views.make("squeeze", a, {"axis": axis}),
    np.broadcast_to: lambda array, shape, subok=False: views.make(
        "broadcast_to", array, {"shape": (shape,) if np.ndim(shape) == 0 else tuple(shape)}),
    np.concatenate: _join("concatenate"), np.stack: _join("stack"),
    np.dot: dot,
    np.outer: lambda a, b, out=None: _into(apply("outer", (a, b)), out),
    np.copy: lambda a, order="K", subok=False: apply("copy", (a,)),
    np.shape: _shape_of, np.ndim: lambda a: len(_shape_of(a)),
    np.size: lambda a, axis=None: int(np.prod(_shape_of(a))) if axis is None else
    _shape_of(a)[axis],
    np.round: rounded, np.around: rounded,
    np.cumsum: scan("cumsum"), np.cumprod: scan("cumprod"),
    np.ravel: lambda a, order="C": _order("ravel", order) or views.make(
        "reshape", a, {"shape": (-1,)}),
    np.zeros_like: _creation(np.zeros_like), np.ones_like: _creation(np.ones_like),
}


def _elementwise(prim):
    def call(*args):
        return apply(prim, args)
    return call


# an elementwise row whose NumPy function is not a ufunc (np.sinc) comes as __array_function__
FUNCTIONS.update({r.fn: _elementwise(r.name) for r in ELEMENTWISE
                  if r.tape and r.module == "numpy" and not isinstance(r.fn, np.ufunc)})


# ufunc calls spelled in primitives, {(ufunc, method): fn}: np.logaddexp, np.add.at (filled
# by .compositions and .matrices, which build on the helpers here)
UFUNC_METHODS: dict = {}


class NumpyProtocol:
    """``__array_ufunc__`` and ``__array_function__`` of :class:`~adcompiler.tape.Tensor`
    (attached by :mod:`.assembly`)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.pop("out", None)
        prim = _ufunc_prim(ufunc)
        if method == "__call__" and prim is not None and not kwargs:
            return _store(apply(prim, inputs), out)
        composite = UFUNC_METHODS.get((ufunc, method))
        takes = not kwargs or method == "accumulate"   # accumulate's axis= comes as a keyword
        if composite is not None and takes and (method == "__call__" or out is None):
            return _store(composite(*inputs, **kwargs), out)
        name = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        if out is not None:
            kwargs["out"] = tuple(_unwrap(o) for o in out)
        return run_plain(name, ufunc if method == "__call__" else getattr(ufunc, method),
                         inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        handler = FUNCTIONS.get(func)
        if handler is not None:
            return handler(*args, **kwargs)
        return run_plain(_public_name(func), func, args, kwargs)


def _public_name(func) -> str:
    """``np.linalg.solve`` for NumPy's ``solve`` (its public module), ``np.sort``..."""
    module = getattr(func, "__module__", None) or "numpy"
    prefix = "np" + module[len("numpy"):] if module.startswith("numpy") else module
    return f"{prefix}.{getattr(func, '__name__', func)}"


def _into(result, out):
    """A function's ``out=`` (one array or tensor), as a ufunc's: see :func:`_store`."""
    return result if out is None else _store(result, out if isinstance(out, tuple) else (out,))


def _store(result, out):
    """NumPy's ``out=``: into a tensor, an in-place update; into a plain array, only values."""
    if out is None:
        return result
    (target,) = out
    if _is_tensor(target):
        return adopt(target, result)
    if result._requires_grad and mode.is_grad_enabled():
        raise TypeError("cannot store a result that requires grad into a plain NumPy array "
                        "(`out=a`, or `a[...] += t` where `a` is not a tensor): its gradient "
                        "would be dropped; make `a` a tensor (`tape.tensor(a)`, or "
                        "`np.zeros_like(t)` of a tensor `t`, not of a plain array)")
    target[...] = result._data
    return target

