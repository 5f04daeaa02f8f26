"""Recording: ``apply(prim, args, params)`` computes one primitive on tensors and, when it must,
records its backward node and pushes forward-mode tangents through it.

Invariants: the value is ``adcompiler.ir.primitives.evaluate`` on the arrays (the tape and the
compiler compute the same thing), or its CuPy or Dask spelling on CuPy or Dask arrays
(:func:`.xp.compute`);
a result never shares storage with an input (views are made by :mod:`.views`); a result
requires grad iff grad mode is on, the primitive is differentiable, the result is floating and
some input requires grad.
:class:`TensorOps` is the templates' ``ops`` protocol on tensors: rules run on it record their
own operations, which is how ``create_graph=True`` and forward mode work.

Layering: above ``Tensor`` (:mod:`.tensor`) and the nodes (:mod:`.saved`, :mod:`.node`);
everything that records goes through it, so nothing below it records.
"""

from __future__ import annotations

import numpy as np

from adcompiler.ir.primitives import PRIMS, evaluate, split_call
from adcompiler.templates import has_jvp, tangent

from . import mode
from .names import node_name
from .saved import prim_node, zero_node
from .tensor import Tensor
from .xp import (array_module, array_ops, common_module, compute, is_device_array,
                 is_foreign_array, shares)


def apply(prim: str, args, params=None, name=None):
    """``prim[params](*args)`` as a tensor; ``name`` overrides the PyTorch node name."""
    params = params or {}
    args, data, requires, where = _arguments(args)
    if where is _TENSOR_ON_DEVICE:
        args = beside_device(prim, args)
        data = [a._data if isinstance(a, Tensor) else a for a in args]
    out = Tensor._make(_forward(prim, data, params, where is None))
    spec = PRIMS[prim]
    if not spec.differentiable or out._data.dtype.kind not in "fc":
        if prim in PIECEWISE_CONSTANT and requires and mode._GRAD_ENABLED.get() and \
                out._data.dtype.kind in "fc":
            out._fn = zero_node(name or node_name(prim, args, params), args)
            out._needs_grad = True
        return out
    if requires and mode._GRAD_ENABLED.get():
        out._fn = prim_node(name or node_name(prim, args, params), prim, params, args, out)
        out._needs_grad = True
    level = mode.dual_level_token()
    if level is not None:
        _push_tangents(level, prim, params, args, out)
    return out


# elementwise functions constant between their jumps: a zero-gradient node, as PyTorch records
PIECEWISE_CONSTANT = frozenset({"floor", "ceil", "trunc", "rint", "sign"})
_TENSOR_ON_DEVICE, _CONSTANT_ON_DEVICE = "tensor", "constant"
_HOST_SCALARS = (float, int, bool, np.generic)


def _arguments(args):
    """One pass over the arguments (``apply`` runs for every operation): the arguments (lists
    made arrays), their arrays, whether one requires grad, and where a CuPy or Dask array is
    (None: nowhere, all NumPy; else whether a tensor or a constant holds it)."""
    values, data, requires, where = [], [], False, None
    for a in args:
        if isinstance(a, Tensor):
            d = a._data
            if type(d) is not np.ndarray:
                where = _TENSOR_ON_DEVICE
            if not requires and a._requires_grad:
                requires = True
        else:
            a = d = _constant(a)
            if where is None and type(d) is not np.ndarray and \
                    not isinstance(d, _HOST_SCALARS) and is_foreign_array(d):
                where = _CONSTANT_ON_DEVICE
        values.append(a)
        data.append(d)
    return tuple(values), data, requires, where


def _constant(value):
    """A non-tensor argument: lists become arrays; scalars and arrays stay as they are."""
    if isinstance(value, (list, tuple)):
        return np.asarray(value)
    return value


def beside_device(prim, args):
    """The arguments of an operation on CuPy tensors: a 0-d NumPy constant is a scalar (CuPy
    takes those); a tensor on the host is refused, as PyTorch refuses a CPU tensor (this tape
    does not copy gradients back to the host: move it with ``tape.tensor(x, device="cuda")``).
    Beside Dask tensors, NumPy tensors are Dask's operands as they are."""
    if not any(isinstance(a, Tensor) and is_device_array(a._data) for a in args):
        return args
    for a in args:
        if isinstance(a, Tensor) and isinstance(a._data, np.ndarray):
            devices = {a.device for a in args if isinstance(a, Tensor)}
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two "
                f"devices, {', '.join(sorted(devices))}! ({prim} was given tensors on both: "
                "nothing is copied implicitly; move them with tape.tensor(x, device='cuda'))")
    return tuple(a[()] if isinstance(a, np.ndarray) and a.ndim == 0 else a for a in args)


