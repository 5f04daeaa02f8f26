"""Control flow nested in control flow: while loops inside for loops (a loop stacking a while
loop's residual lists), loops inside blocks that may not run, ``continue`` and ``break`` in a
for over a traced range (whose bound is evaluated once, as Python does, though the body rebinds
what it reads), and jumps under conditions on Python floats. Gradients against finite
differences and the dynamic tape, tangents (jvp) against the gradients, and Hessians (forward
over reverse, through the stacked lists) against finite differences of the gradient.
"""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from tests.helpers import assert_matches_numerical, numerical_grad
from tests.programs.test_random_control_flow import time_limit

X3 = np.array([1.0, -0.8, 0.4])
X4 = np.array([0.5, -1.0, 2.0, 0.3])


# ---- a while loop inside a for loop: the for loop stacks the while loop's lists -------------
def while_in_for(x):
    y = x
    for i in range(3):
        n = 0
        while np.sum(y * y) > 0.5 and n < 4:
            y = np.sin(y) * 0.9
            n = n + 1
        y = y + 0.3
    return np.sum(y * y)


def while_in_for_with_break(x):
    """The break puts the while loop in a branch: the other branch yields an empty list."""
    y = x
    for i in range(3):
        n = 0
        while np.sum(y * y) > 0.5 and n < 4:
            y = np.sin(y) * 0.9
            n = n + 1
        if np.sum(y) > 0.95:  # after the third while loop (X3)
            break
        y = y + 0.3
    return np.sum(y * y)


def while_in_branch_in_for(x):
    y = x
    for i in range(3):
        if np.sum(y) > 0.8:  # not in the first iteration (X3), then in every one
            n = 0
            while np.max(y) > 0.3 and n < 4:
                y = np.sin(y) * 0.9
                n = n + 1
        y = y + 0.25
    return np.sum(y * y)


def while_in_for_in_for(x):
    """Lists of lists of lists."""
    y = x
    for i in range(2):
        for j in range(2):
            n = 0
            while np.sum(y * y) > 0.3 and n < 3:
                y = np.sin(y) * 0.9
                n = n + 1
            y = y + 0.2 * (i + j)
    return np.sum(y * y)


def while_in_while(x):
    y = x
    m = 0
    while np.sum(y) > -2.0 and m < 3:
        n = 0
        while np.max(y) > 0.2 and n < 3:
            y = np.tanh(y) * 0.8
            n = n + 1
        y = y - 0.4
        m = m + 1
    return np.sum(y * y)


# ---- a loop in a block that may not run, followed there by another statement ----------------
def loop_in_branch_in_loop(x):
    y = x
    for i in range(3):
        if np.sum(y) > 100.0:  # never taken: the nested loop's values are never bound
            for j in range(2):
                y = np.sin(y)
            y = y * 2.0
        y = y + 0.1
    return np.sum(y * y)


def loop_in_while_that_does_not_run(x):
    y = x
    n = 0
    while np.sum(y) > 100.0 and n < 3:
        for j in range(2):
            y = np.sin(y)
        y = y * 2.0
        n = n + 1
    return np.sum(y * y)


def loop_in_branch_in_loop_taken_sometimes(x):
    y = x
    for i in range(3):
        if np.sum(y) > 0.0:
            a = y
            b = y * 0.5
            for j in range(2):
                a = a + np.sin(b)
                b = np.tanh(b)
            y = a * 0.5
        y = y - 0.4
    return np.sum(y * y)


# ---- continue in a for over a traced range (a counted while) ---------------------------------
def continue_in_traced_range(x):
    s = 0.0
    for i in range(int(np.sum(x > 0))):
        if np.sum(x * i) > 1.0:
            continue
        s = s + np.sum(np.sin(x) * i)
    return s


def continue_in_stepped_traced_range(x):
    s = 0.0
    for i in range(1, int(np.sum(x > 0)) + 3, 2):
        if np.sum(x * i) > 2.5:
            continue
        s = s + np.sum(np.sin(x) * i)
    return s


def continue_after_a_nested_loop_in_traced_range(x):
    y = x
    for i in range(int(np.sum(x > 0))):
        for j in range(2):
            y = np.tanh(y) + 0.1 * j
        if np.sum(y) > 1.3:  # from the second iteration on (X4)
            continue
        y = y * 1.1
    return np.sum(y * y)


