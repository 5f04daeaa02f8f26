"""backend="numba" on gathers, scatter-adds and axis reductions: loop nests (#33).

Every gradient is compared with the NumPy backend's gradient of the same function (checked
against finite differences and the tape elsewhere), at small sizes and at sizes where the NumPy
backend's own forms change (the scatter-adds' sparse products, the mixture's matrix products
from ``broadcast_products.MIN_ENTRIES``, fused chains); the generated source is read for the
nests it promises (no ``np.add.at``, no fallback).
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import adcompiler as ad
from adcompiler.passes import broadcast_products
from benchmarks import workloads
from tests.helpers import assert_close_normwise, examples

pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")


def _close(got, want, rtol=1e-12):
    assert_close_normwise(got, want, rtol)


def _is_nest_kernel(source):
    return ("_nests(" in source and "@numba.njit" in source and "NumPy code" not in source
            and "np.add.at" not in source and "matmul" not in source and "@" not in
            source.split("def _checked")[1].replace("@numba.njit", ""))


@pytest.mark.parametrize("kw", [dict(users=7, items=5, rank=3, pairs=40),
                                dict(users=300, items=200, rank=32, pairs=50_000)])
def test_matrix_factorization_is_one_kernel_of_gathers_and_serial_scatter_adds(kw):
    w, args = workloads.get("matfact"), workloads.make_matfact(**kw)
    g = ad.grad(w.fn, wrt=w.wrt, backend="numba")
    want = ad.grad(w.fn, wrt=w.wrt)(*args)
    _close(g(*args), want)
    _close(g(*args), w.hand(*args))
    src = g.source
    assert _is_nest_kernel(src), src
    assert "iu_w = _checked(iu, " in src and "dU[iu_w[i0], i1] += " in src, src
    assert "prange" not in src


@pytest.mark.parametrize("n, k", [(40, 3), (3 * broadcast_products.MIN_ENTRIES, 16)])
def test_gaussian_mixture_reduces_rows_in_the_kernel_without_the_cube(n, k):
    w, args = workloads.get("gmm"), workloads.make_gmm(n=n, k=k)
    g = ad.grad(w.fn, wrt=w.wrt, backend="numba")
    _close(g(*args), ad.grad(w.fn, wrt=w.wrt)(*args))
    _close(g(*args), w.hand(*args), rtol=1e-11)
    src = g.source
    assert _is_nest_kernel(src), src
    assert "acc = -math.inf" in src and "np.empty" in src and f"np.empty(({n}, {k}, 2))" not in src


def test_value_and_grad_returns_the_value_from_the_kernel():
    w, args = workloads.get("gmm"), workloads.make_gmm(n=30, k=4)
    v, d = ad.value_and_grad(w.fn, wrt=w.wrt, backend="numba")(*args)
    v0, d0 = ad.value_and_grad(w.fn, wrt=w.wrt)(*args)
    assert v == pytest.approx(v0, rel=1e-13)
    _close(d, d0)


def _gather_rows(U, c, iu):
    return np.sum(np.tanh(U[iu]) * c[:, None])


def _gather_1d(x, y, iu):
    return np.sum(x[iu] * x[iu] * y)


def _gather_slice(U, c, iu):
    return np.sum(np.exp(U[iu, 1:]) * c[:, None])


@settings(max_examples=examples(12, 5), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([_gather_rows, _gather_1d, _gather_slice]), st.integers(2, 6),
       st.integers(1, 30), st.integers(0, 2 ** 31))
def test_random_gathers_with_repeated_and_negative_indices(fn, rows, pairs, seed):
    rng = np.random.default_rng(seed)
    U = rng.normal(size=(rows, 3)) if fn is not _gather_1d else rng.normal(size=rows)
    c = rng.normal(size=pairs)
    iu = rng.integers(-rows, rows, size=pairs)       # repeats, and negatives that wrap
    g = ad.grad(fn, wrt=(0, 1), backend="numba")
    _close(g(U, c, iu), ad.grad(fn, wrt=(0, 1))(U, c, iu))
    assert _is_nest_kernel(g.source), g.source


def _logsumexp(axis, keepdims):
    def f(A, b):
        m = np.max(A * b, axis=axis, keepdims=True)
        s = np.log(np.sum(np.exp(A * b - m), axis=axis, keepdims=keepdims))
        return np.sum(s * s) + np.sum(np.mean(np.sin(A), axis=axis) ** 2)
    return f


@settings(max_examples=examples(10, 4), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([0, 1, 2, -1, None, (0, 2)]), st.booleans(), st.integers(1, 5),
       st.integers(0, 2 ** 31))
def test_reductions_over_each_axis(axis, keepdims, n, seed):
    rng = np.random.default_rng(seed)
    A, b = rng.normal(size=(n, 3, 4)), rng.normal(size=4)
    f = _logsumexp(axis, keepdims)
    g = ad.grad(f, wrt=(0, 1), backend="numba")
    _close(g(A, b), ad.grad(f, wrt=(0, 1))(A, b))
    assert _is_nest_kernel(g.source), g.source


def test_max_propagates_nan_as_numpy_does():
    def f(A):
        return np.sum(np.max(A, axis=1) ** 2) + np.sum(np.min(A, axis=0))
    A = np.array([[1.0, np.nan, 2.0], [3.0, 0.5, -1.0], [-2.0, 4.0, 0.0]])
    g = ad.value_and_grad(f, backend="numba")
    with np.errstate(invalid="ignore"):
        (v, d), (v0, d0) = g(A), ad.value_and_grad(f)(A)
        g(A[1:])
    assert _is_nest_kernel(g.source)
    assert np.isnan(v) and np.isnan(v0)
    np.testing.assert_allclose(d, d0, rtol=1e-13, equal_nan=True)
    (v, d), (v0, d0) = g(A[1:]), ad.value_and_grad(f)(A[1:])
    assert v == pytest.approx(v0, rel=1e-14)
    _close(d, d0)


def test_an_index_out_of_range_raises_index_error_as_numpy_does():
    U, c = np.ones((4, 3)), np.ones(3)
    g = ad.grad(_gather_rows, backend="numba")
    g(U, c, np.array([0, 3, -4]))
    assert _is_nest_kernel(g.source)
    for bad in ([0, 4, 1], [0, -5, 1]):
        with pytest.raises(IndexError, match="index array iu is out of bounds for an axis of "
                                             "size 4"):
            g(U, c, np.array(bad))
        with pytest.raises(IndexError):
            ad.grad(_gather_rows)(U, c, np.array(bad))


def test_matrix_products_and_computed_indices_stay_numpy_code_saying_why():
    def product(w, X):
        return np.sum(np.tanh(X @ w))

    def argmax_gather(x):
        return np.sum(x[np.argsort(x)] * np.arange(4.0))

    rng = np.random.default_rng(3)
    w, X = rng.normal(size=4), rng.normal(size=(6, 4))
    g = ad.grad(product, backend="numba")
    _close(g(w, X), ad.grad(product)(w, X))
    assert "NumPy code" in g.source and "computes matmul" in g.source
    x = rng.normal(size=4)
    g = ad.grad(argmax_gather, backend="numba")
    _close(g(x), ad.grad(argmax_gather)(x))
    assert "NumPy code" in g.source and "@numba.njit" not in g.source


def _cube_and_product(mu, W, X):
    sq = np.sum((X[:, None, :] - mu[None, :, :]) ** 2, axis=2)
    return np.sum(np.exp(-sq)) + np.sum(np.tanh(X @ W))


def test_numpy_code_where_no_kernel_is_written_keeps_the_products_of_the_numpy_backend():
    """The numba graph keeps the (n, k, d) broadcast for the nests; where they refuse (a
    matrix product), the NumPy code is the NumPy backend's, with its products."""
    n = 3 * broadcast_products.MIN_ENTRIES
    rng = np.random.default_rng(5)
    args = rng.normal(size=(4, 2)), rng.normal(size=(2, 3)), rng.normal(size=(n, 2))
    g = ad.grad(_cube_and_product, wrt=(0, 1), backend="numba")
    ref = ad.grad(_cube_and_product, wrt=(0, 1))
    _close(g(*args), ref(*args))
    assert "NumPy code" in g.source and "@numba" not in g.source
    body = [line for line in g.source.splitlines() if '"""NumPy code' not in line]
    assert body == ref.source.splitlines() and "matmul" in g.source


def test_0d_results_are_what_the_numpy_backend_returns():
    def f(x, s):
        return np.sum(np.max(x, axis=0) * s) + np.sum(np.max(x, axis=1) ** 2)

    x, s = np.arange(6.0).reshape(2, 3), np.array(2.0)
    g = ad.value_and_grad(f, wrt=(0, 1), backend="numba")
    (v, (dx, ds)), (v0, (dx0, ds0)) = g(x, s), ad.value_and_grad(f, wrt=(0, 1))(x, s)
    assert _is_nest_kernel(g.source)
    assert type(v) is type(v0) and v == v0
    assert type(ds) is type(ds0) and ds.shape == ds0.shape == () and ds == ds0
    _close(dx, dx0)
