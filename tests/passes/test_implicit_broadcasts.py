"""A reduction's adjoint spreads its cotangent with ``broadcast_to``; where an elementwise
operation would broadcast the smaller operand anyway, the broadcast is dropped
(adcompiler/passes/broadcasts.py), and only there: a column (``expand_dims(g, axis=1)``) is
never read as a row, and no dtype changes."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.ir import walk
from adcompiler.tape import dynamic_grad

from tests.helpers import assert_matches_numerical

RNG = np.random.default_rng(161)


def rows_weighted(A, B):
    return np.sum(np.sum(A * B, axis=1) ** 2)      # adjoint: a column, spread over B's rows


def columns_weighted(A, B):
    return np.sum(np.sum(A * B, axis=0) ** 2)      # adjoint: a row: broadcasting adds it


def mean_weighted(A, B):
    return np.sum(np.tanh(np.mean(A * B, axis=-1, keepdims=True)))


def scaled(x, lam):
    return lam * np.sum(x * x) + np.sum(np.tanh(x))


def _broadcasts(g):
    return [n for n in walk(g.ir.nodes) if n.prim == "broadcast_to"]


@pytest.mark.parametrize("f", [rows_weighted, columns_weighted, mean_weighted],
                         ids=lambda f: f.__name__)
def test_square_operands_keep_rows_and_columns_apart(f):
    """Square arrays: reading a column as a row would keep every shape and change values."""
    A, B = RNG.standard_normal((4, 4)), RNG.standard_normal((4, 4))
    g = ad.grad(f, wrt=(0, 1))
    got = g(A, B)
    assert_matches_numerical(f, (A, B), (0, 1), got)
    for a, b in zip(got, dynamic_grad(f, wrt=(0, 1))(A, B)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert not _broadcasts(g) and "broadcast_to" not in g.source


def test_the_column_keeps_its_axis():
    A, B = RNG.standard_normal((4, 4)), RNG.standard_normal((4, 4))
    g = ad.grad(rows_weighted, wrt=0)
    g(A, B)
    assert "[:, None]" in g.source


def test_a_scalar_spread_over_a_float32_array_keeps_float32():
    x = RNG.standard_normal(6).astype(np.float32)
    g = ad.grad(scaled)
    dx = g(x, 0.3)
    assert dx.dtype == np.float32
    want = 2 * 0.3 * x.astype(np.float64) + 1 - np.tanh(x.astype(np.float64)) ** 2
    np.testing.assert_allclose(dx, want, rtol=1e-5)


def spread_then_scaled(x):
    s = np.sum(x, axis=1, keepdims=True)
    return np.sum((s * 2.0) ** 2) + np.sum(x * x)


def test_a_broadcast_whose_reader_would_shrink_stays():
    """``broadcast_to(g, (3, 4)) * 2.0`` would be (3, 1) without it: it stays."""
    x = RNG.standard_normal((3, 4))
    g = ad.grad(spread_then_scaled)
    dx = g(x)
    s = x.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(dx, np.broadcast_to(8.0 * s, (3, 4)) + 2 * x, rtol=1e-12)


def soft_min(x, beta):
    return -np.mean(np.log(np.sum(np.exp(-beta * x), axis=1))) / beta


def test_a_mean_of_a_python_float_is_divided_before_it_spreads():
    """The mean's adjoint ``broadcast_to(g, (5,)) / 5`` with ``g`` a Python float: ``g / 5`` first,
    and the division by the row sums reads it as a number."""
    x = RNG.standard_normal((5, 3))
    g = ad.grad(soft_min)
    dx = g(x, 1.5)
    assert_matches_numerical(soft_min, (x, 1.5), (0,), (dx,))
    assert not _broadcasts(g)
