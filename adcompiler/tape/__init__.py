"""The dynamic tape: PyTorch's autograd on NumPy (and CuPy) arrays, built on the same derivative
rules as the compiler (``templates``). It is the reference the compiled gradients are tested
against and the dynamic side of the static-versus-dynamic comparison.

    >>> from adcompiler import tape
    >>> a = tape.tensor(2.0, requires_grad=True)
    >>> b = a.exp(); b
    tensor(7.3891, grad_fn=<ExpBackward0>)
    >>> b.backward(); a.grad
    tensor(7.3891)

Modules: ``tensor`` (state), ``operators``/``methods``/``numpy_api`` (what records),
``record`` (one primitive on the tape), ``node`` (grad_fns and saved values), ``inplace``
(versions, ``CopySlices``), ``views`` (storage shared with a base), ``engine`` (backward and
grad), ``checks`` (what user code hands the tape: hook results, ``.grad =``, ``custom_vjp``
cotangents, ``backward``'s arguments), ``forward_ad`` (dual numbers), ``functional``
(``dynamic_grad``), ``format`` (the repr), ``mode`` (no_grad), ``xp`` (NumPy/CuPy).

Invariant: ``Tensor``'s state and every error message follow PyTorch; the one deliberate
difference is the default float dtype, float64 (NumPy's), printed as ``torch.DoubleTensor`` in
the in-place error where the seeds (float32) print ``torch.FloatTensor``.
"""

from . import forward_ad
from .engine import backward, grad
from .factory import (FUNCTIONS as _FUNCTIONS, full, ones, ones_like, randn, zeros,
                      zeros_like)
from .functional import DynamicGradient, dynamic_grad, dynamic_value_and_grad
from .mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .node import RemovableHandle
from .record import TensorOps
from .tensor import Tensor, tensor

globals().update(_FUNCTIONS)

# custom_vjp functions and stop_gradient, defined below the tape, run on tensors through it.
from ..custom import vjp as _custom_vjp  # noqa: E402
from .custom import call_on_tape as _call_on_tape  # noqa: E402

_custom_vjp.TAPE.update(tensor=Tensor, call=_call_on_tape)

__all__ = ["Tensor", "tensor", "ones", "zeros", "full", "randn", "ones_like", "zeros_like",
           "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
           "forward_ad", "dynamic_grad", "dynamic_value_and_grad", "DynamicGradient",
           "RemovableHandle", "TensorOps", *sorted(_FUNCTIONS)]
