"""``adcompiler check``: a marked gradient of a module, at random inputs near each example,
against finite differences of the primal and the dynamic tape.

Invariants: the differences are taken in float64 on copies of the inputs, so the user's function
may modify its arguments; every input the gradient is taken for gets one
:class:`~adcompiler.checking.comparison.InputCheck`, judged as ``ad.check_grad`` judges (one
comparison, :mod:`adcompiler.checking.comparison`, with ``atol=0``); an input with more than
``max_entries`` entries is checked on a random sample of them.
"""

from __future__ import annotations

import copy
import functools
import inspect

import numpy as np

from . import differences
from ..aot.examples import call_user, cotangent_for, perturb
from .comparison import InputCheck, compare, tape_gradients
from .differences import as_float64
from ..frontend.bindings.trees import is_container, rebuild, split

EPS = 1e-4


def check_gradient(module, gradient, example, rng, rtol=None, max_entries=1000) -> list:
    """One :class:`InputCheck` per input (and value), comparing ``gradient`` (a
    GradientFunction) with finite differences of its primal and with the dynamic tape's
    gradient (as ``ad.check_grad``), on random inputs near ``example``. Forward mode is
    checked against differences along the tangent only."""
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
        rows.append(compare("value", value, expected, None, 1e-6 if rtol is None else rtol))
    taped = _tape(gradient, args, kwargs.get("cotangent"))
    for k, (name, g) in enumerate(zip(gradient.wrt, grads)):
        tape = taped if isinstance(taped, str) else taped[k]
        i = params.index(name)
        if is_container(args[i]):   # each array and float of it, labelled params['W1']
            rows += [_compare(label, gl, tl, *_with_leaf(args, i, j), scalar=s, rng=rng,
                              rtol=rtol, max_entries=max_entries)
                     for j, (label, gl, tl, s) in enumerate(_leaves(name, g, tape, args, i,
                                                                    scalar))]
        else:
            rows.append(_compare(name, g, tape, args, i, scalar, rng, rtol, max_entries))
    return rows


def _leaves(name, g, tape, args, i, scalar):
    """``(label, gradient, tape's, scalar)`` per leaf of the container ``args[i]``: the
    scalar takes the arguments and that leaf last (:func:`_with_leaf`)."""
    structure, leaves = split(args[i], name)
    grads = [x for _, x in split(g, name)[1]]
    tapes = [tape] * len(leaves) if isinstance(tape, str) else [x for _, x in
                                                                 split(tape, name)[1]]
    out = []
    for j, (label, _) in enumerate(leaves):
        def leaf_scalar(*xs, j=j):
            values = [x for _, x in leaves]
            values[j] = xs[-1]
            return scalar(*xs[:i], rebuild(structure, iter(values)), *xs[i + 1:-1])
        out.append((label, grads[j], tapes[j], leaf_scalar))
    return out


def _with_leaf(args, i, j) -> tuple:
    """``(args with leaf j of args[i] appended, its position)``."""
    leaf = split(args[i], "")[1][j][1]
    return [*args, leaf], len(args)


def _tape(gradient, args, cotangent):
    """The dynamic tape's gradients at ``args``, a vjp's as the gradient of the weighted sum."""
    primal = gradient.primal
    if cotangent is not None:
        @functools.wraps(primal)
        def primal(*xs, **kw):  # noqa: F811 - the vjp as the gradient of a weighted sum
            return (gradient.primal(*xs, **kw) * cotangent).sum()
    return tape_gradients(primal, gradient.wrt, args)


def _split(gradient, result):
    value = None
    if gradient.mode == "value_and_grad":
        value, result = result
    grads = result if isinstance(result, tuple) else (result,)
    return value, grads


def _compare(name, g, tape, args, i, scalar, rng, rtol, max_entries) -> InputCheck:
    """Input ``i``'s gradient ``g`` against its finite differences (on a sample of its entries
    past ``max_entries``, the tape's on the same entries) and the tape's ``tape``, at float32's
    tolerance for float32."""
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
        g = np.asarray(g, dtype=np.float64).reshape(-1)
        what = f"{x.dtype}[{', '.join(str(d) for d in x.shape)}]"
    low_precision = not isinstance(x, float) and x.dtype.itemsize < 8
    tolerance = (1e-3 if low_precision else 1e-5) if rtol is None else rtol
    checked = f"{len(entries)} of {np.size(x)} entries" if entries is not None and \
        len(entries) < np.size(x) else ""
    if entries is not None:   # the tape's gradient on the same entries as the differences'
        g = g[list(entries)]
        tape = tape if isinstance(tape, str) else np.asarray(tape).reshape(-1)[list(entries)]
    return compare(name, g, fd, tape, tolerance, what=what, checked=checked)


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
    return [compare("value", value, expected, None, 1e-6 if rtol is None else rtol),
            compare("tangent", tangent, fd, None, 1e-5 if rtol is None else rtol, what=what)]
