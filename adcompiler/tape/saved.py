"""The values a primitive's node saves for its backward pass, and the recording of that node.

Invariant: a saved value hands back its array only while the graph is not freed and its tensor
is still at the version it saw (its ``VersionCounter``, :mod:`.tensor`), and otherwise a
:class:`~.node.Placeholder` that answers shape queries and raises PyTorch's error (freed, or
modified by an inplace operation) on any use of its values; under ``mode.numpy_inplace()`` the
counter keeps it fresh instead (:meth:`SavedValue.preserve`).

Layering: above ``Tensor`` (:mod:`.tensor`: a value saves a tensor and rebuilds one,
``Tensor._make``) and :mod:`.node`; :mod:`.record` records through :func:`prim_node`.
"""

from __future__ import annotations

import numpy as np

from . import anomaly, mode
from .node import (Placeholder, PrimNode, ZeroGradNode, _dtype, _shape, node_class,
                   tensor_type_name)
from .tensor import Tensor
from .xp import device_of

FREED = ("Trying to backward through the graph a second time, but the saved intermediate results "
         "have already been freed. Specify retain_graph=True when calling backward the first "
         "time.")
HINT = ("Hint: enable anomaly detection to find the operation that failed to compute its "
        "gradient, with torch.autograd.set_detect_anomaly(True).")  # tape.autograd's, here
HINT_IN_ANOMALY_MODE = ("Hint: the backtrace further above shows the operation that failed to "
                        "compute its gradient. The variable in question was changed in there "
                        "or anywhere later. Good luck!")


class SavedValue:
    """One input (or the output) of a node, as the backward pass will need it."""

    __slots__ = ("value", "tensor", "counter", "version", "shape", "dtype", "creator", "device",
                 "__weakref__")

    def __init__(self, x, creator=None, watch=None):
        """``watch``: whether the counter keeps this value fresh (``mode.numpy_inplace()``,
        read here when not given: a node passes it once for all its values)."""
        self.tensor = self.counter = None
        self.creator = creator
        if isinstance(x, Tensor):
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
            return Tensor._make(self.value, node, True, self.counter)
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
            old = Tensor._make(self.value, saved._grad_fn, saved._requires_grad)
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
                f"{self.version} instead. "
                f"{HINT_IN_ANOMALY_MODE if anomaly.is_anomaly_enabled() else HINT}")


def zero_node(name, args):
    """The zero-gradient node of a piecewise-constant function of ``args``."""
    edges = [a._edge() if isinstance(a, Tensor) and a._requires_grad else None for a in args]
    meta = [(_shape(a), _dtype(a)) for a in args]
    return node_class(ZeroGradNode, name)(edges, meta)


def prim_node(name, prim, params, args, out):
    """Record ``out = prim[params](*args)``: edges to the inputs that need grad, saved values."""
    edges = [a._edge() if isinstance(a, Tensor) and a._requires_grad else None for a in args]
    watch = mode.is_numpy_inplace()
    saved = [SavedValue(a, None, watch) for a in args]
    meta = [(s.shape, s.dtype) for s in saved]
    return node_class(PrimNode, name)(prim, params, edges, meta, saved,
                                      SavedValue(out, name, watch))
