"""Matrix factorizations in compiled code (``np.linalg.cholesky``, ``eigh``, ``svd``, ``qr``,
``pinv``, ``lstsq``, ``matrix_power``, ``np.kron``, ``np.vander``, ``np.polyfit``, SciPy's
``solve_triangular``/``cho_factor``/``cho_solve``): NumPy's values, gradients against finite
differences, Hessians against finite differences of the gradient, forward mode, the tape's
gradient equal to the compiler's, the behaviour at an eigenvalue tie, and located refusals.
The rules themselves are checked one by one in tests/templates (factorization_cases.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from tests.helpers import directional_difference, numerical_grad

scipy_linalg = pytest.importorskip("scipy.linalg")

RNG = np.random.default_rng(7)
X6 = RNG.standard_normal((6, 2))
Y6 = RNG.standard_normal(6)
A3 = RNG.standard_normal((3, 3)) + 2.0 * np.eye(3)
A43 = RNG.standard_normal((4, 3))
A34 = RNG.standard_normal((3, 4))
STACK = RNG.standard_normal((2, 3, 3)) + 2.0 * np.eye(3)


def hessian_by_differences(f, x, eps=1e-5):
    g = ad.grad(f)
    rows = []
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        rows.append((g(up) - g(down)) / (2 * eps))
    return np.array(rows).reshape(x.shape + x.shape)


# ---- a GP negative log likelihood, the standard use of cholesky ---------------------------
def kernel(X, ell):
    d = X[:, None, :] - X[None, :, :]
    return np.exp(-0.5 * np.sum(d * d, axis=-1) / ell ** 2) + 0.1 * np.eye(X.shape[0])


def gp_nll(X, y, ell):
    L = np.linalg.cholesky(kernel(X, ell))
    alpha = scipy_linalg.solve_triangular(L, y, lower=True)
    return 0.5 * np.sum(alpha ** 2) + np.sum(np.log(np.diagonal(L)))


def gp_nll_numpy(X, y, ell):   # the same, with np.linalg.solve (the tape takes it)
    L = np.linalg.cholesky(kernel(X, ell))
    alpha = np.linalg.solve(L, y)
    return 0.5 * np.sum(alpha ** 2) + np.sum(np.log(np.diagonal(L)))


def gp_nll_scipy_upper(X, y, ell):   # SciPy's cholesky: the upper factor by default
    U = scipy_linalg.cholesky(kernel(X, ell))
    alpha = scipy_linalg.solve_triangular(U, y, trans=1)
    return 0.5 * np.sum(alpha ** 2) + np.sum(np.log(np.diagonal(U)))


def gp_nll_cho(X, y, ell):
    c = scipy_linalg.cho_factor(kernel(X, ell))
    return 0.5 * np.sum(y * scipy_linalg.cho_solve(c, y)) + np.sum(np.log(np.diagonal(c[0])))


@pytest.mark.parametrize("f", [gp_nll, gp_nll_numpy, gp_nll_cho, gp_nll_scipy_upper])
def test_gp_likelihood_gradient(f):
    np.testing.assert_allclose(f(X6, Y6, 1.3), gp_nll(X6, Y6, 1.3), rtol=1e-12)
    gx, gl = ad.grad(f, wrt=(0, 2))(X6, Y6, 1.3)
    np.testing.assert_allclose(gx, numerical_grad(f, [X6, Y6, 1.3], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gl, numerical_grad(f, [X6, Y6, 1.3], 2), rtol=1e-6, atol=1e-8)


def test_gp_likelihood_hessian():
    np.testing.assert_allclose(ad.hessian(gp_nll, wrt=0)(X6, Y6, 1.3),
                               _gp_hessian_by_differences(), rtol=1e-5, atol=1e-6)


def _gp_hessian_by_differences(eps=1e-5):
    g = ad.grad(gp_nll, wrt=0)
    out = np.zeros(X6.shape + X6.shape)
    for i in np.ndindex(X6.shape):
        up, down = X6.copy(), X6.copy()
        up[i] += eps
        down[i] -= eps
        out[i] = (g(up, Y6, 1.3) - g(down, Y6, 1.3)) / (2 * eps)
    return out


def test_the_tape_gives_the_compiled_gp_gradient():
    np.testing.assert_allclose(tape.dynamic_grad(gp_nll_numpy)(X6, Y6, 1.3),
                               ad.grad(gp_nll_numpy)(X6, Y6, 1.3), rtol=1e-12, atol=1e-14)


def test_scipy_is_imported_only_by_code_that_calls_it():
    g = ad.grad(gp_nll)
    g(X6, Y6, 1.3)
    assert "import scipy.linalg" in g.source
    h = ad.grad(eigen_loss)
    h(A3)
    assert "scipy" not in h.source


def test_without_scipy_the_rules_solve_with_numpy(monkeypatch):
    from adcompiler.templates import factorizations
    want = ad.grad(cholesky_loss)(STACK)
    monkeypatch.setattr(factorizations, "_SCIPY", [False, False])

    def cholesky_loss_again(A):   # a new function: compiled afresh
        return cholesky_loss(A)
    g = ad.grad(cholesky_loss_again)
    np.testing.assert_allclose(g(STACK), want, rtol=1e-10, atol=1e-12)
    assert "scipy" not in g.source


def test_an_old_scipy_solves_stacks_with_numpy(monkeypatch):
    """SciPy before 1.15 solves one triangular matrix at a time: stacks go to np.linalg.solve,
    single matrices still to SciPy."""
    from adcompiler.templates import factorizations
    want = ad.grad(cholesky_loss)(STACK)
    monkeypatch.setattr(factorizations, "_SCIPY", [True, False])

    def stacked(A):
        return cholesky_loss(A)

    def single(A):
        return cholesky_loss(A)
    g, h = ad.grad(stacked), ad.grad(single)
    np.testing.assert_allclose(g(STACK), want, rtol=1e-10, atol=1e-12)
    h(A3)
    assert "scipy" not in g.source and "scipy.linalg.solve_triangular" in h.source


# ---- cholesky, batched, forward mode --------------------------------------------------------
def spd(A):
    return A @ np.swapaxes(A, -1, -2) + 3.0 * np.eye(A.shape[-1])


def cholesky_loss(A):
    L = np.linalg.cholesky(spd(A))
    return np.sum(L * L * L) + np.sum(np.linalg.cholesky(spd(A), upper=True)[..., 0, :])


@pytest.mark.parametrize("x", [A3, STACK], ids=["matrix", "stack"])
def test_cholesky_gradient_and_tape(x):
    g = ad.grad(cholesky_loss)(x)
    np.testing.assert_allclose(g, numerical_grad(cholesky_loss, [x], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tape.dynamic_grad(cholesky_loss)(x), g, rtol=1e-12, atol=1e-14)


def test_cholesky_reads_the_lower_triangle_only():
    def first_column(K):
        return np.sum(np.linalg.cholesky(K)[:, 0] * np.arange(1.0, 4.0))
    K = spd(A3)
    g = ad.grad(first_column)(K)
    assert np.all(np.triu(g, 1) == 0.0)
    np.testing.assert_allclose(g, numerical_grad(first_column, [K], 0), rtol=1e-6, atol=1e-8)


def test_cholesky_forward_mode():
    dx = RNG.standard_normal(STACK.shape)
    value, t = ad.jvp(cholesky_loss)(STACK, tangents=dx)
    np.testing.assert_allclose(value, cholesky_loss(STACK), rtol=1e-12)
    np.testing.assert_allclose(t, directional_difference(cholesky_loss, [STACK], [dx]),
                               rtol=1e-6, atol=1e-8)


def test_cholesky_hessian():
    np.testing.assert_allclose(ad.hessian(cholesky_loss)(A3),
                               hessian_by_differences(cholesky_loss, A3), rtol=1e-5, atol=1e-6)


def triangular_loss(A, B):
    T = np.tril(A) + 3.0 * np.eye(3)
    x = scipy_linalg.solve_triangular(T, B, lower=True, trans="T")
    y = scipy_linalg.solve_triangular(T.T, B[:, 0], unit_diagonal=True)
    return np.sum(x ** 2) + np.sum(y)


def test_solve_triangular_options():
    B = RNG.standard_normal((3, 2))
    for argnum in (0, 1):
        np.testing.assert_allclose(ad.grad(triangular_loss, wrt=argnum)(A3, B),
                                   numerical_grad(triangular_loss, [A3, B], argnum),
                                   rtol=1e-6, atol=1e-8)


# ---- eigh ------------------------------------------------------------------------------------
def eigen_loss(A):
    S = A + A.T
    w, V = np.linalg.eigh(S)
    # sign-invariant in each eigenvector
    return np.sum(w * np.arange(1.0, 4.0)) + np.sum(V ** 4) + np.sum(np.linalg.eigvalsh(
        S, UPLO="U") ** 2)


def eigen_stack_loss(A):
    w, V = np.linalg.eigh(A @ np.swapaxes(A, -1, -2) + np.eye(3))
    return np.sum(np.sqrt(w)) + np.sum((V[..., 0] * V[..., 1]) ** 2)


@pytest.mark.parametrize("f, x", [(eigen_loss, A3), (eigen_stack_loss, STACK)],
                         ids=["matrix", "stack"])
def test_eigh_gradient_forward_and_tape(f, x):
    g = ad.grad(f)(x)
    np.testing.assert_allclose(g, numerical_grad(f, [x], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tape.dynamic_grad(f)(x), g, rtol=1e-10, atol=1e-12)
    dx = RNG.standard_normal(x.shape)
    _, t = ad.jvp(f)(x, tangents=dx)
    np.testing.assert_allclose(t, np.sum(g * dx), rtol=1e-10)


def test_eigh_hessian():
    np.testing.assert_allclose(ad.hessian(eigen_loss)(A3),
                               hessian_by_differences(eigen_loss, A3), rtol=1e-5, atol=1e-5)


def eigenvector_loss(S):
    return np.sum(np.linalg.eigh(S)[1][:, 0] ** 2 * np.arange(3.0))


def eigenvalue_loss(S):
    return np.sum(np.linalg.eigh(S).eigenvalues * np.arange(3.0))


def test_at_a_tie_the_eigenvector_gradient_is_not_finite_and_warns():
    """A repeated eigenvalue: the eigenvector rule divides by w_j - w_i = 0, NumPy warns and the
    gradient holds inf or NaN; the eigenvalues' own gradient stays finite (V diag(g) V^T)."""
    tie = np.diag([1.0, 2.0, 2.0])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        g = ad.grad(eigenvector_loss)(tie)
    assert not np.all(np.isfinite(g))
    assert any(issubclass(w.category, RuntimeWarning) for w in seen)
    assert np.all(np.isfinite(ad.grad(eigenvalue_loss)(tie)))


