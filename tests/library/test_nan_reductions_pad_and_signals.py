"""``np.average``, ``np.nansum``/``nanmean``/``nanmax``/``nanmin``, ``np.take``, ``np.pad``
(constant mode), ``np.cross``, ``np.polyval``, ``np.convolve`` and ``np.interp``: compositions
of existing primitives, written once in ``adcompiler/compositions/`` (statistics, splits,
products, signals) and run by the compiler and the tape alike.

Each function's value is checked against NumPy's, its gradient against finite differences
(grad, value_and_grad, jvp, hessian), and the tape's gradient against the compiled one.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from adcompiler.errors import CompileError

from tests.helpers import (assert_jvp_matches_differences, assert_matches_numerical,
                      assert_tape_matches_compiled, check_grads)

rng = np.random.default_rng(23)


def normal(*shape):
    return rng.standard_normal(shape)


# ---- the functions ------------------------------------------------------------------------------
def averages(a, w):
    avg, scl = np.average(a, axis=0, weights=w[:3], returned=True)
    return (np.sum(np.average(a, axis=1, weights=w) ** 2) + np.average(a)
            + np.sum(np.average(a, axis=0, keepdims=True) ** 3) + np.sum(avg * scl)
            + np.average(a, weights=a * a))


def nan_reductions(a):
    b = np.where(a > 1.0, np.nan, a)
    return (np.nansum(b ** 2) + np.sum(np.nanmean(b, axis=0) ** 2) + np.sum(np.nanmax(b, axis=1))
            + np.nanmin(b) + np.sum(np.nansum(b, axis=1, keepdims=True) * 2.0))


def takes(a):
    return (np.sum(np.take(a, [0, 2, -1, 0]) ** 2)
            + np.sum(np.take(a, [1, 0, 1], axis=1) * a[:, :3])
            + np.take(a, 1) + np.sum(np.take(a, np.array([[2], [0]]), axis=0) ** 3))


def pads(a):
    p = np.pad(a, ((1, 2), (0, 1)), constant_values=((1.0, 2.0), (3.0, 4.0)))
    return (np.sum(p ** 2 * np.arange(p.size).reshape(p.shape)) + np.sum(np.pad(a, 1) ** 3)
            + np.sum(np.pad(a[0], (2, 0), mode="constant", constant_values=5.0) ** 2))


def crosses(a, b):
    return (np.sum(np.cross(a, b) ** 2) + np.sum(np.cross(a[0], b) * 2.0)
            + np.sum(np.cross(a[1], [0.0, 0.0, 1.0]) ** 3))


def polys(p, x):
    return (np.sum(np.polyval(p, x) ** 2) + np.sum(np.polyval([1.0, 2.0, -0.5], x))
            + np.polyval(p, x[0]) ** 2)


def convolutions(a, v):
    return (np.sum(np.convolve(a, v) ** 2) + np.sum(np.convolve(a, v, mode="same") * a)
            + np.sum(np.convolve(v, a, "valid") ** 3) + np.sum(np.convolve(a, v[:1], "same") ** 2))


def interpolations(x, xp, fp):
    return (np.sum(np.interp(x, xp, fp) ** 2)
            + np.sum(np.interp(x, [-1.0, 0.0, 1.0], fp[:3], left=-3.0, right=fp[0]) ** 2)
            + np.interp(x[2], xp, fp))


X_INTERP = np.array([-3.0, -0.5, 0.2, 0.7, 1.3, 2.2, 5.0])
XP_INTERP = np.array([-1.0, 0.0, 0.5, 1.0, 2.5])

CASES = [(averages, lambda: (normal(3, 4), rng.uniform(0.5, 1.5, 4))),
         (nan_reductions, lambda: (normal(3, 4),)),
         (takes, lambda: (normal(3, 4),)),
         (pads, lambda: (normal(2, 3),)),
         (crosses, lambda: (normal(4, 3), normal(4, 3))),
         (polys, lambda: (normal(4), normal(5))),
         (convolutions, lambda: (normal(6), normal(3))),
         (interpolations, lambda: (X_INTERP.copy(), XP_INTERP.copy(), normal(5)))]
IDS = [f.__name__ for f, _ in CASES]


@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_value_and_grad(f, make):
    args = make()
    wrt = tuple(range(len(args)))
    value, grads = ad.value_and_grad(f, wrt=wrt)(*args)
    assert value == pytest.approx(f(*args), rel=1e-12)
    assert_matches_numerical(f, args, wrt, grads, rtol=1e-5, atol=1e-6)
    check_grads(f, *args, wrt=wrt, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_jvp(f, make):
    args = make()
    assert_jvp_matches_differences(f, args, normal(*np.shape(args[0])), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("f, make", [c for c in CASES if c[0] is not nan_reductions],
                         ids=[i for i in IDS if i != "nan_reductions"])
def test_hessian(f, make):
    args = make()
    h = ad.hessian(f, wrt=0)(*args)
    g = ad.grad(f, wrt=0)
    x, n, eps = args[0], args[0].size, 1e-5
    steps = [eps * e.reshape(x.shape) for e in np.eye(n)]
    numeric = np.stack([(g(x + s, *args[1:]) - g(x - s, *args[1:])).ravel() / (2 * eps)
                        for s in steps], axis=1)
    np.testing.assert_allclose(np.reshape(h, (n, n)), numeric, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_the_tape_gives_the_compiled_gradient(f, make):
    assert_tape_matches_compiled(f, make())


# ---- values, dtypes and NaN entries -------------------------------------------------------------
def average_f(a, w):
    return np.average(a, axis=1, weights=w)


def average_plain(a):
    return np.average(a, axis=(0, 1))


def nanmean_f(a):
    return np.nanmean(a, axis=0)


def nanmax_f(a):
    return np.nanmax(a, axis=1)


def take_f(a):
    return np.take(a, [2, 0, 0], axis=0)


def pad_f(a):
    return np.pad(a, [(1, 0), (2, 1)], constant_values=7)


def cross_f(a, b):
    return np.cross(a, b)


def polyval_f(p, x):
    return np.polyval(p, x)


def convolve_f(a, v):
    return np.convolve(a, v, mode="same")


def interp_f(x, xp, fp):
    return np.interp(x, xp, fp)


F32_CASES = [(average_f, lambda: (normal(3, 4), rng.uniform(0.5, 1.5, 4))),
             (average_plain, lambda: (normal(3, 4),)),
             (nanmean_f, lambda: (normal(3, 4),)), (nanmax_f, lambda: (normal(3, 4),)),
             (take_f, lambda: (normal(3, 2),)), (pad_f, lambda: (normal(2, 2),)),
             (cross_f, lambda: (normal(2, 3), normal(3))),
             (polyval_f, lambda: (normal(3), normal(4))),
             (convolve_f, lambda: (normal(5), normal(2))),
             (interp_f, lambda: (X_INTERP.copy(), XP_INTERP.copy(), normal(5)))]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("f, make", F32_CASES, ids=[f.__name__ for f, _ in F32_CASES])
def test_values_dtypes_and_gradient_dtypes(f, make, dtype):
    args = [a.astype(dtype) for a in make()]
    want = f(*args)
    rtol = 1e-5 if dtype == np.float32 else 1e-13
    value, _ = ad.jvp(f, wrt=0)(*args, tangents=np.ones_like(args[0]))
    assert value.dtype == want.dtype and value.shape == want.shape
    np.testing.assert_allclose(value, want, rtol=rtol)
    wrt = tuple(range(len(args)))
    grads = ad.vjp(f, wrt=wrt)(*args, cotangent=np.ones_like(want))
    assert [g.dtype for g in grads] == [a.dtype for a in args]
    out = f(*[tape.tensor(a, requires_grad=True) for a in args])
    assert out.detach().numpy().dtype == want.dtype
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=rtol)


def nan_sum_only(a):
    return 3.0 * np.nansum(a) + np.sum(np.nanmean(a, axis=1)) + np.nanmax(a) + np.nanmin(a)


def test_nan_entries_get_zero_gradient():
    a = np.array([[1.0, np.nan, -2.0], [0.5, 3.0, np.nan]])
    value, (g,) = ad.value_and_grad(nan_sum_only, wrt=(0,))(a)
    assert value == pytest.approx(nan_sum_only(a), rel=1e-14)
    want = np.where(np.isnan(a), 0.0, 3.5)   # a NaN entry's is 0 (the where picks around it)
    want[1, 1] += 1.0   # the max
    want[0, 2] += 1.0   # the min
    np.testing.assert_array_equal(g, want)
    leaf = tape.tensor(a, requires_grad=True)
    (tg,) = tape.grad(nan_sum_only(leaf), [leaf])
    np.testing.assert_array_equal(tg.numpy(), want)


def all_nan_max(a):
    return np.nanmax(a, axis=1)


def all_nan_mean(a):
    return np.nanmean(a, axis=1)


def test_all_nan_slices_are_nan_as_numpy():
    a = np.array([[np.nan, np.nan], [1.0, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for f in (all_nan_max, all_nan_mean):
            got = ad.jvp(f, wrt=0)(a, tangents=np.ones_like(a))[0]
            np.testing.assert_array_equal(got, f(a))


def integer_inputs(x, n):
    return np.average(n) + np.nansum(n) * x + np.nanmean(n) + np.average(n, weights=n) * x


def test_integer_arrays_as_numpy():
    x, n = 1.5, np.array([1, 2, 3, 4])
    value, (gx,) = ad.value_and_grad(integer_inputs, wrt=(0,))(x, n)
    assert value == integer_inputs(x, n)
    assert gx == pytest.approx(float(np.nansum(n) + np.average(n, weights=n)))


def interp_at_points(x, fp):
    return np.interp(x, [0.0, 1.0, 2.0], fp)


def test_interp_at_the_sample_points_and_outside():
    x, fp = np.array([-1.0, 0.0, 1.0, 1.5, 2.0, 3.0]), np.array([1.0, -2.0, 4.0])
    value, _ = ad.jvp(interp_at_points, wrt=0)(x, fp, tangents=np.ones_like(x))
    np.testing.assert_array_equal(value, interp_at_points(x, fp))


def interp_scalar(t, xp, fp):
    return np.interp(t, xp, fp)


def test_interp_of_a_scalar_and_a_single_point():
    xp, fp = np.array([0.0, 2.0]), np.array([1.0, 5.0])
    gt, gfp = ad.grad(interp_scalar, wrt=(0, 2))(0.5, xp, fp)
    assert gt == pytest.approx(2.0) and isinstance(gt, float)
    np.testing.assert_allclose(gfp, [0.75, 0.25])
    for t in (-1.0, 0.0, 1.0):
        value, _ = ad.jvp(interp_scalar, wrt=0)(t, xp[:1], fp[:1], tangents=1.0)
        assert value == np.interp(t, xp[:1], fp[:1])


def weighted(a, w):
    return np.sum(np.average(a, axis=0, weights=w) ** 2)


def test_weights_summing_to_zero_raise_numpys_error():
    a, w = np.ones((2, 3)), np.array([1.0, -1.0])
    for run in (lambda: ad.grad(weighted, wrt=(0, 1))(a, w),
                lambda: ad.jvp(weighted, wrt=0)(a, w, tangents=a),
                lambda: weighted(tape.tensor(a, requires_grad=True), w)):
        with pytest.raises(ZeroDivisionError, match=re.escape("Weights sum to zero")):
            run()


# ---- what is refused ----------------------------------------------------------------------------
def pad_edge(x):
    return np.sum(np.pad(x, 1, mode="edge"))


def take_traced(x):
    return np.sum(np.take(x, np.argsort(x)))


def take_out_of_bounds(x):
    return np.sum(np.take(x, [0, 5]))


def cross_of_4(x):
    return np.sum(np.cross(x, x))


def average_without_axis(x):
    return np.sum(np.average(x, weights=np.ones(3)))


def convolve_circular(x):
    return np.sum(np.convolve(x, x, mode="circular"))


def interp_lengths(x):
    return np.sum(np.interp(x, x, x[:2]))


def interp_period(x):
    return np.sum(np.interp(x, x, x, period=2.0))


def nansum_dtype(x):
    return np.nansum(x, dtype=np.float32)


def pad_traced_value(x):
    return np.sum(np.pad(x, 1, constant_values=x[0]))


REFUSED = [(pad_edge, "`np.pad()` supports mode='constant' only, not mode='edge'"),
           (take_traced, "`np.take()` needs the indices (a list or an array made while "
                         "compiling) known when compiling"),
           (take_out_of_bounds, "IndexError: index 5 is out of bounds for axis 0 with size 4"),
           (cross_of_4, "ValueError: incompatible dimensions for cross product"),
           (average_without_axis,
            "TypeError: Axis must be specified when shapes of a and weights differ."),
           (convolve_circular, "`np.convolve()` takes mode='full', 'same' or 'valid'"),
           (interp_lengths, "ValueError: fp and xp are not of the same length."),
           (interp_period, "`np.interp()` does not take `period=` here"),
           (nansum_dtype, "`np.nansum()` does not take `dtype=` here"),
           (pad_traced_value, "`np.pad()` needs `constant_values=` known when compiling")]


@pytest.mark.parametrize("f, message", REFUSED, ids=[f.__name__ for f, _ in REFUSED])
def test_refused_with_a_located_error(f, message):
    x = np.ones((3, 3)) if f is average_without_axis else np.arange(4.0)
    with pytest.raises(CompileError, match=re.escape(message)) as info:
        ad.grad(f)(x)
    assert "test_nan_reductions_pad_and_signals.py:" in str(info.value)


def test_the_tape_refuses_other_pad_modes():
    with pytest.raises(NotImplementedError, match=re.escape("mode='constant' only")):
        np.pad(tape.tensor(np.ones(3), requires_grad=True), 1, mode="edge")
