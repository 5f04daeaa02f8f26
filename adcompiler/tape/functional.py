"""``dynamic_grad(f, wrt=...)``: ``adcompiler.grad``'s calling convention, computed by recording
a fresh tape on every call, so Python control flow and in-place updates inside ``f`` just work.

Invariants: a gradient has its input's type, shape and dtype (a Python float for a Python float,
an array for an array); ``f`` receives tensors that it may update in place without touching the
caller's data; a tensor argument that itself requires grad gets a differentiable gradient, so
``dynamic_grad(dynamic_grad(f))`` gives second derivatives. On Dask arrays (the tape's
:mod:`.lazy`), ``backend="dask"``'s policy (runtime/dask_results.py): where no differentiated
argument is a Dask array (NumPy parameters, chunked data), the gradients and the value are
computed by one ``dask.compute`` of them all, so the work they share is done once; where one is,
every result stays lazy.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from adcompiler.api.signature import classify, resolve_wrt
from adcompiler.frontend.bindings.trees import is_container, rebuild, split

from . import mode
from .engine import grad
from .lazy import is_dask_array
from .numpy_scope import in_tape_scope
from .record import apply
from .tensor import Tensor, tensor
from .xp import array_module, device_of, is_device_array


class DynamicGradient:
    """The gradient of ``fn``'s scalar result with respect to ``wrt``, recorded per call."""

    def __init__(self, fn, wrt, with_value=False):
        self.primal, self.with_value = fn, with_value
        self.wrt = resolve_wrt(fn, 0 if wrt is None else wrt)
        self._single = wrt is None or not isinstance(wrt, (tuple, list))
        self._signature = inspect.signature(fn)
        self._positions = _positions(self._signature, self.wrt)
        # updated=(): copying fn's __dict__ would overwrite these attributes when fn is itself
        # a DynamicGradient (dynamic_grad(dynamic_grad(f))).
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args, **kwargs):
        call, originals = self._arguments(args, kwargs)
        device = _device(call.values())
        grad_token = mode._GRAD_ENABLED.set(True)
        try:
            parts = [_Leaves(value, name) for value, name in zip(originals, self.wrt)]
            bases = [_input_tensor(x, where, device) for p in parts for where, x in p.leaves]
            copies = iter(apply("copy", (base,)) for base in bases)   # f may update them
            for name, p in zip(self.wrt, parts):
                call[name] = p.rebuild(copies)
            inplace_token = mode._NUMPY_INPLACE.set(True)   # NumPy's in-place semantics
            try:
                out = call.run(in_tape_scope(self.primal))   # np.zeros makes tensors
            finally:
                mode._NUMPY_INPLACE.reset(inplace_token)
            grads = self._gradients(out, bases, originals)
        finally:
            mode._GRAD_ENABLED.reset(grad_token)
        leaves = [x for p in parts for _, x in p.leaves]
        out, grads = _computed(out, grads, leaves, self.with_value)
        grads = iter(_like(g, x) for g, x in zip(grads, leaves))
        results = tuple(p.rebuild(grads) for p in parts)
        result = results[0] if self._single else results
        return (_value(out, originals), result) if self.with_value else result

    def _arguments(self, args, kwargs):
        """The call's arguments (a :class:`_Call`) and the values of ``wrt``. All positional,
        as the benchmarks call: no ``Signature.bind`` (a few microseconds a call)."""
        if not kwargs and self._positions is not None and len(args) == self._positions[0]:
            call = _Call(list(args), None, self._positions[1])
        else:
            bound = self._signature.bind(*args, **kwargs)
            bound.apply_defaults()
            call = _Call(None, bound, None)
        return call, [call[name] for name in self.wrt]

    def _gradients(self, out, bases, originals):
        nested = any(isinstance(x, Tensor) and x._requires_grad for x in originals)
        if isinstance(out, Tensor):
            _check_result(out, self.primal)
        if not isinstance(out, Tensor) or not out._requires_grad:
            return [None] * len(bases)     # the result does not depend on the inputs
        return grad(out, bases, allow_unused=True, create_graph=nested)   # one element

    def __repr__(self):
        return f"<adcompiler.tape.dynamic_grad of {self.primal.__qualname__} wrt {self.wrt}>"


class _Leaves:
    """A wrt argument's leaves (``[(label, value)]``: itself, or a container's arrays and
    floats, :mod:`adcompiler.frontend.bindings.trees`) and the way to put values in their
    places: the container ``f`` receives, and its gradient (its None, string and bool entries
    as they are)."""

    __slots__ = ("structure", "leaves")

    def __init__(self, value, name):
        self.structure, self.leaves = split(value, name) if is_container(value) else \
            (None, [(name, value)])

    def rebuild(self, values):
        if self.structure is None:
            return next(values)
        return rebuild(self.structure, values)   # static entries as they are (.trees)


