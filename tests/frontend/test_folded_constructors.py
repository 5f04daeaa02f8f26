"""np.tril/np.triu read their array when the code runs (np.where of a mask made while
compiling), so a traced array has a gradient and an array changed in place is seen; the other
constructors computed while compiling refuse an array that can change after compiling."""

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import assert_matches_numerical

L_RAW = np.array([[1.0, 5.0], [2.0, 3.0]])
V = np.array([1.0, 2.0])
M = np.array([[1.0, 5.0], [2.0, 3.0]])


def lower_quadratic(x):
    L = np.tril(L_RAW)
    return np.sum((L @ x) ** 2)


class Model:
    def __init__(self):
        self.L_raw = np.array([[1.0, 5.0], [2.0, 3.0]])

    @ad.grad(wrt="x")
    def loss(self, x):
        return np.sum((np.triu(self.L_raw, 1) @ x) ** 2 + np.tril(self.L_raw, -1) @ x)


def causal(q):
    T = q.shape[0]
    s = np.where(np.tril(np.ones((T, T))) > 0, q @ q.T, -1e9)
    return np.sum(np.tanh(s))


def triangles(x):
    return np.sum(np.triu(x, 1) ** 2 + np.tril(x, -1) * x)


def diag_of_vector(x):
    return np.sum(np.diag(V) @ x)


def diag_of_matrix(x):
    return np.sum(np.diag(M) * x)


def test_module_array_changed_in_place_is_seen():
    g = ad.value_and_grad(lower_quadratic)
    x = np.array([1.0, -1.0])
    before = L_RAW.copy()
    try:
        for step in range(3):
            L = np.tril(L_RAW)
            value, dx = g(x)
            assert value == pytest.approx(np.sum((L @ x) ** 2), rel=1e-14)
            np.testing.assert_allclose(dx, 2 * L.T @ (L @ x), rtol=1e-14)
            L_RAW[...] -= 0.5 * (step + 1)
    finally:
        L_RAW[...] = before


def test_attribute_changed_in_place_is_seen():
    m, x = Model(), np.array([0.5, -1.5])
    for _ in range(2):
        U, L = np.triu(m.L_raw, 1), np.tril(m.L_raw, -1)
        np.testing.assert_allclose(m.loss(x), 2 * U.T @ (U @ x) + L.sum(axis=0), rtol=1e-14)
        m.L_raw -= 0.75


def test_traced_triangles_have_gradients():
    rng = np.random.default_rng(3)
    q, x = rng.standard_normal((4, 3)), rng.standard_normal((3, 3))
    assert_matches_numerical(causal, (q,), (0,), (ad.grad(causal)(q),))
    g = ad.grad(triangles)(x)
    np.testing.assert_allclose(g, 2 * np.triu(x, 1) + 2 * np.tril(x, -1), rtol=1e-14)


def test_view_of_a_module_array_follows_it():
    g, x = ad.grad(diag_of_matrix), np.array([1.0, -1.0])
    np.testing.assert_array_equal(g(x), [1.0, 3.0])
    M[1, 1] = 7.0
    try:
        np.testing.assert_array_equal(g(x), [1.0, 7.0])
    finally:
        M[1, 1] = 3.0


def test_copy_of_a_module_array_is_refused_with_its_line():
    with pytest.raises(ad.CompileError) as err:
        ad.grad(diag_of_vector)(np.ones(2))
    text = str(err.value)
    assert "test_folded_constructors.py:41:" in text and "np.diag(V)" in text and "^" in text
    assert "can change after compiling" in text and "pass it in as an argument" in text
