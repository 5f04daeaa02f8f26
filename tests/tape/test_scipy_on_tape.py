"""SciPy's Python-level functions on the tape (tape/scipy_functions.py): logsumexp, softmax,
log_softmax and scipy.stats.norm, however the user imports them, record the compiler's
compositions, so dynamic_grad's gradient is the compiler's."""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape

scipy = pytest.importorskip("scipy")
import scipy.special as sp  # noqa: E402
import scipy.stats  # noqa: E402
from scipy.special import logsumexp  # noqa: E402
from scipy.stats import norm  # noqa: E402


def reductions(x):
    return np.sum(sp.logsumexp(x, axis=1) + logsumexp(x * 2.0, b=0.5))


def normalised(x):
    return np.sum(sp.softmax(x, axis=1) ** 2) + np.sum(sp.log_softmax(x, axis=0)[0])


def normal(x):
    return (np.sum(norm.logpdf(x, loc=0.5, scale=2.0)) + np.sum(norm(1.0, 3.0).logcdf(x))
            + np.sum(scipy.stats.norm.cdf(x)))


def ufuncs(x):
    return np.sum(scipy.special.erf(x) * sp.expit(x))


X = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])


@pytest.mark.parametrize("f", [reductions, normalised, normal, ufuncs],
                         ids=lambda f: f.__name__)
def test_the_tape_records_scipys_functions_as_the_compiler_does(f):
    np.testing.assert_allclose(tape.dynamic_grad(f)(X), ad.grad(f)(X), rtol=1e-12, atol=1e-15)


def test_without_tensors_scipy_answers():
    from adcompiler.tape import scipy_functions
    replaced = scipy_functions.replacements()
    assert replaced[id(sp.logsumexp)](X, axis=1).tolist() == sp.logsumexp(X, axis=1).tolist()
    assert replaced[id(norm)](0.0, 2.0).logpdf(1.0) == norm(0.0, 2.0).logpdf(1.0)
    assert sp.logsumexp is logsumexp                  # SciPy's own module is untouched


import scipy.linalg  # noqa: E402
from scipy.linalg import cho_factor, cho_solve, solve_triangular  # noqa: E402


def gp_with_scipy(log_sn2, K0, y):
    K = K0 + np.exp(log_sn2) * np.eye(K0.shape[0])
    L = scipy.linalg.cholesky(K, lower=True)
    alpha = solve_triangular(L.T, solve_triangular(L, y, lower=True), lower=False)
    beta = cho_solve(cho_factor(K), y)
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L))) + 0.1 * np.sum(beta ** 2)


def test_scipy_linalg_on_the_tape_is_the_compilers():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(5, 5))
    K0, y = A @ A.T + np.eye(5), rng.normal(size=5)
    np.testing.assert_allclose(tape.dynamic_grad(gp_with_scipy)(-1.0, K0, y),
                               ad.grad(gp_with_scipy)(-1.0, K0, y), rtol=1e-10)
