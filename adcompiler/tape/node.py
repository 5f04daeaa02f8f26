"""Backward nodes (``grad_fn``s), the values they save, and the version counters guarding them.

Invariants: a node has one output and one edge per input (the input's ``grad_fn``, its
``AccumulateGrad`` for a leaf, or None where no gradient flows); a saved value hands back its
array only while the graph is not freed and its tensor is still at the version it saw, and
otherwise a :class:`Placeholder` that answers shape queries and raises PyTorch's error on any use
of its values, so an adjoint that needs no saved value (``y = x + 1``) never raises.
"""

from __future__ import annotations

import itertools
import sys
import weakref

import numpy as np

from adcompiler.templates import cotangent, has_rule

from . import mode
from . import tensor as _tensor
from .xp import device_of

_SEQUENCE = itertools.count()

FREED = ("Trying to backward through the graph a second time, but the saved intermediate results "
         "have already been freed. Specify retain_graph=True when calling backward the first "
         "time.")
HINT = ("Hint: enable anomaly detection to find the operation that failed to compute its "
        "gradient, with torch.autograd.set_detect_anomaly(True).")
_TYPE_NAMES = {"float64": "Double", "float32": "Float", "float16": "Half", "int64": "Long",
               "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
               "bool": "Bool", "complex128": "ComplexDouble", "complex64": "ComplexFloat"}


def tensor_type_name(dtype, device="cpu") -> str:
    """PyTorch's legacy type name: ``torch.DoubleTensor`` (float64), ``torch.cuda.FloatTensor``."""
    base = _TYPE_NAMES.get(np.dtype(dtype).name, np.dtype(dtype).name.capitalize()) + "Tensor"
    return f"torch.cuda.{base}" if device.startswith("cuda") else f"torch.{base}"


class VersionCounter:
    """How many in-place updates a storage has seen; shared by a tensor and its ``detach()``.

    Under ``mode.numpy_inplace()`` it also knows the saved values that hold its storage, and
    :meth:`before_write` gives them a private copy first, so they never go stale.
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


# ---- placeholders: values known only by shape and dtype --------------------------------------
_META = {np.shape: lambda p: p.shape, np.ndim: lambda p: p.ndim, np.size: lambda p: p.size,
         np.result_type: lambda p: p.dtype}


class Placeholder:
    """Stands for a value that is gone (freed) or changed (in place) or never kept: ``shape``,
    ``ndim``, ``size`` and ``dtype`` work; anything that reads its values raises ``message``."""

    __array_priority__ = 2000

    def __init__(self, shape, dtype, message="this value was not saved for the backward pass"):
        self.shape, self.dtype, self.message = tuple(shape), np.dtype(dtype), message

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def _refuse(self, *args, **kwargs):
        raise RuntimeError(self.message)

    def __array_ufunc__(self, *args, **kwargs):
        self._refuse()

    def __array_function__(self, func, types, args, kwargs):
        if func in _META and len(args) == 1 and not kwargs:
            return _META[func](self)
        self._refuse()

    __array__ = __bool__ = __float__ = __getitem__ = __neg__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _refuse


# ---- saved values ---------------------------------------------------------------------------
class SavedValue:
    """One input (or the output) of a node, as the backward pass will need it."""

    __slots__ = ("value", "tensor", "counter", "version", "shape", "dtype", "creator", "device",
                 "__weakref__")

    def __init__(self, x, creator=None, watch=None):
        """``watch``: whether the counter keeps this value fresh (``mode.numpy_inplace()``,
        read here when not given: a node passes it once for all its values)."""
        self.tensor = self.counter = None
        self.creator = creator
        if isinstance(x, _tensor.Tensor):
            data, counter = x._data, x._counter
            self.value, self.counter, self.version = data, counter, counter.value
            self.shape, self.dtype = data.shape, data.dtype
            if creator is None:
                fn = x._grad_fn
                self.tensor = x if x._requires_grad else None
                if fn is not None:
                    self.creator = fn.name()
            self.device = "cpu" if type(data) is np.ndarray else device_of(data)
            if mode.is_numpy_inplace() if watch is None else watch:
                counter.watch(self)
            return
        self.shape, self.dtype, self.device = _shape(x), _dtype(x), "cpu"
        if hasattr(x, "shape") and hasattr(x, "copy"):
            self.value = x.copy()   # a plain array has no version counter: keep our own copy
        else:
            self.value = x          # a Python scalar, immutable

    def unpack(self, node, as_tensor):
        """The saved value (a tensor when ``as_tensor`` and it needs grad), or a placeholder."""
        if node.released:
            return Placeholder(self.shape, self.dtype, FREED)
        if self.counter is None and not hasattr(self.value, "shape"):
            return self.value
        if self.counter is not None and self.counter.value != self.version:
            return Placeholder(self.shape, self.dtype, self._modified_message())
        if as_tensor and node.is_output(self):   # the output, rebuilt: no reference cycle
            return _tensor.Tensor._make(self.value, node, True, self.counter)
        if as_tensor and self.tensor is not None:
            return self.tensor
        return self.value

    def preserve(self):
        """Keep a private copy of the current value: its storage is about to be updated in
        place (through the saved tensor, its base or another view of it). The copy stands for
        the saved tensor as it is now, on its graph."""
        self.value = self.value.copy()
        if self.tensor is not None:
            saved = self.tensor
            old = _tensor.Tensor._make(self.value, saved._grad_fn, saved._requires_grad)
            old._accumulator = saved._accumulator
            self.tensor = old
        self.counter = None

    def free(self):
        self.value = self.tensor = None

    def _modified_message(self):
        head = f"[{tensor_type_name(self.dtype, self.device)} [{', '.join(map(str, self.shape))}]]"
        if self.creator is not None:
            head += f", which is output 0 of {self.creator},"
        return ("one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: {head} is at version {self.counter.value}; expected version "
                f"{self.version} instead. {HINT}")


def _shape(x) -> tuple:
    return tuple(x.shape) if hasattr(x, "shape") else ()


def _dtype(x):
    dtype = getattr(x, "dtype", None)
    return np.dtype(dtype) if dtype is not None else np.result_type(x)


# ---- hooks ----------------------------------------------------------------------------------
class RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = next(self._ids)

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


# ---- nodes ----------------------------------------------------------------------------------
class Node:
    """A ``grad_fn``: one output, one edge per input, hooks on the output's gradient."""

    def __init__(self, edges, input_meta):
        self.next_edges = tuple(edges)
        self.input_meta = tuple(input_meta)      # (shape, dtype) of each input
        self.sequence_nr = next(_SEQUENCE)
        self.pre_hooks: dict = {}                # hooks registered on the output tensor
        self.retained = None                     # weakref to the output, after retain_grad()
        self.released = False

    def name(self) -> str:
        return type(self).__name__

    @property
    def next_functions(self):
        return tuple((edge, 0) for edge in self.next_edges)

    def add_pre_hook(self, fn) -> RemovableHandle:
        handle = RemovableHandle(self.pre_hooks)
        self.pre_hooks[handle.id] = fn
        return handle

    def is_output(self, saved) -> bool:
        return False

    def release(self):
        self.released = True

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"


