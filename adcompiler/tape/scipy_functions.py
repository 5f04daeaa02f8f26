"""SciPy's Python-level functions on tensors, as the compiler spells them: ``scipy.special``'s
``logsumexp``, ``softmax`` and ``log_softmax`` and ``scipy.stats.norm``'s densities and tails
run :mod:`adcompiler.compositions.special` on the tape's ops, and ``scipy.linalg``'s
``cholesky``, ``solve_triangular``, ``cho_factor`` and ``cho_solve`` the compiler's primitives
and :mod:`adcompiler.compositions.factorizations`, so the tape records the
primitives the compiler emits and its gradient is the compiler's. (SciPy's ufuncs, ``erf`` and
the like, reach the tape through NumPy's ufunc protocol already.)

:func:`replacements` maps SciPy's objects (its ``special`` and ``stats`` modules, the package,
``norm``, each function) to tensor-aware ones that call SciPy's own where no argument is a
tensor; :mod:`.numpy_scope` reads the user's globals through it. Empty where SciPy was never
imported: nothing here imports it.
"""

from __future__ import annotations

import sys
import types

from adcompiler.compositions import special

from .compositions import TapeOps, tensor_of
from .tensor import Tensor


def _tensor_among(values) -> Tensor | None:
    return next((v for v in values if isinstance(v, Tensor)), None)


def _reduction(name, real):
    composed = getattr(special, name)

    def run(a, *args, **kwargs):
        like = _tensor_among([a, *args, *kwargs.values()])
        if like is None:
            return real(a, *args, **kwargs)
        if "b" in kwargs and kwargs["b"] is not None:
            kwargs["b"] = tensor_of(kwargs["b"])
        return composed(TapeOps(like), tensor_of(a), *args, **kwargs)
    run.__name__ = name
    return run


class _Norm:
    """``scipy.stats.norm`` on tensors; ``norm(loc, scale)`` gives a frozen one."""

    def __init__(self, real, loc=0.0, scale=1.0):
        self.real, self.loc, self.scale = real, loc, scale
        for name in special.NORM:
            setattr(self, name, self._method(name))

    def _method(self, name):
        def run(x, loc=None, scale=None):
            loc = self.loc if loc is None else loc
            scale = self.scale if scale is None else scale
            like = _tensor_among([x, loc, scale])
            if like is None:
                return getattr(self.real, name)(x, loc=loc, scale=scale)
            return special.NORM[name](TapeOps(like), tensor_of(x), loc, scale)
        run.__name__ = name
        return run

    def __call__(self, loc=0.0, scale=1.0):
        return _Norm(self.real, loc, scale)

    def __getattr__(self, name):   # rvs, mean, ... : SciPy's own
        return getattr(self.real, name)


class _Module(types.ModuleType):
    """A SciPy module, with some of its names replaced."""

    def __init__(self, real, replaced: dict):
        super().__init__(real.__name__, real.__doc__)
        self.__dict__.update(replaced)
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)


_HELD: dict = {}   # which of scipy.special, stats, linalg are loaded -> the replacements


def replacements() -> dict:
    """``{id(SciPy's object): the tape's}``, for the SciPy modules imported so far."""
    loaded = tuple(name in sys.modules for name in ("scipy.special", "scipy.stats",
                                                     "scipy.linalg"))
    if loaded not in _HELD:
        _HELD[loaded] = _built() if any(loaded) else {}
    return _HELD[loaded]


def _linalg_functions(real) -> dict:
    """``scipy.linalg``'s ``cholesky``, ``solve_triangular``, ``cho_factor`` and ``cho_solve``
    on tensors: the primitives and compositions the compiler records for them."""
    from adcompiler.compositions import factorizations as fz

    from .compositions import OPS
    from .factorizations import cholesky as np_cholesky
    from .record import apply

    def cholesky(a, lower=False, **kwargs):
        if not isinstance(a, Tensor):
            return real.cholesky(a, lower=lower, **kwargs)
        return np_cholesky(a, upper=not lower)

    def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, **kwargs):
        if _tensor_among([a, b]) is None:
            return real.solve_triangular(a, b, trans=trans, lower=lower,
                                         unit_diagonal=unit_diagonal, **kwargs)
        params = {"lower": bool(lower), "trans": {0: 0, 1: 1, 2: 1, "N": 0, "T": 1,
                                                  "C": 1}[trans],
                  "unit_diagonal": bool(unit_diagonal)}
        return apply("solve_triangular", (tensor_of(a), tensor_of(b)), params)

    def cho_factor(a, lower=False, **kwargs):
        if not isinstance(a, Tensor):
            return real.cho_factor(a, lower=lower, **kwargs)
        return fz.cho_factor(OPS, a, bool(lower)), bool(lower)

    def cho_solve(c_and_lower, b, **kwargs):
        c, lower = c_and_lower
        if _tensor_among([c, b]) is None:
            return real.cho_solve(c_and_lower, b, **kwargs)
        return fz.cho_solve(OPS, tensor_of(c), bool(lower), tensor_of(b))

    return {"cholesky": cholesky, "solve_triangular": solve_triangular,
            "cho_factor": cho_factor, "cho_solve": cho_solve}


def _built() -> dict:
    out, package = {}, {}
    sp = sys.modules.get("scipy.special")
    if sp is not None:
        functions = {n: _reduction(n, getattr(sp, n)) for n in ("logsumexp", "softmax",
                                                               "log_softmax")}
        out.update({id(getattr(sp, n)): f for n, f in functions.items()})
        out[id(sp)] = package["special"] = _Module(sp, functions)
    stats = sys.modules.get("scipy.stats")
    if stats is not None:
        norm = _Norm(stats.norm)
        out[id(stats.norm)] = norm
        out.update({id(getattr(stats.norm, n)): getattr(norm, n) for n in special.NORM})
        out[id(stats)] = package["stats"] = _Module(stats, {"norm": norm})
    linalg = sys.modules.get("scipy.linalg")
    if linalg is not None:
        functions = _linalg_functions(linalg)
        out.update({id(getattr(linalg, n)): f for n, f in functions.items()})
        out[id(linalg)] = package["linalg"] = _Module(linalg, functions)
    out[id(sys.modules["scipy"])] = _Module(sys.modules["scipy"], package)
    return out
