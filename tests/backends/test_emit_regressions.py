"""The emitter's names and in-place updates, on programs that once compiled wrong: each is the
smallest form of a bug the random control-flow programs found (tests/control_strategies.py).

Every case checks ``value_and_grad``'s value against the function's, the gradients against
finite differences, and that the caller's arrays are left alone.
"""

import copy
import math

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.tape import dynamic_grad
from tests.helpers import assert_matches_numerical

X = np.array([0.3, -0.2, 0.5])
Y = np.array([0.1, 0.7, -0.4])
Z = np.array([1.0, 2.0, -1.5])


# ---- two arrays made the same way stay two arrays ----------------------------------------------
def zeros_twice(x, y, z):
    a = np.zeros(3)
    if np.sum(x) > 10.0:   # not taken: a stays the first zeros
        a = np.tanh(x)
    b = np.zeros(3)
    b[0] = np.sum(x)       # must not show in a
    return np.sum(a * x) + np.sum(b * b)


def copies_twice(x, y, z):
    a = z.copy()
    while np.sum(a) > 10.0:   # never runs: a stays the first copy
        a = np.tanh(a)
    b = z.copy()
    b += x                 # must not show in a
    return np.sum(a * x) + np.sum(b * b)


# ---- a value held by a branch's or a loop's result is not updated in place ----------------------
def branch_yields_then_add(x, y, z):
    a = x * 2.0
    if np.sum(x) > 10.0:   # not taken: c holds a's array
        c = np.tanh(x)
    else:
        c = a
    a = a + y              # must not be written into c's array
    return np.sum(c * a * z)


def loop_result_then_add(x, y, z):
    a = x * 2.0
    c = a
    n = 0
    while np.sum(c) > 10.0 and n < 3:   # never runs: c holds a's array
        n = n + 1
        c = np.tanh(c)
    a = a + y
    return np.sum(c * a * z)


# ---- loop bodies: residuals stacked under the name the body binds ------------------------------
def buffer_made_in_loop(x, y, z):
    s = 0.0
    for i in range(3):
        b = np.zeros(3)
        b[0] = z[0] * x[i]
        s = s + np.sum(b * b)
    return s


def add_of_loop_temporary(x, y, z):
    s = y * 1.0
    for i in range(3):
        t = s * 2.0
        s = np.sin(t + x)   # t + x is computed in place in t, and stacked
    return np.sum(s * z)


def read_after_additive_update(x, y, z):
    a = y * 2.0
    b = 0.0
    for i in range(3):
        a = a + np.tanh(x)
        b = b + np.sum(a * a * z)
    return b


def accumulator_read_in_loop(x, y, z):
    acc = np.zeros(3)
    b = 0.0
    for i in range(3):
        acc += x * z
        b = b + np.sum(acc * acc * y)
    return b


# ---- a loop whose adjoint carries a cotangent unchanged ----------------------------------------
def dead_code_in_loop(x, y, z):
    v1 = x * 2.0
    v2 = v1 * 1.5
    for i in range(2):
        v7 = z * 2.0  # noqa: F841 (dead: z's cotangent goes through the adjoint loop unchanged)
        y = np.sin(y)
    w = v1 + z             # dz and dv1 start as one array, dw
    return np.sum(w * w) + np.sum(y) + np.sum(v2)


# ---- while loops append residuals to lists, which keep the arrays themselves -------------------
def while_appends_then_adds(x, y, z):
    a = y * 2.0
    n = 0
    while np.sum(a) < 5.0 and n < 3:
        n = n + 1
        a = a + np.tanh(x * a)
    return np.sum(a * a * z)


def while_accumulates_in_place(x, y, z):
    acc = np.zeros(3)
    n = 0
    while n < 3:
        n = n + 1
        acc += np.sin(acc * x) + z
    return np.sum(acc * acc * y)


# ---- a loop param stays in a value the body may leave unchanged --------------------------------
# ``h = acc * 1.0`` is simplified to acc's own array; a branch, a ``break`` or a ``continue``
# may keep it there, so ``h`` (stacked for the adjoint) must not see the update of ``acc``.
def break_at_once_then_update(x, y, z):
    acc = np.zeros((1, 1))
    n = 0
    while n < 2:
        n = n + 1
        h = acc * 1.0
        for row in x:
            if np.sum(acc) > 1.0:   # at once on the second pass: h stays acc
                break
            h = h + row
        acc = acc + h * h
    return np.sum(acc * z)


