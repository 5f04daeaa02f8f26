"""Lists a while loop appends to, ``reversed(range(...))``, ``np.add.at`` and nested expression
statements: the constructs the generated gradient source uses (``grad(grad(f))`` reads it back),
also written by hand; every misuse is a CompileError located in this file."""

from __future__ import annotations


import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import assert_located
from adcompiler import tape

X = np.array([0.3, -0.2, 0.5])


def stacked(x):
    xs = []
    s = x
    n = 0
    while s < 5.0:
        xs.append(s)
        s = s * 1.3 + np.sin(s) * 0.5
        n = n + 1
    t = 0.0
    for k in reversed(range(n)):
        t = t * 0.5 + xs[k] * x
    return t + s


def rows(x):
    hs = []
    h = x
    n = 0
    while np.sum(h) < 4.0:
        hs.append(h)
        h = np.tanh(h) + h * 1.2 + x
        n = n + 1
    r = np.array(hs)          # an array of rows: written by row
    r[0] = r[0] * 2.0
    r[n - 1] += h
    t = 0.0
    for k in range(n):
        t = t + np.sum(r[k] * np.zeros_like(hs)[k] + r[k] * x)
    return t


def dynamic(fn, x):
    leaf = tape.tensor(x, requires_grad=True)
    (g,) = tape.grad(fn(leaf), [leaf])
    return g.numpy()


def central(fn, x, eps=1e-6):
    x = np.asarray(x, dtype=float)
    out = np.zeros(x.shape)
    for j in range(x.size):
        e = np.zeros(x.shape)
        e.reshape(-1)[j] = eps
        out.reshape(-1)[j] = (fn(x + e) - fn(x - e)) / (2 * eps)
    return out


def test_a_list_of_floats_built_by_a_while_loop_differentiates():
    g = ad.grad(stacked)(0.7)
    np.testing.assert_allclose(g, central(stacked, 0.7), rtol=1e-6)
    np.testing.assert_allclose(g, dynamic(stacked, 0.7), rtol=1e-12)


def test_a_list_of_arrays_made_an_array_of_rows_differentiates():
    """(The tape cannot make an array of tensors: finite differences only.) A row written in
    place, ``r[n - 1] += h``, while ``r[n - 1]`` is read again: the adjoint reads the row before
    it zeroes it, on a copy where a view of it is still needed."""
    g = ad.grad(rows)(X.copy())
    np.testing.assert_allclose(g, central(rows, X.copy()), rtol=1e-6, atol=1e-8)


def test_forward_mode_and_hessians_go_through_lists():
    """Tangents stack beside the list; forward over reverse meets the list's cotangent."""
    _, tangent = ad.jvp(stacked)(0.7, tangents=1.0)
    assert tangent == pytest.approx(ad.grad(stacked)(0.7), rel=1e-12)
    g = ad.grad(stacked)
    assert ad.hessian(stacked)(0.7) == pytest.approx((g(0.7 + 1e-5) - g(0.7 - 1e-5)) / 2e-5,
                                                     rel=1e-6)
    np.testing.assert_allclose(ad.jacobian(rows, mode="fwd")(X.copy()), ad.grad(rows)(X.copy()),
                               rtol=1e-12)


def test_the_list_is_a_stacked_output_read_by_index():
    g = ad.grad(stacked)
    g(0.7)
    assert "xs.append(s)" in g.source and "xs[k]" in g.source
    assert "xs: list[f64[]]" in str(g.ir)


IDX = np.array([0, 2, 0])
TABLE = np.zeros(3)


def scatters(x):
    y = np.zeros(3)
    for i in range(2):
        np.add.at(y, IDX, np.sin(x * (i + 1.0)))   # repeated indices add up, in a loop too
    return np.sum(y * y * x[1])


def test_np_add_at_updates_the_array_and_differentiates():
    x = X.copy()
    g = ad.grad(scatters)(x)
    np.testing.assert_array_equal(x, X)                        # the caller's array is intact
    np.testing.assert_allclose(g, central(scatters, X.copy()), rtol=1e-6, atol=1e-8)


# ---- misuse -------------------------------------------------------------------------------------
def appends_in_for(x):
    xs = []
    for i in range(2000):   # past the unrolling limit: a compiled loop
        xs.append(x)
    return x


