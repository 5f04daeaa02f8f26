"""Tuples and lists carried through loops and joined after branches, entry by entry, and the
Python values (str, None) that cannot be: a user trial found such state silently dropped by
loops (gradient 0, the initial value) and crashing branches. Gradients against finite
differences, values against the plain function, errors by type, variable and line."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import adcompiler as ad

from tests.helpers import assert_matches_numerical, numerical_grad

X = np.array([1.0, 2.0, -0.5])


# ---- loops carrying tuples and lists ---------------------------------------------------------
def oscillator(k, x0):
    state = (x0, 0.0)
    for i in range(3):
        x, v = state
        state = (x + 0.1 * v, v - 0.1 * k * x)
    return state[0] ** 2


def step(state, k):
    x, v = state
    return (x + 0.1 * v, v - 0.1 * k * x)


def energy_after(k, x0):
    s = (x0, np.zeros_like(x0))
    for i in range(3):
        s = step(s, k)
    return np.sum(s[0] ** 2)


def list_state(k, x0):
    s = [x0, np.zeros_like(x0)]
    for i in range(4):
        s = [s[0] + 0.1 * s[1], s[1] - 0.1 * k * s[0]]
    return np.sum(s[0] ** 2 + s[1])


def moments(x):
    acc = (0.0, 0.0)
    for xi in x:
        acc = (acc[0] + xi, acc[1] + xi * xi)
    mean = acc[0] / x.shape[0]
    return acc[1] / x.shape[0] - mean * mean


def while_state(k, x0):
    s = (x0, 0.0)
    n = 0
    while s[0] > 0.2 and n < 50:
        s = step(s, k)
        n = n + 1
    return s[0] + s[1]


def with_break(k, x0):
    s = (x0, 0.0)
    for i in range(20):
        s = step(s, k)
        if s[0] < 0.5:
            break
    return s[0] * s[1]


def with_continue(x):
    acc = (0.0, 1.0)
    for i in range(x.shape[0]):
        if x[i] < 0.0:
            continue
        acc = (acc[0] + x[i] ** 2, acc[1] * x[i])
    return acc[0] + acc[1]


def nested(x):
    s = (x, 0.0)
    for i in range(2):
        for j in range(3):
            s = (s[0] * 0.9 + 0.1 * s[1], s[1] + np.sum(s[0]) * 0.05)
    return np.sum(s[0]) * s[1]


def nested_structure(x):
    s = ((x, 1.0), "euler", 2)
    for i in range(3):
        (y, c), method, order = s
        s = ((y * c + 0.1, c * 0.5 + np.sum(y) * 0.01), method, order)
    return np.sum(s[0][0]) + s[0][1] * s[2]


@pytest.mark.parametrize("f, args, wrt", [
    (oscillator, (0.7, 1.0), (0, 1)),
    (energy_after, (0.7, X), (0, 1)),
    (list_state, (0.7, X), (0, 1)),
    (moments, (X,), (0,)),
    (while_state, (0.7, 1.0), (0, 1)),
    (with_break, (0.7, 1.0), (0, 1)),
    (with_continue, (X,), (0,)),
    (nested, (X,), (0,)),
    (nested_structure, (X,), (0,)),
], ids=lambda p: getattr(p, "__name__", ""))
def test_loop_carries_tuple(f, args, wrt):
    value, grads = ad.value_and_grad(f, wrt=wrt)(*args)
    np.testing.assert_allclose(value, f(*args), rtol=1e-12)
    assert_matches_numerical(f, args, wrt, grads, rtol=1e-5, atol=1e-7)


def test_jvp_through_tuple_loop():
    t = np.array([0.3, -1.0, 0.5])
    value, tangent = ad.jvp(energy_after, wrt=(1,))(0.7, X, tangents=(t,))
    h = 1e-6
    fd = (energy_after(0.7, X + h * t) - energy_after(0.7, X - h * t)) / (2 * h)
    np.testing.assert_allclose(value, energy_after(0.7, X), rtol=1e-12)
    np.testing.assert_allclose(tangent, fd, rtol=1e-6)


def test_hessian_through_tuple_loop():
    H = ad.hessian(nested)(X)
    expected = np.array([numerical_grad(lambda x: ad.grad(nested)(x)[i], [X], 0)
                         for i in range(X.shape[0])])
    np.testing.assert_allclose(H, expected, rtol=1e-5, atol=1e-6)


# ---- branches joining tuples -------------------------------------------------------------------
def tuple_in_if(k, x0):
    s = (x0, 0.0)
    if k > 0.5:
        s = (x0 * k, 1.0)
    return s[0] ** 2 + s[1] * k


def tuple_in_if_with_constant(k, x):
    s = (x, "tag", 2.0)
    if k > 0.5:
        s = (x * k, "tag", 2.0)
    else:
        s = (x - k, "tag", 3.0)
    assert s[1] == "tag"
    return np.sum(s[0]) * s[2]


def tuple_in_if_in_loop(k, x):
    s = (x, 0.0)
    for i in range(3):
        if np.sum(s[0]) > 0.0:
            s = (s[0] * k, s[1] + 1.0)
        else:
            s = (s[0] + k, s[1] - 1.0)
    return np.sum(s[0]) * s[1]


def tuple_in_expression(k, x):
    s = (x * k, 1.0) if k > 0.5 else (x, 2.0)
    return np.sum(s[0]) * s[1]


@pytest.mark.parametrize("f, args", [
    (tuple_in_if, (0.7, 1.0)), (tuple_in_if, (0.3, 1.0)),
    (tuple_in_expression, (0.7, X)), (tuple_in_expression, (0.3, X)),
    (tuple_in_if_with_constant, (0.7, X)), (tuple_in_if_with_constant, (0.3, X)),
    (tuple_in_if_in_loop, (0.9, X)), (tuple_in_if_in_loop, (-0.4, X)),
])
def test_branch_joins_tuple(f, args):
    value, grads = ad.value_and_grad(f, wrt=(0, 1))(*args)
    np.testing.assert_allclose(value, f(*args), rtol=1e-12)
    assert_matches_numerical(f, args, (0, 1), grads, rtol=1e-5, atol=1e-7)


# ---- Python values that do not change, or change before any read ------------------------------
def str_invariant(x):
    mode = "explicit"
    y = x
    for i in range(3):
        mode = "explicit"
        y = y * 0.5 if mode == "explicit" else y
    return np.sum(y) if mode == "explicit" else 0.0


def str_rebound_first(x):
    label = "start"
    y = x
    for i in range(3):
        label = "running"
        y = y * 1.5
    return np.sum(y) if label == "running" else -np.sum(y)


def str_same_in_while(x):
    mode = "halve"
    y = x
    while np.sum(y * y) > 0.1:
        mode = "halve"
        y = y * 0.5
    return np.sum(y) if mode == "halve" else 0.0


@pytest.mark.parametrize("f", [str_invariant, str_rebound_first, str_same_in_while])
def test_python_value_not_read_across_iterations(f):
    value, g = ad.value_and_grad(f)(X)
    np.testing.assert_allclose(value, f(X), rtol=1e-12)
    assert_matches_numerical(f, (X,), (0,), (g,))


# ---- errors ------------------------------------------------------------------------------------
def phase_change(T):
    phase = "solid"
    h = 0.0
    for i in range(5):
        T = T + 1.0
        if phase == "solid":
            h = h + 2.0 * T
        else:
            h = h + 4.0 * T
        if T > 3.0:
            phase = "liquid"
    return h


def str_changes_in_loop(x):
    mode = "first"
    y = x
    for i in range(3):
        if mode == "first":
            y = y * 2.0
        mode = "later"
    return np.sum(y)


def none_before_loop(x):
    prev = None
    for i in range(3):
        prev = x * (i + 1)
    return np.sum(prev)


def growing_tuple(x):
    acc = (x,)
    for i in range(3):
        acc = acc + (x * i,)
    return np.sum(acc[0])


def constant_entry_changes(x):
    s = (x, "a")
    for i in range(3):
        s = (s[0] * 2.0, "b")
    return np.sum(s[0])


def tuple_length_differs_in_if(k, x):
    s = (x, 1.0)
    y = x * k
    if k > 0.5:
        s = (x, 1.0, 2.0)  # noqa: F841 - never read: no error
        y = y * 2.0
    return np.sum(y)


def tuple_length_differs_read(k, x):
    s = (x, 1.0)
    if k > 0.5:
        s = (x, 1.0, 2.0)
    y = s[0] * k
    return np.sum(y)


def str_in_if(k, x):
    kind = "a"
    if k > 0.5:
        kind = "b"
    return np.sum(x) if kind == "a" else np.sum(2 * x)


def str_changes_in_while(x):
    mode = "start"
    y = x
    while np.sum(y * y) > 0.1:
        mode = "running"
        y = y * 0.5
    return np.sum(y) if mode == "running" else 0.0


def none_in_if(k, x):
    prev = None
    if k > 0.5:
        prev = x * k
    else:
        prev = x
    y = x * 2.0
    if k > 0.2:
        prev = None
    return np.sum(prev * y)


def tuple_first_bound_in_loop(x):
    y = x
    for i in range(3):
        pair = (y * 2.0, i)
        y = pair[0]
    return np.sum(pair[0])


def line_of(f, text):
    lines, first = inspect.getsourcelines(f)
    return first + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("f, args, name, at, words", [
    (phase_change, (1.0,), "phase", 'if phase == "solid"', ["line", "np.where"]),
    (str_changes_in_loop, (X,), "mode", 'if mode == "first"', ["'first'", "'later'"]),
    (none_before_loop, (X,), "prev", "for i in range(3)", ["None", "np.zeros"]),
    (growing_tuple, (X,), "acc", "for i in range(3)", ["tuple of 1", "tuple of 2"]),
    (constant_entry_changes, (X,), "s[1]", "for i in range(3)", ["'a'", "'b'"]),
    (tuple_length_differs_read, (0.7, X), "s", "y = s[0]", ["tuple of 2", "tuple of 3"]),
    (str_in_if, (0.7, X), "kind", 'if kind == "a"', ["np.where"]),
    (str_changes_in_while, (X,), "mode", 'if mode == "running"', ["'start'", "'running'"]),
    (none_in_if, (0.7, X), "prev", "return np.sum(prev * y)", ["None", "np.zeros_like"]),
    (tuple_first_bound_in_loop, (X,), "pair", "return np.sum(pair[0])", ["first assigned"]),
], ids=lambda p: getattr(p, "__name__", ""))
def test_located_error(f, args, name, at, words):
    with pytest.raises(ad.CompileError) as info:
        ad.grad(f)(*args)
    err = info.value
    assert f"`{name}`" in err.message
    assert err.filename == __file__
    assert err.lineno == line_of(f, at), str(err)
    for word in words:
        assert word in str(err), str(err)


def phase_change_flag(T):
    liquid = False
    h = 0.0
    for i in range(5):
        T = T + 1.0
        h = h + np.where(liquid, 4.0, 2.0) * T
        if T > 3.0:
            liquid = True
    return h


def test_phase_change_as_the_hint_says():
    value, g = ad.value_and_grad(phase_change_flag)(1.0)
    assert value == phase_change_flag(1.0) == 62.0
    np.testing.assert_allclose(g, 14.0)


def test_phase_error_names_the_if():
    with pytest.raises(ad.CompileError) as info:
        ad.grad(phase_change)(1.0)
    assert f"line {line_of(phase_change, 'if T > 3.0')}" in info.value.message


def test_unread_diverging_tuple_is_fine():
    """A tuple of different lengths on the two paths is an error only where it is read."""
    g = ad.grad(tuple_length_differs_in_if, wrt=(1,))(0.7, X)
    np.testing.assert_allclose(g[0], np.full(3, 1.4))
