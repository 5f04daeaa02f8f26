"""The one comparison behind both gradient checks, ``ad.check_grad`` and ``adcompiler check``.

Invariants: one error figure, the worst entrywise relative error against the larger of the entry
and 1% of the gradient's largest entry (an entry near zero in a large gradient is judged on the
gradient's scale, where finite differences can resolve it, not on its own); one verdict, every
entry within ``atol + rtol * that scale``, so that with ``atol=0`` an input passes exactly when
its figure is at most ``rtol``; the dynamic tape's gradient is taken on copies of the inputs,
and where the tape cannot run the function the first line of its error says why.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

FLOOR = 1e-2   # entries are judged against at least this fraction of the largest entry


def _scale(expected: np.ndarray) -> np.ndarray:
    floor = max(FLOOR * float(np.max(np.abs(expected), initial=0.0)), 1e-10)
    return np.maximum(np.abs(expected), floor)


def relative_error(got, expected) -> float:
    """The worst entrywise relative error of ``got`` against ``expected`` (see the module)."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    return float(np.max(np.abs(got - expected) / _scale(expected), initial=0.0))


def agrees(got, expected, rtol, atol=0.0) -> bool:
    """Every entry of ``got`` within ``atol + rtol * scale`` of ``expected``'s."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    return bool(np.all(np.abs(got - expected) <= atol + rtol * _scale(expected)))


@dataclass
class InputCheck:
    """One checked input (or a value_and_grad's value, a jvp's tangent): its figures and verdict.

    ``tape`` is the dynamic tape's gradient, or why the tape could not run the function (a
    string), or None where it was not asked; ``vs_tape`` is nan where it was not compared."""

    name: str
    compiled: object
    tape: object
    numerical: object
    vs_numerical: float
    vs_tape: float
    ok: bool
    tolerance: float = 0.0
    what: str = ""       # "float64[3, 4]" or "float"; "" for a value
    checked: str = ""    # "200 of 10000 entries" where the differences took a sample

    @property
    def tape_note(self) -> str:
        return self.tape if isinstance(self.tape, str) else ""


def compare(name, compiled, numerical, tape, rtol, atol=0.0, what="", checked="") -> InputCheck:
    """``compiled`` against finite differences and, where it ran, the tape."""
    ok = agrees(compiled, numerical, rtol, atol)
    vs_tape = math.nan
    if tape is not None and not isinstance(tape, str):
        ok = ok and agrees(compiled, tape, rtol, atol)
        vs_tape = relative_error(compiled, tape)
    return InputCheck(name, compiled, tape, numerical, relative_error(compiled, numerical),
                      vs_tape, ok, rtol, what, checked)


def tape_gradients(primal, wrt, args, kwargs=None):
    """The dynamic tape's gradients of ``primal`` (one per ``wrt`` name) at copies of the
    inputs, or the first line of why it could not run (it refuses ``math.*`` on tensors, as
    PyTorch does)."""
    from .. import tape
    try:
        return tape.dynamic_grad(primal, wrt=tuple(wrt))(*copy.deepcopy(args),
                                                          **copy.deepcopy(kwargs or {}))
    except Exception as exc:  # noqa: BLE001 - reported; finite differences remain
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
