"""Elementwise primitives added as a row (``ir.primitives.ELEMENTWISE``) and a rule
(``templates/elementwise.py``) alone: every path that derives its tables from the rows takes them.

For each: the compiled gradient against central differences, the tape's gradient and
``grad_fn`` name, the numba backend's loops, the buffered code at a size past the planner's
threshold against the unoptimised gradient, the tangent (jvp) against the gradient, and the
CuPy code (run on NumPy playing CuPy, tests/cupy_helpers.py). The rule itself is checked against
finite differences and ``sympy.diff`` with every other rule (tests/templates/test_templates.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from adcompiler.backends.check_modes import unoptimised
from adcompiler.ir.primitives import ELEMENTWISE_BY_NAME

from tests.cupy_helpers import assert_close, compile_both, emulate


def deg2rad(x, y):
    return np.sum(np.sin(np.deg2rad(x)) * y)


def rad2deg(x, y):
    return np.sum(np.cos(np.rad2deg(x) / 90.0) * y)


def fabs(x, y):
    return np.sum(np.fabs(x) * y)


def logaddexp2(x, y):
    return np.sum(np.logaddexp2(x, y * 3.0) * y)


def sinc(x, y):
    return np.sum(np.sinc(x) * np.tanh(y))


def fmax(x, y):
    return np.sum(np.fmax(x, y * 2.0) * y)


def fmin(x, y):
    return np.sum(np.fmin(np.sin(x), y) ** 2)


# (function, example x, example y, the primitive's call on a tensor and its grad_fn name)
CASES = {
    "deg2rad": (deg2rad, np.linspace(-170.0, 170.0, 9), np.linspace(0.5, 1.5, 9),
                (lambda t, y: np.deg2rad(t), "Deg2RadBackward0")),
    "rad2deg": (rad2deg, np.linspace(-3.0, 3.0, 9), np.linspace(0.5, 1.5, 9),
                (lambda t, y: np.rad2deg(t), "Rad2DegBackward0")),
    "fabs": (fabs, np.linspace(-2.05, 1.95, 9), np.linspace(0.5, 1.5, 9),
             (lambda t, y: np.fabs(t), "AbsBackward0")),
    "logaddexp2": (logaddexp2, np.linspace(-3.0, 3.0, 9), np.linspace(-1.0, 1.5, 9),
                   (lambda t, y: np.logaddexp2(t, y), "Logaddexp2Backward0")),
    # 0 and 1e-6: the slope's series, where (cos(pi x) - sinc(x)) / x cancels
    "sinc": (sinc, np.array([-2.5, -1.0, -0.4, -1e-6, 0.0, 1e-6, 0.3, 1.5, 3.2]),
             np.linspace(0.5, 1.5, 9), (lambda t, y: np.sinc(t), "SincBackward0")),
    "fmax": (fmax, np.linspace(-1.05, 3.05, 9), np.linspace(-0.55, 1.45, 9),
             (lambda t, y: np.fmax(t, y), "FmaxBackward0")),
    "fmin": (fmin, np.linspace(-1.05, 3.05, 9), np.linspace(-0.55, 1.45, 9),
             (lambda t, y: np.fmin(t, y), "FminBackward0")),
}
PARAMS = [pytest.param(*case, id=name) for name, case in CASES.items()]


def central_differences(f, x, y, eps=1e-6):
    out = np.zeros_like(x)
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = eps
        out[j] = (f(x + e, y) - f(x - e, y)) / (2 * eps)
    return out


@pytest.mark.parametrize("f, x, y, node", PARAMS)
def test_gradient_agrees_with_differences_and_the_tape(f, x, y, node):
    got = ad.grad(f)(x, y)
    np.testing.assert_allclose(got, central_differences(f, x, y), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got, tape.dynamic_grad(f)(x, y), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("f, x, y, node", PARAMS)
def test_the_tape_names_the_node_as_pytorch(f, x, y, node):
    call, name = node
    t = tape.tensor(x, requires_grad=True)
    out = call(t, y)
    assert type(out.grad_fn).__name__ == name


# the NaN tests in the rules of fmax and fmin (np.isnan, np.logical_or) are no loop operations
# of the numba backend: their gradients are NumPy code there, which says so in its docstring
NUMPY_UNDER_NUMBA = {"fmax", "fmin"}


@pytest.mark.parametrize("f, x, y, node", PARAMS)
def test_numba_loops_compute_the_same_gradient(f, x, y, node):
    g = ad.grad(f, backend="numba")
    got = g(x, y)
    assert ("@numba.njit" in g.source) == (f.__name__ not in NUMPY_UNDER_NUMBA)
    np.testing.assert_allclose(got, ad.grad(f)(x, y), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("f, x, y, node", PARAMS)
def test_buffered_code_past_the_threshold(f, x, y, node):
    big_x = np.resize(x, 70 * 70).reshape(70, 70)
    big_y = np.resize(y, 70 * 70).reshape(70, 70)
    g = ad.grad(f)
    got = g(big_x, big_y)
    # a ufunc's result goes into a planned buffer (np.sinc, a plain function, takes no out=)
    assert ("out=_buf" in g.source) == ELEMENTWISE_BY_NAME[f.__name__].takes_out
    with unoptimised():
        np.testing.assert_allclose(got, ad.grad(f)(big_x, big_y), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("f, x, y, node", PARAMS)
def test_the_tangent_is_the_gradient_along_a_direction(f, x, y, node):
    v = np.linspace(-1.0, 1.0, x.size)
    _, tangent = ad.jvp(f)(x, y, tangents=v)
    assert float(tangent) == pytest.approx(float(ad.grad(f)(x, y) @ v), rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("f, x, y, node", PARAMS)
def test_cupy_code(f, x, y, node):
    cupy_code, numpy_code = compile_both(f, (x, y))
    assert_close(emulate(cupy_code)(x, y), numpy_code.function(x, y), 1e-12)


NAN = np.nan


WEIGHTS = np.array([1.0, 2.0, 3.0, 4.0, 5.0])


def fmax_weighted(x, y):
    return np.sum(np.fmax(x, y) * WEIGHTS)


def fmin_weighted(x, y):
    return np.sum(np.fmin(x, y) * WEIGHTS)


@pytest.mark.parametrize("which", ["fmax", "fmin"])
def test_a_nan_argument_gives_its_gradient_to_the_other(which):
    """fmax(x, NaN) is x: x takes the gradient, the NaN none; where both are NaN, x takes it
    (as PyTorch); ties split it, as maximum's do."""
    f = fmax_weighted if which == "fmax" else fmin_weighted
    x = np.array([1.0, NAN, NAN, 2.0, -1.0])
    y = np.array([NAN, 3.0, NAN, 2.0, 4.0])
    dx, dy = ad.grad(f, wrt=(0, 1))(x, y)
    smaller_wins = which == "fmin"
    np.testing.assert_array_equal(dx, [1.0, 0.0, 3.0, 2.0, 5.0 if smaller_wins else 0.0])
    np.testing.assert_array_equal(dy, [0.0, 2.0, 0.0, 2.0, 0.0 if smaller_wins else 5.0])
    tape_dx, tape_dy = tape.dynamic_grad(f, wrt=(0, 1))(x, y)
    np.testing.assert_array_equal(tape_dx, dx)
    np.testing.assert_array_equal(tape_dy, dy)
