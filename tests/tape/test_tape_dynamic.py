"""``tape.dynamic_grad``: ``adcompiler.grad``'s calling convention, recorded on every call.

Python control flow and in-place updates inside the function work; gradients have their inputs'
types, shapes and dtypes; random programs (``tests/strategies.py``) give the same gradients on
the tape, through the compiler, and by central finite differences.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings

import adcompiler
from adcompiler import tape

from tests.helpers import examples, numerical_grad
from tests.strategies import load, programs
from tests.programs.test_random_programs import _smooth_here, finite_differences


def seed_loss(w1, w2, w3, inp):
    l1 = inp * w1
    l2 = l1 + w2
    l3 = l1 * w3
    l4 = l2 * l3
    return l4.mean()


def seed_f(x1, x2):
    return np.log(x1) + x1 * x2 - np.sin(x2)


# ---- the calling convention ------------------------------------------------------------------
def test_seed_examples_match_the_compiler():
    args = (2.0, 3.0, 4.0, np.ones((2, 2)))
    dynamic = tape.dynamic_grad(seed_loss, wrt=("w1", "w2", "w3"))(*args)
    assert dynamic == (28.0, 8.0, 10.0) and all(type(g) is float for g in dynamic)
    assert dynamic == adcompiler.grad(seed_loss, wrt=(0, 1, 2))(*args)
    inp = tape.dynamic_grad(seed_loss, wrt="inp")(*args)
    np.testing.assert_array_equal(inp, np.full((2, 2), 14.0))
    g = tape.dynamic_grad(seed_f, wrt=(0, 1))(2.0, 5.0)
    assert g == pytest.approx((5.5, 2.0 - math.cos(5.0)), rel=1e-15)
    assert g == pytest.approx(adcompiler.grad(seed_f, wrt=(0, 1))(2.0, 5.0), rel=1e-15)


def test_wrt_forms_and_result_shapes():
    def f(a, b, c=2.0):
        return np.sum(a * b) * c

    a, b = np.arange(3.0), np.ones(3)
    np.testing.assert_array_equal(tape.dynamic_grad(f)(a, b), b * 2)          # the first
    ga, gc = tape.dynamic_grad(f, wrt=("a", "c"))(a, b)
    np.testing.assert_array_equal(ga, b * 2)
    assert gc == 3.0 and type(gc) is float
    (gb,) = tape.dynamic_grad(f, wrt=[1])(a, b)                               # a list: a tuple
    np.testing.assert_array_equal(gb, a * 2)
    assert tape.dynamic_grad(f, wrt=-1)(a, b, c=1.5) == 3.0

    @tape.dynamic_grad(wrt="b")
    def decorated(a, b):
        return np.sum(a * b)
    np.testing.assert_array_equal(decorated(a, b), a)
    assert repr(decorated) == "<adcompiler.tape.dynamic_grad of " \
        "test_wrt_forms_and_result_shapes.<locals>.decorated wrt ('b',)>"


@pytest.mark.parametrize("x", [np.ones((2, 3), np.float32), np.array(1.5), np.float32(1.5),
                               np.ones(4)])
def test_a_gradient_has_its_inputs_type_shape_and_dtype(x):
    g = tape.dynamic_grad(lambda v: np.sum(v * v))(x)
    assert type(g) is type(x) and np.shape(g) == np.shape(x) and g.dtype == x.dtype
    np.testing.assert_array_equal(g, 2 * x)


def test_a_numpy_float64_is_a_float_as_for_the_compiler():
    square = lambda v: v * v     # noqa: E731
    g = tape.dynamic_grad(square)(np.float64(1.5))
    assert type(g) is float and g == 3.0


def test_errors_like_the_compiler():
    f = tape.dynamic_grad(lambda x: np.sum(x))
    with pytest.raises(TypeError, match="it is an integer"):
        f(3)
    with pytest.raises(TypeError, match="dtype int64"):
        f(np.arange(3))
    assert tape.dynamic_grad(lambda x: x[0] * x[1])([2.0, 3.0]) == [3.0, 2.0]  # a container
    with pytest.raises(TypeError, match=r"'x\[1\]': it is an integer"):
        f([1.0, 2])
    with pytest.raises(TypeError, match=r"returns an array of shape \(3,\)"):
        tape.dynamic_grad(lambda x: x * 2)(np.ones(3))
    with pytest.raises(ValueError, match="not a parameter"):
        tape.dynamic_grad(lambda x: x, wrt="y")


def test_math_on_a_traced_value_raises_clearly():
    def f(x):
        return math.exp(x) + x

    with pytest.raises(RuntimeError, match=r"math\.exp and the other math functions.*np\.exp"):
        tape.dynamic_grad(f)(1.0)
    assert tape.dynamic_grad(lambda x: np.exp(x) + x)(1.0) == pytest.approx(math.e + 1)


def test_constant_results_have_zero_gradients():
    assert tape.dynamic_grad(lambda x: 3.0)(1.0) == 0.0
    np.testing.assert_array_equal(tape.dynamic_grad(lambda x: np.sum(x.detach()))(np.ones(2)),
                                  [0.0, 0.0])


# ---- it is dynamic ---------------------------------------------------------------------------
def newton_sqrt(a, steps):
    """Control flow on values: iterate until converged, branch on the sign."""
    x = a if a > 1 else 1.0 * a + 1.0
    for _ in range(steps):
        x = 0.5 * (x + a / x)
        if abs(x * x - a) < 1e-12:
            break
    return x


def test_control_flow():
    for a in (0.3, 2.0, 9.0):
        g = tape.dynamic_grad(newton_sqrt)(a, 40)
        assert g == pytest.approx(0.5 / math.sqrt(a), rel=1e-9)

    def collatz_like(x, n):
        total = x * 0.0
        while n > 1:
            total = total + (np.sin(x) if n % 2 else x * x)
            n = n // 2 if n % 2 == 0 else 3 * n + 1
        return np.sum(total)

    xv = np.array([0.2, -0.4])
    g = tape.dynamic_grad(collatz_like)(xv, 6)
    np.testing.assert_allclose(g, finite_differences(collatz_like, (xv, 6), 0), rtol=1e-7)


def test_in_place_updates_inside_the_function():
    def f(x, w):
        y = x.copy()
        y[0] = y[1] * w                  # subscript assignment
        y += np.tanh(y)                  # an update of a value whose adjoint saved it
        buf = np.zeros_like(x)           # a fresh buffer
        for i in range(len(x)):
            buf[i] = y[i] * x[len(x) - 1 - i]
        x *= 2.0                         # the parameter itself
        return np.sum(buf * x)

    xv, wv = np.array([0.5, -1.0, 2.0]), 1.5
    before = xv.copy()
    gx, gw = tape.dynamic_grad(f, wrt=(0, 1))(xv, wv)
    np.testing.assert_array_equal(xv, before)                   # the caller's array is intact
    np.testing.assert_allclose(gx, numerical_grad(f, [xv, wv], 0), rtol=1e-7)
    assert gw == pytest.approx(numerical_grad(f, [xv, wv], 1), rel=1e-7)   # (copies f's args)


def test_the_same_updates_raise_on_a_bare_tape():
    """Outside dynamic_grad the tape is PyTorch: overwriting a saved value is an error."""
    x = tape.tensor([0.5, -1.0], requires_grad=True)
    y = np.tanh(x)
    z = y.sum()
    y += 1.0
    with pytest.raises(RuntimeError, match="output 0 of TanhBackward0, is at version 1"):
        z.backward()


def test_second_derivatives_by_nesting():
    d2 = tape.dynamic_grad(tape.dynamic_grad(lambda x: x ** 3 * np.sin(x)))
    x = 0.7
    expected = 6 * x * math.sin(x) + 6 * x ** 2 * math.cos(x) - x ** 3 * math.sin(x)
    assert d2(x) == pytest.approx(expected, rel=1e-12)
    hessian_diag = tape.dynamic_grad(lambda v: np.sum(tape.dynamic_grad(
        lambda u: np.sum(u ** 4))(v)))
    np.testing.assert_allclose(hessian_diag(np.array([1.0, 2.0])), [12.0, 48.0])


def test_value_and_grad():
    value, grads = tape.dynamic_value_and_grad(seed_f, wrt=(0, 1))(2.0, 5.0)
    assert value == pytest.approx(11.6521, abs=1e-4) and grads[0] == pytest.approx(5.5)


# ---- random programs: the tape, the compiler and finite differences agree --------------------
RTOL, ATOL = 1e-5, 1e-6
MATH_CALL = re.compile(r"math\.\w+\(")


def _check_program(f, args, source, compare_compiler):
    body = source.split("def f(x, y, z):")[1]
    grad = tape.dynamic_grad(f, wrt=(0, 1, 2))
    if MATH_CALL.search(body):          # math.* would drop the gradient: a clear error instead
        with pytest.raises(RuntimeError, match="would drop its gradient silently"):
            grad(*args)
        return
    grads = grad(*args)
    compiled = adcompiler.grad(f, wrt=(0, 1, 2))(*args) if compare_compiler else grads
    for i, (x, g, c) in enumerate(zip(args, grads, compiled)):
        assert type(g) is type(x) and np.shape(g) == np.shape(x)
        assert np.result_type(g) == np.result_type(x)
        np.testing.assert_allclose(g, c, rtol=1e-9, atol=1e-11, err_msg="tape vs compiler")
        expected = finite_differences(f, args, i)
        scale = ATOL * (1.0 + np.max(np.abs(expected), initial=0.0))
        if not np.allclose(g, expected, rtol=RTOL, atol=scale):
            if not _smooth_here(f, args, i):
                reject()
            np.testing.assert_allclose(g, expected, rtol=RTOL, atol=scale,
                                       err_msg=f"gradient with respect to argument {i}")


@settings(max_examples=examples(120, 40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(program=programs())
def test_random_programs_on_the_tape(program, tmp_path):
    source, f, args = load(program, tmp_path)
    _check_program(f, args, source, compare_compiler=False)
    np.testing.assert_equal(args, program.args)          # the inputs are left alone


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(program=programs(max_statements=5))
def test_random_programs_tape_against_compiler(program, tmp_path):
    source, f, args = load(program, tmp_path)
    _check_program(f, args, source, compare_compiler=True)
