"""The linear-algebra passes: merge_factorizations (the results of one ``eigh``, ``svd``, ``qr``
or ``slogdet`` of the same matrix read from one call), reuse_inverses (an adjoint's
``solve(K.T, g)`` as ``inv(K).T @ g``) and sum_diagonals (an adjoint's ``sum(x * I)`` as the
sum of ``x``'s diagonal). Each case counts the calls in the generated source and checks the
gradient against the code compiled without the pass and against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import passes
from adcompiler.passes.factorizations import merge_factorizations
from tests.helpers import numerical_grad

RNG = np.random.default_rng(3)
A = RNG.standard_normal((4, 4)) + 3.0 * np.eye(4)
STACK = RNG.standard_normal((2, 4, 3))


@pytest.fixture(autouse=True)
def _compile_every_time(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")   # the disk cache would skip the passes


def eigen(A):
    w, V = np.linalg.eigh(A + A.T)
    return np.sum(w ** 2) + np.sum(V[:, 0] ** 4)


def singular(A):
    U, s, Vh = np.linalg.svd(A, full_matrices=False)
    return np.sum(s ** 3) + np.sum(U ** 4)


def orthogonal(A):
    Q, R = np.linalg.qr(A)
    return np.sum(Q ** 3) + np.sum(R)


def gp_logdet(A):
    K = A @ A.T + np.eye(4)
    sign, logdet = np.linalg.slogdet(K)
    return sign * logdet ** 2 + np.sum(np.linalg.solve(K, A[:, 0]))


def only_values(A):
    return np.sum(np.linalg.svd(A, compute_uv=False))


CASES = [(eigen, A, "np.linalg.eigh("), (singular, STACK, "np.linalg.svd("),
         (orthogonal, STACK, "np.linalg.qr("), (gp_logdet, A, "np.linalg.slogdet("),
         (only_values, A, "np.linalg.svd(")]


def _compiled(fn, x, monkeypatch, merged):
    def again(x):   # a fresh function: compiled afresh
        return fn(x)
    again.__name__ = fn.__name__
    with monkeypatch.context() as m:
        if not merged:
            m.setattr(passes, "PIPELINE", tuple(p for p in passes.PIPELINE
                                                if p is not merge_factorizations))
        g = ad.grad(fn if merged else again)
        value = g(x)
    return g.source, value


def _calls(source, call):
    """How often the code (not its ``# grad of:`` comments) calls ``call``."""
    return sum(line.count(call) for line in source.splitlines()
               if not line.lstrip().startswith("#"))


@pytest.mark.parametrize("fn, x, call", CASES, ids=[c[0].__name__ for c in CASES])
def test_one_call_per_factorization(fn, x, call, monkeypatch):
    source, got = _compiled(fn, x, monkeypatch, True)
    plain_source, want = _compiled(fn, x, monkeypatch, False)
    assert _calls(source, call) == 1
    if fn is not only_values:
        assert _calls(plain_source, call) > 1
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, numerical_grad(fn, [x], 0), rtol=1e-6, atol=1e-8)


def test_the_hessian_through_a_merged_call():
    eps = 1e-5
    g = ad.grad(eigen)
    want = np.array([(g(A + eps * e) - g(A - eps * e)) / (2 * eps)
                     for e in np.eye(16).reshape(16, 4, 4)]).reshape(4, 4, 4, 4)
    np.testing.assert_allclose(ad.hessian(eigen)(A), want, rtol=1e-5, atol=1e-5)


# ---- reuse_inverses: the adjoint's solve(K.T, g) as inv(K).T @ g where inv(K) is computed -----
def gp_nll(X, y):
    d = X[:, None, :] - X[None, :, :]
    K = np.exp(-0.5 * np.sum(d * d, axis=-1)) + 0.1 * np.eye(X.shape[0])
    alpha = np.linalg.solve(K, y)
    sign, logdet = np.linalg.slogdet(K)
    return 0.5 * y @ alpha + 0.5 * logdet


def inverse_after(A):   # inv(K)'s rule runs before solve's adjoint here: the inverse moves up
    K = A @ np.swapaxes(A, -1, -2) + np.eye(3)
    return np.sum(np.linalg.solve(K, A[..., :1]) ** 2) + np.sum(np.linalg.inv(K))


def no_inverse(A):
    return np.sum(np.linalg.solve(A, A[:, 0]) ** 2)


X6, Y6 = RNG.standard_normal((6, 2)), RNG.standard_normal(6)
STACK3 = RNG.standard_normal((2, 3, 3)) + 2.0 * np.eye(3)


def _without_reuse(fn, args, monkeypatch):
    from adcompiler.passes.inverses import reuse_inverses
    with monkeypatch.context() as m:
        m.setattr(passes, "PIPELINE", tuple(p for p in passes.PIPELINE
                                            if p is not reuse_inverses))
        g = ad.grad(lambda_free(fn), wrt=0)
        value = g(*args)
    return g.source, value


def lambda_free(fn):
    """``fn`` under another name: compiled afresh (not from the decorator's memory)."""
    def fresh(x, *rest):
        return fn(x, *rest)
    return fresh


@pytest.mark.parametrize("fn, args, solves", [(gp_nll, (X6, Y6), 1), (inverse_after, (STACK3,), 1),
                                              (no_inverse, (A,), 2)],
                         ids=["gp", "inverse-after", "no-inverse"])
def test_the_adjoint_solve_reads_the_inverse(fn, args, solves, monkeypatch):
    g = ad.grad(fn, wrt=0)
    got = g(*args)
    assert _calls(g.source, "np.linalg.solve(") == solves
    plain_source, want = _without_reuse(fn, args, monkeypatch)
    assert _calls(plain_source, "np.linalg.solve(") == 2
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got, numerical_grad(fn, list(args), 0), rtol=1e-6, atol=1e-8)


# ---- sum_diagonals: an adjoint's sum(x * I) as the sum of x's diagonal ------------------------
def ridge(w, X, lam):
    A = X.T @ X + lam * np.eye(3)
    return np.sum(np.linalg.solve(A, w) ** 2)


def users_own_trace(A):   # forward code keeps NumPy's own sum of the product
    return np.sum(A * np.eye(4)) ** 2


def test_the_cotangent_of_a_multiple_of_eye_sums_the_diagonal(monkeypatch):
    from adcompiler.passes.traces import sum_diagonals
    w, X = RNG.standard_normal(3), RNG.standard_normal((5, 3))
    g = ad.grad(ridge, wrt=2)
    got = g(w, X, 0.7)
    assert "[diagonal]" in g.source and "* const" not in g.source.split("# grad of")[-1]
    with monkeypatch.context() as m:
        m.setattr(passes, "PIPELINE", tuple(p for p in passes.PIPELINE if p is not sum_diagonals))

        def ridge_again(w, X, lam):
            return ridge(w, X, lam)
        want = ad.grad(ridge_again, wrt=2)(w, X, 0.7)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    np.testing.assert_allclose(got, numerical_grad(ridge, [w, X, 0.7], 2), rtol=1e-6)
    h = ad.grad(users_own_trace)
    np.testing.assert_allclose(h(A), 2 * np.trace(A) * np.eye(4), rtol=1e-14)