def continue_every_row_then_update(x, y, z):
    acc = np.zeros((1, 1))
    n = 0
    while n < 2:
        n = n + 1
        h = acc * 1.0
        for row in x:
            if np.sum(acc) > 1.0:
                continue
            h = h + row
        acc = acc + h * h
    return np.sum(acc * z)


def branch_in_loop_then_update(x, y, z):
    acc = np.zeros((1, 1))
    for n in range(2):
        h = acc * 1.0
        for row in x:
            if np.sum(acc) < 1.0:
                h = h + row
        acc = acc + h * h
    return np.sum(acc * z)


def branch_keeps_param_then_update(x, y, z):
    acc = np.zeros((1, 1))
    for n in range(2):
        h = acc * 1.0
        if np.sum(acc) < 1.0:   # not taken on the second pass: h stays acc
            h = h + x[0] + x[1]
        acc = acc + h * h
    return np.sum(acc * z)


def inner_while_breaks_then_update(x, y, z):
    acc = np.zeros((1, 1))
    for n in range(2):
        h = acc * 1.0
        k = 0
        while k < 2:
            if np.sum(acc) > 1.0:
                break
            h = h + x[k]
            k = k + 1
        acc = acc + h * h
    return np.sum(acc * z)


def break_at_once_then_augmented(x, y, z):
    acc = z * 0.0
    for n in range(2):
        h = acc * 1.0
        for row in x:
            if np.sum(acc) > 1.0:
                break
            h = h + row
        acc += h * h
    return np.sum(acc * z)


def break_at_once_then_index_add(x, y, z):
    acc = z * 0.0
    for n in range(2):
        h = acc * 1.0
        for row in x:
            if np.sum(acc) > 1.0:
                break
            h = h + row
        acc[0] += h[0] * h[0]   # h[0] is a view of h, stacked
    return np.sum(acc * z)


UNCHANGED_PARAM_CASES = [
    break_at_once_then_update, continue_every_row_then_update, branch_in_loop_then_update,
    branch_keeps_param_then_update, inner_while_breaks_then_update,
    break_at_once_then_augmented, break_at_once_then_index_add]


CASES = [zeros_twice, copies_twice, branch_yields_then_add, loop_result_then_add,
         buffer_made_in_loop, add_of_loop_temporary, read_after_additive_update,
         accumulator_read_in_loop, dead_code_in_loop, while_appends_then_adds,
         while_accumulates_in_place]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_value_and_gradient(f):
    args = (X.copy(), Y.copy(), Z.copy())
    value, grads = ad.value_and_grad(f, wrt=(0, 1, 2))(*args)
    assert float(value) == pytest.approx(float(f(*copy.deepcopy(args))), rel=1e-12)
    assert_matches_numerical(f, args, (0, 1, 2), grads)
    np.testing.assert_equal(args, (X, Y, Z))


def test_arrays_made_twice_stay_two_arrays_in_the_source():
    """Common-subexpression elimination keeps the two ``np.zeros`` apart: the update writes
    the second in place, as the user wrote it, instead of copying a shared one."""
    g = ad.grad(zeros_twice, wrt=(0,))
    g(X, Y, Z)
    assert g.source.count("np.zeros((3,))") == 2
    assert "np.array(" not in g.source


def accumulator_not_kept(x, y, z):
    acc = np.zeros(3)
    b = 0.0
    for i in range(3):
        acc += x * z
        b = b + np.sum(acc * y)   # linear in acc: without dy, the adjoint does not read acc
    return b


def test_loops_still_update_their_own_arrays_in_place():
    """Checking every value that shares an array does not cost the in-place updates that are
    safe: a carried accumulator (``acc += ...``), a cotangent scattered into in the adjoint
    loop (``dz[0] += ...``), a sum accumulated into a carried cotangent (``dx += ...``). An
    accumulator the adjoint reads is kept per iteration: its sum goes straight into its
    stack's row, which makes no new array either and saves the copy ``accs[i] = acc``."""
    kept = ad.grad(accumulator_read_in_loop, wrt=(0, 1, 2))
    kept(X, Y, Z)
    assert "acc = np.add(acc, x * z, out=accs[i])" in kept.source
    assert "accs[i] = " not in kept.source
    assert "dx += " in kept.source
    fwd = ad.grad(accumulator_not_kept, wrt=(0, 2))
    assert_matches_numerical(accumulator_not_kept, (X, Y, Z), (0, 2), fwd(X, Y, Z))
    assert "acc += x * z" in fwd.source
    made = ad.grad(buffer_made_in_loop, wrt=(0, 1, 2))
    made(X, Y, Z)
    assert "dz[0] += " in made.source
    for g in (kept, fwd, made):
        assert "np.array(" not in g.source   # no defensive copy anywhere


