"""Tensor methods, under NumPy's names and signatures (``x.sum(axis=0, keepdims=True)``,
``x.reshape(2, -1)``, ``x.transpose(1, 0, 2)``) and PyTorch's where the seeds use them
(``exp mean add_ fill_ zero_ clamp unsqueeze permute clone``, ``dim=`` and ``keepdim=``).

Invariant: each method is one primitive (or one in-place update); where NumPy and PyTorch
disagree the NumPy meaning wins (``transpose`` permutes, ``max`` returns only the values,
``flatten`` copies), so that unmodified NumPy code runs on tensors. The shape methods give views
(:mod:`.views`) wherever NumPy does. The two that record nothing, ``backward`` and the ``.grad``
property, hand over to :mod:`.engine` and :mod:`.checks`.

Layering: above what records and the engine; :class:`Methods` is not a base class:
:mod:`.assembly` copies its members onto ``Tensor`` (:mod:`.tensor`, which imports nothing from
here).
"""

from __future__ import annotations

import builtins
import warnings

import numpy as np

from . import checks, compositions, engine, inplace, matrices, views
from .numpy_api import dot as numpy_dot
from .numpy_api import rounded, scan, wrap_plain
from .record import apply
from .tensor import Tensor

_NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead.")

_UNARY = ["exp", "log", "log1p", "expm1", "sqrt", "square", "sin", "cos", "tan", "tanh", "sinh",
          "cosh", "arctan", "arcsin", "arccos", "abs", "negative", "reciprocal", "sign"]
_TORCH_NAMES = {"atan": "arctan", "asin": "arcsin", "acos": "arccos", "neg": "negative"}


def _unary(prim):
    def method(self):
        return apply(prim, (self,))
    method.__name__ = prim
    method.__doc__ = f"``np.{prim}`` of the tensor."
    return method


def _axis(axis, dim):
    axis = dim if axis is None else axis
    return tuple(axis) if isinstance(axis, list) else axis


def _reduction(prim, name=None):
    def method(self, axis=None, dtype=None, out=None, keepdims=False, *, dim=None, keepdim=None):
        if dtype is not None or out is not None:
            raise TypeError(f"{prim}(): dtype= and out= are not supported on tensors")
        keepdims = keepdims if keepdim is None else keepdim
        return apply(prim, (self,), {"axis": _axis(axis, dim), "keepdims": bool(keepdims)},
                     name=name)
    method.__name__ = prim
    method.__doc__ = f"``np.{prim}`` over ``axis`` (or PyTorch's ``dim``), with ``keepdims``."
    return method


def _plain(name):
    def method(self, *args, **kwargs):
        return wrap_plain(getattr(self._data, name)(*args, **kwargs))
    method.__name__ = name
    method.__doc__ = f"``ndarray.{name}`` on the values (the result carries no gradient)."
    return method


def _shape_args(args):
    """``f(2, 3)`` and ``f((2, 3))`` alike."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _same_data(t, dtype, kind):
    """Refuse the ``view(dtype, type)`` that would not be ``t``'s own data as it is."""
    if kind is not None and kind is not np.ndarray and not (
            isinstance(kind, builtins.type) and issubclass(kind, Tensor)):
        raise TypeError(f"view(type={getattr(kind, '__name__', kind)}): a tensor's view is a "
                        "tensor; take t.detach().numpy().view(...) for an ndarray subclass")
    if dtype is not None and np.dtype(dtype) != t.dtype:
        raise TypeError(f"view({np.dtype(dtype)}) of a {t.dtype} tensor would reinterpret its "
                        "bytes, which has no derivative on the tape: use astype() to convert "
                        "the values, or t.detach().numpy().view(dtype) for the raw bytes")