def _forward(prim, data, params, host=False):
    """The primitive's value as an array of the inputs' module, never a view of an input;
    ``host``: every argument is known to be on the host (NumPy's ``evaluate`` directly)."""
    if host:
        xp, out = np, np.asarray(evaluate(prim, data, params))
    else:
        xp = common_module(data, prim)
        out = xp.asarray(compute(prim, data, params))
    if PRIMS[prim].family in ("shape", "internal", "creation") and _may_alias(xp, out, data):
        out = out.copy()
    return out


def _may_alias(xp, out, data) -> bool:
    if xp is not np:
        return True
    return any(isinstance(d, np.ndarray) and np.may_share_memory(out, d) for d in data)


# ---- forward mode ---------------------------------------------------------------------------
def _push_tangents(level, prim, params, args, out):
    """Give ``out`` the sum of the tangent rules' contributions of the inputs' tangents."""
    tangents = [a._tangent(level) if isinstance(a, Tensor) else None for a in args]
    if all(t is None for t in tangents):
        return
    token = mode._FORWARD_ENABLED.set(False)   # a rule's own operations carry no tangent
    try:
        total = None
        for i, dx in enumerate(tangents):
            if dx is None:
                continue
            if not has_jvp(prim, i):
                raise RuntimeError(f"the forward-mode derivative of {prim} with respect to its "
                                   f"argument {i} is not implemented")
            part = tangent(TENSOR_OPS, prim, i, dx, out, args, params)
            total = part if total is None else total + part
        out._set_tangent(level, _own(total, args, tangents))
    finally:
        mode._FORWARD_ENABLED.reset(token)


def _own(total, args, tangents):
    """The result's tangent in storage of its own: a rule may hand back an input's tangent
    (``x + 1``), and an in-place update of the result writes into its tangent."""
    data = total._data if isinstance(total, Tensor) else total
    for x in (*tangents, *args):
        if isinstance(x, Tensor) and (x is total or shares(data, x._data)):
            return apply("copy", (total,))
    return total


# ---- the templates' ops protocol on tensors -------------------------------------------------
class TensorOps:
    """Primitive names record through :func:`apply`; shapes are read without recording."""

    def __getattr__(self, prim):
        if prim not in PRIMS:
            raise AttributeError(prim)

        def call(*args, **params):
            return apply(prim, *split_call(prim, args, params))
        call.__name__ = prim
        return call

    def shape(self, x):
        return tuple(x.shape) if hasattr(x, "shape") else tuple(np.shape(x))

    def ndim(self, x):
        return len(self.shape(x))

    def size(self, x):
        return int(np.prod(self.shape(x), dtype=np.int64))

    def dtype(self, x):
        return np.dtype(x.dtype) if hasattr(x, "dtype") else np.result_type(x)

    def astype(self, x, dtype):
        return apply("astype", (x,), {"dtype": np.dtype(dtype)})

    def unbroadcast(self, g, x):
        shape = self.shape(x)
        return g if self.shape(g) == shape else apply("sum_to", (g,), {"shape": shape})

    def getitem(self, x, arrays, index):
        return apply("getitem", (x, *arrays), {"index": index})

    def last_writes(self, x, arrays, index):
        """The mask of the writes ``x[index] = v`` keeps (None: all), as a constant array."""
        data = x._data if isinstance(x, Tensor) else x
        return array_ops(array_module(data)).last_writes(data, arrays, index)

    def scatter_add(self, g, arrays, shape, index):
        return apply("scatter_add", (g, *arrays), {"shape": tuple(shape), "index": index})

    def setitem(self, x, v, arrays, index):
        return apply("setitem", (x, v, *arrays), {"index": index})

    def concatenate(self, xs, axis=0):
        return apply("concatenate", tuple(xs), {"axis": axis})

    def stack(self, xs, axis=0):
        return apply("stack", tuple(xs), {"axis": axis})


TENSOR_OPS = TensorOps()
