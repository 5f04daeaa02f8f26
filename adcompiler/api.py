"""The public transforms: ``grad``, ``value_and_grad`` and ``vjp``.

Each returns a :class:`GradientFunction`: a callable with the user's signature that compiles
once per input signature (shapes, dtypes, and the values of static arguments such as ints)
and afterwards only runs the generated code.
"""

from __future__ import annotations

import functools
import inspect

from .errors import CompileError
from .pipeline import Compiled, compile_gradient
from .signature import bind_arguments, classify, key_of, resolve_wrt


class GradientFunction:
    """A compiled gradient of ``primal``; ``.source`` and ``.ir`` show the latest compilation."""

    def __init__(self, fn, wrt, mode):
        self.primal = fn
        self.mode = mode
        self._wrt_given = wrt
        self.wrt = resolve_wrt(fn, 0 if wrt is None else wrt)
        self._single = wrt is None or not isinstance(wrt, (tuple, list))
        self._signature = inspect.signature(fn)
        self._cache: dict = {}
        self._last: Compiled | None = None
        functools.update_wrapper(self, fn, updated=())  # not fn.__dict__: grad(grad(f))

    def _bind(self, args, kwargs):
        cotangent = kwargs.pop("cotangent", None) if self.mode == "vjp" else None
        if self.mode == "vjp" and cotangent is None:
            raise TypeError(f"vjp of {self.primal.__name__} needs the keyword cotangent= "
                            "(an array shaped like the function's result)")
        return bind_arguments(self.primal, args, kwargs), cotangent

    def specialize(self, *args, **kwargs) -> Compiled:
        """Compile (or fetch) the specialisation for these arguments, without running it."""
        arguments, cotangent = self._bind(args, kwargs)
        return self._compiled(arguments, cotangent)[0]

    def _compiled(self, arguments, cotangent):
        avals = {n: classify(v, n, n in self.wrt) for n, v in arguments.items()}
        ct_aval = classify(cotangent, "cotangent", True) if cotangent is not None else None
        key = key_of(avals) + (ct_aval,)
        compiled = self._cache.get(key)
        if compiled is None:
            compiled = compile_gradient(self.primal, avals, self.wrt, self.mode, ct_aval)
            self._cache[key] = compiled
        self._last = compiled
        return compiled, arguments

    def __call__(self, *args, **kwargs):
        arguments, cotangent = self._bind(args, kwargs)
        compiled, arguments = self._compiled(arguments, cotangent)
        extra = (cotangent,) if self.mode == "vjp" else ()
        result = compiled.function(*arguments.values(), *extra)
        return self._package(result)

    def _package(self, result):
        if self.mode == "value_and_grad":
            value, *grads = result if isinstance(result, tuple) else (result,)
            return value, (grads[0] if self._single else tuple(grads))
        if not isinstance(result, tuple):
            result = (result,)
        return result[0] if self._single else tuple(result)

    # ---- inspection ---------------------------------------------------------------------------
    def _latest(self) -> Compiled:
        if self._last is None:
            raise AttributeError(
                f"{self.primal.__name__} has not been compiled yet: call it once, or use "
                ".specialize(*example_args) to compile for example inputs")
        return self._last

    @property
    def source(self) -> str:
        """The generated Python source of the latest compilation."""
        return self._latest().source

    @property
    def ir(self):
        """The optimised SSA graph of the latest compilation (prints in the text form)."""
        return self._latest().graph

    def __repr__(self):
        return f"<adcompiler.{self.mode} of {self.primal.__qualname__} wrt {self.wrt}>"


def _transform(mode):
    def transform(f=None, *, wrt=None):
        if f is None:
            return lambda fn: GradientFunction(fn, wrt, mode)
        return GradientFunction(f, wrt, mode)
    transform.__name__ = mode
    return transform


grad = _transform("grad")
grad.__doc__ = """The gradient of ``f``'s scalar result with respect to ``wrt``.

``wrt`` names parameters by name or position; a single one gives a single gradient, a tuple
gives a tuple in that order (default: the first parameter). Use as ``grad(f)``, ``@grad`` or
``@grad(wrt=("w1", "w2"))``. A gradient has its input's shape and dtype (a float for a float).
"""
value_and_grad = _transform("value_and_grad")
value_and_grad.__doc__ = "Like :func:`grad`, returning ``(value, gradient)``."
vjp = _transform("vjp")
vjp.__doc__ = """The vector-Jacobian product of ``f`` for a non-scalar result.

Call it with the keyword ``cotangent=`` (an array shaped like ``f``'s result), as PyTorch's
``backward(gradient)``; it returns what :func:`grad` would, for ``sum(f(...) * cotangent)``.
"""

__all__ = ["grad", "value_and_grad", "vjp", "GradientFunction", "CompileError"]
