"""NumPy functions composed of other primitives (``adcompiler/frontend/library/compositions.py``):
``var std diff flip fliplr flipud roll swapaxes moveaxis full_like empty_like vstack hstack
column_stack logaddexp``. Gradients against central finite differences (and PyTorch where it
is installed); values against plain NumPy, bit for bit and dtype, in float64 and float32."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad

from tests.helpers import assert_matches_numerical

rng = np.random.default_rng(11)
W24 = np.arange(24.0).reshape(2, 3, 4) / 7.0   # weights, so that a sum does not hide a mix-up


def normal(*shape):
    return rng.standard_normal(shape)


# ---- functions compiled below ---------------------------------------------------------------
def var_all(x):
    return np.var(x)


def var_axes(x):
    return np.var(x, axis=(0, -1), ddof=1, keepdims=True)


def var_method(x):
    return x.var(axis=1, ddof=2)


def std_axis(x):
    return np.std(x, axis=-1)


def std_method(x):
    return x.std(0, keepdims=True)


def std_correction(x):
    return np.std(x, axis=(1, 2), correction=1)


def diff_last(x):
    return np.diff(x)


def diff_twice(x):
    return np.diff(x, n=2, axis=0)


def diff_ends(x):
    return np.diff(x, axis=1, prepend=0.5, append=x[:, :1, :])


def flip_all(x):
    return np.flip(x)


def flip_axes(x):
    return np.flip(x, axis=(0, -1))


def flip_lr_ud(x):
    return np.fliplr(x[0]) * 2.0 + np.flipud(x[1])


def roll_axis(x):
    return np.roll(x, 2, axis=-1)


def roll_flat(x):
    return np.roll(x, -5)


def roll_pairs(x):
    return np.roll(x, (1, -4, 3), axis=(0, 2, 2))


def roll_nothing(x):
    return np.roll(x, 3, axis=1)


def swap(x):
    return np.swapaxes(x, 0, 2) + x.swapaxes(-1, 0) * 2.0


def move(x):
    return np.moveaxis(x, [0, 1], [-1, 0])


def full_like_traced(x, c):
    return np.full_like(x, c) * x


def full_like_int(x):
    return np.full_like(x, 2.7, dtype=int) * x


def empty_like_written(x):
    e = np.empty_like(x)
    e[:] = x * 3.0
    return e * x


def vstack_rows(x, v):
    return np.vstack([x[0], v, v * 2.0])


def hstack_vectors(x, v):
    return np.hstack((v, x[0, 0], 2.0))


def hstack_matrices(x):
    return np.hstack([x[0], x[1] * x[1]])


def column_stack_vectors(x, v):
    return np.column_stack([v, x[1, :, 0], x[0]])


def logaddexp_pair(a, b):
    return np.logaddexp(a, b)


def logaddexp_broadcast(a, s):
    return np.logaddexp(a[:, None], s * a)


ONE = [var_all, var_axes, var_method, std_axis, std_method, std_correction, diff_last,
       diff_twice, diff_ends, flip_all, flip_axes, flip_lr_ud, roll_axis, roll_flat, roll_pairs,
       roll_nothing, swap, move, full_like_int, empty_like_written, hstack_matrices]
TWO = [(full_like_traced, lambda: (normal(2, 3, 4), 1.5)),
       (vstack_rows, lambda: (normal(2, 3, 4), normal(4))),
       (hstack_vectors, lambda: (normal(2, 3, 4), normal(4))),
       (column_stack_vectors, lambda: (normal(2, 3, 4), normal(3))),
       (logaddexp_pair, lambda: (normal(6), normal(6))),
       (logaddexp_broadcast, lambda: (normal(5), 0.7))]
CASES = [(f, lambda: (normal(2, 3, 4),)) for f in ONE] + TWO


# ---- gradients: finite differences --------------------------------------------------------
def check_vjp(f, args, wrt=None):
    """``vjp`` of ``f`` with a random cotangent against finite differences of
    ``sum(cotangent * f(*args))``; returns the gradients."""
    wrt = tuple(i for i, a in enumerate(args) if isinstance(a, (float, np.ndarray))) \
        if wrt is None else wrt
    c = np.random.default_rng(3).standard_normal(np.shape(f(*args)))
    grads = ad.vjp(f, wrt=wrt)(*args, cotangent=c)
    assert_matches_numerical(lambda *a: np.sum(c * f(*a)), args, wrt, grads)
    return grads


@pytest.mark.parametrize("f, make", CASES, ids=[f.__name__ for f, _ in CASES])
def test_gradient_matches_finite_differences(f, make):
    check_vjp(f, make())


# ---- values: bit for bit as NumPy, dtype included ----------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("f, make", CASES, ids=[f.__name__ for f, _ in CASES])
def test_values_match_numpy(f, make, dtype):
    args = tuple(a.astype(dtype) if isinstance(a, np.ndarray) else a for a in make())
    tangents = tuple(np.ones_like(a) if isinstance(a, np.ndarray) else 1.0 for a in args)
    wrt = tuple(range(len(args)))
    value, _ = ad.jvp(f, wrt=wrt)(*args, tangents=tangents)
    expected = f(*args)
    assert np.result_type(value) == np.result_type(expected)
    assert np.shape(value) == np.shape(expected)
    if f in (logaddexp_pair, logaddexp_broadcast):   # NumPy's loop calls libm's exp and log1p,
        ulp = np.finfo(dtype).eps                     # np.exp and np.log1p its own SIMD ones
        np.testing.assert_allclose(value, expected, rtol=2 * ulp, atol=8 * ulp)
    else:
        np.testing.assert_array_equal(value, expected)


def test_std_of_a_scalar_result_is_a_numpy_scalar():
    value, _ = ad.jvp(var_all)(normal(3).astype(np.float32), tangents=np.ones(3, np.float32))
    assert type(value) is np.float32


# ---- conventions and dtypes -----------------------------------------------------------------
def std_columns(x):
    return np.std(x, axis=0)


def logaddexp_sum(a, b):
    return np.sum(np.logaddexp(a, b))


def var_of_ints(k, x):
    return np.var(k) * x + np.std(k, ddof=1)


def diff_of_bools(x):
    return np.where(np.diff(x > 0.0), x[1:], 0.0)


def test_std_at_zero_variance_has_gradient_zero_as_pytorch():
    """A constant column: sqrt's infinite slope meets zero deviations. PyTorch gives 0 (JAX
    NaN); adcompiler gives 0, and sqrt's value elsewhere."""
    x = np.array([[1.0, 1.0], [1.0, 2.0], [1.0, 4.0]])
    c = np.array([1.0, 1.0])
    (g,) = ad.vjp(std_columns, wrt=(0,))(x, cotangent=c)
    assert np.all(np.isfinite(g)) and np.all(g[:, 0] == 0.0)
    value, tangent = ad.jvp(std_columns)(x, tangents=np.ones_like(x))
    np.testing.assert_array_equal(value, np.std(x, axis=0))
    assert tangent[0] == 0.0
    torch = pytest.importorskip("torch")
    t = torch.tensor(x, requires_grad=True)
    (torch.std(t, dim=0, correction=0) * torch.tensor(c)).sum().backward()
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_logaddexp_at_a_tie_gives_half_to_each_as_pytorch():
    a, b = np.array([0.3, -1.0, np.log(2.0)]), np.array([0.3, 2.0, np.log(2.0)])
    ga, gb = ad.grad(logaddexp_sum, wrt=(0, 1))(a, b)
    np.testing.assert_array_equal([ga[0], gb[0], ga[2], gb[2]], [0.5] * 4)
    big = np.array([800.0, -800.0]), np.array([799.0, -801.0])   # np.log(np.exp(...)) overflows
    value, _ = ad.value_and_grad(logaddexp_sum)(*big)
    assert value == pytest.approx(np.sum(np.logaddexp(*big)), rel=1e-15)
    torch = pytest.importorskip("torch")
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (a, b))
    torch.logaddexp(ta, tb).sum().backward()
    np.testing.assert_allclose(ga, ta.grad.numpy(), rtol=1e-15)
    np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=1e-15)


