"""``Tensor`` assembled, once, when ``adcompiler.tape`` is imported: the members of
:class:`.operators.Operators`, :class:`.methods.Methods` and :class:`.numpy_api.NumpyProtocol`
are attached to the class of :mod:`.tensor`, and the modules that register NumPy functions into
:data:`.numpy_api.FUNCTIONS` (``np.linalg.solve``, ``np.einsum``, ``np.sort``...) are loaded.

Invariants: every member of ``Tensor`` is defined in exactly one place, its class body or one
of the three parts; a part that would replace a name the class already has raises here, at
import. An attached function is named as the class's own (``Tensor.backward``), so Python's
argument errors read as if it were written in the class body.

Why attached rather than inherited: the modules that record (:mod:`.record`, :mod:`.views`,
:mod:`.inplace`...) build tensors (``Tensor._make``) and sit below the modules that define the
operators and methods, which record through them; so the class they build is the one defined on
the floor, :mod:`.tensor`, and its behaviour is added to it here, at the top, where the imports
can all run downwards.
"""

from __future__ import annotations

import types

# each registers its NumPy functions (no two register the same one): np.einsum; np.inner and
# ufunc.outer; np.convolve and np.interp; np.linalg.solve, inv, det; np.sort, np.median and
# np.quantile; np.split and np.tile; np.average and np.nansum
from . import einsum, products, signals, solvers, sorting, splits, statistics  # noqa: F401
from . import arrangements  # noqa: F401  (np.rot90, np.gradient, np.maximum.accumulate...)
from . import factorizations  # noqa: F401  (np.linalg.cholesky, eigh, svd, qr, np.kron...)
from .methods import Methods
from .numpy_api import NumpyProtocol
from .operators import Operators
from .tensor import Tensor

_EVERY_CLASS = frozenset(vars(type("Part", (), {})))   # __module__, __dict__, __doc__...


def _attach(cls, *parts):
    """Copy the members each part defines onto ``cls``; a name already there raises."""
    for part in parts:
        for name, member in vars(part).items():
            if name in _EVERY_CLASS or (name == "__hash__" and member is None):
                continue      # (defining __eq__ sets __hash__ = None: Tensor keeps its own)
            if name in vars(cls):
                raise TypeError(f"{part.__name__}.{name} would replace {cls.__name__}.{name}")
            setattr(cls, name, _named(member, f"{cls.__name__}.{name}"))


def _named(member, qualname):
    """``member`` (a function, or a property's accessors) named ``qualname``, as if written in
    the class body, so that Python's argument errors say ``Tensor.backward()`` as PyTorch's
    do; a function attached under two names (``clip``, ``clamp``) keeps the first."""
    if isinstance(member, property):
        return property(*(_named(f, qualname) for f in (member.fget, member.fset, member.fdel)),
                        member.__doc__)
    owner = qualname.partition(".")[0] + "."
    if isinstance(member, types.FunctionType) and not member.__qualname__.startswith(owner):
        member.__qualname__ = qualname
        if hasattr(member.__code__, "co_qualname"):     # (Python 3.11+ prints this one)
            member.__code__ = member.__code__.replace(co_qualname=qualname)
    return member


_attach(Tensor, Operators, Methods, NumpyProtocol)