class Methods:
    """The named methods of :class:`~adcompiler.tape.Tensor` (attached by :mod:`.assembly`)."""

    # ---- autograd -----------------------------------------------------------------------------
    @property
    def grad(self):
        if self._grad is None and self._grad_fn is not None and not self._retains_grad:
            warnings.warn(_NON_LEAF_GRAD, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        self._grad = checks.assigned_grad(self, value)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf), times ``gradient``, into every leaf's ``.grad``."""
        engine.backward([self], None if gradient is None else [gradient], retain_graph,
                        create_graph, inputs)

    # ---- arithmetic ---------------------------------------------------------------------------
    def clip(self, min=None, max=None):
        return apply("clip", (self, min, max))

    clamp = clip

    def pow(self, exponent):
        return apply("power", (self, exponent))

    def dot(self, other):
        return numpy_dot(self, other)

    def matmul(self, other):
        return apply("matmul", (self, other))

    # ---- shape --------------------------------------------------------------------------------
    def reshape(self, *shape, order="C"):
        """A view where NumPy gives one (a copy of a transposed array, say, is not)."""
        if order != "C":
            raise TypeError("reshape(): only order='C' is supported on tensors")
        if not shape:
            raise TypeError("reshape() takes exactly 1 argument (0 given): the new shape "
                            "(t.reshape(2, -1), or t.view() for a view of the same shape)")
        return views.make("reshape", self, {"shape": _shape_args(shape)})

    def view(self, *args, dtype=None, type=None):
        """NumPy's ``view()``: no argument (``None``, this tensor's own dtype, ``np.ndarray``)
        gives a new view of the same data, on the graph (``ViewBackward0``); PyTorch's
        ``view(2, -1)`` reshapes, as a view. Another dtype would reinterpret the bytes, which
        has no derivative: it is refused."""
        if args and all(isinstance(a, (int, np.integer, tuple, list)) for a in args):
            if dtype is not None or type is not None:
                raise TypeError("view(): a shape takes no dtype= or type=")
            return self.reshape(*args)
        if len(args) > 2:
            raise TypeError(f"view() takes a shape, or at most a dtype and a type ({len(args)} "
                            "arguments given)")
        for a in args:
            if isinstance(a, builtins.type) and issubclass(a, (np.ndarray, Tensor)):
                type = a
            else:
                dtype = a
        _same_data(self, dtype, type)
        return views.make("reshape", self, {"shape": self.shape})

    def ravel(self):
        return self.reshape(-1)

    def flatten(self):
        """A copy, as NumPy's (``ravel`` gives a view where it can)."""
        return apply("reshape", (self,), {"shape": (-1,)})

    def transpose(self, *axes):
        """NumPy's ``transpose``: reverse the axes, or permute them as given."""
        axes = _shape_args(axes) or None
        return views.make("transpose", self, {"axes": axes})

    def permute(self, *dims):
        return self.transpose(*dims)

    @property
    def T(self):
        return views.make("transpose", self, {"axes": None})

    def squeeze(self, axis=None, *, dim=None):
        return views.make("squeeze", self, {"axis": _axis(axis, dim)})

    def unsqueeze(self, dim):
        return views.make("expand_dims", self, {"axis": dim})

    def expand(self, *sizes):
        sizes = _shape_args(sizes)
        lead = len(sizes) - self.ndim
        shape = tuple(self.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
        return views.make("broadcast_to", self, {"shape": shape})

    # ---- copies and conversions ---------------------------------------------------------------
    def copy(self):
        return apply("copy", (self,))

    clone = copy

    def astype(self, dtype, copy=True):
        """A converted copy; with ``copy=False`` and the same dtype, this very tensor (NumPy
        returns the array itself, so a write to the result is a write to it)."""
        if not copy and np.dtype(dtype) == self.dtype:
            return self
        return apply("astype", (self,), {"dtype": np.dtype(dtype)})

    def float(self):
        """float32, as PyTorch's ``.float()``."""
        return self.astype(np.float32)

    def double(self):
        return self.astype(np.float64)

    # ---- in-place -----------------------------------------------------------------------------
    def add_(self, other, alpha=1):
        return inplace.update(self, "add", other if alpha == 1 else other * alpha)

    def sub_(self, other, alpha=1):
        return inplace.update(self, "subtract", other if alpha == 1 else other * alpha)

    def mul_(self, other):
        return inplace.update(self, "multiply", other)

    def div_(self, other):
        return inplace.update(self, "divide", other)

    def fill_(self, value):
        """Every entry set to ``value`` (``FillBackward2``; ``FillBackward3`` for a tensor)."""
        name = "FillBackward3" if hasattr(value, "_grad_fn") else "FillBackward2"
        return inplace.overwrite(self, value, name)

    def fill(self, value):
        """NumPy's ``fill``: ``fill_`` returning None."""
        self.fill_(value)

    def zero_(self):
        return inplace.overwrite(self, 0, "ZeroBackward0")

    def copy_(self, src):
        return inplace.overwrite(self, src, "CopyBackwards")


for _prim in _UNARY:
    setattr(Methods, _prim, _unary(_prim))
for _name, _prim in _TORCH_NAMES.items():
    setattr(Methods, _name, _unary(_prim))
for _prim in ("sum", "mean", "prod", "max", "min"):
    setattr(Methods, _prim, _reduction(_prim))
Methods.amax = _reduction("max", "AmaxBackward0")     # PyTorch's amax, whatever the axis
Methods.amin = _reduction("min", "AminBackward0")
Methods.round = lambda self, decimals=0, out=None: rounded(self, decimals, out)  # np.round
Methods.cumsum = scan("cumsum")     # x.cumsum(axis=None, dtype=None, out=None), as np.cumsum
Methods.cumprod = scan("cumprod")
Methods.var = lambda self, *args, **kwargs: compositions.var(self, *args, **kwargs)
Methods.std = lambda self, *args, **kwargs: compositions.std(self, *args, **kwargs)
Methods.swapaxes = lambda self, axis1, axis2: compositions.swapaxes(self, axis1, axis2)
Methods.diagonal = lambda self, *args, **kwargs: matrices.diagonal(self, *args, **kwargs)
Methods.trace = lambda self, *args, **kwargs: matrices.trace(self, *args, **kwargs)
for _name in ("argmax", "argmin", "any", "all", "nonzero"):
    setattr(Methods, _name, _plain(_name))
