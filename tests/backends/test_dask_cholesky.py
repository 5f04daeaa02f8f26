"""Cholesky factors on Dask arrays, compiled and on the tape.

``dask.array.linalg.cholesky`` returns the *upper* factor unless given ``lower=True``, and
NumPy's ``np.linalg.cholesky`` on a Dask array (NEP 18) dispatches to it: a gradient through a
factor was silently wrong on ``backend="dask"`` (the GP likelihood's by a factor of 1000) and
the tape refused the rule's transposed triangular solves. Both now give NumPy's gradient, with
inputs in uneven chunks and as NumPy arrays.
"""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.tape import dynamic_grad
from benchmarks import workloads

da = pytest.importorskip("dask.array")


def logdet_and_mix(A):
    L = np.linalg.cholesky(A @ A.T + 3.0 * np.eye(A.shape[0]))
    return np.sum(np.log(np.diag(L))) + np.sum(L * L[::-1])


def lazy(x, chunks):
    return da.from_array(x, chunks=chunks)


def test_the_gp_gradient_on_dask_is_numpys():
    theta, X, y = workloads.make_gp(n=40, d=2)
    want = ad.grad(workloads.gp_nll, wrt=("theta",))(theta, X, y)[0]
    g = ad.grad(workloads.gp_nll, wrt=("theta",), backend="dask")
    (eager,) = g(theta, X, y)
    (chunked,) = g(theta, lazy(X, (10, 2)), lazy(y, 10))   # Dask factors square chunks only
    np.testing.assert_allclose(eager, want, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(chunked), want, rtol=1e-9)
    source = g.specialize(theta, X, y).source
    assert "da.linalg.cholesky(K_1, lower=True)" in source
    assert "scipy.linalg.solve_triangular" not in source


@pytest.mark.parametrize("chunks", [6, 4])
def test_a_factor_used_whole_on_dask_compiled_and_on_the_tape(chunks):
    A = np.random.default_rng(1).standard_normal((12, 12))
    want = ad.grad(logdet_and_mix)(A)
    compiled = ad.grad(logdet_and_mix, backend="dask")(lazy(A, chunks))
    taped = dynamic_grad(logdet_and_mix)(lazy(A, chunks))
    np.testing.assert_allclose(np.asarray(compiled), want, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(np.asarray(taped), want, rtol=1e-10, atol=1e-13)
