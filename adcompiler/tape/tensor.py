"""``Tensor``: an array with PyTorch's autograd state (``grad``, ``grad_fn``, ``requires_grad``,
``_version``, hooks) whose operations record the dynamic tape.

Invariants: ``_data`` is an array of NumPy, CuPy or Dask (a 0-d array for a scalar) and is only
ever changed in place through :mod:`.inplace`, which bumps ``_version``; ``is_leaf`` is exactly
``grad_fn is None``; only floating tensors require grad; ``data`` shares storage with a fresh
version counter and ``detach()`` shares both, as in PyTorch; a view (:mod:`.views`) shares both
with its base, and its graph state (``_grad_fn``, ``_requires_grad``, ``_tangents``) is read
through properties that first take it from the base again if the storage changed (its tangents
are views of its base's, or of a ``make_dual``'s own).

Layering: this module is the tape's floor for tensors. It imports only what sits below it
(:mod:`.xp`, :mod:`.mode`, :mod:`.format`, :mod:`.node`), and every module that records,
differentiates or checks imports ``Tensor`` from here. The class defined here holds the state
and what reads only that state; its operators, named methods (``backward`` and the ``.grad``
setter among them) and NumPy protocols are defined above it and attached once, by
:mod:`.assembly`, which ``tape/__init__.py`` imports first. A view's graph state is brought up
to date by its ``ViewOf`` (``self._view.sync(self)``), which :mod:`.views` defines.
"""

from __future__ import annotations

import copy as _copy
import dis
import sys
import weakref

import numpy as np

from . import mode
from .format import tensor_repr
from .node import AccumulateGrad
from .xp import array_module, device_of, is_foreign_array, on_device, to_numpy

_FLOAT_ONLY = "Only Tensors of floating point and complex dtype can require gradients"
_MATH = ("{what} of a tensor that requires grad would drop its gradient silently (math.exp and "
         "the other math functions call float()). Use np.exp(t) (or the tensor's own method) to "
         "keep the gradient, or t.item() / t.detach() to drop it on purpose.")


class VersionCounter:
    """How many in-place updates a storage has seen; shared by a tensor and its ``detach()``.

    Under ``mode.numpy_inplace()`` it also knows the saved values that hold its storage, and
    :meth:`before_write` gives them a private copy first (:meth:`.saved.SavedValue.preserve`),
    so they never go stale.
    """

    __slots__ = ("value", "watchers")

    def __init__(self):
        self.value = 0
        self.watchers = None

    def bump(self):
        self.value += 1

    def watch(self, saved):
        if self.watchers is None:
            self.watchers = weakref.WeakSet()
        self.watchers.add(saved)

    def before_write(self, tensor):
        """``tensor``'s storage is about to change: watchers keep the current values."""
        if self.watchers:
            for saved in list(self.watchers):
                if saved.counter is self and saved.version == self.value:
                    saved.preserve()
            self.watchers = None


def fresh_array(data, dtype=None):
    """A new array holding ``data`` (copied, as ``torch.tensor`` copies)."""
    if isinstance(data, Tensor):
        data = data._data
    if is_foreign_array(data):
        return array_module(data).array(data, dtype=dtype, copy=True)
    return np.array(data, dtype=dtype, copy=True)


def _synced(slot):
    """A tensor's graph state held in ``slot``, brought up to date first where the tensor is a
    view (its base may have been written since: ``ViewOf.sync`` in tape/views.py)."""
    def get(self):
        if self._view is not None:
            self._view.sync(self)
        return getattr(self, slot)

    def put(self, value):
        setattr(self, slot, value)
    return property(get, put)


# ---- a[i] = t, with a a plain array: the conversion refused (Tensor._scalar) ------------
_STORES = {dis.opmap[name] for name in ("STORE_SUBSCR", "STORE_SLICE") if name in dis.opmap}
PLAIN_STORE = (
    "{target} = t stores a tensor that requires grad into a plain NumPy array, which would drop "
    "its gradient silently (NumPy reports it as 'setting an array element with a sequence'). "
    "Start from a tensor instead, whose element assignments are recorded: a = tape.zeros(shape), "
    "a = tape.tensor(np.zeros(shape)), or, in NumPy code, a = np.zeros_like(x) for a tensor x; "
    "store t.detach() to drop the gradient on purpose.")


def storing_into_array(depth: int) -> bool:
    """Whether the Python code ``depth`` frames above the caller is running ``a[i] = t``: a NumPy
    array's ``__setitem__`` converts ``t`` with ``float()`` (or ``int()``, ``complex()``), called
    from C, so the frame above the conversion is the one doing the assignment."""
    try:
        frame = sys._getframe(depth + 1)
    except ValueError:
        return False
    code, at = frame.f_code.co_code, frame.f_lasti
    return 0 <= at < len(code) and code[at] in _STORES


