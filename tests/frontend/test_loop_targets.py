"""After a ``for`` loop, its target holds its last iteration's value, as in Python; reading the
target after a loop that may break, or a name first bound inside a loop's body, is a located
error saying what to write."""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import CompileError
from tests.helpers import assert_matches_numerical


def counter_after_loop(x):
    i = 7
    for i in range(3):
        x = x * 2.0
    return np.sum(x) * i


def stepped_counter(x):
    for i in range(1, 8, 3):
        x = x * 1.1
    return np.sum(x) * i


def last_row(x):
    row = x[0] * 0.0
    for row in x:
        pass
    return np.sum(row * row)


def enumerate_targets(x):
    for i, row in enumerate(x):
        x = x * 1.5
    return np.sum(row * x) * i


def body_rebinds_target(x):
    i = 0
    for i in range(3):
        i = i * 2
        x = x * 1.5
    return np.sum(x) * i


def advice_for_break(x):
    last = 0
    for i in range(5):
        last = i
        if np.sum(x) > 10.0 * (i + 1):
            break
    return np.sum(x) * last


def hidden_state_first_bound_inside(x):
    for t in range(x.shape[0]):
        h = np.tanh(x[t] * 0.5 + 0.1 * t)
    return np.sum(h * h)


def bound_in_nested_loops(x):
    for i in range(2):
        for j in range(3):
            z = x * (i + j + 1.0)
            s = np.sum(z)
    return np.sum(z * x) + s


CASES = [counter_after_loop, stepped_counter, last_row, enumerate_targets, body_rebinds_target,
         advice_for_break]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("scale", [1.0, 3.0])
def test_the_target_after_the_loop_is_its_last_value(f, scale):
    x = np.arange(1.0, 7.0).reshape(3, 2) * scale
    value, dx = ad.value_and_grad(f)(x)
    assert np.isclose(value, f(x))
    assert_matches_numerical(f, (x,), (0,), (dx,))


def target_after_break(x):
    for i in range(3):
        if np.sum(x) > 100.0:
            break
    return np.sum(x) * i


def test_the_target_after_a_loop_that_may_break_is_a_located_error():
    with pytest.raises(CompileError) as info:
        ad.grad(target_after_break)(np.ones(3))
    text = str(info.value)
    assert "test_loop_targets.py" in text and "return np.sum(x) * i" in text
    assert "may break" in text and "set a variable before the loop" in text


def target_differs_by_path(x, y):
    for row in x:
        pass
    if np.sum(x) > 0:
        return np.sum(x * x)
    for row in y:
        pass
    return np.sum(row) + np.sum(x)


def target_read_after_paths_differ(x, y):
    row = np.sum(x)
    if np.sum(x) > 0:
        for row in y:
            pass
    return np.sum(row)


def test_a_name_of_two_shapes_on_two_paths_is_an_error_only_where_read():
    x, y = np.array([1.0, -2.0, 3.0]), np.arange(6.0).reshape(2, 3)
    for sign in (1.0, -1.0):
        dx = ad.grad(target_differs_by_path)(sign * x, y)
        assert_matches_numerical(target_differs_by_path, (sign * x, y), (0,), (dx,))
    with pytest.raises(CompileError) as info:
        ad.grad(target_read_after_paths_differ)(x, y)
    text = str(info.value)
    assert "return np.sum(row)" in text and "on one path through the `if` at line" in text


def first_bound_in_a_while(x):
    k = 0
    while k < 3:
        h = x * k
        k = k + 1
    return np.sum(h)


@pytest.mark.parametrize("f, line, kind", [
    (first_bound_in_a_while, "return np.sum(h)", "while"),
    (hidden_state_first_bound_inside, "return np.sum(h * h)", "for"),
    (bound_in_nested_loops, "return np.sum(z * x) + s", "for"),
])
def test_a_name_first_bound_in_a_loop_body_is_a_located_error(f, line, kind):
    with pytest.raises(CompileError) as info:
        ad.grad(f)(np.ones(3))
    text = str(info.value)
    assert line in text and f"first assigned inside the {kind} loop" in text
    assert "a starting value of the same shape and dtype before the loop" in text


def test_a_target_rebound_in_the_body_starts_from_the_first_iteration():
    """``row`` left a scalar by a loop over a vector, then the target of a loop over a
    matrix's rows that its body rebinds: what it held before is never read, so the two
    shapes need not join (found by tests/programs/test_random_control_flow.py)."""
    def f(x, z):
        total = 0.0
        for row in z:
            total = total + row
        for k, row in enumerate(x):
            row = row[::-1] * (k + 1.0)
            total = total + np.sum(row * row)
        return total + np.sum(row)
    x = np.array([[0.4, -0.7, 1.3], [-1.4, 0.9, 1.2]])
    z = np.array([1.0, -1.3, 0.6])
    dx, dz = ad.grad(f, wrt=(0, 1))(x, z)
    last = np.zeros_like(x)
    last[1] = 2.0
    want = np.stack([2.0 * x[0], 8.0 * x[1]]) + last
    np.testing.assert_allclose(dx, want)
    np.testing.assert_allclose(dz, np.ones(3))
    assert ad.value_and_grad(f)(x, z)[0] == pytest.approx(f(x, z))
