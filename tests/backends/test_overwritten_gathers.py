"""Gathers of rows overwritten by the planned ufunc that reads them last (backends/gathers.py):
``t2 = np.take(V, iv, axis=0)`` then ``dt5 = np.multiply(t3, t2, out=t2)``, no pool buffer of
the gather's size; the values are the unoptimised gradient's, across calls, and the caller's
arrays are never written."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends.check_modes import unoptimised


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")


def factors(U, V, iu, iv, r):
    pred = np.sum(U[iu] * V[iv], axis=1)
    e = pred - r
    return np.sum(e * e) + 0.01 * (np.sum(U * U) + np.sum(V * V))


def embedding(W, idx, y):
    """A 2-D index array: the gathered (batch, seq, width) rows times a dying cotangent."""
    h = W[idx]
    return np.sum((np.sum(h * h, axis=2) - y) ** 2)


def _args_factors(rng, n=6000, m=300, w=16):
    return (rng.standard_normal((m, w)), rng.standard_normal((m, w)), rng.integers(-m, m, n),
            rng.integers(0, m, n), rng.standard_normal(n))


def _args_embedding(rng):
    return (rng.standard_normal((400, 16)), rng.integers(-400, 400, (30, 40)),
            rng.standard_normal((30, 40)))


@pytest.mark.parametrize("f, make, wrt", [(factors, _args_factors, (0, 1)),
                                          (embedding, _args_embedding, (0,))])
def test_values_across_calls(f, make, wrt):
    rng = np.random.default_rng(11)
    first_args, second_args = make(rng), make(rng)
    kept = [np.array(a, copy=True) for a in first_args]
    g = ad.grad(f, wrt=wrt)
    first = g(*first_args)
    held = [np.array(a, copy=True) for a in first]
    second = g(*second_args)
    with unoptimised():
        want = [ad.grad(f, wrt=wrt)(*a) for a in (first_args, second_args)]
    for got, exp in zip((first, second), want):
        for a, b in zip(got, exp):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.max(np.abs(b)))
    for a, b in zip(first, held):
        np.testing.assert_array_equal(a, b)    # the second call left the first result alone
    for a, b in zip(first_args, kept):
        np.testing.assert_array_equal(a, b)    # no argument written through a gather


def test_factorization_source_writes_into_the_gathers():
    args = _args_factors(np.random.default_rng(12))
    src = ad.grad(factors, wrt=(0, 1)).specialize(*args).source
    assert "t1 = np.take(U, iu, axis=0)" in src and "t2 = np.take(V, iv, axis=0)" in src, src
    assert "out=t2)" in src and "out=t1)" in src, src
    assert "np.empty((6000, 16)" not in src, src   # no pool buffer of the gathers' size


def test_a_gather_read_later_is_not_overwritten():
    """``h`` is read again after the product that could overwrite it: it stays ``W[idx]``."""
    def f(W, idx):
        h = W[idx]
        return np.sum(np.sin(h) * h) + np.sum(h * 3.0)
    rng = np.random.default_rng(13)
    args = (rng.standard_normal((400, 16)), rng.integers(0, 400, 3000))
    g = ad.grad(f)
    with unoptimised():
        want = ad.grad(f)(*args)
    np.testing.assert_allclose(g(*args), want, rtol=1e-12)


def test_out_of_bounds_gather_raises_numpys_error():
    args = list(_args_factors(np.random.default_rng(14)))
    g = ad.grad(factors, wrt=(0, 1))
    g(*args)
    args[3] = args[3].copy()
    args[3][7] = 300
    with pytest.raises(IndexError, match="index 300 is out of bounds for axis 0 with size 300"):
        g(*args)
