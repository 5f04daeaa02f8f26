"""Control flow compiled statically: if/else on data, for loops over ranges, arrays, enumerate
and zip, nested loops and branches, helper calls inside them; gradients against finite
differences, and the shape of the generated code (loops stay loops, the adjoint runs reversed).
"""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from tests.helpers import assert_matches_numerical

RNG = np.random.default_rng(7)


def branch(x, w):
    y = x * w
    if np.sum(y) > 0:
        y = np.tanh(y) * 2.0
    else:
        y = y * y
    return y.sum()


def elif_chain(x):
    s = np.sum(x)
    if s > 1.0:
        y = x * 3.0
    elif s > -1.0:
        y = np.sin(x)
    else:
        y = x * x
    return np.sum(y)


def branch_on_python_float(a, x):
    if a > 0.5:
        b = a * a
    else:
        b = -a
    return b * np.sum(x)


def static_branch(x, use_tanh):
    if use_tanh:
        return np.tanh(x).sum()
    return np.sin(x).sum()


def one_sided_if(x):
    y = x * 2.0
    if np.max(x) > 0.0:
        y = y + np.exp(x)
    return np.sum(y * y)


def rnn(h, W, xs):
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W + xs[t])
    return np.sum(h * h)


def accumulate(x):
    s = 0.0
    for i in range(4):
        s = s + np.sum(x * i)
    return s


def over_rows(X, w):
    total = 0.0
    for row in X:
        total = total + np.tanh(row @ w)
    return total


def with_enumerate_and_zip(X, w):
    acc = np.zeros(3)
    for i, (row, weight) in enumerate(zip(X, w)):
        acc = acc + row * weight * (i + 1)
    return np.sum(acc * acc)


def nested_loops(x):
    y = x
    for i in range(2):
        for j in range(3):
            y = np.sin(y) + 0.1 * j
    return y.sum()


def branch_in_loop(x):
    y = x
    for i in range(3):
        if np.sum(y) > 0:
            y = y * 0.5
        else:
            y = y - 1.0
    return np.sum(y * y)


def cell(h, W):
    return np.tanh(h @ W)


def helper_in_loop(h, W):
    for _ in range(3):
        h = cell(h, W)
    return h.sum()


def stepped_range(x):
    y = x
    for i in range(5, 0, -2):
        y = y * i + np.cos(y)
    return y.sum()


CASES = [
    (branch, (RNG.standard_normal(3), RNG.standard_normal(3)), (0, 1)),
    (branch, (-np.abs(RNG.standard_normal(3)), np.abs(RNG.standard_normal(3))), (0, 1)),
    (elif_chain, (np.full(3, 0.6),), (0,)),
    (elif_chain, (np.full(3, 0.1),), (0,)),
    (elif_chain, (np.full(3, -0.6),), (0,)),
    (branch_on_python_float, (0.8, RNG.standard_normal(4)), (0, 1)),
    (branch_on_python_float, (0.2, RNG.standard_normal(4)), (0, 1)),
    (one_sided_if, (RNG.standard_normal(3),), (0,)),
    (one_sided_if, (-np.abs(RNG.standard_normal(3)),), (0,)),
    (rnn, (RNG.standard_normal((2, 3)), RNG.standard_normal((3, 3)) * 0.5,
           RNG.standard_normal((4, 2, 3))), (0, 1, 2)),
    (accumulate, (RNG.standard_normal(3),), (0,)),
    (over_rows, (RNG.standard_normal((4, 3)), RNG.standard_normal(3)), (0, 1)),
    (with_enumerate_and_zip, (RNG.standard_normal((4, 3)), RNG.standard_normal(4)), (0, 1)),
    (nested_loops, (RNG.standard_normal(3),), (0,)),
    (branch_in_loop, (RNG.standard_normal(3),), (0,)),
    (branch_in_loop, (np.full(3, 2.0),), (0,)),
    (helper_in_loop, (RNG.standard_normal((2, 3)), RNG.standard_normal((3, 3)) * 0.5), (0, 1)),
    (stepped_range, (RNG.standard_normal(3),), (0,)),
]