def appends_in_branch(x):
    xs = []
    s = x
    while s < 3.0:
        if s > 1.0:
            xs.append(s)
        s = s * 2.0
    return s


def reads_while_building(x):
    xs = []
    s = x
    while s < 3.0:
        xs.append(s)
        s = s + xs[0]
    return s


def built(x):
    xs = []
    s = x
    while s < 3.0:
        xs.append(s)
        s = s * 2.0
    return xs, s


def takes_len(x):
    xs, s = built(x)
    return s * len(xs)


def adds_lists(x):
    xs, s = built(x)
    return (xs + xs)[0]


def slices(x):
    xs, s = built(x)
    return xs[1:][0]


def loops_over(x):
    xs, s = built(x)
    for v in xs:
        s = s + v
    return s


def writes_into(x):
    xs, s = built(x)
    xs[0] = 1.0
    return xs[0] * s


def list_as_condition(x):
    xs, s = built(x)
    if xs:
        s = s * 2.0
    return s


def reads_attribute(x):
    xs, s = built(x)
    return s * xs.shape[0]


def appends_twice(x):
    xs = []
    s = x
    while s < 3.0:
        xs.append(s)
        xs.append(s)
        s = s * 2.0
    return s


def appends_to_full(x):
    xs = [1.0]
    s = x
    while s < 3.0:
        xs.append(s)
        s = s * 2.0
    return s


def appends_a_list(x):
    xs, s = built(x)
    ys = []
    while s < 9.0:
        ys.append(xs)
        s = s * 2.0
    return s


def reverses_a_float(x):
    s = 0.0
    for v in reversed(x):
        s = s + v
    return s


def reverses_with_step(x):
    xs, s = built(x)
    n = 0
    while s < 20.0:
        s = s * 2.0
        n = n + 1
    for k in reversed(range(0, n, 2)):
        s = s + x
    return s


def bare_call_in_loop(x):
    s = x
    for i in range(2):
        np.sin(s)
        s = s * 2.0
    return s


def adds_at_into_a_slice(x):
    y = np.zeros(3)
    np.add.at(y[:2], [0], x)
    return np.sum(y)


def adds_at_into_a_global(x):
    np.add.at(TABLE, [0], x)
    return np.sum(TABLE)


def calls_another_at(x):
    y = np.zeros(3)
    x.add.at(y, [0], 1.0)
    return np.sum(y * x)


CASES = [
    (appends_in_for, 3, "xs.append(x)", "inside a traced `if` or a compiled loop"),
    (appends_in_branch, 5, "xs.append(s)", "must run once in every iteration"),
    (reads_while_building, 5, "xs", "is being built by the while loop"),
    (takes_len, 2, "len(xs)", "known only when it runs"),
    (adds_lists, 2, "xs", "arithmetic on a list"),
    (slices, 2, "xs[1:]", "indexed by one integer"),
    (loops_over, 2, "xs", "can be looped over"),
    (writes_into, 2, "xs[0]", "writing into it is not supported"),
    (list_as_condition, 2, "xs", "a list as a condition"),
    (reads_attribute, 2, "xs.shape", "has no `.shape`"),
    (appends_twice, 5, "xs.append(s)", "appended to twice per iteration"),
    (appends_to_full, 4, "xs.append(s)", "needs `xs = []` before this while loop"),
    (appends_a_list, 4, "ys.append(xs)", "a list of lists"),
    (reverses_a_float, 2, "reversed(x)", "only `reversed(range(...))`"),
    (reverses_with_step, 6, "2", "takes no step"),
    (bare_call_in_loop, 3, "np.sin(s)", "an expression statement has no effect"),
    (adds_at_into_a_slice, 2, "np.add.at(y[:2], [0], x)", "on a named array"),
    (adds_at_into_a_global, 1, "np.add.at(TABLE, [0], x)", "module global"),
    (calls_another_at, 2, "x.add", "the array attribute `.add` is not supported"),
]


@pytest.mark.parametrize("f, offset, construct, message", CASES,
                         ids=[case[0].__name__ for case in CASES])
def test_misuse_is_a_located_error(f, offset, construct, message):
    with pytest.raises(ad.CompileError) as info:
        ad.grad(f)(0.7)
    assert message in info.value.message, str(info.value)
    assert_located(info.value, f, offset, construct)