def neighbours(x, y, z):
    s = 0.0
    for t in range(1, x.shape[0]):
        s = s + x[t] * x[t - 1] * z[t]
    return s


def two_updates_then_a_sum(x, y, z):
    acc = np.zeros(3)
    for t in range(3):
        acc[t] += x[t] * z[t]
        acc = acc + y          # a new array: the next iteration updates that one
        acc[0] += np.sum(acc)  # reads acc before writing it
    return np.sum(acc * acc)


def inner_loop_in_a_while(x, y, z):
    v2 = x.T
    v3 = y - y
    n = 0
    v6 = np.zeros_like(x)
    v7 = np.zeros_like(y)
    while n < 5:
        n = n + 1
        v8 = 0.0
        for row in v2:
            v3 = v3 + row / n   # v3, after this loop, is a residual of the while
            v8 = v8 + row
        if not np.sum(x) > -4.31:
            break
        v6 = v6 + v8
        v7 = v7 + v3 * v3
    return v3.sum() + v6.sum() + v7.sum()


def nested_rows(x, y, z):
    s = 0.0
    for i in range(3):
        for j in range(3):
            s = s + y[j] * x[i] ** 2 * z[2 - j] * z[i]
    return s


def nested_in_a_while(x, y, z):
    acc = x * 1.0
    n = 0
    while n < 3:          # keeps acc, the inner loop's result, as a residual of each pass
        n = n + 1
        for j in range(3):
            acc[j] += y[j] * acc[2 - j]
    return np.sum(acc * z)


def test_nested_loops_scatter_in_place():
    """The adjoint of ``x[i]`` and ``y[j]`` read in nested loops scattered into a copy of ``dx``
    and ``dy`` on every inner iteration (quadratic); an inner loop whose carried array is
    updated in place is now a link of the chain, and ``dx`` and ``dy`` are updated in place."""
    g = ad.value_and_grad(nested_rows, wrt=(0, 1, 2))
    args = (X.copy(), Y.copy(), Z.copy())
    value, grads = g(*args)
    assert float(value) == pytest.approx(nested_rows(*copy.deepcopy(args)), rel=1e-12)
    assert_matches_numerical(nested_rows, args, (0, 1, 2), grads)
    tape = dynamic_grad(nested_rows, wrt=(0, 1, 2))(*copy.deepcopy(args))
    for got, want in zip(grads, tape):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert "np.array(" not in g.source and "dx[i_1] += " in g.source


@pytest.mark.parametrize("f", [neighbours, two_updates_then_a_sum, inner_loop_in_a_while,
                               nested_in_a_while], ids=lambda f: f.__name__)
def test_a_chain_of_updates_in_a_loop_is_in_place(f):
    """Two scatters into a carried cotangent in one iteration (``dx[t] += a; dx[t - 1] += b``,
    the adjoint of reading ``x[t]`` and ``x[t - 1]``) once copied ``dx`` on every iteration:
    quadratic in the trip count. Each link now updates the array the loop carries. An inner
    loop's result is such a link only where nothing keeps it: a while loop keeps it in its list
    of residuals, and an update in place on the next iteration changed the kept array (found
    by the random programs; ``nested_in_a_while`` keeps the array its inner loop updates)."""
    args = (X.copy(), Y.copy(), Z.copy())
    g = ad.value_and_grad(f, wrt=(0, 1, 2))
    value, grads = g(*args)
    assert float(value) == pytest.approx(float(f(*copy.deepcopy(args))), rel=1e-12)
    assert_matches_numerical(f, args, (0, 1, 2), grads)
    np.testing.assert_equal(args, (X, Y, Z))
    if f is neighbours:   # (the tape cannot write a tensor into np.zeros' array)
        tape = dynamic_grad(f, wrt=(0, 1, 2))(*copy.deepcopy(args))
        for got, want in zip(grads, tape):
            np.testing.assert_allclose(got, want, rtol=1e-12)
        assert "np.array(" not in g.source
        assert g.source.count("dx[") == 2


