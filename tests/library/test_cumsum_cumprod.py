"""``np.cumsum``/``np.cumprod`` (and ``.cumsum()``/``.cumprod()``): primitives whose adjoints
are reversed cumulative sums, ``cumprod``'s exact where a slice holds zeros. Gradients against
finite differences and PyTorch, tangents against the adjoint, values against NumPy (dtype
included: integers and booleans sum to int64), the tape, and CuPy's spelling."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape

from tests.cupy_helpers import compile_both, emulate
from tests.helpers import assert_matches_numerical

rng = np.random.default_rng(23)


def signed(*shape):
    return rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)


def with_zeros(*shape):
    """Slices with no zero, one, two, and one at the start."""
    x = signed(*shape)
    x[0, 1] = x[1, 0] = x[1, 2] = x[2, 3] = 0.0
    return x


# ---- functions compiled below ---------------------------------------------------------------
def sums(x):
    return np.cumsum(x, axis=0) * 2.0 + np.cumsum(x, axis=-1)


def sums_flat(x):
    return np.cumsum(x) + x.cumsum(axis=1).reshape(-1)


def products(x):
    return np.cumprod(x, axis=1) + x.cumprod(0) * 0.5


def products_flat(x):
    return np.cumprod(x)


def products_f32(x):
    return np.cumprod(x, axis=1, dtype=np.float32)


def running_mean(x):
    return np.cumsum(x, axis=1) / np.arange(1.0, x.shape[1] + 1)


CASES = [(sums, signed), (sums_flat, signed), (products, signed), (products, with_zeros),
         (products_flat, with_zeros), (running_mean, signed)]
IDS = ["sums", "sums_flat", "products", "products_zeros", "products_flat_zeros", "running_mean"]


def _vjp(f, x, c):
    (g,) = ad.vjp(f, wrt=(0,))(x, cotangent=c)
    return g


@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_gradient_matches_finite_differences_and_the_tangent(f, make):
    x = make(3, 4)
    c = np.random.default_rng(2).standard_normal(np.shape(f(x)))
    g = _vjp(f, x, c)
    assert_matches_numerical(lambda a: np.sum(c * f(a)), (x,), (0,), (g,))
    dx = np.random.default_rng(6).standard_normal(x.shape)
    value, t = ad.jvp(f)(x, tangents=dx)
    np.testing.assert_array_equal(value, f(x))
    assert np.sum(c * t) == pytest.approx(np.sum(g * dx), rel=1e-12)


def test_cumprod_of_all_zeros_and_of_a_zero_alone():
    for x in (np.zeros((3, 4)), np.array([[0.0, 2.0, 3.0, 4.0]] * 3)):
        c = np.ones((3, 4))
        g = _vjp(products, x, c)
        assert_matches_numerical(lambda a: np.sum(c * products(a)), (x,), (0,), (g,))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values_and_dtypes_are_numpy_s(dtype):
    x = with_zeros(3, 4).astype(dtype)
    for f in (sums, sums_flat, products, products_flat, products_f32):
        value, _ = ad.jvp(f)(x, tangents=np.ones_like(x))
        expected = f(x)
        assert value.dtype == expected.dtype, (f.__name__, dtype)
        np.testing.assert_array_equal(value, expected)


def scaled_sums(k, s):
    return np.sum(np.cumsum(k, axis=0) * s) + np.sum(k.cumprod() * s)


@pytest.mark.parametrize("dtype", [np.int32, np.bool_])
def test_integers_and_booleans_scan_to_int64_as_numpy(dtype):
    k = (with_zeros(3, 4) * 3).astype(dtype)
    g = ad.grad(scaled_sums, wrt="s")
    assert g(k, 1.5) == float(np.sum(np.cumsum(k, axis=0)) + np.sum(k.cumprod()))
    assert "i64[3,4] = cumsum[axis=0] k" in str(g.ir) and np.cumsum(k, axis=0).dtype == np.int64


# ---- against PyTorch and the tape -------------------------------------------------------------
def _torch(torch, f):
    return {
        "sums": lambda t: torch.cumsum(t, 0) * 2 + torch.cumsum(t, -1),
        "sums_flat": lambda t: torch.cumsum(t.reshape(-1), 0) + torch.cumsum(t, 1).reshape(-1),
        "products": lambda t: torch.cumprod(t, 1) + torch.cumprod(t, 0) * 0.5,
        "products_flat": lambda t: torch.cumprod(t.reshape(-1), 0),
    }.get(f.__name__)


@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_gradients_match_pytorch_and_the_tape(f, make):
    x = make(3, 4)
    c = np.random.default_rng(8).standard_normal(np.shape(f(x)))
    ours = _vjp(f, x, c)
    leaf = tape.tensor(x, requires_grad=True)
    out = f(leaf)
    np.testing.assert_array_equal(out.detach().numpy(), f(x))
    (out * c).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), ours, rtol=1e-12, atol=1e-14)
    torch = pytest.importorskip("torch")
    reference = _torch(torch, f)
    if reference is None:
        return
    t = torch.tensor(x, requires_grad=True)
    (reference(t) * torch.tensor(c)).sum().backward()
    np.testing.assert_allclose(ours, t.grad.numpy(), rtol=1e-12, atol=1e-14)


# ---- refused ------------------------------------------------------------------------------
def cumsum_axes(x):
    return np.cumsum(x, axis=(0, 1))


def cumsum_out(x):
    return np.cumsum(x, out=x)


def cumprod_far(x):
    return np.cumprod(x, axis=2)


@pytest.mark.parametrize("f, match", [(cumsum_axes, "one int axis"), (cumsum_out, "out="),
                                      (cumprod_far, "out of bounds")])
def test_refusals_are_located_errors(f, match):
    with pytest.raises(ad.CompileError, match=match):
        ad.vjp(f)(signed(3, 4), cotangent=np.ones((3, 4)))


# ---- CuPy -------------------------------------------------------------------------------------
def scans_loss(x):
    return np.sum(np.cumprod(x, axis=0) * np.cumsum(x, axis=1))


def test_cupy_code_computes_the_numpy_gradient():
    x = with_zeros(64, 64)
    cupy_code, plain = compile_both(scans_loss, (x,))
    assert "cp.cumprod(" in cupy_code.source and "cp.cumsum(" in cupy_code.source
    got, want = emulate(cupy_code)(x), plain.function(x)
    np.testing.assert_allclose(got, want, rtol=1e-12)
