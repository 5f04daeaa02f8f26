"""A residual recomputed in the adjoint loop keeps its node's params: ``abs(v)`` of a Python
float carried by a loop (``abs[py='fabs']``) was recomputed as ``np.abs``, a 0-d array, and
compiling failed inside the compiler (IRError: "multiply gives float, but its shape rule says
f64[]"; "greater gives bool" for ``max(abs(v), w)``)."""

import math

import pytest

import adcompiler as ad
from tests.helpers import check_grads


def squared_in_loop(v):
    for _ in range(2):
        v = v * abs(v)
    return v


def quadratic_drag(v0, k, dt):
    v, x = v0, 0.0
    for _ in range(50):
        v = v - dt * k * v * abs(v)
        x = x + dt * v
    return x


def floored(v, w):
    for _ in range(2):
        v = max(abs(v), w) * 0.9
    return v


def fabs_in_loop(v):
    for _ in range(3):
        v = v * math.fabs(v) - 0.5
    return v


def test_the_values_and_gradients():
    assert ad.grad(squared_in_loop)(2.0) == 32.0 and ad.grad(squared_in_loop)(-2.0) == 32.0
    assert ad.value_and_grad(floored)(1.3, 0.7) == pytest.approx((1.3 * 0.81, 0.81))


@pytest.mark.parametrize("f, args, wrt", [
    (squared_in_loop, (-1.5,), (0,)),
    (quadratic_drag, (5.0, 0.1, 0.01), (0, 1, 2)),
    (floored, (-1.3, 0.7), (0, 1)),
    (floored, (0.2, 0.7), (0, 1)),
    (fabs_in_loop, (0.9,), (0,)),
])
def test_against_differences(f, args, wrt):
    check_grads(f, *args, wrt=wrt, rtol=1e-6)