@pytest.mark.parametrize("f, args, wrt", CASES, ids=[f"{c[0].__name__}-{i}"
                                                      for i, c in enumerate(CASES)])
def test_gradient_matches_finite_differences(f, args, wrt):
    grads = ad.grad(f, wrt=wrt)(*args)
    assert_matches_numerical(f, args, wrt, grads, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("use_tanh, fn", [(True, np.tanh), (False, np.sin)])
def test_static_condition_compiles_one_branch(use_tanh, fn):
    g = ad.grad(static_branch)
    x = RNG.standard_normal(3)
    expected = (1 - np.tanh(x) ** 2) if use_tanh else np.cos(x)
    np.testing.assert_allclose(g(x, use_tanh), expected)
    assert "if " not in g.source  # decided while compiling: no branch in the code


def test_value_and_grad_of_a_loop():
    h, W, xs = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 3)) * 0.5, RNG.standard_normal((4, 2, 3))
    value, grads = ad.value_and_grad(rnn, wrt=(0, 1))(h, W, xs)
    assert value == pytest.approx(rnn(h, W, xs), rel=1e-12)
    assert_matches_numerical(rnn, (h, W, xs), (0, 1), grads, rtol=1e-5)


def test_loops_stay_loops_and_the_adjoint_runs_in_reverse():
    g = ad.grad(rnn, wrt=(0, 1))
    g(RNG.standard_normal((2, 3)), RNG.standard_normal((3, 3)), RNG.standard_normal((4, 2, 3)))
    src = g.source
    assert src.count("for t in range(4):") == 1
    assert "for t_1 in reversed(range(4)):" in src or "in reversed(range(4)):" in src
    assert "# grad of: for t in range(xs.shape[0]):" in src
    # residuals are preallocated from the trip count, not appended to a list
    assert "np.empty((4, 2, 3), dtype=np.float64)" in src
    assert ".append(" not in src


def test_branch_adjoint_replays_the_branch_taken():
    g = ad.grad(branch, wrt=(0, 1))
    g(RNG.standard_normal(3), RNG.standard_normal(3))
    assert g.source.count("if t1:") == 2  # the forward branch and its adjoint, same predicate
    assert "# grad of: if np.sum(y) > 0:" in g.source


def test_variable_changing_shape_in_a_loop_is_a_located_error():
    with pytest.raises(ad.CompileError) as info:
        ad.grad(grows)(np.ones(3))
    assert "`y` is" in info.value.message and info.value.lineno == GROWS_LINE


def grows(x):
    y = x
    for i in range(2):
        y = np.concatenate([y, x])
    return y.sum()


GROWS_LINE = grows.__code__.co_firstlineno + 2


def early_return(x):
    s = np.sum(x)
    if s > 0:
        return s * s
    y = np.exp(x)
    return np.sum(y)


def nested_early_return(x, a):
    if a > 0.0:
        if np.max(x) > 1.0:
            return np.sum(x) * a
        y = x * a
    else:
        y = np.sin(x)
    return np.sum(y * y)


def same_name_returned_on_both_paths(x):
    """Both paths return the value ``v`` had before the ``if``: nothing to merge."""
    v = np.sum(np.sin(x))
    if v > 0.5:
        return v
    return v


def same_name_returned_from_a_nested_branch(x, a):
    v = np.sum(np.sin(x)) * a
    if a > 0.0:
        if np.max(x) > 1.0:
            return v
        v = v * v
    return v


def same_value_bound_in_both_branches(x):
    """Both branches bind ``y`` to the one value ``b``: ``y`` is ``b`` after the ``if``."""
    y = x
    b = np.sin(x)
    if np.sum(x) > 0:
        y = b
    else:
        y = b
    return np.sum(y * y)


