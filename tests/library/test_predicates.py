"""NumPy functions with boolean or integer results (``all any isfinite isnan isinf argmax argmin
argsort``) and boolean masks known while compiling: they need no derivative rule, and the
gradient flows through the float values they pick. Checked against finite differences or
analytic values, the values against NumPy's, and the inferred shapes and dtypes against NumPy's."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.ir import Aval
from adcompiler.ir.shapes import infer

from tests.helpers import assert_matches_numerical

rng = np.random.default_rng(7)


def distinct(*shape):
    """Values of both signs with no ties (argmax, argsort and max pick one entry)."""
    return rng.permutation(np.arange(1, 1 + int(np.prod(shape)))).reshape(shape) * 0.37 - 1.1


# ---- the user's programs ----------------------------------------------------------------------
def newton_sqrt(a):
    """Newton's iteration for sqrt(a), run until every step is below the tolerance."""
    x = a * 1.0
    dx = np.ones_like(a)
    while not np.all(np.abs(dx) < 1e-12):
        dx = (x * x - a) / (2 * x)
        x = x - dx
    return np.sum(x)


def finite_part(x):
    y = np.where(np.isfinite(x), x, 0.0)
    return np.sum(y * y)


def clean_nan_inf(x):
    """The double ``where``: sin(inf) is NaN, and 0 * NaN in the adjoint of one ``where``."""
    bad = np.logical_or(np.isnan(x), np.isinf(x))
    safe = np.where(bad, 0.0, x)
    return np.sum(np.where(bad, 1.0, np.sin(safe)))


def peak_squared(x):
    return x[np.argmax(x)] ** 2 - 0.5 * x[x.argmin()]


def row_peaks(x):
    i = np.argmax(x, axis=1)
    j = x.argmin(axis=0)
    return np.sum(x[np.arange(x.shape[0]), i] ** 2) + np.sum(x[j, np.arange(x.shape[1])])


def sorted_weighted(x, w):
    """A weighted sum of the sorted values (an L-statistic, as a trimmed mean)."""
    return np.sum(x[np.argsort(x)] * w)


def sorted_rows(x, w):
    order = x.argsort()   # along the last axis
    flat = np.argsort(x, axis=None)
    return np.sum(x[np.arange(x.shape[0])[:, None], order] * w) + x.reshape(-1)[flat][-1]


def branch_on_any(x):
    if np.any(x < 0):
        return np.sum(x ** 2)
    return np.sum(np.exp(x))


def masked_by_all(x):
    """``all``/``any`` with axis and keepdims, as masks of float values."""
    rows = np.all(x > -1.0, axis=1, keepdims=True)
    cols = x.any(axis=0)
    every = x.all()
    return np.sum(np.where(rows, x, 0.0) ** 2) + np.sum(np.where(cols, x, 1.0) * every)


@pytest.mark.parametrize("f, args, wrt", [
    (newton_sqrt, (np.array([2.0, 3.0, 5.0]),), (0,)),
    (clean_nan_inf, (distinct(5),), (0,)),
    (peak_squared, (distinct(6),), (0,)),
    (row_peaks, (distinct(3, 4),), (0,)),
    (sorted_weighted, (distinct(6), np.linspace(0.0, 1.0, 6)), (0, 1)),
    (sorted_rows, (distinct(3, 4), distinct(3, 4)), (0, 1)),
    (branch_on_any, (distinct(4),), (0,)),
    (branch_on_any, (np.abs(distinct(4)),), (0,)),
    (masked_by_all, (distinct(3, 4),), (0,)),
], ids=lambda a: getattr(a, "__name__", None))
def test_gradients_match_finite_differences_and_values_match_numpy(f, args, wrt):
    value, grads = ad.value_and_grad(f, wrt=wrt)(*args)
    assert value == pytest.approx(f(*args), rel=1e-14)
    assert type(value) is type(f(*args))
    assert_matches_numerical(f, args, wrt, grads)


def test_newton_gradient_is_the_analytic_one():
    a = np.array([2.0, 3.0, 5.0])
    np.testing.assert_allclose(ad.grad(newton_sqrt)(a), 0.5 / np.sqrt(a), rtol=1e-12)


