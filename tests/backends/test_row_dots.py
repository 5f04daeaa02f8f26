"""Sums of same-shape products over the last axis as ``np.einsum`` (backends/row_dots.py): on
both sides of the planner's MIN_BYTES (4,096 float64 entries), the unoptimised gradient's
values, and ``a * b`` kept where it broadcasts or is read twice."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends import planner
from adcompiler.backends.check_modes import unoptimised


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")


def dots(a, b, y):
    return np.sum((np.sum(a * b, axis=1) - y) ** 2)


def dots_3d(a, b):
    return np.sum(np.tanh(np.sum(a * b, axis=-1)))


def broadcast(a, w):
    return np.sum(np.sum(a * w, axis=1) ** 2)


def read_twice(a, b):
    p = a * b
    return np.sum(np.sum(p, axis=1) ** 2) + np.sum(p)


def _check(f, args, wrt):
    g = ad.grad(f, wrt=wrt)
    got = g(*args)
    with unoptimised():
        want = ad.grad(f, wrt=wrt)(*args)
    for x, y in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12 * np.max(np.abs(y)))
    return g.specialize(*args).source


@pytest.mark.parametrize("side", ["below", "at"])
def test_min_bytes(side):
    rows = planner.MIN_BYTES // 8 // 32 - (side == "below")   # 127 or 128 rows of 32
    rng = np.random.default_rng(1)
    args = (rng.standard_normal((rows, 32)), rng.standard_normal((rows, 32)),
            rng.standard_normal(rows))
    src = _check(dots, args, (0, 1))
    assert ("np.einsum('ij,ij->i', a, b)" in src) == (side == "at"), src


def test_three_axes():
    rng = np.random.default_rng(2)
    args = (rng.standard_normal((20, 30, 16)), rng.standard_normal((20, 30, 16)))
    assert "np.einsum('ijk,ijk->ij', a, b)" in _check(dots_3d, args, (0, 1))


@pytest.mark.parametrize("f, args", [
    (broadcast, lambda rng: (rng.standard_normal((300, 32)), rng.standard_normal(32))),
    (read_twice, lambda rng: (rng.standard_normal((300, 32)), rng.standard_normal((300, 32)))),
])
def test_products_kept(f, args):
    src = _check(f, args(np.random.default_rng(3)), (0, 1))
    assert "einsum" not in src, src


def mean_rows(x, w):
    xc = x - np.mean(x, axis=-1, keepdims=True)
    return np.sum(np.tanh(xc / np.sqrt(np.mean(xc * xc, axis=-1, keepdims=True) + 1e-5) * w))


def mean_no_keepdims(a, b):
    return np.sum(np.sin(np.mean(a * b, axis=1)))


@pytest.mark.parametrize("shape", [(127, 32), (128, 32), (512, 640), (4, 40, 64)])
def test_a_mean_is_the_einsum_over_the_count(shape):
    rng = np.random.default_rng(4)
    args = (rng.standard_normal(shape), rng.standard_normal(shape))
    src = _check(mean_rows, args, (0, 1))
    letters = "ijk"[:len(shape)]
    spec = f"np.einsum('{letters},{letters}->{letters[:-1]}', xc, xc) / {shape[-1]})[..., None]"
    assert (spec in src) == (np.prod(shape) * 8 >= planner.MIN_BYTES), src


def test_a_mean_without_keepdims_and_float32():
    rng = np.random.default_rng(5)
    args = (rng.standard_normal((300, 32)), rng.standard_normal((300, 32)))
    assert "np.einsum('ij,ij->i', a, b) / 32" in _check(mean_no_keepdims, args, (0, 1))
    x, w = (rng.standard_normal((300, 64)).astype(np.float32) for _ in range(2))
    got = ad.grad(mean_rows, wrt=(0,))(x, w)
    with unoptimised():
        want = ad.grad(mean_rows, wrt=(0,))(x, w)
    got, want = (v[0] if isinstance(v, tuple) else v for v in (got, want))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
