"""An in-place update made inside a loop by a called function (a module-level helper, a nested
def writing into the enclosing array or into its parameter) compiles as the same update written
in the loop body does: the loop carries the caller's name. So does an update a called function
makes to its parameter in a loop of its own: the caller's name sees the array the loop leaves.
Real aliasing stays refused, located where the update is written."""

import copy
import inspect
import re

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.tape import dynamic_grad

from tests.helpers import check_grads

X = np.array([0.3, -1.2, 0.7])


def add_at(y, j, v):
    y[j] += v


def scale(y, c):
    y *= c


# ---- updates that compile ------------------------------------------------------------------
def helper_in_for(x):
    y = 0.0 * x   # the tape runs it: its arrays hold traced numbers
    for j in range(3):
        add_at(y, j, x[j] * 2.0)
    return np.sum(y * y)


def direct_in_for(x):   # the same update written in the loop body
    y = 0.0 * x
    for j in range(3):
        y[j] += x[j] * 2.0
    return np.sum(y * y)


def closure_in_for(x):
    y = 0.0 * x

    def put(j, v):
        y[j] += v
    for j in range(3):
        put(j, x[j] ** 2)
        put((j + 1) % 3, x[j])
    return np.sum(y * y)


def nested_def_with_parameter(x):
    y = 0.0 * x

    def put(y, j, v):
        y[j] += v
    for j in range(3):
        put(y, j, x[j] * 2.0)
    return np.sum(y * y)


def helper_in_a_branch_of_the_loop(x):
    y = x.copy()
    for j in range(3):
        if x[j] > 0:
            add_at(y, j, x[j] ** 2)
    return np.sum(y * y)


def helper_in_nested_loops(x):
    y = x.copy()
    for i in range(2):
        for j in range(3):
            add_at(y, j, x[j] * y[(j + 1) % 3])
    return np.sum(y * y)


def helper_in_while(x):
    y = x.copy()
    k = 0
    while k < 3:
        scale(y, x[k])
        k += 1
    return np.sum(y)


def helper_read_in_the_loop(x):
    y = x.copy()
    s = 0.0
    for j in range(3):
        scale(y, 1.1)
        s = s + y[j] * x[j]
    return s + np.sum(y)


def view_taken_before_not_read(x):
    y = 0.0 * x
    h = y[:2]   # noqa: F841  (stale after the loop, never read)
    for j in range(3):
        add_at(y, j, x[j])
    return np.sum(y * y)


COMPILED = [helper_in_for, direct_in_for, closure_in_for, nested_def_with_parameter,
            helper_in_a_branch_of_the_loop, helper_in_nested_loops, helper_in_while,
            helper_read_in_the_loop, view_taken_before_not_read]


@pytest.mark.parametrize("f", COMPILED, ids=[f.__name__ for f in COMPILED])
def test_an_update_by_a_called_function_in_a_loop_compiles(f):
    value, (grad,) = ad.value_and_grad(f, wrt=(0,))(X.copy())
    np.testing.assert_allclose(value, f(X.copy()), rtol=1e-12)
    check_grads(f, X.copy())
    np.testing.assert_allclose(grad, dynamic_grad(f)(X.copy()), rtol=1e-10)


def helper_into_zeros(x):
    y = np.zeros(3)
    for j in range(3):
        add_at(y, j, x[j] * 2.0)
    return np.sum(y * y)


def direct_into_zeros(x):
    y = np.zeros(3)
    for j in range(3):
        y[j] += x[j] * 2.0
    return np.sum(y * y)


def test_the_helper_form_matches_the_direct_form():
    for x in (X, np.array([1.5, 0.2, -0.4])):
        np.testing.assert_allclose(ad.grad(helper_into_zeros)(x.copy()),
                                   ad.grad(direct_into_zeros)(x.copy()), rtol=1e-12)
        check_grads(helper_into_zeros, x.copy())
        np.testing.assert_allclose(ad.grad(helper_in_for)(x.copy()),
                                   ad.grad(direct_in_for)(x.copy()), rtol=1e-12)


def test_jvp_of_a_helper_update_in_a_loop():
    t = np.array([0.5, -1.0, 2.0])
    _, tangent = ad.jvp(helper_in_nested_loops, wrt=0)(X.copy(), tangents=t)
    eps = 1e-6
    fd = (helper_in_nested_loops(X + eps * t) - helper_in_nested_loops(X - eps * t)) / (2 * eps)
    np.testing.assert_allclose(tangent, fd, rtol=1e-6)


