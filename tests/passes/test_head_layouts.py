"""A batch of products read as ``.transpose(1, 0, 2).reshape(M, H * N)`` by products (attention's
heads side by side again) computed as the transposed batch, so that the merge is a view
(adcompiler.passes.head_layouts). Checked against the unoptimised gradient (which keeps the
products as written) and finite differences, below the planner's 32 KiB threshold, above it,
and above numexpr's 2^18 elements, plain and poisoned (a read of a released buffer shows as
NaN), in float32, and where a reader of the merge is elementwise (not rewritten)."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends.check_modes import poisoned, unoptimised
from tests.helpers import numerical_grad

RNG = np.random.default_rng(35)


def heads(q, k, v, W):
    H, S, d = q.shape
    s = q @ np.swapaxes(k, 1, 2)
    p = np.exp(s - np.max(s, axis=2, keepdims=True))
    p = p / np.sum(p, axis=2, keepdims=True)
    att = np.transpose(p @ v, (1, 0, 2)).reshape(S, H * d)
    return np.sum(np.tanh(att @ W))


def heads_from_rows(x, Wq, Wk, Wv, Wo):
    S, D = x.shape
    q = np.transpose((x @ Wq).reshape(S, 2, D // 2), (1, 0, 2))
    k = np.transpose((x @ Wk).reshape(S, 2, D // 2), (1, 0, 2))
    v = np.transpose((x @ Wv).reshape(S, 2, D // 2), (1, 0, 2))
    att = np.transpose(np.tanh(q @ np.swapaxes(k, 1, 2)) @ v, (1, 0, 2)).reshape(S, D)
    return np.sum(np.sin(att @ Wo))


def merged_read_elementwise(q, k, W):
    H, S, d = q.shape
    att = np.transpose(q @ np.swapaxes(k, 1, 2) @ k, (1, 0, 2)).reshape(S, H * d)
    return np.sum(np.tanh(att)) + np.sum(att @ W)   # tanh(att) reads the merge: as written


SIZES = {"below": (2, 6, 4), "above": (4, 64, 32), "numexpr": (4, 512, 128)}


def _heads_args(h, s, d, dtype=np.float64):
    args = [RNG.standard_normal((h, s, d)) * 0.3 for _ in range(3)]
    args.append(RNG.standard_normal((h * d, 3)))
    return tuple(a.astype(dtype) for a in args)


def _check(f, args, wrt, rtol=1e-10):
    g = ad.grad(f, wrt=wrt)
    got = g(*args)
    again = g(*args)   # the second call reuses the pool's buffers
    with unoptimised():
        want = ad.grad(f, wrt=wrt)(*args)
    for a, b, c in zip(got, again, want):
        assert a.dtype == c.dtype
        np.testing.assert_allclose(a, c, rtol=rtol, atol=1e-12 if a.dtype == np.float64 else 1e-5)
        np.testing.assert_array_equal(a, b)
    with poisoned():
        for a, c in zip(ad.grad(f, wrt=wrt)(*args), want):
            np.testing.assert_allclose(a, c, rtol=rtol, atol=1e-12 if a.dtype == np.float64
                                       else 1e-5)
    return g.source


def _merges_copied(src) -> int:
    """The merges ``x.transpose((1, 0, 2))`` then ``.reshape(...)`` of a product's result ``x``
    computed as written (a copy), the adjoint's (two statements) and the forward's (one)."""
    lines = [ln.strip() for ln in src.splitlines() if not ln.strip().startswith("#")]
    made = {ln.split(" = ")[0] for ln in lines if (" @ " in ln or "np.matmul(" in ln)
            and not ln.endswith(".transpose((0, 2, 1))")}   # not a transposed product's view
    turned = {ln.split(" = ")[0]: ln.split(" = ")[1].split(".transpose((1, 0, 2))")[0]
              for ln in lines if ln.endswith(".transpose((1, 0, 2))")}
    merged = [ln.split(" = ")[1].split(".reshape(")[0] for ln in lines if ".reshape(" in ln]
    inline = sum(1 for ln in lines if ").transpose((1, 0, 2)).reshape(" in ln
                 and "transpose((0, 2, 1)).transpose((1, 0, 2))" not in ln)
    return inline + sum(1 for m in merged if turned.get(m) in made)


@pytest.mark.parametrize("size", list(SIZES))
def test_heads_against_the_unoptimised_gradient(size):
    src = _check(heads, _heads_args(*SIZES[size]), ("q", "k", "v", "W"))
    assert "transpose((0, 2, 1)).transpose((1, 0, 2)).reshape(" in src   # forward's merge
    if size == "below":
        args = _heads_args(*SIZES[size])
        got = ad.grad(heads, wrt=("q", "k", "v", "W"))(*args)
        for i in range(4):
            np.testing.assert_allclose(got[i], numerical_grad(heads, args, i), rtol=1e-6,
                                       atol=1e-8)


@pytest.mark.parametrize("s", [6, 96, 600])
def test_projected_heads_against_the_unoptimised_gradient(s):
    d = 16 if s < 600 else 512
    args = (RNG.standard_normal((s, d)) * 0.3, *(RNG.standard_normal((d, d)) * 0.2
                                                   for _ in range(3)),
            RNG.standard_normal((d, 4)))
    wrt = ("x", "Wq", "Wk", "Wv", "Wo")
    src = _check(heads_from_rows, args, wrt, rtol=1e-9)
    assert _merges_copied(src) == 0
    with unoptimised():
        g = ad.grad(heads_from_rows, wrt=wrt)
        g(*args)
        assert _merges_copied(g.source) == 3   # the forward's, dv's and dq's
    if s == 6:
        got = ad.grad(heads_from_rows, wrt=("x", "Wq", "Wk", "Wv"))(*args)
        for i in range(4):
            np.testing.assert_allclose(got[i], numerical_grad(heads_from_rows, args, i),
                                       rtol=1e-6, atol=1e-8)


def test_float32_stays_float32():
    args = _heads_args(4, 64, 32, np.float32)
    _check(heads, args, ("q", "k", "v", "W"), rtol=1e-4)


@pytest.mark.parametrize("size", ["below", "above"])
def test_an_elementwise_reader_keeps_the_product_as_written(size):
    h, s, d = SIZES[size]
    args = (RNG.standard_normal((h, s, d)) * 0.3, RNG.standard_normal((h, s, d)) * 0.3,
            RNG.standard_normal((h * d, 3)))
    src = _check(merged_read_elementwise, args, ("q", "k", "W"), rtol=1e-9)
    assert "transpose((0, 2, 1)).transpose((1, 0, 2))" not in src
