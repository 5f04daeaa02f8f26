"""Real arguments for the rules of ``custom_vjp`` functions, recorded while a transform compiles.

A custom_vjp function is a black box to the compiler: the aval of its result (and whether its
rules are right) is learnt by running its ``fwd`` and ``bwd``. Not on made-up data (a matrix of
ones is singular, so ``np.linalg.solve`` or ``cholesky`` would fail on it), but on the arguments
the call really gets: while a transform compiles ``f`` for a call's arguments
(:func:`compiling`), the first custom call whose result is unknown runs ``f`` once, as plain
NumPy, on copies of those arguments, every custom_vjp call in it recording its own arguments
(:func:`record`); :func:`find` then gives the recorded arguments of the call being lowered.

Invariants: ``f`` runs at most once per compilation, and only where a custom call's result is
not known yet (a function without custom calls never runs at compile time); it runs on copies,
so the caller's arrays are never written; a transform of a transform (``grad(grad(f))``) runs the
innermost ``f``; what is recorded lives as long as the compilation, never on the function.
A call that did not run (a branch not taken) has no example (:func:`find` gives None).
"""

from __future__ import annotations

import contextlib
import copy
import inspect
from contextvars import ContextVar

import numpy as np

_COMPILING: ContextVar = ContextVar("adcompiler_custom_compiling", default=None)
_RECORDING: ContextVar = ContextVar("adcompiler_custom_recording", default=None)


class Examples:
    """The real arguments of one compilation, and the custom calls ``fn`` made on them."""

    def __init__(self, fn, arguments: dict):
        self.fn, self.arguments = _innermost(fn), arguments
        self.calls: dict = {}   # custom_vjp object -> [(signature, argument copies)]
        self.ran = False
        self.error: BaseException | None = None   # what running fn raised, if it did

    def run(self):
        """Run ``fn`` once on copies of the arguments, recording its custom calls."""
        if self.ran:
            return
        self.ran = True
        token = _RECORDING.set(self)
        try:
            args, kwargs = _call_arguments(self.fn, self.arguments)
            with quiet():
                self.fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - kept, and reported where no example is found
            self.error = exc
        finally:
            _RECORDING.reset(token)

    def add(self, fn, args):
        signature = tuple(_signature(a) for a in args)
        calls = self.calls.setdefault(fn, [])
        if all(sig != signature for sig, _ in calls):
            calls.append((signature, tuple(_copy(a) for a in args)))

    def find(self, fn, avals, literals):
        for _, args in self.calls.get(fn, ()):
            if _matches(args, avals, literals):
                return args
        return None


@contextlib.contextmanager
def compiling(fn, arguments: dict):
    """While compiling ``fn`` for these (real) arguments, custom calls learn from them."""
    token = _COMPILING.set(Examples(fn, arguments))
    try:
        yield
    finally:
        _COMPILING.reset(token)


def record(fn, args):
    """A custom_vjp call on real arguments: remembered where a compilation is running ``f``."""
    examples = _RECORDING.get()
    if examples is not None:
        examples.add(fn, args)


def find(fn, avals, literals) -> list | None:
    """The real arguments of a call of custom_vjp ``fn`` with these avals and literals, as the
    rules take them (a literal as it is, a 0-d array for a NumPy scalar), or None where there
    is no compilation with real arguments or no such call ran in ``f`` on them."""
    examples = _COMPILING.get()
    if examples is None:
        return None
    args = examples.find(fn, avals, literals)
    if args is None and not examples.ran:
        examples.run()
        args = examples.find(fn, avals, literals)
    if args is None:
        return None
    return [lit if lit is not None else _as_aval(a, aval)
            for a, aval, lit in zip(args, avals, literals)]


def run_error() -> BaseException | None:
    """What running ``f`` on the compilation's arguments raised, if it did."""
    examples = _COMPILING.get()
    return None if examples is None else examples.error


def function_name() -> str | None:
    examples = _COMPILING.get()
    return None if examples is None else getattr(examples.fn, "__name__", None)


@contextlib.contextmanager
def quiet():
    """Run the user's code while compiling: no floating-point warnings."""
    import warnings
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# ---- helpers -------------------------------------------------------------------------------------
def _innermost(fn):
    """The user's function under transforms of it (``grad(grad(f))`` -> ``f``)."""
    while hasattr(fn, "primal") and hasattr(fn, "wrt"):
        fn = fn.primal
    return fn


def _call_arguments(fn, arguments: dict):
    """``(args, kwargs)`` for ``fn`` from bound ``arguments``: arrays copied, lists as arrays
    (as the compiler reads them)."""
    bound = inspect.signature(fn).bind_partial()
    bound.arguments.update({name: _argument_copy(v) for name, v in arguments.items()})
    return bound.args, bound.kwargs


def _argument_copy(value):
    if isinstance(value, list):
        return np.array(value)
    return _copy(value)


def _copy(value):
    if isinstance(value, np.ndarray) or (hasattr(value, "copy") and hasattr(value, "shape")
                                          and not isinstance(value, np.generic)):
        return value.copy()
    if isinstance(value, list):
        return copy.deepcopy(value)
    return value


def _signature(x) -> tuple:
    """What a call's argument is, for matching: shape and dtype (a Python float as float64,
    an int or bool with its value, since it may be static), or the value itself."""
    if isinstance(x, bool) or (isinstance(x, int) and not isinstance(x, bool)):
        return ("static", type(x).__name__, x)
    if isinstance(x, float) or hasattr(x, "dtype") and hasattr(x, "shape"):
        return _shape_dtype(x)
    return ("object", type(x).__name__, id(x))


def _shape_dtype(x) -> tuple:
    if isinstance(x, float) and not isinstance(x, np.generic):
        return ((), "float64")
    return (tuple(x.shape), np.dtype(x.dtype).name)


def _matches(args, avals, literals) -> bool:
    """Whether recorded ``args`` fit a call with these avals and literals: each array of the
    aval's shape (any, where unknown) and dtype, each int or bool equal to its literal."""
    if len(args) != len(avals):
        return False
    for a, aval, lit in zip(args, avals, literals):
        sig = _signature(a)
        if sig[0] == "static":
            if aval.kind not in ("int", "bool") or (lit is not None and lit != a):
                return False
        elif sig[0] == "object" or aval.kind not in ("float", "array"):
            return False
        else:
            shape, dtype = sig
            want = aval.known_shape
            if dtype != aval.dtype or (want is not None and tuple(want) != shape):
                return False
    return True


def _as_aval(x, aval):
    """``x`` as the compiler sees it: a float for a Python float, a 0-d array for a NumPy
    scalar."""
    if aval.kind == "float":
        return float(x)
    if aval.kind == "array" and isinstance(x, (float, np.generic)):
        return np.asarray(x, dtype=aval.dtype)
    return x


__all__ = ["compiling", "record", "find", "run_error", "function_name", "quiet", "Examples"]