def test_non_finite_entries_get_zero_gradient():
    x = np.array([1.5, np.inf, -2.0, np.nan, -np.inf])
    value, dx = ad.value_and_grad(finite_part)(x)
    assert value == finite_part(x) == 6.25
    np.testing.assert_array_equal(dx, [3.0, 0.0, -4.0, 0.0, 0.0])
    _, dx = ad.value_and_grad(clean_nan_inf)(x)
    np.testing.assert_array_equal(dx, [np.cos(1.5), 0.0, np.cos(-2.0), 0.0, 0.0])


def test_the_gather_at_argmax_sends_the_gradient_to_one_entry():
    x = np.array([1.0, 3.0, -2.0, 0.5])
    np.testing.assert_array_equal(ad.grad(peak_squared)(x), [0.0, 6.0, -0.5, 0.0])
    source = ad.grad(peak_squared).specialize(x).source
    assert "= np.argmax(x)\n" in source and "= np.argmin(x)\n" in source
    assert "np.add.at" not in source   # a 0-d index writes each entry once


def test_float32_keeps_its_dtype():
    x = distinct(5).astype(np.float32)
    value, dx = ad.value_and_grad(peak_squared)(x)
    assert value.dtype == np.float32 and dx.dtype == np.float32
    value, dx = ad.value_and_grad(sorted_weighted)(x, np.ones(5, dtype=np.float32))
    assert value.dtype == np.float32 and dx.dtype == np.float32


def test_forward_mode_goes_through_the_same_functions():
    x, u = distinct(6), rng.normal(size=6)
    for f in (peak_squared, branch_on_any, newton_sqrt):
        x0 = np.abs(x) + 1.0 if f is newton_sqrt else x
        value, tangent = ad.jvp(f)(x0, tangents=u)
        assert value == pytest.approx(f(x0), rel=1e-14)
        assert tangent == pytest.approx(float(ad.grad(f)(x0) @ u), rel=1e-10)


# ---- shapes and dtypes the compiler infers, against NumPy ---------------------------------------
@pytest.mark.parametrize("prim, params", [
    ("all", {}), ("any", {"axis": 1}), ("all", {"axis": (0, 2), "keepdims": True}),
    ("argmax", {}), ("argmin", {"axis": 0}), ("argmax", {"axis": -1, "keepdims": True}),
    ("argsort", {}), ("argsort", {"axis": 1}), ("isfinite", {}), ("isnan", {}), ("isinf", {}),
])
def test_inferred_aval_is_numpys(prim, params):
    x = distinct(2, 3, 4)
    want = np.asarray(getattr(np, prim)(x, **params))
    got = infer(prim, [Aval("array", "float64", (2, 3, 4))], [None], params)
    assert (got.kind, got.dtype, got.shape) == ("array", want.dtype.name, want.shape)


# ---- boolean masks known while compiling --------------------------------------------------------
MODULE_MASK = np.array([True, False, True])


def squares_masked_entries(x):
    m = np.array([True, False, True])
    y = x * 1.0
    y[m] = y[m] ** 2
    return np.sum(y)


def masks_of_every_kind(x):
    m = np.array([[True, False, False, True], [False, False, True, True], [True] * 4])
    y = x * 2.0
    y[m] += x[m] ** 2
    cols = x[:, [False, True, True, False]]
    return np.sum(y) + np.sum(np.sin(x[m])) + np.sum(cols[..., np.array([True, False])] ** 3)


def module_mask(x):
    return np.sum(x[MODULE_MASK])


def short_mask(x):
    return np.sum(x[np.array([True, False])])


def test_a_constant_mask_reads_and_writes_as_its_positions():
    x = np.array([2.0, 3.0, 5.0])
    value, dx = ad.value_and_grad(squares_masked_entries)(x)
    assert value == squares_masked_entries(x) == 32.0
    np.testing.assert_array_equal(dx, [4.0, 1.0, 10.0])
    x = distinct(3, 4)
    value, dx = ad.value_and_grad(masks_of_every_kind)(x)
    assert value == pytest.approx(masks_of_every_kind(x), rel=1e-14)
    assert_matches_numerical(masks_of_every_kind, (x,), (0,), (dx,))


@pytest.mark.parametrize("f, message", [
    (module_mask, "boolean mask from outside the function"),
    (short_mask, "the boolean mask (shape (2,)) does not fit"),
])
def test_masks_that_could_change_or_do_not_fit_are_refused(f, message):
    with pytest.raises(ad.CompileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ad.grad(f)(np.ones(3))
