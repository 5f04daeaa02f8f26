"""An unplanned fused chain (a loop's carried cotangent, which escapes the iteration and so gets
no pool buffer) is computed op by op into the array of an input it reads last, where this code
made that array and nothing reads it after (``BufferedEmission.accumulator``): an accumulation
``du = du + dt6 + -2.0 * dt2 + dt11`` makes no new array. Values against the unoptimised
gradient and the tape past the fusion and planner threshold (4,096 elements) and past numexpr's
(262,144, where numexpr computes the chain and nothing is written in place), in poisoned code
too (a read of a released buffer shows as NaN); where the input is read again it is not
overwritten.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from adcompiler.backends.check_modes import poisoned, unoptimised


def stencil(u, kappa, obs):
    loss = 0.0
    for t in range(obs.shape[0]):
        u = u + kappa * (np.roll(u, 1) - 2.0 * u + np.roll(u, -1))
        r = u - obs[t]
        loss = loss + np.sum(r * r)
    return loss


def decay(x, w):
    """``acc`` read after the sum that could overwrite it: the sum is a new array."""
    acc = x * 1.0
    total = 0.0
    for t in range(3):
        nxt = acc + w * np.tanh(acc) + 0.5 * w
        total = total + np.sum(nxt * acc)
        acc = nxt
    return total + np.sum(acc)


def _stencil_args(n, steps=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n), rng.uniform(0.1, 0.3, n), rng.standard_normal((steps, n))


def _decay_args(n, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n), 0.1 * rng.standard_normal(n)


def _close(got, want, rtol=1e-12):
    for a, b in zip(got, want):
        assert np.linalg.norm(a - b) <= rtol * np.linalg.norm(b), (a, b)


def _checked(f, args):
    g = ad.grad(f, wrt=(0, 1))
    first = g(*args)
    kept = [a.copy() for a in first]
    again = g(*(a * 0.75 if a.ndim else a for a in args))   # the buffers reused
    with unoptimised():
        _close(first, ad.grad(f, wrt=(0, 1))(*args))
        _close(again, ad.grad(f, wrt=(0, 1))(*(a * 0.75 if a.ndim else a for a in args)))
    for a, b in zip(first, kept):
        np.testing.assert_array_equal(a, b)                 # a later call changed nothing
    _close(first, tape.dynamic_grad(f, wrt=(0, 1))(*args))
    with poisoned():
        _close(ad.grad(f, wrt=(0, 1))(*args), first)
    return g


@pytest.mark.parametrize("n", [64, 5000, 270_000])
@pytest.mark.parametrize("f, make", [(stencil, _stencil_args), (decay, _decay_args)],
                         ids=["stencil", "decay"])
def test_values(f, make, n):
    _checked(f, make(n))


def test_the_stencil_accumulates_in_place():
    g = _checked(stencil, _stencil_args(5000))
    backward = g.source.split("reversed(range(")[1].split("\n    return ")[0]
    backward = "\n".join(ln for ln in backward.splitlines() if not ln.strip().startswith("#"))
    into = re.findall(r"out=(\w+)\)", backward)
    assert "dkappa" in into and any(re.fullmatch(r"du_\d+", n) for n in into), backward
    assert not re.search(r"= (du_\d+|dkappa) \+ ", backward)   # no new array for the sums