# ---- aliasing that stays refused -----------------------------------------------------------
def alias_seen_after(x):
    y = np.zeros(3)
    z = y
    for j in range(3):
        add_at(y, j, x[j])
    return np.sum(y * z)


def view_read_after(x):
    y = np.zeros(3)
    h = y[:2]
    for j in range(3):
        add_at(y, j, x[j])
    return np.sum(h)   # stale


def closure_loops_over_enclosing_array(x):
    y = np.zeros(3)

    def fill():
        for j in range(3):
            y[j] += x[j] ** 2
    fill()
    return np.sum(y * x)


def _line(f, text):
    lines, first = inspect.getsourcelines(f)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _error(f):
    with pytest.raises(ad.CompileError) as info:
        ad.grad(f)(copy.deepcopy(X))
    return info.value


def test_an_alias_of_the_array_a_helper_updates_in_a_loop_is_refused():
    message = ("`y[j] += v` in `add_at`, called inside a loop, updates `y` in place while `z` "
               "names the same array")
    with pytest.raises(ad.CompileError, match=re.escape(message)) as info:
        ad.grad(alias_seen_after)(X.copy())
    assert info.value.lineno == _line(add_at, "y[j] += v")
    assert info.value.hint == ("copy it (`z = y.copy()` instead of `z = y`) if `y` should keep "
                               "its values; if the update should show under both names, as "
                               "in NumPy, use one name for the array")


def test_a_view_read_after_a_helper_updated_its_array_in_a_loop_is_refused():
    err = _error(view_read_after)
    assert err.message == ("`h` shares memory with `y` of `add_at`, which `y[j] += v` "
                           f"(line {_line(add_at, 'y[j] += v')}) changed in place")
    assert err.lineno == _line(view_read_after, "# stale")


def test_a_closure_updating_the_enclosing_array_in_its_own_loop_says_so():
    message = ("`y[j] += x[j] ** 2` inside a loop of `fill` would also change `y` of "
               "`closure_loops_over_enclosing_array` (the same array), which the loop cannot "
               "pass back to `closure_loops_over_enclosing_array`; that is not supported yet")
    with pytest.raises(ad.CompileError, match=re.escape(message)) as info:
        ad.grad(closure_loops_over_enclosing_array)(X.copy())
    assert info.value.lineno == _line(closure_loops_over_enclosing_array, "y[j] += x[j] ** 2")
    assert info.value.hint == ("return the new array from `fill` and assign it to `y` in "
                               "`closure_loops_over_enclosing_array`, or update `y` in "
                               "`closure_loops_over_enclosing_array` itself")


# ---- a loop inside the called function, updating the caller's array -----------------------
def fill(y, x):
    for j in range(3):
        y[j] += x[j] ** 2


def fill_called_once(x):
    y = 0.0 * x
    fill(y, x)
    return np.sum(y * y)


def fill_twice_through_another_call(x):
    y = 0.0 * x

    def twice(w):
        fill(w, x)
        fill(w, 2.0 * x)
        return np.sum(w)
    s = twice(y)
    return s * np.sum(y * x)


def fill_in_a_loop_of_the_caller(x):
    y = x.copy()
    s = 0.0
    for i in range(2):
        fill(y, x * y)
        s = s + np.sum(y * x)
        y = y * 0.5
    return s + np.sum(y * y)


def fill_in_a_branch_of_the_caller(x):
    y = 0.0 * x
    if x[0] > 0:
        fill(y, x)
    else:
        y = y + 1.0
    return np.sum(y * x)


def scale_while(y, x):
    k = 0
    while k < 3:
        y *= x[k]
        k += 1


def scaled_by_a_while_loop_of_the_callee(x):
    y = x + 1.0
    scale_while(y, x)
    return np.sum(y * y)


def add_in_a_loop(y, z):
    for i in range(2):
        y += z
    return y


def alias_changed_by_a_callee_loop(x, z):   # a and b: one array, changed by the callee's loop
    a = x * 1.0
    b = add_in_a_loop(a, z)
    return np.sum(a * b)


CALLEE_LOOPS = [fill_called_once, fill_twice_through_another_call, fill_in_a_loop_of_the_caller,
                fill_in_a_branch_of_the_caller, scaled_by_a_while_loop_of_the_callee]