# ---- svd and the norms that need it --------------------------------------------------------
def svd_loss(A):
    U, s, Vh = np.linalg.svd(A, full_matrices=False)
    return (np.sum(s ** 3) + np.sum(U ** 4) + np.sum(Vh ** 4)
            + np.sum(np.linalg.svd(A, compute_uv=False)))


def spectral_and_condition(A):
    return np.sum(np.linalg.norm(A, 2, axis=(-2, -1)) + np.linalg.norm(A, "nuc", axis=(-1, -2))
                  ** 2 + np.linalg.cond(A) + np.linalg.cond(A, -2))


@pytest.mark.parametrize("f", [svd_loss, spectral_and_condition])
@pytest.mark.parametrize("x", [A43, A34, A3, STACK], ids=["tall", "wide", "square", "stack"])
def test_svd_gradient_and_tape(f, x):
    g = ad.grad(f)(x)
    np.testing.assert_allclose(g, numerical_grad(f, [x], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tape.dynamic_grad(f)(x), g, rtol=1e-10, atol=1e-12)


def test_svd_hessian():
    np.testing.assert_allclose(ad.hessian(svd_loss)(A43),
                               hessian_by_differences(svd_loss, A43), rtol=1e-5, atol=1e-5)


def svd_full(A):
    return np.sum(np.linalg.svd(A)[0])


def test_full_matrices_of_a_non_square_matrix_is_refused_where_called():
    with pytest.raises(ad.CompileError) as err:
        ad.grad(svd_full)(A43)
    assert "full_matrices=True" in err.value.message
    assert "full_matrices=False" in err.value.hint
    assert "test_factorizations.py" in str(err.value)
    np.testing.assert_allclose(ad.grad(svd_full)(A3), numerical_grad(svd_full, [A3], 0),
                               rtol=1e-6, atol=1e-8)   # square: the same as thin


# ---- qr, pinv, lstsq, polyfit ---------------------------------------------------------------
def qr_loss(A):
    Q, R = np.linalg.qr(A)
    return np.sum(Q * Q * Q) + np.sum(R ** 2 * np.arange(R.shape[-1])) + np.sum(
        np.linalg.qr(A, mode="r"))


def pinv_loss(A):
    return np.sum(np.linalg.pinv(A) ** 2)


def lstsq_loss(A):
    x = np.linalg.lstsq(A, A[:, 0] ** 2 + 1.0, rcond=None)[0]
    return np.sum(x ** 2)


@pytest.mark.parametrize("f, x", [(qr_loss, A43), (qr_loss, STACK), (pinv_loss, A43),
                                  (pinv_loss, A34), (pinv_loss, STACK), (lstsq_loss, A43)],
                         ids=["qr-tall", "qr-stack", "pinv-tall", "pinv-wide", "pinv-stack",
                              "lstsq"])
def test_qr_pinv_lstsq_gradient_and_tape(f, x):
    g = ad.grad(f)(x)
    np.testing.assert_allclose(g, numerical_grad(f, [x], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tape.dynamic_grad(f)(x), g, rtol=1e-10, atol=1e-12)


def qr_wide(A):
    return np.sum(np.linalg.qr(A)[1])


def lstsq_residuals(A):
    x, residuals, rank, s = np.linalg.lstsq(A, A[:, 0], rcond=None)
    return np.sum(x) + residuals[0]


@pytest.mark.parametrize("f, message", [(qr_wide, "of a wide 3x4 matrix"),
                                        (lstsq_residuals, "residuals are not computed")])
def test_refusals_are_located(f, message):
    with pytest.raises(ad.CompileError) as err:
        ad.grad(f)(A34 if f is qr_wide else A43)
    assert message in str(err.value)
    assert "test_factorizations.py" in str(err.value)


def polyfit_loss(y, x):
    c = np.polyfit(x, y, 2)
    return np.sum(c ** 2) + np.sum(np.vander(y, 3, increasing=True) ** 2)


def test_polyfit_and_vander():
    x, y = np.linspace(0.0, 1.0, 7), RNG.standard_normal(7)
    np.testing.assert_allclose(ad.value_and_grad(polyfit_loss)(y, x)[0], polyfit_loss(y, x),
                               rtol=1e-13)
    g = ad.grad(polyfit_loss)(y, x)
    np.testing.assert_allclose(g, numerical_grad(polyfit_loss, [y, x], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ad.grad(polyfit_loss, wrt=1)(y, x),
                               numerical_grad(polyfit_loss, [y, x], 1), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(tape.dynamic_grad(polyfit_loss)(y, x), g, rtol=1e-10)


# ---- compositions of products ---------------------------------------------------------------
def powers(A):
    return (np.sum(np.linalg.matrix_power(A, 5)) + np.sum(np.linalg.matrix_power(A, -2))
            + np.sum(np.linalg.matrix_power(A, 0)) + np.sum(np.kron(A, A[:2, :1]))
            + np.sum(np.kron(A[0], A)))


def test_matrix_power_and_kron():
    np.testing.assert_allclose(ad.value_and_grad(powers)(A3)[0], powers(A3), rtol=1e-14)
    g = ad.grad(powers)(A3)
    np.testing.assert_allclose(g, numerical_grad(powers, [A3], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tape.dynamic_grad(powers)(A3), g, rtol=1e-12)


def products_and_array_api_norms(A, B, v):
    return (np.sum(np.linalg.multi_dot([A, B, A.T, B])) + np.linalg.multi_dot([v, A, B, v])
            + np.sum(np.linalg.multi_dot([v, A, B])) + np.sum(np.linalg.svdvals(A) ** 2)
            + np.linalg.matrix_norm(A, ord=2) + np.sum(np.linalg.vector_norm(B, axis=0))
            + np.linalg.vector_norm(A) + np.sum(np.linalg.vector_norm(
                A, axis=(0, 1), keepdims=True, ord=3)))


@pytest.mark.skipif(not hasattr(np.linalg, "vector_norm"), reason="NumPy 2's functions")
def test_multi_dot_svdvals_matrix_and_vector_norms():
    A, B, v = A3, RNG.standard_normal((3, 3)), RNG.standard_normal(3)
    value, _ = ad.value_and_grad(products_and_array_api_norms)(A, B, v)
    assert value == products_and_array_api_norms(A, B, v)   # NumPy's products, in its order
    for argnum in range(3):
        g = ad.grad(products_and_array_api_norms, wrt=argnum)(A, B, v)
        np.testing.assert_allclose(g, numerical_grad(products_and_array_api_norms, [A, B, v],
                                                     argnum), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(
            tape.dynamic_grad(products_and_array_api_norms, wrt=argnum)(A, B, v), g,
            rtol=1e-12, atol=1e-14)


def triangular_cubed(A):
    return np.sum(scipy_linalg.solve_triangular(A + 3.0 * np.eye(3), A[:, 0], lower=True) ** 3)


def products_squared(A):
    return (np.sum(np.kron(A, A) ** 2) + np.sum(np.polyfit(A[0], A[1], 1) ** 2)
            + np.sum(np.linalg.matrix_power(A, 3) ** 2))


@pytest.mark.parametrize("f, x", [(qr_loss, A43), (pinv_loss, A43), (triangular_cubed, A3),
                                  (products_squared, A3)],
                         ids=["qr", "pinv", "solve_triangular", "kron-polyfit-power"])
def test_second_order(f, x):
    want = hessian_by_differences(f, x)
    np.testing.assert_allclose(ad.hessian(f)(x), want, rtol=1e-6, atol=1e-6 * np.max(abs(want)))
