"""The adjoint of ``np.roll`` is the roll the other way, one concatenation
(``passes/updates.py``: ``join_scatters``): no zero array, store and add in the loop body of a
stencil. Values against the tape (which rolls as NumPy does, rule by rule) and the unoptimised
gradient at small sizes, past the planner's and fusion's threshold (4,096 elements) and past
numexpr's (262,144); against central differences where small. Pieces that overlap or leave a
gap keep their scatters and still give the right values.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from adcompiler.backends.check_modes import unoptimised
from tests.helpers import assert_matches_numerical


def roll_both(x, w):
    return np.sum((np.roll(x, 1) - 2.0 * x + np.roll(x, -3)) * w)


def roll_rows(x, w):
    return np.sum(np.roll(x, 2, axis=1) * w + np.roll(x, -1, axis=0) * w)


def stencil(u, kappa, obs):
    loss = 0.0
    for t in range(obs.shape[0]):
        u = u + kappa * (np.roll(u, 1) - 2.0 * u + np.roll(u, -1))
        r = u - obs[t]
        loss = loss + np.sum(r * r)
    return loss


def overlapping(x, w):
    return np.sum(np.concatenate([x[2:], x[:3]]) * w[:-1])


def gapped(x, w):
    return np.sum(np.concatenate([x[3:], x[:1]]) * w[2:])


def _vector_args(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n), rng.standard_normal(n)


def _matrix_args(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 7)), rng.standard_normal((n, 7))


def _stencil_args(n, steps=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n), rng.uniform(0.1, 0.3, n), rng.standard_normal((steps, n))


CASES = [(roll_both, _vector_args), (roll_rows, _matrix_args), (stencil, _stencil_args),
         (overlapping, _vector_args), (gapped, _vector_args)]


def _close(got, want, rtol=1e-12):
    for a, b in zip(got, want):
        assert np.linalg.norm(a - b) <= rtol * np.linalg.norm(b), (a, b)


def _checked(f, args):
    g = ad.grad(f, wrt=(0, 1))
    got = g(*args)
    with unoptimised():
        _close(got, ad.grad(f, wrt=(0, 1))(*args))
    _close(got, tape.dynamic_grad(f, wrt=(0, 1))(*args))
    return g, got


@pytest.mark.parametrize("f, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_small_against_differences(f, make):
    args = make(9) if f is not overlapping else make(8)
    if f is overlapping:
        args = (args[0], np.resize(args[1], 10))
    if f is gapped:
        args = (args[0], np.resize(args[1], 9))
    _, got = _checked(f, args)
    assert_matches_numerical(f, args, (0, 1), got)


@pytest.mark.parametrize("n", [5000, 270_000])
@pytest.mark.parametrize("f, make", CASES[:3], ids=[c[0].__name__ for c in CASES[:3]])
def test_past_the_thresholds(f, make, n):
    args = make(n if f is not roll_rows else n // 7 + 1)
    g, _ = _checked(f, args)
    assert "np.empty(" not in g.source.split("def grad_")[1].split("_buffers.append")[0]


def test_the_stencil_loop_rolls_back():
    g, _ = _checked(stencil, _stencil_args(64))
    backward = g.source.split("reversed(range(")[1]
    assert "np.empty" not in backward and "np.zeros" not in backward
    assert not re.search(r"\][ \t]*\+?=", backward)     # no entry written, none added to
    assert backward.count("np.concatenate(") == 2      # one per roll


def test_gaps_and_overlaps_keep_their_scatters():
    """Pieces that overlap (x[2:], x[:3]) or leave a gap (x[3:], x[:1]) are no concatenation."""
    for f, n in ((overlapping, 8), (gapped, 9)):
        x, w = _vector_args(n)
        g = ad.grad(f, wrt=(0,))
        g(x, np.resize(w, 10 if f is overlapping else 9))
        assert g.source.count("np.concatenate(") == 1   # the forward one
