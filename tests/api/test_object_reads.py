"""Attributes of objects the code reaches without their being arguments are checked before
each call: a global or closure object (``CFG.c``, ``lambda z: z * h.c``) and the instance of a
bound method passed as a static argument (``g(x, m.act)`` reading ``self.c``). After ``m.c =
9`` the gradient stayed [8, 16] for [162, 324]."""

import numpy as np
import pytest

import adcompiler as ad


class Config:
    def __init__(self, c):
        self.c = c

    def act(self, z):
        return self.c * z * z


CFG = Config(2.0)


def with_global(x):
    return np.sum(CFG.c * x * x)


def apply(x, act):
    return np.sum(act(x))


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    yield
    CFG.c = 2.0


X = np.array([1.0, 2.0])


def test_a_global_objects_attribute():
    g = ad.grad(with_global)
    np.testing.assert_allclose(g(X), 4.0 * X)
    CFG.c = 9.0
    np.testing.assert_allclose(g(X), 18.0 * X)


def test_a_bound_method_and_a_closure_over_an_object():
    g = ad.grad(apply)
    m = Config(2.0)
    np.testing.assert_allclose(g(X, m.act), 4.0 * X)
    m.c = 9.0
    np.testing.assert_allclose(g(X, m.act), 18.0 * X)
    h = Config(2.0)
    f = lambda z: z * h.c  # noqa: E731
    np.testing.assert_allclose(g(X, f), [2.0, 2.0])
    h.c = 7.0
    np.testing.assert_allclose(g(X, f), [7.0, 7.0])
