"""Broadcast-then-reduce as products (passes/broadcast_products.py): the squared distances
``sum((X[:, None, :] - mu) ** 2, axis=2)`` and their adjoint become row norms and ``@``, a
``sum(A[:, None, :] * B[None], axis=2)`` a ``@``; gradients equal the unoptimised code's and
finite differences above the size rule (and the planner's 32 KiB buffers) and below it, and
points far from the origin keep their digits."""

import re

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends.check_modes import unoptimised
from adcompiler.passes import broadcast_products
from tests.helpers import directional_difference, numerical_grad

RNG = np.random.default_rng(33)


def mixture(mu, log_sigma, X):
    """A Gaussian mixture's negative mean log likelihood, as the gmm workload writes it."""
    diff = X[:, None, :] - mu[None, :, :]
    sq = np.sum(diff * diff, axis=2)
    comp = -X.shape[1] * log_sigma - 0.5 * sq * np.exp(-2.0 * log_sigma)
    m = np.max(comp, axis=1, keepdims=True)
    return -np.mean(m + np.log(np.sum(np.exp(comp - m), axis=1, keepdims=True)))


def powered(X, mu):
    return np.sum(np.exp(-0.1 * np.sum((X[:, None, :] - mu) ** 2, axis=-1)))


def squared(X, mu):
    sq = np.sum(np.square(mu[None, :, :] - X[:, None, :]), axis=2, keepdims=True)
    return np.sum(np.sin(sq))


def normed(X, mu):
    """The distances as np.linalg.norm writes them (a sum over axis=(2,)), torch.cdist's job."""
    return np.sum(np.exp(-np.linalg.norm(X[:, None, :] - mu[None, :, :], axis=2)))


def product(A, B):
    return np.sum(np.tanh(np.sum(A[:, None, :] * B[None, :, :], axis=2)))


def product_first_axis(A, B):
    return np.sum(np.tanh(np.sum(A[:, :, None] * B[:, None, :], axis=0)))


def _code(source) -> str:
    return "\n".join(line.split("#")[0] for line in source.splitlines())


def _products(source) -> int:
    """Matrix products in the code: ``a @ b``, or ``np.matmul(a, b, out=_buf0)`` (planned)."""
    code = _code(source)
    return code.count(" @ ") + code.count("np.matmul(")


def _data(n, k, d, offset=0.0):
    centres = offset + 3.0 * RNG.standard_normal((k, d))
    X = centres[RNG.integers(0, k, size=n)] + RNG.standard_normal((n, d))
    return centres + 0.5 * RNG.standard_normal((k, d)), 0.1 * RNG.standard_normal(k), X


def _against_plain(f, args, wrt):
    g = ad.grad(f, wrt=wrt)
    got = g(*args)
    with unoptimised():
        want = ad.grad(f, wrt=wrt)(*args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12 * np.max(np.abs(b)))
    return g, got


LARGE = (2000, 8, 2)   # 32,000 entries: past MIN_ENTRIES and the planner's 32 KiB buffers
SMALL = (30, 4, 2)     # 240 entries: below both


def test_the_sizes_sit_on_both_sides_of_the_rule():
    assert np.prod(LARGE) * 8 >= 1 << 15 and np.prod(LARGE) >= broadcast_products.MIN_ENTRIES
    assert np.prod(SMALL) < broadcast_products.MIN_ENTRIES


def test_the_mixture_above_the_rule_has_no_cube_and_the_plain_gradient():
    mu, log_sigma, X = _data(*LARGE)
    g, (dmu, dls, dX) = _against_plain(mixture, (mu, log_sigma, X), (0, 1, 2))
    code = _code(g.source)
    assert "None, :]" not in code and "(2000, 8, 2)" not in code    # no (n, k, d) temporary
    assert _products(g.source) == 3      # the distances, dmu's and dX's products
    np.testing.assert_allclose(dmu, numerical_grad(mixture, [mu, log_sigma, X], 0), rtol=1e-5,
                               atol=1e-9)
    np.testing.assert_allclose(dls, numerical_grad(mixture, [mu, log_sigma, X], 1), rtol=1e-5,
                               atol=1e-9)
    t = RNG.standard_normal(X.shape)
    along = directional_difference(lambda x: mixture(mu, log_sigma, x), [X], [t])
    assert np.sum(dX * t) == pytest.approx(along, rel=1e-5)


def test_below_the_rule_the_broadcast_stays():
    mu, log_sigma, X = _data(*SMALL)
    g, (dmu, dX) = _against_plain(mixture, (mu, log_sigma, X), (0, 2))
    assert "X[:, None, :] - mu[None, :, :]" in g.source and _products(g.source) == 0
    np.testing.assert_allclose(dmu, numerical_grad(mixture, [mu, log_sigma, X], 0), rtol=1e-6)


