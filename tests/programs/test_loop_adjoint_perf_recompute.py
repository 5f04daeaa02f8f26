"""Cheap elementwise residuals of a loop are recomputed in its adjoint, not stacked.

A friction/penalty-wall particle step reads ``-x``, ``x - 1``, ``sign(v)``, ``|v| * 50``...
in its adjoint: each was stacked per iteration (nine ``(steps, n)`` stacks). Now the carried
``x`` and ``v`` are stacked and those values recomputed from them in the adjoint loop. Checks
on values (finite differences) and on the generated source's stacks, never on timings."""

from __future__ import annotations

import re

import numpy as np

import adcompiler as ad
from tests.helpers import assert_matches_numerical


def particles(v0, mu, k, x0):
    x = x0.copy()
    v = v0.copy()
    dt = 0.01
    for t in range(30):
        wall = k * (np.maximum(-x, 0.0) - np.maximum(x - 1.0, 0.0))
        fric = -mu * np.sign(v) * np.minimum(np.abs(v) * 50.0, 1.0)
        v = v + dt * (wall + fric)
        v = np.clip(v, -2.0, 2.0)
        x = x + dt * v
    return np.sum(x ** 2) + 0.1 * np.sum(np.abs(v))


def scaled(x, c):
    for t in range(5):
        x = np.sin(x) * c
    return np.sum(x)


def _stacks(source) -> int:
    """How many (30, n) stacks the generated code allocates."""
    return len(re.findall(r"np\.empty\(\(30, \d+\)", source))


def test_particles_stack_the_state_only():
    rng = np.random.default_rng(5)
    x0 = rng.random(8) * 1.2 - 0.1
    v0 = rng.standard_normal(8) * 0.01  # |v| * 50 away from its kink at 1 for 30 steps
    args = [v0, 0.3, 50.0, x0]
    g = ad.grad(particles, wrt=(0, 1, 2, 3))
    grads = g(*args)
    assert_matches_numerical(particles, args, (0, 1, 2, 3), grads, rtol=1e-5, atol=1e-6)
    assert _stacks(g.source) <= 3  # x, v and the unclipped v (was 9)


def test_value_and_grad_with_recomputed_residuals():
    rng = np.random.default_rng(6)
    x0 = rng.random(5) * 1.2 - 0.1
    v0 = rng.standard_normal(5)
    value, grads = ad.value_and_grad(particles, wrt=(1, 2))(v0, 0.3, 50.0, x0)
    np.testing.assert_allclose(value, particles(v0, 0.3, 50.0, x0), rtol=1e-12)


def test_a_residual_that_is_not_cheap_is_still_stacked():
    x = np.array([0.3, 0.5, 0.7])
    g = ad.grad(scaled, wrt=(0, 1))
    assert_matches_numerical(scaled, [x, 1.1], (0, 1), g(x, 1.1))
