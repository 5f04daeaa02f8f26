"""Forms realistic code uses that compile now: chained comparisons (``lo < x[i] < hi``), the
split family (``i, f, g, o = np.split(z, 4, axis=1)``), builtin ``pow``, ``ufunc.outer``,
``np.atleast_*d``, ``np.tile``, ``np.repeat``, ``np.append``, ``np.inner``, ``np.vdot``,
``np.tensordot`` and ``np.trapezoid``.

Each function's gradient is checked against finite differences (grad, value_and_grad, jvp and
hessian), its value against NumPy's, and on the tape against the compiled gradient.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from adcompiler.errors import CompileError

from tests.helpers import (assert_jvp_matches_differences, assert_matches_numerical,
                      assert_tape_matches_compiled, check_grads, directional_difference)

rng = np.random.default_rng(11)


def normal(*shape):
    return rng.standard_normal(shape)


# ---- chained comparisons ------------------------------------------------------------------------
def band(x, lo, hi):
    s = 0.0
    for i in range(x.shape[0]):
        if lo < x[i] < hi:
            s = s + x[i] ** 3
        else:
            s = s + 0.5 * x[i]
    return s


def unit_interval(t, x):
    if 0.0 <= t <= 1.0:
        return np.sum(x * x) * t
    return np.sum(x)


def static_chain(x, n):
    if 0 <= n < 3 < 5:
        return np.sum(x * 2.0)
    return np.sum(x * x)


def guarded_chain(x, y):
    s = 0.0
    for i in range(4):
        if x[i] < x[i + 1] <= np.log(y):   # the second link runs only where the first holds
            s = s + x[i] * y
    return s


def four_links(x):
    s = 0.0
    for i in range(x.shape[0]):
        if -1.0 < x[i] < np.sqrt(np.abs(x[i]) + 1.0) < 1.2:
            s = s + x[i] ** 3
    return s


def while_chain(x):
    t = 0.0
    k = 0
    while 0.0 <= t < 1.0:
        t = t + x[k] * x[k]
        k = k + 1
    return t


def scalar_then_array(x, s):
    return np.sum(np.where(0.0 < s < x, x * x, 0.0))


def array_chain(x):
    return np.sum(np.where(0.0 < x < 1.0, x, 0.0))


def array_chain_in_if(x, y):
    if y < x < 1.0:
        return np.sum(x)
    return 0.0


BAND_X = np.array([0.1, 0.5, 2.0, -1.0, 0.7])


def test_chain_on_traced_values_in_an_if():
    g = check_grads(band, BAND_X, 0.0, 1.0, wrt=(0,))[0]
    inside = (BAND_X > 0.0) & (BAND_X < 1.0)
    np.testing.assert_allclose(g, np.where(inside, 3 * BAND_X ** 2, 0.5), rtol=1e-14)
    value, (gx,) = ad.value_and_grad(band, wrt=(0,))(BAND_X, 0.0, 1.0)
    assert value == pytest.approx(band(BAND_X, 0.0, 1.0), rel=1e-14)
    np.testing.assert_allclose(gx, g, rtol=1e-14)


def test_chain_on_python_floats_takes_each_branch():
    x = normal(3)
    for t in (0.5, 0.999, 1.5, -0.2):
        gt, gx = check_grads(unit_interval, t, x, wrt=(0, 1))
        assert isinstance(gt, float)
        assert gt == pytest.approx(float(np.sum(x * x)) if 0.0 <= t <= 1.0 else 0.0)
    for t in (0.0, 1.0):   # both ends are inside (no finite differences across the jump)
        gt, gx = ad.grad(unit_interval, wrt=(0, 1))(t, x)
        assert gt == pytest.approx(float(np.sum(x * x)), rel=1e-14)
        np.testing.assert_allclose(gx, 2 * t * x, rtol=1e-14)


def test_chain_known_while_compiling_is_python_s():
    x = normal(3)
    np.testing.assert_allclose(ad.grad(static_chain)(x, 1), np.full(3, 2.0))
    np.testing.assert_allclose(ad.grad(static_chain)(x, 4), 2 * x)


@pytest.mark.parametrize("f, args", [
    (guarded_chain, (np.array([0.1, 0.3, 0.2, 0.5, 0.9]), 2.0)),
    (four_links, (np.array([-2.0, 0.1, 0.5, 1.5, 1.1]),)),
    (while_chain, (np.array([0.5, 0.6, 0.7]),)),
    (scalar_then_array, (np.array([0.2, 0.8, -0.3]), 0.5)),
    (scalar_then_array, (np.array([0.2, 0.8, -0.3]), -0.5)),
], ids=["guarded", "four_links", "while", "scalar_then_array", "scalar_then_array_false"])
def test_chains_have_python_s_value_and_gradient(f, args):
    wrt = tuple(i for i, a in enumerate(args) if isinstance(a, (float, np.ndarray)))
    value, grads = ad.value_and_grad(f, wrt=wrt)(*args)
    assert value == pytest.approx(f(*args), rel=1e-14)
    assert_matches_numerical(f, args, wrt, grads)


def test_chain_jvp_and_hessian():
    t = normal(5)
    value, dot = ad.jvp(band, wrt=0)(BAND_X, 0.0, 1.0, tangents=t)
    assert value == pytest.approx(band(BAND_X, 0.0, 1.0), rel=1e-14)
    want = directional_difference(lambda x: band(x, 0.0, 1.0), [BAND_X], [t])
    assert dot == pytest.approx(float(want), rel=1e-6)
    inside = (BAND_X > 0.0) & (BAND_X < 1.0)
    np.testing.assert_allclose(ad.hessian(band, wrt=0)(BAND_X, 0.0, 1.0),
                               np.diag(np.where(inside, 6 * BAND_X, 0.0)), atol=1e-12)


def test_chain_of_arrays_is_numpy_s_ambiguous_truth_value_located():
    x = np.array([0.2, 0.8, 1.5])
    with pytest.raises(ValueError, match="truth value of an array"):
        array_chain(x)   # NumPy refuses it too
    with pytest.raises(CompileError, match=re.escape("`0.0 < x` is an array of shape (3,)")) \
            as err:
        ad.grad(array_chain)(x)
    assert err.value.location.lineno == array_chain.__code__.co_firstlineno + 1
    assert "(0.0 < x) & (x < 1.0)" in str(err.value)
    with pytest.raises(CompileError, match=re.escape("`y < x` is an array of shape (3,)")):
        ad.grad(array_chain_in_if)(x, 0.1)


def one_element_chain(x):
    y = x[:1]
    return np.where(0.0 < y < 1.0, x, 0.0).sum()


def test_a_one_element_link_is_refused_in_its_own_words():
    x = np.array([0.5, 2.0])
    assert one_element_chain(x) == 2.5   # NumPy takes the truth of one element
    with pytest.raises(CompileError, match=re.escape("NumPy takes it for one element")) as err:
        ad.grad(one_element_chain)(x)
    assert "more than one element" not in str(err.value) and "x[0]" in str(err.value)


def test_chain_on_the_tape():
    leaf = tape.tensor(BAND_X, requires_grad=True)
    band(leaf, 0.0, 1.0).backward()
    np.testing.assert_allclose(leaf.grad.numpy(), ad.grad(band)(BAND_X, 0.0, 1.0), rtol=1e-14)


# ---- splits -------------------------------------------------------------------------------------
def lstm_cell(z, c):
    i, f, g, o = np.split(z, 4, axis=1)
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
    c_new = sig(f) * c + sig(i) * np.tanh(g)
    return np.sum(sig(o) * np.tanh(c_new))


def uneven_split(x):
    a, b, c = np.array_split(x, 3)
    p, q, r = np.split(x, [2, 10])
    return np.sum(a * 2.0) + np.sum(b ** 2) + np.sum(c * 3.0) + np.sum(p) * np.sum(q) + r.size


def fixed_axis_splits(m):
    left, right = np.hsplit(m, 2)
    top, bottom = np.vsplit(m, [1])
    front, back = np.dsplit(m[:, :, None] * np.ones(2), 2)
    return (np.sum(left * right) + np.sum(top) * np.sum(bottom ** 2)
            + np.sum(front * back * 0.5) + np.sum(np.hsplit(m[0], [1])[1] ** 3))


def unequal_split(x):
    a, b = np.split(x, 2)
    return np.sum(a)


def traced_sections(x, s):
    a, b = np.split(x, [int(s)])
    return np.sum(a)


def test_lstm_gate_split():
    z, c = normal(3, 8), normal(3, 2)
    gz, gc = check_grads(lstm_cell, z, c, wrt=(0, 1))
    value, _ = ad.value_and_grad(lstm_cell, wrt=(0, 1))(z, c)
    assert value == pytest.approx(lstm_cell(z, c), rel=1e-14)
    source = ad.grad(lstm_cell).specialize(z, c).source
    assert "z[:, 2:4]" in source     # the gates are slices (views) of z


@pytest.mark.parametrize("f, args", [(uneven_split, (normal(7),)),
                                     (fixed_axis_splits, (normal(2, 4),))])
def test_split_family(f, args):
    value, grads = ad.value_and_grad(f, wrt=(0,))(*args)
    assert value == pytest.approx(f(*args), rel=1e-14)
    assert_matches_numerical(f, args, (0,), grads)


def test_split_errors_are_numpy_s_located():
    with pytest.raises(CompileError, match=re.escape(
            "ValueError: array split does not result in an equal division")) as err:
        ad.grad(unequal_split)(normal(7))
    assert err.value.location.lineno == unequal_split.__code__.co_firstlineno + 1
    with pytest.raises(CompileError, match=re.escape(
            "needs the sections (a count or indices) known when compiling")):
        ad.grad(traced_sections)(normal(5), 2.0)


# ---- pow and ufunc.outer -----------------------------------------------------------------------
def powers(x, a):
    return np.sum(pow(x, 2) + pow(a, x) * pow(x, a)) + pow(a, 3.0) + pow(2, 3, 5)


def outers(a, b):
    return (np.sum(np.add.outer(a, b) ** 2 * np.multiply.outer(a, b))
            + np.sum(np.subtract.outer(b[:2], a) ** 2) + np.sum(np.maximum.outer(a, 0.5) * a))


def outer_of_matrices(m, v):
    return np.sum(np.multiply.outer(m, v) * np.arange(24.0).reshape(2, 3, 4))


def test_pow_is_the_operator():
    x, a = rng.uniform(0.5, 2.0, 4), 1.7
    gx, ga = check_grads(powers, x, a, wrt=(0, 1))
    assert isinstance(ga, float)
    assert ad.value_and_grad(powers, wrt=(0, 1))(x, a)[0] == pytest.approx(powers(x, a))


@pytest.mark.parametrize("f, args", [(outers, (normal(3), normal(4))),
                                     (outer_of_matrices, (normal(2, 3), normal(4)))])
def test_ufunc_outer(f, args):
    value, grads = ad.value_and_grad(f, wrt=(0, 1))(*args)
    assert value == pytest.approx(f(*args), rel=1e-13)
    assert_matches_numerical(f, args, (0, 1), grads)


# ---- shapes, repeats and products ---------------------------------------------------------------
def padded_and_repeated(x, y):
    t = np.tile(x, (2, 2))
    r = np.repeat(x, 3)
    r2 = np.repeat(y, [1, 2], axis=0)
    ap = np.append(x, y)
    a3, b3 = np.atleast_3d(y, x[0])
    return (np.sum(t * t) + np.sum(r * np.arange(r.size)) + np.sum(r2 ** 2) + np.sum(ap ** 3)
            + np.sum(np.atleast_2d(x) * np.atleast_1d(x[1])) + np.sum(a3) * b3.shape[2]
            + np.sum(np.tile(y[0, 0], 3)) + np.sum(np.append(y, y[:1], axis=0) ** 2))


def products(x, y, m):
    return (np.inner(x, y) + np.vdot(m, m) + np.sum(np.tensordot(m, m, axes=([0], [0])) ** 2)
            + np.sum(np.inner(m, x) ** 2) + np.sum(np.tensordot(m, m.T, axes=1))
            + np.tensordot(m, m) + np.sum(np.inner(2.0, x)))


def integrals(y, x):
    return (np.trapezoid(y, x) + np.trapezoid(y * y, dx=0.5)
            + np.sum(np.trapezoid(np.outer(y, y), x, axis=0) ** 2) + np.trapezoid(y))


CASES = [(padded_and_repeated, lambda: (normal(3), normal(2, 2))),
         (products, lambda: (normal(4), normal(4), normal(3, 4))),
         (integrals, lambda: (normal(5), np.sort(normal(5))))]


@pytest.mark.parametrize("f, make", CASES, ids=[f.__name__ for f, _ in CASES])
def test_compositions_grad_and_value(f, make):
    args = make()
    wrt = tuple(range(len(args)))
    value, grads = ad.value_and_grad(f, wrt=wrt)(*args)
    assert value == pytest.approx(f(*args), rel=1e-13)
    assert_matches_numerical(f, args, wrt, grads)


@pytest.mark.parametrize("f, make", CASES, ids=[f.__name__ for f, _ in CASES])
def test_compositions_jvp(f, make):
    args = make()
    t = normal(*np.shape(args[0]))
    value, dot = ad.jvp(f, wrt=0)(*args, tangents=t)
    want = directional_difference(lambda a: f(a, *args[1:]), [args[0]], [t])
    assert dot == pytest.approx(float(want), rel=1e-6, abs=1e-8)


def test_float32_stays_float32():
    y, x = normal(5).astype(np.float32), np.sort(normal(5)).astype(np.float32)
    gy, gx = ad.grad(integrals, wrt=(0, 1))(y, x)
    assert gy.dtype == gx.dtype == np.float32


def test_tile_and_repeat_are_new_arrays():
    x = normal(3)
    for f in (tile_once, repeat_once):
        got = ad.value_and_grad(f)(x)
        assert got[0] == pytest.approx(f(x))


def tile_once(x):
    t = np.tile(x, 1)
    t[0] = 10.0
    r = np.repeat(x[:1], 3)
    r[1] = 5.0
    return np.sum(x * t) + np.sum(r * x)


def repeat_once(x):
    r = np.repeat(x, 1)
    r *= 2.0
    return np.sum(r * x)


def test_hessians():
    x, y = normal(3), normal(2, 2)
    h = ad.hessian(padded_and_repeated, wrt=0)(x, y)
    g = ad.grad(padded_and_repeated, wrt=0)
    eps = 1e-5
    numeric = np.stack([(g(x + eps * e, y) - g(x - eps * e, y)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(h, numeric, rtol=1e-6, atol=1e-6)


# ---- on the tape --------------------------------------------------------------------------------
TAPE_CASES = [(lstm_cell, lambda: (normal(3, 8), normal(3, 2))),
              (uneven_split, lambda: (normal(7),)),
              (fixed_axis_splits, lambda: (normal(2, 4),)),
              (outers, lambda: (normal(3), normal(4))),
              (outer_of_matrices, lambda: (normal(2, 3), normal(4))),
              *CASES]


@pytest.mark.parametrize("f, make", TAPE_CASES, ids=[f.__name__ for f, _ in TAPE_CASES])
def test_the_tape_gives_the_compiled_gradient(f, make):
    assert_tape_matches_compiled(f, make(), value_rtol=1e-13, atol=1e-14)


def test_split_pieces_are_views_on_the_tape():
    base = tape.tensor(np.arange(6.0))
    first, second = np.split(base, 2)
    second[0] = 40.0
    assert base.numpy()[3] == 40.0


@pytest.mark.parametrize("f, make", TAPE_CASES[:5], ids=[f.__name__ for f, _ in TAPE_CASES[:5]])
def test_splits_and_outers_jvp_and_hessian(f, make):
    args = make()
    assert_jvp_matches_differences(f, args, normal(*np.shape(args[0])), value_rtol=1e-13)
    h = ad.hessian(f, wrt=0)(*args)
    g = ad.grad(f, wrt=0)
    x, n, eps = args[0], args[0].size, 1e-5
    steps = [eps * e.reshape(x.shape) for e in np.eye(n)]
    numeric = np.stack([(g(x + s, *args[1:]) - g(x - s, *args[1:])).ravel() / (2 * eps)
                        for s in steps], axis=1)
    np.testing.assert_allclose(np.reshape(h, (n, n)), numeric, rtol=1e-5, atol=1e-6)