# ---- a traced range bound evaluated once; break in a for over a traced range -----------------
def traced_bound_of_a_carried_variable(x):
    """Python evaluates ``range(...)`` once: 3 trips (X4), though ``v > 0.2`` then holds for
    fewer entries (re-evaluated, the bound would stop the loop after 2)."""
    v = x
    for i in range(int(np.sum(v > 0.2))):
        v = v * 0.5 + 0.05
    return np.sum(v * v)


def traced_bound_rebound_in_the_body(x):
    n = int(np.sum(x > 0))
    y = x
    for i in range(n):
        n = n - 1
        y = np.sin(y) + 0.1 * n
    return np.sum(y * y)


def break_in_traced_range(x):
    y = x
    for i in range(int(np.sum(x > 0))):
        y = np.tanh(y) * 1.3 + 0.1 * i
        if np.sum(y) > 2.0:  # in the second of three iterations (X4)
            break
        y = y + 0.2
    return np.sum(y * y)


def break_in_stepped_traced_range(x):
    s = 0.0
    for i in range(1, int(np.sum(x > 0)) + 4, 2):
        s = s + np.sum(np.sin(x) * i)
        if s > 2.0:  # at i = 3 of 1, 3, 5 (X4)
            break
    return s * s


def break_and_continue_in_traced_range(x):
    y = x - 0.5
    for i in range(int(np.sum(x > -2.0))):
        if np.sum(y) < 0.6:  # continues in the first iteration (X4)
            y = y + 0.4
            continue
        y = np.tanh(y) * 1.2
        if np.max(y) > 0.9:  # breaks in the second
            break
    return np.sum(y * y)


def break_of_a_loop_nested_in_traced_range(x):
    y = x
    for i in range(int(np.sum(x > 0))):
        for j in range(3):
            y = np.tanh(y) * 1.2
            if np.sum(y) > 1.3:  # not in the first outer iteration (X4), then at once
                break
        y = y + 0.1
    return np.sum(y * y)


# ---- break / continue under a condition on a Python float ------------------------------------
def jump_on_python_float(x, a):
    """``a * i > 0.5`` is a Python bool, computed in the branch the continue makes: the loop's
    adjoint needs it, so it is lifted out of that branch (False from the other one)."""
    y = x
    for i in range(5):
        y = np.sin(y) + a
        if np.sum(y) > 1.6:
            y = y * 0.5
            continue
        if a * i > 0.5:
            break
        y = y * 1.5
    return np.sum(y * y)


def jump_on_python_float_in_while(x, a):
    y = x
    n = 0
    while n < 4:
        n = n + 1
        if np.sum(y) > 3.0:
            continue
        y = y + np.sin(y) * a
        if a * n > 0.9:
            break
    return np.sum(y * y)


CASES = [
    (while_in_for, (X3,), (0,)),
    (while_in_for_with_break, (X3,), (0,)),
    (while_in_branch_in_for, (X3,), (0,)),
    (while_in_for_in_for, (X3,), (0,)),
    (while_in_while, (X3,), (0,)),
    (loop_in_branch_in_loop, (np.array([0.3, 0.1]),), (0,)),
    (loop_in_while_that_does_not_run, (X3,), (0,)),
    (loop_in_branch_in_loop_taken_sometimes, (X3,), (0,)),
    (continue_in_traced_range, (X4,), (0,)),
    (continue_in_stepped_traced_range, (X4,), (0,)),
    (continue_after_a_nested_loop_in_traced_range, (X4,), (0,)),
    (jump_on_python_float, (np.array([0.3, 0.1]), 0.3), (0, 1)),
    (jump_on_python_float, (np.array([0.3, 0.1]), 0.23), (0, 1)),
    (jump_on_python_float_in_while, (np.array([0.3, 0.1]), 0.35), (0, 1)),
    (traced_bound_of_a_carried_variable, (X4,), (0,)),
    (traced_bound_rebound_in_the_body, (X4,), (0,)),
    (break_in_traced_range, (X4,), (0,)),
    (break_in_traced_range, (X4 * 0.1,), (0,)),
    (break_in_stepped_traced_range, (X4,), (0,)),
    (break_and_continue_in_traced_range, (X4,), (0,)),
    (break_of_a_loop_nested_in_traced_range, (X4,), (0,)),
]
IDS = [f"{f.__name__}-{i}" for i, (f, _, _) in enumerate(CASES)]


