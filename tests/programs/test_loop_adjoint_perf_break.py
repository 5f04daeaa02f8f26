"""Loops that break run, and differentiate, only the iterations they take.

``for step in range(nmax): ...; if done: break`` is lowered to a carried done flag and a body
under ``if not done`` (structured IR); the emitted forward loop now leaves with a real
``break`` once the flag is set, counts the iterations it ran, and the adjoint loop runs over
that count (``reversed(range(n_taken))``), so gradient time follows the iterations taken, not
``nmax``. Flags on Python bools are written with ``not`` / ``and``, not NumPy calls. The checks
are on values (against finite differences) and on the generated source, never on timings."""

from __future__ import annotations

import ast
import math

import numpy as np

import adcompiler as ad
from tests.helpers import assert_matches_numerical, numerical_grad


def flight(v0, cd, nmax):
    x = 0.0
    y = 0.0
    vx = v0 * 0.8
    vy = v0 * 0.6
    for step in range(nmax):
        v = math.sqrt(vx * vx + vy * vy)
        x = x + 0.01 * vx
        y = y + 0.01 * vy
        vx = vx - 0.01 * cd * v * vx
        vy = vy - 0.01 * (9.81 + cd * v * vy)
        if y < 0.0:
            break
    return x


def first_iteration(x, k):
    s = 0.0
    for i in range(20):
        s = s + np.sum(x ** 2) * k
        x = x * k
        if s > -1.0:
            break
    return s + np.sum(x ** 3)


def sometimes(x, k):
    s = 0.0
    for i in range(20):
        s = s + np.sum(x ** 2) * k
        x = x * k
        if s > 2.0:
            break
    return s + np.sum(x ** 3)


def nested_break(x, k):
    total = 0.0
    for j in range(4):
        y = x * (j + 1.0)
        for i in range(30):
            y = y * k
            if np.sum(y) > 5.0:
                break
        total = total + np.sum(y ** 2)
    return total


def while_break(x, k):
    s = 0.0
    i = 0
    while i < 50:
        s = s + np.sum(x * x) * k
        x = x * 0.9
        if s > 3.0:
            break
        i += 1
    return s + np.sum(x)


def skip_negative(x, k):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0.0:
            continue
        s = s + k * x[i] ** 2
    return s


def _loops(source):
    """(forward loops, adjoint loops) of the generated function: ``for`` statements over
    ``range(...)`` and over ``reversed(range(...))``."""
    fors = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.For)]
    backward = [f for f in fors if ast.unparse(f.iter).startswith("reversed(")]
    return [f for f in fors if f not in backward], backward


def _breaks(loop) -> bool:
    return any(isinstance(n, ast.Break) for s in loop.body for n in ast.walk(s))


def _compile(f, args, wrt):
    g = ad.grad(f, wrt=wrt)
    return g, g(*args)


def test_flight_breaks_and_adjoint_runs_over_the_count():
    for nmax in (300, 3000):
        g, grads = _compile(flight, (20.0, 0.02, nmax), (0, 1))
        assert_matches_numerical(flight, [20.0, 0.02, nmax], (0, 1), grads, rtol=1e-5)
    forward, backward = _loops(g.source)
    assert len(forward) == 1 and _breaks(forward[0])
    (adjoint,) = backward
    count = ast.unparse(adjoint.iter)
    assert count.startswith("reversed(range(n_taken")
    assert "np.logical_not" not in g.source and "if not" not in ast.unparse(forward[0])


def test_break_on_the_first_iteration():
    x = np.array([0.3, 0.5, 0.7])
    g, grads = _compile(first_iteration, (x, 1.1), (0, 1))
    assert_matches_numerical(first_iteration, [x, 1.1], (0, 1), grads)
    forward, backward = _loops(g.source)
    assert _breaks(forward[0]) and "n_taken" in ast.unparse(backward[0].iter)


def test_breaking_or_not():
    never = np.array([0.01, 0.02, 0.03])  # s stays below 2.0: all 20 iterations
    breaks = np.array([0.3, 0.5, 0.7])
    for x in (never, breaks):
        g, grads = _compile(sometimes, (x, 1.1), (0, 1))
        assert_matches_numerical(sometimes, [x, 1.1], (0, 1), grads)


def test_break_in_a_nested_loop():
    x = np.array([0.3, 0.5, 0.7])
    g, grads = _compile(nested_break, (x, 1.2), (0, 1))
    assert_matches_numerical(nested_break, [x, 1.2], (0, 1), grads, rtol=1e-5)
    forward, backward = _loops(g.source)
    inner = [f for f in forward if ast.unparse(f.iter) == "range(30)"]
    assert inner and _breaks(inner[0])
    assert any("n_taken" in ast.unparse(f.iter) for f in backward)


def test_while_with_break():
    x = np.array([0.3, 0.5, 0.7])
    g, grads = _compile(while_break, (x, 1.3), (0, 1))
    assert_matches_numerical(while_break, [x, 1.3], (0, 1), grads)
    assert "np.logical_and" not in g.source and "np.logical_not" not in g.source


def test_continue():
    x = np.array([0.3, -0.5, 0.7, 1.1])
    g, grads = _compile(skip_negative, (x, 1.3), (0, 1))
    assert_matches_numerical(skip_negative, [x, 1.3], (0, 1), grads)


def test_value_and_grad_of_a_loop_that_breaks():
    value, grads = ad.value_and_grad(flight, wrt=(0, 1))(20.0, 0.02, 3000)
    assert value == flight(20.0, 0.02, 3000)
    assert_matches_numerical(flight, [20.0, 0.02, 3000], (0, 1), grads, rtol=1e-5)


def test_jvp_and_hessian_of_a_loop_that_breaks():
    x = np.array([0.3, 0.5, 0.7])
    t = np.array([0.2, 1.0, -0.4])
    h = 1e-6
    j = ad.jvp(sometimes)
    value, tangent = j(x, 1.1, tangents=t)
    expected = (sometimes(x + h * t, 1.1) - sometimes(x - h * t, 1.1)) / (2 * h)
    np.testing.assert_allclose(value, sometimes(x, 1.1), rtol=1e-12)
    np.testing.assert_allclose(tangent, expected, rtol=1e-6)
    forward, _ = _loops(j.source)
    assert _breaks(forward[0])
    hess = ad.hessian(sometimes)(x, 1.1)
    grad = ad.grad(sometimes)
    rows = [numerical_grad(lambda y: grad(y, 1.1)[i], [x], 0) for i in range(3)]
    np.testing.assert_allclose(hess, np.array(rows), rtol=1e-5, atol=1e-7)
