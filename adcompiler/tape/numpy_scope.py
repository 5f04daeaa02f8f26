"""The user's function run by ``dynamic_grad`` with NumPy's array constructors making tensors.

PyTorch code fills buffers it made (``buf = torch.zeros(n); buf[i] = h``); NumPy code does the
same with ``np.zeros``, and the compiler takes it. On the tape a plain array cannot hold a
tensor (``buf[i] = t`` would drop its gradient), so :func:`in_tape_scope` gives a copy of the
function whose module globals are read through :class:`_Scope`: the name bound to ``numpy``
(``np``) answers with :data:`TAPE_NUMPY`, whose ``zeros``, ``ones``, ``empty``, ``full`` (and
their ``_like`` forms, of arrays) make float tensors that record what is written into them, and
whose ``array``/``asarray`` of tensors stack them; every other name is NumPy's, and SciPy's
``logsumexp``, ``softmax``, ``log_softmax`` and ``norm`` are the tape's (:mod:`.scipy_functions`). The
module's own functions that the function calls are read through the same scope, so a helper's
buffers are tensors too. Globals are read live (a rebinding is seen) and written to the module.
Integer and boolean arrays stay NumPy's (index arrays, masks, counters).
"""

from __future__ import annotations

import types

import numpy as np

from . import scipy_functions
from .record import apply
from .tensor import Tensor, tensor

_FLOAT = (None, float, np.float64, np.float32, "float64", "float32", "f8", "f4")


def _floating(dtype) -> bool:
    return dtype in _FLOAT or (isinstance(dtype, np.dtype) and dtype.kind == "f")


def _constructor(name):
    real = getattr(np, name)

    def construct(*args, dtype=None, **kwargs):
        if name.endswith("_like") and isinstance(args[0], Tensor):
            return real(*args, dtype=dtype, **kwargs) if dtype else real(*args, **kwargs)
        array = real(*args, dtype=dtype, **kwargs) if dtype else real(*args, **kwargs)
        return tensor(array) if _floating(array.dtype) and not kwargs.get("like") else array
    construct.__name__ = name
    return construct


def _holds_tensor(obj) -> bool:
    if isinstance(obj, Tensor):
        return True
    return isinstance(obj, (list, tuple)) and any(_holds_tensor(x) for x in obj)


def _stacked(obj, dtype=None):
    """``np.array`` of a nesting of lists holding tensors: one stack per level."""
    if isinstance(obj, (list, tuple)):
        return apply("stack", tuple(_stacked(x, dtype) for x in obj), {"axis": 0})
    if isinstance(obj, Tensor):
        return obj
    return tensor(np.asarray(obj, dtype=dtype or np.float64))


def _array(name):
    real = getattr(np, name)

    def build(obj, *args, **kwargs):
        if _holds_tensor(obj) and not isinstance(obj, Tensor):
            return _stacked(obj, kwargs.get("dtype"))
        return real(obj, *args, **kwargs)
    build.__name__ = name
    return build


class _TapeNumpy(types.ModuleType):
    """NumPy, with the constructors above."""

    def __getattr__(self, name):
        return getattr(np, name)


TAPE_NUMPY = _TapeNumpy("numpy", "NumPy as dynamic_grad's functions see it")
for _name in ("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
              "full_like"):
    setattr(TAPE_NUMPY, _name, _constructor(_name))
for _name in ("array", "asarray"):
    setattr(TAPE_NUMPY, _name, _array(_name))
_REPLACED = {id(getattr(np, n)): getattr(TAPE_NUMPY, n) for n in vars(TAPE_NUMPY)
             if not n.startswith("_") and hasattr(np, n)}


def _from_scipy(value) -> bool:
    """Whether ``value`` is one of SciPy's modules, functions or objects (``norm``)."""
    where = value.__name__ if isinstance(value, types.ModuleType) else \
        getattr(value, "__module__", None) or type(value).__module__
    return isinstance(where, str) and where.startswith("scipy")


class _Scope(dict):
    """A module's globals read through: numpy (and its constructors imported by name) as the
    tape's, the module's functions as their copies in this scope, the rest as they are."""

    def __init__(self, real: dict):
        super().__init__(__builtins__=real.get("__builtins__", __builtins__))
        self.real, self.copies = real, {}

    def __getitem__(self, name):
        value = self.real[name]
        if value is np:
            return TAPE_NUMPY
        if id(value) in _REPLACED:
            return _REPLACED[id(value)]
        if isinstance(value, types.FunctionType) and value.__globals__ is self.real:
            return self.copy(value)
        if _from_scipy(value):   # (asked only of SciPy's objects: every name read comes here)
            return scipy_functions.replacements().get(id(value), value)
        return value

    def __contains__(self, name):
        return name in self.real

    def get(self, name, default=None):
        try:
            return self[name]
        except KeyError:
            return default

    def __setitem__(self, name, value):   # `global x; x = ...` writes the module's
        self.real[name] = value

    def copy(self, fn):
        held = self.copies.get(fn)
        if held is None:
            held = types.FunctionType(fn.__code__, self, fn.__name__, fn.__defaults__,
                                      fn.__closure__)
            held.__kwdefaults__, held.__qualname__ = fn.__kwdefaults__, fn.__qualname__
            self.copies[fn] = held
        return held


_SCOPES: dict = {}   # id(a module's globals) -> (them, their scope)


def in_tape_scope(fn):
    """``fn`` as ``dynamic_grad`` runs it (see the module's docstring); ``fn`` itself where it
    is not a plain Python function."""
    if not isinstance(fn, types.FunctionType):
        return fn
    held = _SCOPES.get(id(fn.__globals__))
    if held is None or held[0] is not fn.__globals__:
        held = _SCOPES[id(fn.__globals__)] = (fn.__globals__, _Scope(fn.__globals__))
    return held[1].copy(fn)
