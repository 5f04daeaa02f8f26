"""The checks at the tape's boundary with user code: the arguments of ``backward``/``grad``, what a
tensor hook returns, a value assigned to ``.grad``, and the cotangents of a ``custom_vjp``'s
``bwd``.

Invariant: each check raises PyTorch's error type (and, where PyTorch has one, its wording)
before anything is computed or stored, so no malformed gradient ever reaches the engine; a value
that passes is returned unchanged (or as the list the engine walks).

Layering: above ``Tensor`` (it tells tensors from other values, :mod:`.tensor`) and below
what calls it: :mod:`.engine`, the ``.grad`` setter (:mod:`.methods`) and :mod:`.custom`.
"""

from __future__ import annotations

import numpy as np

from .node import tensor_type_name
from .tensor import Tensor
from .xp import device_of

# PyTorch's C++ names of scalar types, as its messages print them
_C_NAMES = {"float64": "double", "float32": "float", "float16": "c10::Half", "int64": "long int",
            "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool", "complex128": "c10::complex<double>",
            "complex64": "c10::complex<float>"}


def type_name(x) -> str:
    """``float``, ``list``, ``numpy.ndarray``: the name Python's C API prints for ``type(x)``."""
    cls = type(x)
    return cls.__qualname__ if cls.__module__ == "builtins" else \
        f"{cls.__module__}.{cls.__qualname__}"


def listed(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


# ---- backward() and grad() ------------------------------------------------------------------
def outputs(tensors) -> list:
    """The tensors to differentiate, as a list: each must be a tensor."""
    tensors = listed(tensors)
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"outputs to differentiate must be Tensors (one, or a list or "
                            f"tuple of them), but got {type_name(t)}")
    return tensors


def inputs(x, caller: str) -> list:
    """The tensors whose gradients are asked for, as a non-empty list of tensors."""
    targets = listed(x)
    if not targets:
        raise RuntimeError(f"`inputs` argument to `{caller}()` cannot be empty.")
    for t in targets:
        if not isinstance(t, Tensor):
            raise RuntimeError("all inputs have to be Tensors, but got "
                               f"{type_name(t)} (wrap arrays with tape.tensor(..., "
                               "requires_grad=True) before computing with them)")
    return targets


def gradient(g):
    """A seed gradient that is not a tensor: a number or an array of numbers (the tape, on
    NumPy, takes those where PyTorch takes tensors only); anything else is refused."""
    try:
        kind = np.dtype(g.dtype).kind if hasattr(g, "dtype") else np.asarray(g).dtype.kind
    except (TypeError, ValueError):
        kind = "O"
    if kind not in "biufc":
        raise TypeError(f"gradients can be either Tensors or None, but got {type_name(g)}")
    return g


# ---- hooks ----------------------------------------------------------------------------------
def hook_result(hook, result, g):
    """What ``hook`` returned in place of the gradient ``g``: a tensor like ``g``."""
    name = getattr(hook, "__name__", "<unknown>")
    if not isinstance(result, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type_name(result)}' (hook "
                        f"'{name}' must return a tensor shaped like its argument, or None)")
    shape, dtype, device = _meta(g)
    if result.shape != shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value: it was given a "
                           f"gradient of shape {shape} and returned one of shape {result.shape}")
    if result.dtype != dtype or result.device != device:
        what = "type" if result.dtype != dtype else "device"
        raise RuntimeError(f"hook '{name}' has changed the {what} of value (was "
                           f"{tensor_type_name(dtype, device)} got "
                           f"{tensor_type_name(result.dtype, result.device)})")
    return result


def _meta(g):
    """Shape, dtype and device of a gradient (a tensor, an array or a NumPy scalar)."""
    if isinstance(g, Tensor):
        return g.shape, g.dtype, g.device
    return tuple(np.shape(g)), np.dtype(getattr(g, "dtype", None) or np.result_type(g)), \
        device_of(g)


# ---- .grad = value --------------------------------------------------------------------------
def assigned_grad(t, value):
    """``value`` as ``t``'s gradient: None, or a tensor of ``t``'s shape, dtype and device."""
    if value is None:
        return None
    if not isinstance(value, Tensor):
        raise TypeError("assigned grad expected to be a Tensor or None but got grad of type "
                        f"{type_name(value)} (wrap it: tape.tensor(value))")
    if value is t:
        raise RuntimeError("can't assign Variable as its own grad")
    if value.dtype != t.dtype:
        raise RuntimeError(f"attempting to assign a gradient with dtype '{_c_name(value.dtype)}' "
                           f"to a tensor with grad_dtype '{_short_name(t.dtype)}'. The gradient "
                           "must match the tensor's dtype.")
    if value.device != t.device:
        raise RuntimeError(f"attempting to assign a gradient located on device '{value.device}' "
                           f"to a tensor located on device '{t.device}'. Please ensure that the "
                           "gradient and the tensor are on the same device")
    if value.shape != t.shape:
        raise RuntimeError(f"attempting to assign a gradient of size '{list(value.shape)}' to a "
                           f"tensor of size '{list(t.shape)}'. Please ensure that the gradient "
                           "and the tensor are the same size")
    return value


def _c_name(dtype) -> str:
    return _C_NAMES.get(np.dtype(dtype).name, np.dtype(dtype).name)


def _short_name(dtype) -> str:
    return tensor_type_name(dtype)[len("torch."):-len("Tensor")]


# ---- custom_vjp -----------------------------------------------------------------------------
def cotangent(fn, node_name: str, i: int, ct, meta):
    """The cotangent ``fn.bwd`` returned for argument ``i``, whose ``(shape, dtype)`` is
    ``meta``: it must have that shape and dtype (the compiled gradient refuses any other too)."""
    shape, dtype = tuple(meta[0]), np.dtype(meta[1])
    got = tuple(ct.shape) if hasattr(ct, "shape") else tuple(np.shape(ct))
    got_dtype = np.dtype(ct.dtype) if hasattr(ct, "dtype") else np.result_type(ct)
    if got != shape:
        wrong = f"got {list(got)} but expected shape {list(shape)}"
    elif got_dtype != dtype:
        wrong = f"got dtype {got_dtype} but expected {dtype}"
    else:
        return ct
    raise RuntimeError(f"Function {node_name} returned an invalid gradient at index {i} - "
                       f"{wrong}: {fn.bwd.__name__} (the bwd of custom_vjp {fn.__name__}) must "
                       f"return, for argument {i}, a cotangent of that argument's shape and "
                       "dtype")
