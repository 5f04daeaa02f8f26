"""Matrix products with sums of outer products and diagonal matrices, as vector products
(passes/low_rank_products.py): the adjoint's ``L.T @ dL`` of a GP likelihood (``dL`` a
log-determinant's diagonal minus the solves' outer products) and products with the cotangent
of ``u @ (A @ B) @ v`` leave no n x n product; the gradients are the plain code's and finite
differences', below and above the buffer planner's threshold (32 KiB: n >= 64), with SciPy
and without it (the solves then stay NumPy's, their outer products the same)."""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import passes
from adcompiler.backends.check_modes import unoptimised
from adcompiler.ir import Aval, walk
from adcompiler.passes import triangular_solves
from adcompiler.pipeline import gradient_graph
from adcompiler.templates import factorizations as factorization_rules
from tests.helpers import numerical_grad


def gp_nll(theta, X, y):
    n = X.shape[0]
    sq = np.sum(X * X, axis=1)
    d2 = sq[:, None] + sq[None, :] - 2.0 * (X @ X.T)
    K = np.exp(2.0 * theta[1] - 0.5 * d2 * np.exp(-2.0 * theta[0]))
    K = K + np.exp(2.0 * theta[2]) * np.eye(n)
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * (y @ alpha) + np.sum(np.log(np.diag(L)))


def bilinear(A, B, u, v, w, z):
    """Cotangents of ``A @ B`` that are sums of outer products (one scaled, one negated)."""
    C = A @ B
    return u @ C @ v - 2.5 * (w @ C @ z) + np.sum(np.tanh(A))


def _gp_inputs(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = np.sin(X.sum(axis=1)) + 0.1 * rng.standard_normal(n)
    return np.array([0.1, -0.2, -2.0]) + 0.1 * rng.standard_normal(3), X, y


def _square_products(fn, args, wrt, drop=()):
    """The adjoint's products of two matrices in ``fn``'s optimised gradient graph."""
    names = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    pipeline = passes.PIPELINE
    passes.PIPELINE = tuple(p for p in pipeline if p not in drop)
    try:
        graph, _ = gradient_graph(fn, {k: Aval.of(a) for k, a in zip(names, args)},
                                  tuple(names[i] for i in wrt), "grad")
    finally:
        passes.PIPELINE = pipeline
    return sum(1 for n in walk(graph.nodes) if n.prim == "matmul" and n.phase == "adjoint"
               and all(getattr(x.aval, "ndim", 0) == 2 for x in n.inputs))


def _check_against_plain(fn, args, wrt, rtol):
    grads = ad.grad(fn, wrt=wrt)(*args)
    grads = grads if isinstance(grads, tuple) else (grads,)
    with unoptimised():
        want = ad.grad(fn, wrt=wrt)(*args)
    want = want if isinstance(want, tuple) else (want,)
    for got, ref in zip(grads, want):
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=1e-10)
    return grads


@pytest.mark.parametrize("n,seed", [(8, 0), (80, 1), (150, 2)])
def test_the_gp_gradient_has_no_product_of_n_by_n_matrices(n, seed):
    args = _gp_inputs(n, seed)
    assert _square_products(gp_nll, args, (0,)) == 0
    assert _square_products(gp_nll, args, (0,), drop=(passes.expand_low_rank_products,)) == 1
    (grad,) = _check_against_plain(gp_nll, args, (0,), rtol=1e-9)
    g = ad.grad(gp_nll, wrt=(0,))
    g(*args)
    code = "\n".join(line.split("#")[0] for line in g.source.splitlines())
    # L^-1 y (alpha = L^-T L^-1 y is no longer read: L.T @ alpha is L^-1 y, and grad returns no
    # value), one adjoint vector solve (L.T @ solve(L.T, g) is g: the other went), the
    # Cholesky rule's two n x n solves
    assert code.count("solve_triangular(") == 4
    np.testing.assert_allclose(grad, numerical_grad(gp_nll, list(args), 0), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("n,seed", [(8, 3), (70, 4)])
def test_without_scipy_the_same_products_go(monkeypatch, n, seed):
    monkeypatch.setattr(triangular_solves, "has_scipy", lambda batched=False: False)
    monkeypatch.setattr(factorization_rules, "has_scipy", lambda batched=False: False)
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    args = _gp_inputs(n, seed)
    g = ad.grad(gp_nll, wrt=(0,))
    g(*args)
    assert "scipy" not in g.source
    assert _square_products(gp_nll, args, (0,)) == 0
    _check_against_plain(gp_nll, args, (0,), rtol=1e-9)


@pytest.mark.parametrize("shapes,seed", [((6, 5, 4), 5), ((90, 70, 80), 6), ((3, 100, 2), 7)])
def test_products_with_outer_cotangents_on_either_side(shapes, seed):
    m, k, p = shapes
    rng = np.random.default_rng(seed)
    args = (rng.standard_normal((m, k)), rng.standard_normal((k, p)), rng.standard_normal(m),
            rng.standard_normal(p), rng.standard_normal(m), rng.standard_normal(p))
    before = _square_products(bilinear, args, (0, 1), drop=(passes.expand_low_rank_products,))
    assert before == 2 and _square_products(bilinear, args, (0, 1)) == 0
    grads = _check_against_plain(bilinear, args, (0, 1), rtol=1e-10)
    for i in (0, 1):
        np.testing.assert_allclose(grads[i], numerical_grad(bilinear, list(args), i),
                                   rtol=1e-6, atol=1e-6)


def traced(A, B, u, v):
    """A diagonal (the trace's cotangent) beside an outer product, on either side of A @ B."""
    C = A @ B
    return u @ C @ v + np.trace(C) - np.sum(np.sin(B))


def general(A, B, u, v, M):
    """A general matrix term in the cotangent: the products stay."""
    C = A @ B
    return u @ C @ v + np.sum(C * M)


@pytest.mark.parametrize("n,k,seed", [(5, 3, 8), (90, 40, 9)])
def test_a_diagonal_beside_outer_products_and_a_general_term(n, k, seed):
    rng = np.random.default_rng(seed)
    A, B = rng.standard_normal((n, k)), rng.standard_normal((k, n))
    u, v, M = rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal((n, n))
    assert _square_products(traced, (A, B, u, v), (0, 1),
                            drop=(passes.expand_low_rank_products,)) == 2
    assert _square_products(traced, (A, B, u, v), (0, 1)) == 0
    grads = _check_against_plain(traced, (A, B, u, v), (0, 1), rtol=1e-10)
    np.testing.assert_allclose(grads[0], numerical_grad(traced, [A, B, u, v], 0), rtol=1e-6,
                               atol=1e-6)
    assert _square_products(general, (A, B, u, v, M), (0, 1)) == 2
    _check_against_plain(general, (A, B, u, v, M), (0, 1), rtol=1e-10)


def test_adjoint_triangular_solves_skip_scipys_finite_check():
    """The adjoint's solves read forward values already computed: no check_finite pass over
    the factor per call; the user's own (forward) solves keep SciPy's default check."""
    args = _gp_inputs(70, 10)
    g = ad.grad(gp_nll, wrt=(0,))
    g(*args)
    lines = [line.split("#")[0] for line in g.source.splitlines() if "solve_triangular(" in line]
    forward = [line for line in lines if "(L, y," in line]
    assert forward and all("check_finite" not in line for line in forward)
    assert sum(line.count("check_finite=False") for line in lines) == 3