@pytest.mark.parametrize("f", CALLEE_LOOPS, ids=[f.__name__ for f in CALLEE_LOOPS])
def test_an_update_in_a_loop_of_the_called_function_reaches_the_caller(f):
    for x in (X, np.array([-0.4, 0.8, 1.1])):
        value, (grad,) = ad.value_and_grad(f, wrt=(0,))(x.copy())
        np.testing.assert_allclose(value, f(x.copy()), rtol=1e-12)
        check_grads(f, x.copy())
        np.testing.assert_allclose(grad, dynamic_grad(f)(x.copy()), rtol=1e-10)
    t = np.array([0.5, -1.0, 2.0])
    _, tangent = ad.jvp(f, wrt=0)(X.copy(), tangents=t)
    eps = 1e-6
    np.testing.assert_allclose(tangent, (f(X + eps * t) - f(X - eps * t)) / (2 * eps), rtol=1e-6)


def test_the_briefs_example_into_zeros():
    def f(x):
        y = np.zeros(3)
        fill(y, x)
        return np.sum(y * y)
    value, grad = ad.value_and_grad(f)(X.copy())
    np.testing.assert_allclose(value, f(X.copy()), rtol=1e-12)
    np.testing.assert_allclose(grad, 4.0 * X ** 3, rtol=1e-12)


def test_a_name_the_callee_loop_changed_and_the_result_are_one_array():
    xz = (np.array([0.3, 0.5, 0.7]), np.array([1.1, 0.9, 1.3]))
    x, z = xz
    value, grads = ad.value_and_grad(alias_changed_by_a_callee_loop, wrt=(0, 1))(*xz)
    np.testing.assert_allclose(value, alias_changed_by_a_callee_loop(*copy.deepcopy(xz)))
    np.testing.assert_allclose(value, np.sum((x + 2 * z) ** 2), rtol=1e-12)
    np.testing.assert_allclose(grads[0], 2 * (x + 2 * z), rtol=1e-12)
    np.testing.assert_allclose(grads[1], 4 * (x + 2 * z), rtol=1e-12)
    check_grads(alias_changed_by_a_callee_loop, *xz, wrt=(0, 1))
    tape = dynamic_grad(alias_changed_by_a_callee_loop, wrt=(0, 1))(*copy.deepcopy(xz))
    np.testing.assert_allclose(grads, tape, rtol=1e-10)
    t = np.array([0.5, -1.0, 2.0])
    _, tangent = ad.jvp(alias_changed_by_a_callee_loop, wrt=0)(*copy.deepcopy(xz), tangents=t)
    np.testing.assert_allclose(tangent, np.dot(2 * (x + 2 * z), t), rtol=1e-12)


def two_caller_names(x):
    y = np.zeros(3)
    z = y
    fill(y, x)
    return np.sum(y * x) + np.sum(z)


def view_in_the_caller(x):
    y = np.zeros(3)
    h = y[:2]
    fill(y, x)
    return np.sum(h * x[:2])   # stale


def fill_and_rebind(y, x):
    for j in range(3):
        y[j] += x[j]
        y = y * 2.0


def rebound_in_the_callee_loop(x):
    y = np.ones(3)
    fill_and_rebind(y, x)
    return np.sum(y * x)   # stale


def test_a_second_caller_name_for_the_array_a_callee_loop_updates_is_refused():
    message = ("`y[j] += x[j] ** 2` inside a loop of `fill` updates `y` in place while `y` and "
               "`z` of `two_caller_names` name the same array")
    with pytest.raises(ad.CompileError, match=re.escape(message)) as info:
        ad.grad(two_caller_names)(X.copy())
    assert info.value.lineno == _line(fill, "y[j] += x[j] ** 2")
    assert "`z = y.copy()` instead of `z = y`" in info.value.hint


def test_a_caller_view_of_the_array_a_callee_loop_updated_is_refused():
    err = _error(view_in_the_caller)
    assert err.message == ("`h` shares memory with `y` of `fill`, which `y[j] += x[j] ** 2` "
                           f"(line {_line(fill, 'y[j] += x[j] ** 2')}) changed in place")
    assert err.lineno == _line(view_in_the_caller, "# stale")


def test_a_callee_loop_that_also_rebinds_its_parameter_says_so():
    err = _error(rebound_in_the_callee_loop)
    assert err.message == ("`y` was changed in place by `y[j] += x[j]` (line "
                           f"{_line(fill_and_rebind, 'y[j] += x[j]')}) inside a loop of "
                           "`fill_and_rebind` that also rebinds `y`; adcompiler cannot pass "
                           "such an update back to `y`")
    assert err.lineno == _line(rebound_in_the_callee_loop, "# stale")
    assert err.hint.startswith("return the array from `fill_and_rebind`")
