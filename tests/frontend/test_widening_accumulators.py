"""A Python int that a loop makes a float or an array widens, as NumPy's arithmetic would
(issue 29, part 5a): ``out = 1; for _ in range(n): out = out * a`` compiles. A Python int meeting
a float (a Python float, a 0-d array) on another path joins as that float, its value exactly; a
number that a ``for`` loop's body makes an array runs the loop's first iteration on its own,
as Python runs it, and the rest as a loop. Against finite differences, forward mode and the
tape; a ``while`` loop (which may not run) and an ``if`` that leaves a number on one path and an
array on the other stay located errors."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import (assert_jvp_matches_differences, assert_located,
                           assert_tape_matches_compiled, check_grads)

RNG = np.random.default_rng(5)
X = RNG.uniform(0.5, 1.5, 5) * np.array([1.0, -1.0, 1.0, 1.0, -1.0])


def power(a):
    out = 1
    for _ in range(4):
        out = out * a
    return np.sum(out)


def power_of_a_float(s):
    out = 1
    for _ in range(3):
        out = out * s
    return out


def single_iteration(a):
    out = 2
    for _ in range(1):
        out = out * a
    return np.sum(out ** 2)


def windowed_product(a):
    out = 1
    for i in range(3):
        out = out * a[i:i + 2]
    return np.sum(out)


def rows_squared(a):
    acc = 0
    for row in a.reshape(1, 5) * np.ones((3, 1)):
        acc = acc + row * row
    return np.sum(acc)


def enumerated(a):
    out = 1
    for i, v in enumerate(a):
        out = out * v + i
    return out


def sum_in_a_while(a):
    s = 0
    i = 0
    while i < 3:
        s = s + a[i]
        i += 1
    return s


def counter_meets_float(a):
    t = 0
    for k in range(3):
        t = t + k
        if k == 1:
            t = t * 1.5
    return t * np.sum(a)


CASES = [power, single_iteration, windowed_product, rows_squared, enumerated, sum_in_a_while,
         counter_meets_float]


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_against_finite_differences_forward_mode_and_the_tape(f):
    value, _ = ad.value_and_grad(f)(X)
    assert value == pytest.approx(float(f(X)), rel=1e-13)
    check_grads(f, X)
    assert_jvp_matches_differences(f, (X,), RNG.standard_normal(5))
    assert_tape_matches_compiled(f, (X,))


def test_a_python_float_and_float32_keep_their_types():
    d = ad.grad(power_of_a_float)(1.5)
    assert type(d) is float and d == pytest.approx(3 * 1.5 ** 2, rel=1e-14)
    x32 = X.astype(np.float32)
    g = ad.grad(power)(x32)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 4 * x32 ** 3, rtol=1e-6)


def while_makes_an_array(a, n):
    out = 1
    i = 0
    while i < n:
        out = out * a
        i += 1
    return np.sum(out)


def branch_makes_an_array(a, flag):
    out = 0
    if flag > 0:
        out = a * 2.0
    return np.sum(out)


def test_a_number_that_may_stay_a_number_is_still_a_located_error():
    with pytest.raises(ad.CompileError, match="`out` is int on one path and f64\\[5\\] on "
                                              "another \\(loop\\)") as info:
        ad.grad(while_makes_an_array)(X, 3)
    assert_located(info.value, while_makes_an_array, 3, "while i < n:")
    with pytest.raises(ad.CompileError, match="`out` is f64\\[5\\] on one path through the "
                                              "`if`") as info:
        ad.grad(branch_makes_an_array)(X, 1.0)
    assert_located(info.value, branch_makes_an_array, 4, "out")
