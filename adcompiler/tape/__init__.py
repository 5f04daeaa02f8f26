"""The dynamic tape: PyTorch's autograd on NumPy (and CuPy) arrays, built on the same derivative
rules as the compiler (``templates``). It is the reference the compiled gradients are tested
against and the dynamic side of the static-versus-dynamic comparison.

    >>> from adcompiler import tape
    >>> a = tape.tensor(2.0, requires_grad=True)
    >>> b = a.exp(); b
    tensor(7.3891, grad_fn=<ExpBackward0>)
    >>> b.backward(); a.grad
    tensor(7.3891)

Modules, from the floor up (each imports only modules on the floors below it):

1. ``xp`` (NumPy/CuPy), ``mode`` (no_grad, dual levels), ``anomaly`` (anomaly detection),
   ``names`` (PyTorch's node names),
   ``format`` (the repr), ``node`` (grad_fns, hooks, placeholders: nothing of ``Tensor``);
2. ``tensor``: ``Tensor``'s state, its constructors (``Tensor``, ``tensor``, ``Tensor._make``)
   and what reads only that state; every module above imports ``Tensor`` from here;
3. what records: ``saved`` (the values a node keeps, their version checks), ``record`` (one
   primitive on the tape, ``apply``), ``views`` (storage shared with a base), ``inplace``
   (versions, ``CopySlices``), ``numpy_api`` (the NumPy protocols), then the NumPy functions
   spelled in primitives (``compositions``, ``matrices``, ``solvers``, ``einsum``, ``sorting``,
   ``splits``, ``products``, ``signals``, ``statistics``); ``checks`` (what user code hands the
   tape: hook results, ``.grad =``, ``custom_vjp`` cotangents, ``backward``'s arguments) and
   ``engine`` (backward and grad);
4. what gives ``Tensor`` its behaviour: ``operators``, ``methods``, and ``assembly``, the one
   place that attaches their members (and ``numpy_api``'s protocols) to the class; it is
   imported first, below, so every ``Tensor`` is whole before any user code sees one;
5. the entry points: ``factory`` (``ones``, ``tape.exp``...), ``forward_ad`` (dual numbers),
   ``functional`` (``dynamic_grad``), ``custom`` (``custom_vjp`` calls on the tape),
   ``autograd`` (``torch.autograd``'s names).

Invariant: ``Tensor``'s state and every error message follow PyTorch; the one deliberate
difference is the default float dtype, float64 (NumPy's), printed as ``torch.DoubleTensor`` in
the in-place error where the seeds (float32) print ``torch.FloatTensor``.
"""

from . import assembly  # noqa: F401 (Tensor's operators, methods, NumPy protocols: first)
from . import autograd, forward_ad
from .anomaly import (detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled,
                      set_detect_anomaly)
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
           "forward_ad", "autograd", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "dynamic_grad", "dynamic_value_and_grad", "DynamicGradient",
           "RemovableHandle", "TensorOps", *sorted(_FUNCTIONS)]
