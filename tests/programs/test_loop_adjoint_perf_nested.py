"""A nested loop's adjoint copies its carried cotangent at most once per entry into the loop.

The adjoint of a back-substitution (``x[i] = d[i] - c[i] * x[i + 1]``) inside a time-step loop
starts its inner cotangent from the outer adjoint loop's carried ``du``; the emitter could not
tell that array was the code's own and copied it on every inner iteration (``dx_2_1 =
np.array(dx_2); dx_2_1[i] = 0.0``), O(n^2) per step. Now one copy is made before the inner
loop and its updates run in place. Checks on values and on the generated source only."""

from __future__ import annotations

import ast

import numpy as np

import adcompiler as ad
from tests.helpers import assert_matches_numerical


def backsub(d, c):
    n = d.shape[0]
    x = np.zeros(n)
    x[n - 1] = d[n - 1]
    for i in range(n - 2, -1, -1):
        x[i] = d[i] - c[i] * x[i + 1]
    return x


def steps(u0, c):
    u = u0
    for step in range(3):
        u = backsub(u, c)
    return np.sum(u ** 2)


def forward_sweep(u0, c):
    u = u0
    for step in range(3):
        x = np.zeros(u.shape[0])
        x[0] = u[0]
        for i in range(1, u.shape[0]):
            x[i] = u[i] - c[i] * x[i - 1]
        u = x * 0.5
    return np.sum(u ** 3)


def _copies_in_inner_loops(source) -> list:
    """``np.array(...)`` / ``np.copy(...)`` / ``.copy()`` calls inside a loop nested in a loop."""
    out = []
    for outer in ast.walk(ast.parse(source)):
        if not isinstance(outer, (ast.For, ast.While)):
            continue
        for inner in (n for s in outer.body for n in ast.walk(s)):
            if isinstance(inner, (ast.For, ast.While)):
                out += [ast.unparse(c) for s in inner.body for c in ast.walk(s)
                        if isinstance(c, ast.Call) and ast.unparse(c.func) in
                        ("np.array", "np.copy") or isinstance(c, ast.Call)
                        and ast.unparse(c.func).endswith(".copy")]
    return out


def test_backsub_in_a_time_loop_copies_once_per_step():
    rng = np.random.default_rng(0)
    d, c = rng.random(12), 0.5 * rng.random(12)
    g = ad.grad(steps, wrt=(0, 1))
    assert_matches_numerical(steps, [d, c], (0, 1), g(d, c))
    assert _copies_in_inner_loops(g.source) == []


def test_forward_sweep_in_a_time_loop():
    rng = np.random.default_rng(1)
    d, c = rng.random(9), 0.5 * rng.random(9)
    g = ad.grad(forward_sweep, wrt=(0, 1))
    assert_matches_numerical(forward_sweep, [d, c], (0, 1), g(d, c))
    assert _copies_in_inner_loops(g.source) == []


def test_value_and_grad_of_nested_sweeps():
    rng = np.random.default_rng(2)
    d, c = rng.random(7), 0.5 * rng.random(7)
    value, grads = ad.value_and_grad(steps, wrt=(0, 1))(d, c)
    np.testing.assert_allclose(value, steps(d, c), rtol=1e-12)
    assert_matches_numerical(steps, [d, c], (0, 1), grads)
