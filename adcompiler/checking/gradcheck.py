"""``adcompiler check``: a compiled gradient against finite differences of the primal.

Invariants: the differences are taken in float64 on copies of the inputs, so the user's function
may modify its arguments; every input the gradient is taken for gets one row with its worst
relative error (entrywise, against the larger of the entry and 1% of the gradient's largest
entry); an input with more than ``max_entries`` entries is checked on a random sample of them.
"""

from __future__ import annotations

import copy
import functools
import inspect
from dataclasses import dataclass

import numpy as np

from . import differences
from .differences import as_float64
from ..aot.examples import call_user, cotangent_for, perturb

EPS = 1e-4


@dataclass
class Row:
    name: str
    what: str          # "float64[3, 4]", or "float"; "value" for value_and_grad's value
    error: float
    tolerance: float
    checked: str = ""  # "200 of 10000 entries" when sampled
    tape: float | None = None   # the worst relative error against the dynamic tape's gradient
    tape_note: str = ""         # why there is no tape figure, where the tape could not run

    @property
    def ok(self) -> bool:
        return bool(self.error <= self.tolerance and
                    (self.tape is None or self.tape <= self.tolerance))


def check_gradient(module, gradient, example, rng, rtol=None, max_entries=1000) -> list:
    """Rows comparing ``gradient`` (a GradientFunction) with finite differences of its primal
    and with the dynamic tape's gradient (as ``ad.check_grad``), on random inputs near
    ``example``. Forward mode is checked against differences along the tangent only."""
    args = perturb(example, rng)
    if gradient.mode == "jvp":
        return _check_jvp(module, gradient, args, rng, rtol)
    kwargs = {"cotangent": cotangent_for(gradient, args, rng)} if gradient.mode == "vjp" else {}
    result = gradient(*copy.deepcopy(args), **kwargs)
    value, grads = _split(gradient, result)
    params = list(inspect.signature(gradient.primal).parameters)

    def scalar(*xs):
        out = call_user(module, f"{gradient.primal.__name__}()", gradient.primal,
                        *copy.deepcopy(xs))
        return float(np.sum(out * kwargs["cotangent"])) if kwargs else float(out)

    rows = []
    if value is not None:
        expected = scalar(*args)
        rows.append(Row("value", "", _error(value, expected), 1e-6 if rtol is None else rtol))
    taped = _tape(gradient, args, kwargs.get("cotangent"))
    for k, (name, g) in enumerate(zip(gradient.wrt, grads)):
        i = params.index(name)
        row = _compare(name, g, args, i, scalar, rng, rtol, max_entries)
        if isinstance(taped, str):
            row.tape_note = taped
        else:
            row.tape = _error(g, taped[k])
        rows.append(row)
    return rows


def _tape(gradient, args, cotangent):
    """The dynamic tape's gradients at ``args`` (one per wrt name), or why it could not run
    the function (it refuses ``math.*`` on tensors, as PyTorch does)."""
    from ..tape import dynamic_grad
    primal = gradient.primal
    if cotangent is not None:
        @functools.wraps(primal)
        def primal(*xs, **kw):  # noqa: F811 - the vjp as the gradient of a weighted sum
            return (gradient.primal(*xs, **kw) * cotangent).sum()
    try:
        result = dynamic_grad(primal, wrt=tuple(gradient.wrt))(*copy.deepcopy(args))
    except Exception as exc:  # noqa: BLE001 - reported in the row; finite differences remain
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return result


def _split(gradient, result):
    value = None
    if gradient.mode == "value_and_grad":
        value, result = result
    grads = result if isinstance(result, tuple) else (result,)
    return value, grads


def _compare(name, g, args, i, scalar, rng, rtol, max_entries) -> Row:
    x = args[i]
    as64 = [as_float64(a) for a in args]
    if isinstance(x, float):
        fd = np.array(differences.gradient(scalar, as64, i, EPS))
        g, entries, what = np.array(g, dtype=np.float64), None, "float"
    else:
        size = np.size(x)
        entries = range(size) if size <= max_entries else \
            sorted(rng.choice(size, max_entries, replace=False))
        fd = differences.gradient(scalar, as64, i, EPS, entries).reshape(-1)
        g = np.asarray(g, dtype=np.float64).reshape(-1)[list(entries)]
        what = f"{x.dtype}[{', '.join(str(d) for d in x.shape)}]"
    low_precision = not isinstance(x, float) and x.dtype.itemsize < 8
    tolerance = (1e-3 if low_precision else 1e-5) if rtol is None else rtol
    checked = f"{len(entries)} of {np.size(x)} entries" if entries is not None and \
        len(entries) < np.size(x) else ""
    return Row(name, what, _error(g, fd), tolerance, checked)


def _error(got, expected) -> float:
    """The worst entrywise relative error, against the larger of the entry and 1% of the
    largest entry."""
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    floor = max(1e-2 * float(np.max(np.abs(expected), initial=0.0)), 1e-10)
    return float(np.max(np.abs(got - expected) / np.maximum(np.abs(expected), floor),
                        initial=0.0))


def _check_jvp(module, gradient, args, rng, rtol) -> list:
    """A jvp's value against the function, its tangent against the five-point difference of
    the function along the tangent direction."""
    params = list(inspect.signature(gradient.primal).parameters)
    positions = [params.index(w) for w in gradient.wrt]
    tangents = [float(rng.standard_normal()) if isinstance(args[i], float) else
                rng.standard_normal(np.shape(args[i])).astype(args[i].dtype) for i in positions]
    single = gradient._single  # one wrt name: one tangent, not a tuple of one
    value, tangent = gradient(*copy.deepcopy(args),
                              tangents=tangents[0] if single else tuple(tangents))

    def along(step):
        xs = list(args)
        for i, t in zip(positions, tangents):
            moved = np.asarray(args[i], dtype=np.float64) + step * t
            xs[i] = float(moved) if isinstance(args[i], float) else moved
        return np.asarray(call_user(module, f"{gradient.primal.__name__}()",
                                    gradient.primal, *xs), dtype=np.float64)
    h = EPS
    fd = (along(-2 * h) - 8 * along(-h) + 8 * along(h) - along(2 * h)) / (12 * h)
    expected = call_user(module, f"{gradient.primal.__name__}()", gradient.primal,
                         *copy.deepcopy(args))
    what = f"{np.asarray(fd).dtype}[{', '.join(str(d) for d in np.shape(fd))}]"
    return [Row("value", "", _error(value, expected), 1e-6 if rtol is None else rtol),
            Row("tangent", what, _error(tangent, fd), 1e-5 if rtol is None else rtol)]
