"""SciPy's Python-level functions on tensors, as the compiler spells them: ``scipy.special``'s
``logsumexp``, ``softmax`` and ``log_softmax`` and ``scipy.stats.norm``'s densities and tails
run :mod:`adcompiler.compositions.special` on the tape's ops, so the tape records the
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


_HELD: dict = {}   # (scipy.special loaded, scipy.stats loaded) -> the replacements


def replacements() -> dict:
    """``{id(SciPy's object): the tape's}``, for the SciPy modules imported so far."""
    sp, stats = sys.modules.get("scipy.special"), sys.modules.get("scipy.stats")
    loaded = (sp is not None, stats is not None)
    if loaded not in _HELD:
        _HELD[loaded] = _built(sp, stats) if sp is not None else {}
    return _HELD[loaded]


def _built(sp, stats) -> dict:
    functions = {n: _reduction(n, getattr(sp, n)) for n in ("logsumexp", "softmax",
                                                           "log_softmax")}
    out = {id(getattr(sp, n)): f for n, f in functions.items()}
    special_module = _Module(sp, functions)
    out[id(sp)] = special_module
    replaced_package = {"special": special_module}
    if stats is not None:
        norm = _Norm(stats.norm)
        out[id(stats.norm)] = norm
        out.update({id(getattr(stats.norm, n)): getattr(norm, n) for n in special.NORM})
        stats_module = _Module(stats, {"norm": norm})
        out[id(stats)] = replaced_package["stats"] = stats_module
    out[id(sys.modules["scipy"])] = _Module(sys.modules["scipy"], replaced_package)
    return out
