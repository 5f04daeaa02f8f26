"""Backward nodes (``grad_fn``s), their hooks, and placeholders for values they do not hold.

Invariants: a node has one output and one edge per input (the input's ``grad_fn``, its
``AccumulateGrad`` for a leaf, or None where no gradient flows); a :class:`PrimNode`'s backward
is its primitive's rule in ``templates``, run on what its saved values (:mod:`.saved`) hand back;
a :class:`Placeholder` answers shape queries and raises PyTorch's error on any use of its values,
so an adjoint that needs no saved value (``y = x + 1``) never raises. This module sits below
``Tensor`` (:mod:`.tensor` makes a leaf's ``AccumulateGrad``) and imports nothing of the tape.
"""

from __future__ import annotations

import itertools
import sys

import numpy as np

from adcompiler.templates import cotangent, has_rule

from . import anomaly

_SEQUENCE = itertools.count()

_TYPE_NAMES = {"float64": "Double", "float32": "Float", "float16": "Half", "int64": "Long",
               "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
               "bool": "Bool", "complex128": "ComplexDouble", "complex64": "ComplexFloat"}


def tensor_type_name(dtype, device="cpu") -> str:
    """PyTorch's legacy type name: ``torch.DoubleTensor`` (float64), ``torch.cuda.FloatTensor``."""
    base = _TYPE_NAMES.get(np.dtype(dtype).name, np.dtype(dtype).name.capitalize()) + "Tensor"
    return f"torch.cuda.{base}" if device.startswith("cuda") else f"torch.{base}"


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
        self.trace = anomaly.forward_trace()     # where it was made, in anomaly mode

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


class ZeroGradNode(Node):
    """The node of a piecewise-constant elementwise function (``floor``, ``ceil``, ``trunc``,
    ``rint``, ``sign``): its gradient is 0 (PyTorch's ``FloorBackward0`` and the like), so a
    result made of one alone still backpropagates, as in PyTorch and as the compiler
    differentiates it; exactly 0, also where ``g`` is infinite or NaN."""

    def apply(self, g, ops, as_tensor, wanted):
        zero = ops.multiply(ops.where(ops.isfinite(g), g, 0.0), 0.0)
        return [zero if want else None for want in wanted]


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