class Tensor:
    """``Tensor(data, requires_grad=False, dtype=None)`` copies ``data`` (see :func:`tensor`).

    Its operators, methods and NumPy protocols are attached by :mod:`.assembly`."""

    # _fn, _needs_grad and _duals hold grad_fn, requires_grad and the tangents as set; code reads
    # them through _grad_fn, _requires_grad and _tangents, which bring a view up to date first
    __slots__ = ("_data", "_grad", "_fn", "_needs_grad", "_counter", "_accumulator", "_duals",
                 "_retains_grad", "_view", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, data, requires_grad=False, dtype=None):
        self._init(fresh_array(data, dtype))
        if requires_grad:
            self.requires_grad = True

    def _init(self, array, grad_fn=None, requires_grad=False, counter=None):
        self._data = array
        self._grad = None
        self._fn = grad_fn
        self._needs_grad = requires_grad
        self._counter = counter if counter is not None else VersionCounter()
        self._accumulator = None
        self._duals = None
        self._retains_grad = False
        self._view = None

    @classmethod
    def _make(cls, array, grad_fn=None, requires_grad=False, counter=None):
        """Wrap ``array`` without copying it (the internal constructor)."""
        t = cls.__new__(cls)
        t._init(array, grad_fn, requires_grad, counter)
        return t

    # ---- graph state, up to date for a view -----------------------------------------------------
    _grad_fn = _synced("_fn")
    _requires_grad = _synced("_needs_grad")
    _tangents = _synced("_duals")

    # ---- autograd state -----------------------------------------------------------------------
    @property
    def grad_fn(self):
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._grad_fn is None

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        if self._grad_fn is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
        if flag and self._data.dtype.kind not in "fc":
            raise RuntimeError(_FLOAT_ONLY)
        self._requires_grad = bool(flag)

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def _version(self) -> int:
        return self._counter.value

    @property
    def data(self):
        """The same storage as a tensor that does not require grad, with its own version."""
        return Tensor._make(self._data)

    @data.setter
    def data(self, value):
        self._data = value._data if isinstance(value, Tensor) else fresh_array(value)

    def detach(self):
        """The same storage and version counter, outside the graph."""
        return Tensor._make(self._data, counter=self._counter)

    def detach_(self):
        if self._view is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self._grad_fn, self._requires_grad = None, False
        return self

    def retain_grad(self):
        """Keep this non-leaf's gradient in ``.grad`` after backward (no-op on a leaf)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is not None:
            self._grad_fn.retained = weakref.ref(self)
            self._retains_grad = True

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned value replaces
        the gradient. Returns a handle whose ``remove()`` unregisters the hook."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        return self._edge().add_pre_hook(hook)

    def _edge(self):
        """Where this tensor's gradient goes: its ``grad_fn``, or its leaf's AccumulateGrad."""
        if self._grad_fn is not None:
            return self._grad_fn
        if not self._requires_grad:
            return None
        if self._accumulator is None:
            self._accumulator = AccumulateGrad(self)
        return self._accumulator

    def _snapshot(self):
        """The current value, copied, on the same edge: the input of an in-place update."""
        old = Tensor._make(self._data.copy(), self._grad_fn, self._requires_grad)
        old._accumulator, old._tangents = self._accumulator, self._tangents
        return old

    def _tangent(self, level):
        duals = self._tangents
        return None if duals is None else duals.get(level)

    def _set_tangent(self, level, tangent):
        if tangent is not None and self._data.dtype.kind in "fc":
            if tangent.dtype != self._data.dtype:
                tangent = tangent.astype(self._data.dtype)
            self._tangents = {level: tangent}

    # ---- shape and dtype ----------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return tuple(self._data.shape)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        return int(self._data.size)

    def numel(self) -> int:
        return int(self._data.size)

    def dim(self) -> int:
        return self._data.ndim

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def device(self) -> str:
        return device_of(self._data)

    # ---- conversions --------------------------------------------------------------------------
    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        return to_numpy(self._data).item()   # a Dask array computes its one value

    def tolist(self):
        return self._data.tolist()

    def numpy(self):
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return to_numpy(self._data)

    def __array__(self, dtype=None, copy=None):
        if self._requires_grad and mode.is_grad_enabled():
            raise RuntimeError(
                "Can't convert a Tensor that requires grad to a NumPy array: its gradient would "
                "be dropped silently (this happens when a tensor is stored into a plain array, "
                "buf[i] = t, or passed to a function the tape cannot differentiate). Keep the "
                "values in tensors: start from buf = tape.zeros(n), tape.tensor(np.zeros(n)) or "
                "(in NumPy code) np.zeros_like(x) for a tensor x, whose assignments are "
                "recorded; or use t.detach().numpy() to drop the gradient on purpose.")
        out = to_numpy(self._data)
        return out if dtype is None else out.astype(dtype, copy=False)

    def _scalar(self, kind, what):
        if self._requires_grad and mode.is_grad_enabled():   # not TypeError: NumPy swallows it
            if storing_into_array(2):   # _scalar <- __float__ <- (C) <- a[i] = t
                raise RuntimeError(PLAIN_STORE.format(target="a[i]"))
            raise RuntimeError(_MATH.format(what=what))
        if self._data.size != 1:
            raise TypeError("only one element tensors can be converted to Python scalars")
        return kind(to_numpy(self._data).reshape(()).item())

    def __float__(self):
        return self._scalar(float, "float()")

    def __int__(self):
        return self._scalar(int, "int()")

    def __complex__(self):
        return self._scalar(complex, "complex()")

    def __index__(self):
        if self._data.dtype.kind not in "iub":
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return self._scalar(int, "index")

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(to_numpy(self._data).reshape(()).item())   # Dask: computes it

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __repr__(self):
        return tensor_repr(self)

    def __format__(self, spec):
        if self._data.ndim == 0:
            return format(self._data.item(), spec)
        return format(str(self), spec)

    __hash__ = object.__hash__

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        out = Tensor._make(self._data.copy(), requires_grad=self._requires_grad)
        out._grad = _copy.deepcopy(self._grad, memo)
        return out


def tensor(data, requires_grad=False, dtype=None, device=None) -> Tensor:
    """A new leaf holding a copy of ``data`` (a number, a nested list, a NumPy or CuPy array),
    on ``device`` ("cpu": NumPy, "cuda": CuPy; default: where ``data`` is). Python floats give
    float64, NumPy's default (PyTorch's is float32)."""
    array = fresh_array(data, dtype)
    if device is not None:
        array = on_device(array, device)
    return Tensor._make(array).requires_grad_(requires_grad)