@pytest.mark.parametrize("f, args, wrt", [
    (early_return, (np.abs(RNG.standard_normal(3)),), (0,)),
    (early_return, (-np.abs(RNG.standard_normal(3)),), (0,)),
    (nested_early_return, (np.array([2.0, 0.5, 0.1]), 0.7), (0, 1)),
    (nested_early_return, (np.array([0.2, 0.5, 0.1]), 0.7), (0, 1)),
    (nested_early_return, (np.array([0.2, 0.5, 0.1]), -0.7), (0, 1)),
    (same_name_returned_on_both_paths, (np.array([0.5, -1.0, 2.0]),), (0,)),
    (same_name_returned_on_both_paths, (np.array([-0.5, 1.0, -2.0]),), (0,)),
    (same_name_returned_from_a_nested_branch, (np.array([2.0, 0.5, 0.1]), 0.7), (0, 1)),
    (same_name_returned_from_a_nested_branch, (np.array([0.2, 0.5, 0.1]), 0.7), (0, 1)),
    (same_name_returned_from_a_nested_branch, (np.array([0.2, 0.5, 0.1]), -0.7), (0, 1)),
    (same_value_bound_in_both_branches, (np.array([0.5, -1.0, 2.0]),), (0,)),
])
def test_early_return(f, args, wrt):
    value, grads = ad.value_and_grad(f, wrt=wrt)(*args)
    assert float(value) == pytest.approx(float(f(*args)), rel=1e-12, abs=1e-12)
    assert_matches_numerical(f, args, wrt, grads, rtol=1e-5, atol=1e-7)
    for c, d in zip(grads, tape.dynamic_grad(f, wrt=wrt)(*args)):
        np.testing.assert_allclose(c, d, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("f, args", [
    (same_name_returned_on_both_paths, (np.array([0.5, -1.0, 2.0]),)),
    (same_name_returned_from_a_nested_branch, (np.array([0.2, 0.5, 0.1]), 0.7)),
    (same_value_bound_in_both_branches, (np.array([0.5, -1.0, 2.0]),)),
])
def test_jvp_of_one_value_on_both_paths(f, args):
    tangent = np.array([0.3, -1.2, 0.7])
    value, derivative = ad.jvp(f)(*args, tangents=tangent)
    assert float(value) == pytest.approx(float(f(*args)), rel=1e-12)
    assert float(derivative) == pytest.approx(float(np.sum(ad.grad(f)(*args) * tangent)),
                                              rel=1e-10, abs=1e-12)


def test_early_return_source_reads_as_a_branch():
    g = ad.value_and_grad(early_return)
    value, _ = g(np.ones(3))
    assert value == 9.0
    assert "result = " in g.source


def conditional_expression(x, a):
    scale = a * 2.0 if np.sum(x) > 0 else a * a
    return np.sum(x * scale)


def boolean_condition(x):
    y = x
    if np.sum(x) > 0 and np.max(x) < 2.0 or np.min(x) < -3.0:
        y = np.sin(x)
    return np.sum(y * x)


@pytest.mark.parametrize("f, args, wrt", [
    (conditional_expression, (np.abs(RNG.standard_normal(3)), 0.3), (0, 1)),
    (conditional_expression, (-np.abs(RNG.standard_normal(3)), 0.3), (0, 1)),
    (boolean_condition, (np.array([0.5, 0.2, 0.1]),), (0,)),
    (boolean_condition, (np.array([0.5, 2.2, 0.1]),), (0,)),
    (boolean_condition, (np.array([-4.0, 0.2, 0.1]),), (0,)),
])
def test_conditional_expressions_and_boolean_operators(f, args, wrt):
    grads = ad.grad(f, wrt=wrt)(*args)
    assert_matches_numerical(f, args, wrt, grads, rtol=1e-5, atol=1e-7)


def newton_sqrt(a):
    """A data-dependent while loop: Newton's iteration for sqrt(a), differentiated through."""
    x = a
    while np.abs(x * x - a) > 1e-12:
        x = 0.5 * (x + a / x)
    return x


def halve_until_small(x):
    y = x
    while np.sum(y * y) > 1.0:
        y = np.sin(y) * 0.5
    return np.sum(y)


def counted_while(x):
    i = 0
    y = x
    while i < 3:
        y = np.tanh(y) + x
        i = i + 1
    return np.sum(y)


@pytest.mark.parametrize("f, args", [
    (halve_until_small, (np.array([3.0, -2.0, 1.5]),)),
    (halve_until_small, (np.array([0.3, -0.2, 0.1]),)),
    (counted_while, (RNG.standard_normal(3),)),
])
def test_while_loops(f, args):
    grads = ad.grad(f, wrt=(0,))(*args)
    assert_matches_numerical(f, args, (0,), grads, rtol=1e-5, atol=1e-7)


def test_while_loop_through_newton_iterations():
    # d sqrt(a) / da = 1 / (2 sqrt(a)), reached by differentiating every iteration
    g = ad.grad(newton_sqrt)
    np.testing.assert_allclose(g(np.array(2.0)), 1 / (2 * np.sqrt(2.0)), rtol=1e-9)
    assert "while " in g.source and "reversed(range(steps))" in g.source


def tanh_branch_in_loop(x):
    """The adjoint of the branch needs np.tanh(y) from inside it, in every iteration."""
    y = x
    for i in range(4):
        if np.sum(y) > 0:
            y = np.tanh(y) * 1.5
        else:
            y = np.sin(y) + y * y
    return np.sum(y)


def nested_branches_in_while(x):
    y = x
    steps = 0
    while steps < 3:
        if np.max(y) > 0.5:
            if np.min(y) < -0.5:
                y = np.exp(-y * y)
            else:
                y = np.tanh(y)
        steps = steps + 1
    return np.sum(y * x)


@pytest.mark.parametrize("f, args", [
    (tanh_branch_in_loop, (RNG.standard_normal(4),)),
    (tanh_branch_in_loop, (np.array([0.3, -0.2, 0.9, 0.4]),)),
    (nested_branches_in_while, (np.array([1.2, -0.9, 0.3]),)),
    (nested_branches_in_while, (np.array([1.2, 0.1, 0.3]),)),
])
def test_branch_values_needed_by_a_loop_adjoint_are_lifted_and_stacked(f, args):
    grads = ad.grad(f, wrt=(0,))(*args)
    assert_matches_numerical(f, args, (0,), grads, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("f, args, wrt", CASES, ids=[f"tape-{c[0].__name__}-{i}"
                                                      for i, c in enumerate(CASES)])
def test_compiled_control_flow_agrees_with_the_tape(f, args, wrt):
    from adcompiler import tape
    compiled = ad.grad(f, wrt=wrt)(*args)
    dynamic = tape.dynamic_grad(f, wrt=wrt)(*args)
    for c, d in zip(compiled, dynamic):
        np.testing.assert_allclose(c, d, rtol=1e-10, atol=1e-12)


def breaks_out(x):
    y = x
    for i in range(6):
        y = np.sin(y) * 1.3
        if np.max(y) > 1.0:
            break
        y = y + 0.1
    return np.sum(y * y)


def skips_with_continue(x):
    total = 0.0
    for row in x:
        if np.sum(row) < 0:
            continue
        total = total + np.sum(np.tanh(row) * row)
    return total


def while_with_break(x):
    y = x
    n = 0
    while n < 10:
        y = y * 0.8 + np.sin(y)
        n = n + 1
        if np.sum(y * y) < 0.5:
            break
    return np.sum(y)


def traced_bound(x, w):
    count = int(np.sum(x > 0))   # how many positive entries: a trip count known only at run time
    acc = w
    for i in range(count):
        acc = np.tanh(acc) + x[i]
    return np.sum(acc * acc)


@pytest.mark.parametrize("f, args, wrt", [
    (breaks_out, (np.array([0.1, 0.2, 0.3]),), (0,)),
    (breaks_out, (np.array([0.9, 0.5, 1.4]),), (0,)),
    (skips_with_continue, (RNG.standard_normal((5, 3)),), (0,)),
    (while_with_break, (np.array([1.5, -2.0, 0.7]),), (0,)),
    (traced_bound, (np.array([0.5, -1.0, 2.0, 0.3]), RNG.standard_normal(4)), (0, 1)),
])
def test_break_continue_and_traced_bounds(f, args, wrt):
    from adcompiler import tape
    grads = ad.grad(f, wrt=wrt)(*args)
    assert_matches_numerical(f, args, wrt, grads, rtol=1e-5, atol=1e-7)
    for c, d in zip(grads, tape.dynamic_grad(f, wrt=wrt)(*args)):
        np.testing.assert_allclose(c, d, rtol=1e-10, atol=1e-12)