def _positions(signature, wrt):
    """``(number of parameters, {name: position})`` where every parameter may be passed by
    position and has no default (the fast path of a fully positional call), else None."""
    params = list(signature.parameters.values())
    plain = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind not in plain or p.default is not p.empty for p in params):
        return None
    return len(params), {p.name: i for i, p in enumerate(params)}


class _Call:
    """The arguments of one call of ``f``, by name: a positional list (fast) or a
    ``BoundArguments``."""

    __slots__ = ("args", "bound", "where")

    def __init__(self, args, bound, where):
        self.args, self.bound, self.where = args, bound, where

    def __getitem__(self, name):
        return self.args[self.where[name]] if self.bound is None else \
            self.bound.arguments[name]

    def __setitem__(self, name, value):
        if self.bound is None:
            self.args[self.where[name]] = value
        else:
            self.bound.arguments[name] = value

    def values(self):
        return self.args if self.bound is None else self.bound.arguments.values()

    def run(self, fn):
        if self.bound is None:
            return fn(*self.args)
        return fn(*self.bound.args, **self.bound.kwargs)


def _device(values):
    """``"cuda:N"`` where an argument is a CuPy array (or a tensor on it), else None."""
    for v in values:
        data = v._data if isinstance(v, Tensor) else v
        if is_device_array(data):
            return device_of(data)
    return None


def _computed(out, grads, leaves, with_value):
    """``(out, grads)`` with their Dask arrays computed by one ``dask.compute`` where no
    differentiated argument is a Dask array, else as they are (all lazy)."""
    if any(is_dask_array(x) for x in leaves):
        return out, grads
    wanted = [i for i, g in enumerate(grads) if g is not None and is_dask_array(g._data)]
    value = with_value and isinstance(out, Tensor) and is_dask_array(out._data)
    if not wanted and not value:
        return out, grads
    import dask
    done = dask.compute(*[grads[i]._data for i in wanted], *([out._data] if value else []))
    grads = list(grads)
    for i, data in zip(wanted, done):
        grads[i] = Tensor._make(np.asarray(data))
    return (Tensor._make(np.asarray(done[-1])) if value else out), grads


def _input_tensor(value, name, device=None):
    """The tensor to differentiate with respect to: a fresh leaf, or (for a tensor that needs
    grad) a recorded copy that keeps it on the outer graph. Anything else is refused with the
    compiler's own message (``adcompiler.api.signature.classify``). A Python float is a 0-d leaf
    on ``device``: beside CuPy arrays, on the GPU."""
    if isinstance(value, Tensor):
        if value._data.dtype.kind not in "fc":
            raise TypeError(f"cannot differentiate with respect to {name!r}: it has dtype "
                            f"{value.dtype}")
        return apply("copy", (value,)) if value._requires_grad else \
            Tensor(value, requires_grad=True)
    if is_dask_array(value):
        if value.dtype.kind not in "fc":
            raise TypeError(f"cannot differentiate with respect to {name!r}: it is a Dask array "
                            f"of dtype {value.dtype}")
        return Tensor(value, requires_grad=True)
    classify(value, name, True)
    if isinstance(value, float):
        return tensor(np.float64(value), requires_grad=True, device=device)
    return Tensor(value, requires_grad=True)


def _check_result(out, fn):
    if out._data.dtype.kind not in "fc":
        raise TypeError(f"{fn.__name__} returned a result of dtype {out.dtype}; only floating "
                        "results can be differentiated")
    if out._data.size != 1:
        raise TypeError(f"grad needs a scalar result, but {fn.__name__} returns an array of "
                        f"shape {out.shape}; reduce it (e.g. .sum() or .mean())")


def _like(g, x):
    """The gradient ``g`` in the form of the input ``x``."""
    if isinstance(x, Tensor):
        return g if g is not None else Tensor._make(array_module(x._data).zeros_like(x._data))
    data = g._data if g is not None else None
    if isinstance(x, float):
        return 0.0 if data is None else float(data)
    if data is None:
        return x * 0 if isinstance(x, np.generic) else array_module(x).zeros_like(x)
    if isinstance(x, np.generic):
        return x.dtype.type(data)
    return data.astype(x.dtype, copy=False).reshape(x.shape)


def _value(out, originals):
    if isinstance(out, Tensor):
        if any(isinstance(x, Tensor) for x in originals):
            return out
        return out._data[()] if out._data.ndim == 0 else out._data
    return out


def dynamic_grad(f=None, *, wrt=None):
    """Like :func:`adcompiler.grad`, on the dynamic tape: ``dynamic_grad(f, wrt=("w1", "w2"))``,
    ``@dynamic_grad`` or ``@dynamic_grad(wrt=0)``."""
    if f is None:
        return lambda fn: DynamicGradient(fn, wrt)
    return DynamicGradient(f, wrt)


def dynamic_value_and_grad(f=None, *, wrt=None):
    """Like :func:`dynamic_grad`, returning ``(value, gradient)``."""
    if f is None:
        return lambda fn: DynamicGradient(fn, wrt, with_value=True)
    return DynamicGradient(f, wrt, with_value=True)