@pytest.mark.parametrize("f", UNCHANGED_PARAM_CASES, ids=lambda f: f.__name__)
def test_update_of_a_loop_param_a_branch_may_keep(f):
    """Once wrong by a factor of four: the update was written in place on ``acc``'s array,
    which ``h`` still held; the tape and finite differences agree on the gradient."""
    args = (np.array([[0.5], [1.4]]), np.array([[0.2], [0.3]]), np.array([[1.5], [-0.5]]))
    saved = copy.deepcopy(args)
    value, grads = ad.value_and_grad(f, wrt=(0, 2))(*args)
    assert float(value) == pytest.approx(float(f(*copy.deepcopy(args))), rel=1e-12)
    assert_matches_numerical(f, args, (0, 2), grads)
    for g, t in zip(grads, dynamic_grad(f, wrt=(0, 2))(*copy.deepcopy(args))):
        np.testing.assert_allclose(g, t, rtol=1e-12)
    np.testing.assert_equal(args, saved)


def test_a_negated_term_added_is_a_subtraction():
    """``-a + b`` (the adjoint of ``- sin(y)`` meeting another term) is ``b - a``: no negation
    left in the graph, and exactly the same floats."""
    def scalars(x, y):
        return math.log(x) + x * y - math.sin(y)

    def arrays(x, y):
        return np.sum(x * y - np.sin(y))

    g = ad.grad(scalars, wrt=("x", "y"))
    assert g(2.0, 5.0) == (5.5, 2.0 - math.cos(5.0))
    assert "negative" not in str(g.ir) and "dy = x - math.cos(y)" in g.source
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=50), rng.normal(size=50)
    ga = ad.grad(arrays, wrt=("x", "y"))
    dx, dy = ga(x, y)
    assert "negative" not in str(ga.ir)
    np.testing.assert_array_equal(dy, x - np.cos(y))
    np.testing.assert_array_equal(dx, y)


def float32_sum(x):
    return np.sum(np.tanh(x.astype(np.float32))).astype(np.float64)


def test_a_constant_cotangent_cast_to_float32_is_a_numpy_scalar():
    """The cotangent of the result is the constant 1.0; its cast to float32 was written
    ``(1.0).astype(np.float32)``, which Python cannot run. It is now ``np.float32(1.0)``,
    and folded away (a float32 unit times the float32 adjoint)."""
    g = ad.grad(float32_sum)
    got = g(X)
    assert ").astype(np.float32)" not in g.source and "np.float32(1.0)" not in g.source
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, 1 - np.tanh(X) ** 2, rtol=1e-6, atol=1e-7)


TRIANGLE = np.tril(np.ones((3, 3)))


def through_constant_transpose(x):
    return np.sum(x @ TRIANGLE.T * np.exp(x))


def transposes_that_cancel(x, w):
    return np.sum(np.transpose(np.transpose(x, (1, 2, 0)), (2, 0, 1)) * w)


def transposes_that_do_not_cancel(x, w):
    return np.sum(np.transpose(np.transpose(x, (1, 2, 0)), (1, 2, 0)) * w)


def test_two_transposes_that_cancel_are_gone():
    """The adjoint of ``x @ C.T`` reads ``C.T.T``: it is ``C`` itself, with no transpose left;
    axes that compose to no change cancel too, and others stay."""
    x = np.random.default_rng(1).normal(size=(2, 3))
    g = ad.grad(through_constant_transpose)
    e = np.exp(x)
    np.testing.assert_allclose(g(x), e @ TRIANGLE + (x @ TRIANGLE.T) * e, rtol=1e-12)
    assert str(g.ir).count("= transpose") == 1 and "@ TRIANGLE\n" in g.source
    x3, w = np.arange(24.0).reshape(2, 3, 4), np.arange(24.0).reshape(2, 3, 4) + 1
    g = ad.grad(transposes_that_cancel)
    np.testing.assert_array_equal(g(x3, w), w)
    assert "= transpose" not in str(g.ir)
    w2 = np.arange(24.0).reshape(4, 2, 3)
    g = ad.grad(transposes_that_do_not_cancel)
    assert_matches_numerical(transposes_that_do_not_cancel, (x3, w2), (0,), (g(x3, w2),))
    assert str(g.ir).count("= transpose") == 2


def scalar_transposed(x):
    v = np.sum(np.sin(x))
    v = v.T
    return v


def test_a_scalar_transposed_has_the_gradient_of_the_scalar():
    """``v.T`` of a sum: the adjoint transposes the seed 1.0, which was written ``(1.0).T`` (a
    Python float has no ``.T``: an AttributeError). Found by the large random programs."""
    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(ad.grad(scalar_transposed)(x), np.cos(x), rtol=1e-15)