def test_logaddexp_of_two_minus_infinities_is_minus_infinity():
    a, b = np.array([-np.inf, 1.0]), np.array([-np.inf, 0.5])
    value, _ = ad.jvp(logaddexp_pair, wrt=(0, 1))(a, b, tangents=(np.ones(2), np.ones(2)))
    np.testing.assert_array_equal(value, np.logaddexp(a, b))


def test_integer_and_boolean_inputs_as_numpy():
    k = np.array([1, 4, 2, 7])
    assert ad.grad(var_of_ints, wrt=1)(k, 2.0) == pytest.approx(np.var(k))
    x = np.array([0.5, -1.0, -2.0, 3.0])
    (g,) = check_vjp(diff_of_bools, (x,))
    assert g.dtype == np.float64


# ---- against PyTorch ------------------------------------------------------------------------
def _torch_cases(torch):
    c = torch.cat
    return [
        (var_axes, lambda t: torch.var(t, dim=(0, 2), correction=1, keepdim=True)),
        (var_method, lambda t: torch.var(t, dim=1, correction=2)),
        (std_axis, lambda t: torch.std(t, dim=-1, correction=0)),
        (std_correction, lambda t: torch.std(t, dim=(1, 2), correction=1)),
        (diff_twice, lambda t: torch.diff(t, n=2, dim=0)),
        (diff_ends, lambda t: torch.diff(t, dim=1, prepend=torch.full_like(t[:, :1], 0.5),
                                         append=t[:, :1])),
        (flip_axes, lambda t: torch.flip(t, dims=(0, 2))),
        (roll_flat, lambda t: torch.roll(t, -5)),
        (roll_pairs, lambda t: torch.roll(t, (1, -1), dims=(0, 2))),
        (move, lambda t: torch.movedim(t, (0, 1), (-1, 0))),
        (hstack_matrices, lambda t: c([t[0], t[1] * t[1]], dim=1)),
    ]