@pytest.mark.parametrize("f, args, wrt", CASES, ids=IDS)
def test_gradient_matches_finite_differences_and_the_tape(f, args, wrt):
    with time_limit("the gradient"):  # a continue once skipped a counted while's increment
        grads = ad.grad(f, wrt=wrt)(*args)
    assert_matches_numerical(f, args, wrt, grads, rtol=1e-5, atol=1e-7)
    for c, d in zip(grads, tape.dynamic_grad(f, wrt=wrt)(*args)):
        np.testing.assert_allclose(c, d, rtol=1e-10, atol=1e-12)
    value, _ = ad.value_and_grad(f, wrt=wrt)(*args)
    assert float(value) == pytest.approx(float(f(*args)), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("f, args, wrt", CASES, ids=IDS)
def test_jvp_agrees_with_the_gradient(f, args, wrt):
    rng = np.random.default_rng(3)
    tangents = tuple(float(rng.standard_normal()) if isinstance(args[i], float)
                     else rng.standard_normal(np.shape(args[i])) for i in wrt)
    with time_limit("the jvp"):
        value, tangent = ad.jvp(f, wrt=wrt)(*args, tangents=tangents)
    grads = ad.grad(f, wrt=wrt)(*args)
    expected = sum(float(np.sum(g * t)) for g, t in zip(grads, tangents))
    assert float(tangent) == pytest.approx(expected, rel=1e-10, abs=1e-12)
    assert float(value) == pytest.approx(float(f(*args)), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("f", [while_in_for, while_in_for_with_break, while_in_branch_in_for,
                               while_in_for_in_for, while_in_while])
def test_hessian_through_stacked_lists(f):
    """Forward over reverse pushes tangents through the lists of lists the adjoint reads."""
    hessian = ad.hessian(f)(X3)
    grad = ad.grad(f)
    expected = np.stack([numerical_grad(lambda x, j=j: grad(x)[j], (X3,), 0)
                         for j in range(3)])
    np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-7)


def test_a_for_loop_stacks_a_while_loops_lists_in_a_list():
    g = ad.grad(while_in_for)
    g(X3)
    assert "yss = []" in g.source and "yss.append(ys)" in g.source
    assert "list[list[f64[3]]]" in str(g.ir)


# ---- loops that run no times: the loop does nothing, gradients flow around it ----------------
def range_zero(x):
    s = x * 2.0
    for i in range(0):
        s = s * x + 1.0
    return np.sum(s * np.sin(x))


def range_backwards(x):
    s = x * 2.0
    for i in range(5, 2):
        s = s * np.sin(x)
    return np.sum(s * s)


def range_of_static_argument(x, n):
    s = x * 2.0
    for i in range(n):
        s = s * x
    return np.sum(s * s) + n


def traced_range_empty_at_run_time(x):
    s = x * 2.0
    for i in range(np.sum(x > 100.0)):
        s = s * x
    return np.sum(s * s)


def over_an_empty_array(x, A):
    s = x * 2.0
    for row in A:
        s = s + row * x
    return np.sum(s * np.cos(x))


def empty_loop_between_loops(x):
    s = x * 1.0
    for i in range(2):
        s = s * x
        for j in range(i, i):
            s = s + 1.0
    return np.sum(s)


EMPTY_LOOPS = [
    (range_zero, (X3,)),
    (range_backwards, (X3,)),
    (range_of_static_argument, (X3, 0)),
    (traced_range_empty_at_run_time, (X3,)),
    (over_an_empty_array, (X3, np.zeros((0, 3)))),
    (empty_loop_between_loops, (X3,)),
]


@pytest.mark.parametrize("f, args", EMPTY_LOOPS, ids=[f.__name__ for f, _ in EMPTY_LOOPS])
def test_a_loop_that_runs_no_times(f, args):
    """It once crashed while compiling (IndexError loading a residual from a 0-row stack).
    Value against NumPy, gradient against finite differences and the tape, tangent against
    the gradient."""
    value, grad = ad.value_and_grad(f)(*args)
    assert float(value) == pytest.approx(float(f(*args)), rel=1e-13)
    assert_matches_numerical(f, args, (0,), (grad,), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grad, tape.dynamic_grad(f)(*args), rtol=1e-12, atol=1e-14)
    t = np.array([0.3, -1.0, 0.7])
    primal, tangent = ad.jvp(f)(*args, tangents=t)
    assert float(primal) == pytest.approx(float(f(*args)), rel=1e-13)
    assert float(tangent) == pytest.approx(float(grad @ t), rel=1e-12, abs=1e-14)


def test_a_static_empty_loop_leaves_no_loop_in_the_code():
    g = ad.grad(range_zero)
    g(X3)
    assert "for " not in g.source and "while " not in g.source
