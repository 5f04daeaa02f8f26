"""A user trial's control-flow findings: ``and``/``or`` short-circuit as Python's (a guard
protects the index or division after it), the cheap case stays one ``np.logical_and`` line,
and the alias hint names the copy the right way round. Gradients against finite
differences, values against the plain function."""

from __future__ import annotations

import math

import numpy as np
import pytest

import adcompiler as ad

from tests.helpers import assert_matches_numerical

rng = np.random.default_rng(11)


# ---- and / or short-circuit ------------------------------------------------------------------
def guarded_index(x):
    acc = 0.0
    n = x.shape[0]
    for i in range(n):
        if i < n - 1 and x[i + 1] > x[i]:
            acc = acc + x[i + 1] * x[i]
        else:
            acc = acc + x[i]
    return acc


def guarded_division(x, d):
    if d == 0.0 or x / d > 1.0:
        return x * 3.0
    return x / d


def guarded_expression(x, d):
    return x * 2.0 if d == 0.0 or x / d > 1.0 else x / d


def guarded_while(x):
    i = 0
    acc = 0.0
    n = x.shape[0]
    while i < n and x[i] > 0.1:
        acc = acc + x[i] * x[i]
        i = i + 1
    return acc


def cheap_both(x):
    acc = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0 and x[i] < 1:
            acc = acc + x[i] ** 2
    return acc


def chained(x):
    acc = 0.0
    n = x.shape[0]
    for i in range(n):
        if i > 0 and i < n - 1 and x[i - 1] < x[i] and x[i + 1] < x[i]:
            acc = acc + x[i] ** 2
        elif i == 0 or x[i] > 0.5 or math.log(x[i]) < -1.0:
            acc = acc + 3.0 * x[i]
    return acc


def negated(x):
    s = np.sum(x)
    if not (s > 0 and math.sqrt(s) > 1.0):
        return s * 2.0
    return s * s


def static_guard(x):
    if x.shape[0] > 3 and x[3] > 0:   # decided while compiling: x[3] is never read for n = 2
        return np.sum(x * x)
    return np.sum(x)


CASES = [
    (guarded_index, (np.array([0.3, 0.5, 0.2, 0.9]),)),
    (guarded_index, (rng.normal(size=6),)),
    (guarded_division, (2.0, 3.0)),
    (guarded_division, (2.0, 1.5)),
    (guarded_expression, (2.0, 3.0)),
    (guarded_while, (np.array([0.3, 0.5, 0.2, 0.05, 0.9]),)),
    (guarded_while, (np.array([0.3, 0.5, 0.2]),)),     # the guard alone stops the loop
    (cheap_both, (np.array([0.3, 0.5, -0.2, 1.9]),)),
    (chained, (np.array([0.3, 0.5, 0.2, 0.9, 0.1, 0.05]),)),
    (negated, (np.array([0.3, 0.5]),)),
    (negated, (np.array([3.0, 0.5]),)),
    (static_guard, (np.array([0.3, 0.5]),)),
]


@pytest.mark.parametrize("f, args", CASES, ids=[f"{f.__name__}-{i}" for i, (f, _) in
                                                enumerate(CASES)])
def test_short_circuit_gradients_match_finite_differences(f, args):
    wrt = tuple(range(len(args)))
    grads = ad.grad(f, wrt=wrt)(*args)
    assert_matches_numerical(f, args, wrt, grads)
    value, _ = ad.value_and_grad(f)(*args)
    assert value == pytest.approx(f(*args))


def test_a_guard_keeps_the_index_after_it_in_bounds():
    x = np.array([0.3, 0.5, 0.2, 0.9])
    g = ad.grad(guarded_index)
    np.testing.assert_allclose(g(x), [0.5, 1.3, 0.9, 1.2])  # no IndexError from x[4]
    assert "np.logical_and" not in g.source                  # x[i + 1] is read under `if`


def test_a_guard_keeps_the_division_after_it_from_zero():
    assert ad.grad(guarded_division)(2.0, 0.0) == 3.0           # no ZeroDivisionError
    assert ad.grad(guarded_expression)(2.0, 0.0) == 2.0
    assert ad.value_and_grad(guarded_division)(2.0, 0.0) == (6.0, 3.0)


def test_cheap_operands_that_cannot_raise_stay_one_line():
    g = ad.grad(cheap_both)
    g(np.array([0.3, 0.5, -0.2, 1.9]))
    assert "np.logical_and(t" in g.source  # both comparisons, no branch for the predicate


def test_an_index_that_wraps_but_stays_in_bounds_counts_as_safe():
    g = ad.grad(chained)
    g(np.array([0.3, 0.5, 0.2, 0.9, 0.1, 0.05]))
    assert "x[i - 1] < " in g.source and "np.logical_and(np.logical_and(" in g.source
    lines = g.source.splitlines()
    k = next(k for k, line in enumerate(lines) if "math.log(" in line)
    assert lines[k - 1].strip() == "else:"  # log runs only where the rest decided nothing


def test_short_circuit_survives_the_hessian():
    x = np.array([0.3, 0.5, 0.2, 0.9, 0.1, 0.05])
    H = ad.hessian(chained)(x)
    expected = np.diag([0.0, 2.0, 0.0, 2.0, 0.0, 0.0])  # the peaks x[1] and x[3]: squared
    np.testing.assert_allclose(H, expected, atol=1e-12)


# ---- the alias hint -------------------------------------------------------------------------
def alias_parameter(x):
    acc = x
    for i in range(3):
        acc += x * 0.5
    return np.sum(acc)


def alias_local(x):
    a = np.zeros(3)
    b = a
    for i in range(3):
        b += x * (i + 1)
    return np.sum(a * a)


@pytest.mark.parametrize("f, copy", [(alias_parameter, "`acc = x.copy()` instead of `acc = x`"),
                                     (alias_local, "`b = a.copy()` instead of `b = a`")])
def test_the_alias_hint_copies_where_the_names_meet(f, copy):
    with pytest.raises(ad.CompileError) as info:
        ad.grad(f)(np.array([0.3, -0.4, 0.2]))
    assert copy in info.value.hint
    assert "use one name for the array" in info.value.hint