def test_gradients_match_pytorch():
    torch = pytest.importorskip("torch")
    for f, reference in _torch_cases(torch):
        x = normal(2, 3, 4)
        c = np.random.default_rng(1).standard_normal(np.shape(f(x)))
        (ours,) = ad.vjp(f, wrt=(0,))(x, cotangent=c)
        t = torch.tensor(x, requires_grad=True)
        out = reference(t)
        assert tuple(out.shape) == np.shape(c), f.__name__
        np.testing.assert_allclose(out.detach().numpy(), f(x), rtol=1e-13, err_msg=f.__name__)
        (out * torch.tensor(c)).sum().backward()
        np.testing.assert_allclose(ours, t.grad.numpy(), rtol=1e-12, atol=1e-14,
                                   err_msg=f.__name__)


# ---- refused as NumPy refuses, or as compiling needs ---------------------------------------
def roll_by_traced(x, k):
    return np.roll(x, int(k))


def moveaxis_mismatch(x):
    return np.moveaxis(x, [0, 1], [0])


def diff_negative(x):
    return np.diff(x, n=-1)


def var_where(x):
    return np.var(x, where=x > 0)


def swap_out_of_bounds(x):
    return np.swapaxes(x, 0, 3)


@pytest.mark.parametrize("f, args, match", [
    (roll_by_traced, (normal(4), 1.0), "known when compiling"),
    (moveaxis_mismatch, (normal(2, 3),), "same number of elements"),
    (diff_negative, (normal(3),), "non-negative"),
    (var_where, (normal(3),), "where="),
    (swap_out_of_bounds, (normal(2, 3),), "out of bounds"),
])
def test_refusals_are_located_errors(f, args, match):
    with pytest.raises(ad.CompileError, match=match):
        ad.vjp(f, wrt=(0,))(*args, cotangent=np.ones(np.shape(args[0])))


def uses_unique(x):
    return np.sum(np.unique(x))


def test_a_function_of_data_dependent_shape_says_so():
    with pytest.raises(ad.CompileError, match="np.unique` is not supported in a compiled "
                                              "function: its result's shape depends") as info:
        ad.grad(uses_unique)(normal(3))
    assert "np.where(mask, x, 0.0)" in str(info.value)
    assert "no derivative rule" not in str(info.value)
