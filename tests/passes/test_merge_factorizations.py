"""The factorization-merging pass (adcompiler/passes/factorizations.py): the results of one
``eigh``, ``svd``, ``qr`` or ``slogdet`` of the same matrix read from one call. Each case counts
the calls in the generated source and checks the gradient against the code compiled without
the pass (bit for bit: the same LAPACK call) and against finite differences."""

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