class PrimNode(Node):
    """The node of one primitive: its backward is the primitive's rule in ``templates``."""

    def __init__(self, prim, params, edges, input_meta, saved, saved_output):
        super().__init__(edges, input_meta)
        self.prim, self.params = prim, params
        self.saved, self.saved_output = saved, saved_output

    def is_output(self, saved) -> bool:
        return saved is self.saved_output

    def apply(self, g, ops, as_tensor, wanted):
        """The cotangent of each input whose ``wanted`` flag is set (None for the others)."""
        args = [s.unpack(self, as_tensor) for s in self.saved]
        ans = self.saved_output.unpack(self, as_tensor)
        grads = []
        for i, want in enumerate(wanted):
            if want and not has_rule(self.prim, i):
                raise RuntimeError(f"the derivative of {self.prim} with respect to its "
                                   f"argument {i} is not implemented ({self.name()})")
            grads.append(cotangent(ops, self.prim, i, g, ans, args, self.params) if want
                         else None)
        return grads

    def release(self):
        super().release()
        for saved in (*self.saved, self.saved_output):
            saved.free()


class AccumulateGrad(Node):
    """The sink of a leaf that requires grad: runs the leaf's hooks, adds into ``.grad``."""

    def __init__(self, variable):
        super().__init__((), ())
        self.variable = variable
        self.sequence_nr = sys.maxsize   # runs as soon as it is ready, as in PyTorch


_CLASSES: dict = {}


def node_class(base, name: str):
    """The subclass of ``base`` called ``name`` (``MulBackward0``), so that ``type(grad_fn)``
    prints as in PyTorch; one class per (base, name), created on first use."""
    cls = _CLASSES.get((base, name))
    if cls is None:
        cls = _CLASSES[(base, name)] = type(name, (base,), {"__module__": base.__module__})
    return cls


def prim_node(name, prim, params, args, out):
    """Record ``out = prim[params](*args)``: edges to the inputs that need grad, saved values."""
    Tensor = _tensor.Tensor
    edges = [a._edge() if isinstance(a, Tensor) and a._requires_grad else None for a in args]
    watch = mode.is_numpy_inplace()
    saved = [SavedValue(a, None, watch) for a in args]
    meta = [(s.shape, s.dtype) for s in saved]
    return node_class(PrimNode, name)(prim, params, edges, meta, saved,
                                      SavedValue(out, name, watch))
