"""The hint for reading a slice whose length changes in a loop: zeroing the entries outside it
is right only where they go straight into a sum; for other terms it points at masking the terms.
Both rewrites it describes compile and give the gradient of the original program."""

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import numerical_grad


def pair_energy(pos):
    E = 0.0
    for i in range(pos.shape[0] - 1):
        d = np.sqrt(np.sum((pos[i + 1:] - pos[i]) ** 2, axis=1))
        E = E + np.sum(d ** -6)
    return E


def pair_energy_masked_terms(pos):   # the hint's second form
    E = 0.0
    n = pos.shape[0]
    for i in range(n - 1):
        m = np.arange(n) >= i + 1
        q = np.where(m[:, None], pos, pos[i] + 1.0)   # outside: a distance of sqrt(2), finite
        d = np.sqrt(np.sum((q - pos[i]) ** 2, axis=1))
        E = E + np.sum(np.where(m, d ** -6, 0.0))
    return E


def tail_dot(w, x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s = s + w[i] * np.dot(x[i + 1:], x[i + 1:])
    return s


def tail_dot_masked(w, x):           # the hint's first form: straight into a dot product
    s = 0.0
    for i in range(x.shape[0] - 1):
        y = np.where(np.arange(x.shape[0]) >= i + 1, x, 0.0)
        s = s + w[i] * np.dot(y, y)
    return s


POS = np.array([[0.0, 0.0], [1.0, 0.1], [0.2, 1.3], [1.4, 1.2]]) + 0.5


def test_the_hint_says_when_zeroing_entries_is_right():
    many = np.random.default_rng(3).normal(size=(1002, 2))   # a compiled loop: the refusal
    with pytest.raises(ad.CompileError) as err:
        ad.grad(pair_energy)(many)
    hint = err.value.hint
    assert "`np.where((np.arange(pos.shape[0]) >= i + 1)[:, None], pos, 0.0)`" in hint
    assert "straight into a sum or a dot product" in hint
    assert "`np.where(np.arange(pos.shape[0]) >= i + 1, <terms along that axis>, 0.0)`" in hint


def test_masking_the_terms_gives_the_original_gradient():
    np.testing.assert_allclose(pair_energy_masked_terms(POS), pair_energy(POS), rtol=1e-14)
    g = ad.grad(pair_energy_masked_terms)(POS)
    np.testing.assert_allclose(g, numerical_grad(pair_energy, [POS], 0), rtol=1e-6)
    assert np.all(np.isfinite(g))


def test_zeroing_the_entries_of_a_dot_gives_the_original_gradient():
    w, x = np.array([0.5, -1.0, 2.0]), np.array([1.0, -2.0, 0.5, 3.0])
    gw, gx = ad.grad(tail_dot_masked, wrt=(0, 1))(w, x)
    np.testing.assert_allclose(gw, numerical_grad(tail_dot, [w, x], 0), rtol=1e-6)
    np.testing.assert_allclose(gx, numerical_grad(tail_dot, [w, x], 1), rtol=1e-6)


def test_within_the_unrolling_limit_the_loop_compiles_as_written():
    g = ad.grad(pair_energy)(POS)
    np.testing.assert_allclose(g, numerical_grad(pair_energy, [POS], 0), rtol=1e-6)