@pytest.mark.parametrize("f", [powered, squared, normed])
@pytest.mark.parametrize("size", [LARGE, SMALL])
def test_other_spellings_of_the_distances(f, size):
    mu, _, X = _data(*size)
    g, (dX, dmu) = _against_plain(f, (X, mu), (0, 1))
    assert (_products(g.source) > 0) == (size is LARGE)
    np.testing.assert_allclose(dmu, numerical_grad(f, [X, mu], 1), rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("f", [product, product_first_axis])
@pytest.mark.parametrize("size", [LARGE, SMALL])
def test_broadcast_products_are_matrix_products_at_every_size(f, size):
    n, k, d = size
    A, B = RNG.standard_normal((n, d)), RNG.standard_normal((k, d))
    if f is product_first_axis:
        A, B = A.T.copy(), B.T.copy()         # (d, n) and (d, k): the sum over axis 0
    g, (dA, dB) = _against_plain(f, (A, B), (0, 1))
    code = _code(g.source)
    assert "None" not in code and _products(g.source) == 3
    np.testing.assert_allclose(dB, numerical_grad(f, [A, B], 1), rtol=1e-5, atol=1e-8)


def test_the_generated_lines(monkeypatch):
    """The forward distances and dmu as a person writes them (golden lines)."""
    monkeypatch.setitem(__import__("sys").modules, "numexpr", None)
    mu, log_sigma, X = _data(*LARGE)
    g = ad.grad(mixture, wrt=(0,))
    g(mu, log_sigma, X)
    code = [line.strip() for line in _code(g.source).splitlines()]
    assert "t1 = np.mean(mu, axis=0)" in code
    assert any(re.fullmatch(r"t\d+ = np.matmul\(t2, t3.T, out=_buf\d\)", line) for line in code)
    # the transposed operand is X's (n, d), not G's (n, k), which stays in its buffer
    dmu = r"dmu = -\(\(t2\.T @ (dt\d+)\)\.T - t3 \* \1\.sum\(axis=0\)\[:, None\]\)"
    assert any(re.fullmatch(dmu, line) for line in code), g.source
    assert "t2 = X - t1" in code


def test_the_gmm_workload_has_no_cube():
    """The benchmark's mixture (10^5 points, 16 components, 2-D): no (n, k, d) array in its
    gradient's source, and the hand-written gradient's values."""
    from benchmarks import workloads
    w = workloads.get("gmm")
    args = w.make()
    g = ad.grad(w.fn, wrt=w.wrt)
    got = g(*args)
    assert "(100000, 16, 2)" not in g.source and "np.mean(mu, axis=0)" in g.source
    for a, b in zip(got, w.hand(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-13)


def test_points_far_from_the_origin_keep_their_digits():
    """X ~ 1e4 + N(0, 1): |x|^2 - 2 x.mu + |mu|^2 as written loses 8 digits; the translated
    form the pass writes keeps the direct form's gradient to 1e-9."""
    mu, log_sigma, X = _data(*LARGE, offset=1e4)
    naive = (np.sum(X * X, 1)[:, None] - 2 * X @ mu.T + np.sum(mu * mu, 1)[None, :])
    direct = np.sum((X[:, None, :] - mu[None]) ** 2, axis=2)
    assert np.max(np.abs(naive - direct) / direct) > 1e-9     # the loss the rule avoids
    g, (dmu, dX) = _against_plain(mixture, (mu, log_sigma, X), (0, 2))
    assert _products(g.source) == 3
    np.testing.assert_allclose(dmu, numerical_grad(mixture, [mu, log_sigma, X], 0, eps=1e-4),
                               rtol=1e-4, atol=1e-9)


def test_float32_distances_keep_the_broadcast():
    """In float32 the expanded distances lose what float32 cannot spare (dmu 8e-6 from the
    float64 gradient where the direct form is 5e-7): the broadcast stays, products do not."""
    mu, log_sigma, X = (a.astype(np.float32) for a in _data(*LARGE))
    g = ad.grad(mixture, wrt=(0, 2))
    dmu, _ = g(mu, log_sigma, X)
    assert "X[:, None, :] - mu[None, :, :]" in g.source and _products(g.source) == 0
    truth = ad.grad(mixture, wrt=0)(*(a.astype(np.float64) for a in (mu, log_sigma, X)))
    assert dmu.dtype == np.float32
    np.testing.assert_allclose(dmu, truth, rtol=0, atol=2e-6 * np.max(np.abs(truth)))
    A, B = RNG.standard_normal((2000, 2)).astype(np.float32), RNG.standard_normal((8, 2))
    h = ad.grad(product, wrt=(0, 1))
    h(A, B.astype(np.float32))
    assert _products(h.source) == 3


def test_second_order():
    """The Hessian (forward over the reverse code, which the pass may rewrite again) against
    differences of the gradient."""
    mu, log_sigma, X = _data(*LARGE)
    h = ad.hessian(mixture, wrt=1)(mu, log_sigma, X)
    g = ad.grad(mixture, wrt=1)
    e = np.zeros_like(log_sigma)
    e[0] = 1e-5
    np.testing.assert_allclose(h[0], (g(mu, log_sigma + e, X) - g(mu, log_sigma - e, X)) / 2e-5,
                               rtol=1e-5, atol=1e-9)
