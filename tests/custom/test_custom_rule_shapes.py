"""custom_vjp rules learn their result's shape from the call's real arguments, never from arrays
of ones: a rule around ``np.linalg.solve`` or ``np.linalg.cholesky`` (singular, or not positive
definite, on ones) compiles and gives the right gradient, and what ``fwd`` raises on the real
arguments is a CompileError at the user's own line."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import assert_matches_numerical

RNG = np.random.default_rng(7)
A2 = np.array([[3.0, 1.0], [1.0, 2.0]])
B2 = np.array([1.0, -1.0])
I3 = np.eye(3)
W3 = np.array([[1.0, 0.0, 0.0], [0.5, -2.0, 0.0], [0.3, 0.7, 1.5]])
SEEN = []   # the arguments solve_fwd was called with


# ---- a linear solve: x = A^-1 b ----------------------------------------------------------------
@ad.custom_vjp
def solve(a, b):
    return np.linalg.solve(a, b)


def solve_fwd(a, b):
    SEEN.append((a.copy(), b.copy()))
    x = np.linalg.solve(a, b)
    return x, (a, x)


def solve_bwd(res, g):
    a, x = res
    gb = np.linalg.solve(a.T, g)
    return (-np.outer(gb, x), gb)


solve.defvjp(solve_fwd, solve_bwd)


def solve_loss(a, b):
    x = solve(a, b)
    return np.sum(x * x)


def solve_doubled(a, b):
    b *= 2.0                              # in place: on the compile-time run, on a copy
    return np.sum(solve(a, b))


def solve_scaled(a, b, s):
    x = solve(a * s, b)
    return np.sum(np.sin(x)) * s


# ---- a Cholesky factor: A = L L^T, the rule symmetric in A ---------------------------------------
@ad.custom_vjp
def cholesky(a):
    return np.linalg.cholesky(a)


def cholesky_fwd(a):
    factor = np.linalg.cholesky(a)
    return factor, factor


def cholesky_bwd(factor, g):
    p = factor.T @ g
    p = np.tril(p) - 0.5 * np.diag(np.diag(p))
    inv = np.linalg.inv(factor)
    s = inv.T @ p @ inv
    return (0.5 * (s + s.T),)


cholesky.defvjp(cholesky_fwd, cholesky_bwd)


def chol_weighted(b):                     # A = B B^T + 3 I is positive definite for any B
    a = b @ b.T + 3.0 * I3
    return np.sum(cholesky(a) * W3)


def log_det(a):                           # 2 sum(log(diag(L))): d/dA = A^-1 (A symmetric)
    factor = cholesky(a)
    return 2.0 * np.sum(np.log(factor * I3 + (1.0 - I3)))


# ---- a rule that raises on the real arguments: located in the user's fwd -------------------------
@ad.custom_vjp
def strict_cholesky(a):
    return np.linalg.cholesky(a)


def strict_cholesky_fwd(a):
    factor = np.linalg.cholesky(a)        # raises: -I is not positive definite
    return factor, factor


def strict_cholesky_bwd(factor, g):
    return (g,)


strict_cholesky.defvjp(strict_cholesky_fwd, strict_cholesky_bwd)


def uses_strict(a):
    return np.sum(strict_cholesky(a * 2.0))


# ---- a black box in a branch the compiled call does not take -------------------------------------
@ad.custom_vjp
def branch_solve(a, b):
    return np.linalg.tensorinv(a, ind=1) @ b   # a black box: tensorinv has no rule, nor a shape


def branch_solve_fwd(a, b):
    x = np.linalg.tensorinv(a, ind=1) @ b
    return x, (a, x)


branch_solve.defvjp(branch_solve_fwd, solve_bwd)


def solve_if_positive(a, b, s):
    if s > 0.0:
        return np.sum(branch_solve(a, b)) * s
    return np.sum(b) * s


@ad.custom_vjp
def softplus_sum(x):
    return np.sum(np.log1p(np.exp(x)))


def softplus_sum_fwd(x):
    return np.sum(np.log1p(np.exp(x))), x


def softplus_sum_bwd(x, g):
    return (g / (1.0 + np.exp(-x)),)


softplus_sum.defvjp(softplus_sum_fwd, softplus_sum_bwd)


def softplus_if_positive(x, s):
    if s > 0.0:
        return softplus_sum(x) * s
    return np.sum(x) * s


# ---- the tests -------------------------------------------------------------------------------------
def _line_of(fn, text) -> int:
    """The line of ``text`` in ``fn``'s source, in this file."""
    with open(__file__) as fh:
        lines = fh.read().splitlines()
    start = fn.__code__.co_firstlineno
    return next(n for n in range(start, len(lines) + 1) if text in lines[n - 1])


def test_a_rule_around_solve_gives_the_analytic_gradient():
    ga, gb = ad.grad(solve_loss, wrt=(0, 1))(A2, B2)
    x = np.linalg.solve(A2, B2)                         # [0.6, -0.8]
    want_b = np.linalg.solve(A2.T, 2 * x)               # [0.8, -1.2]
    np.testing.assert_allclose(gb, want_b, rtol=1e-14)
    np.testing.assert_allclose(ga, -np.outer(want_b, x), rtol=1e-14)
    np.testing.assert_allclose(gb, [0.8, -1.2], rtol=1e-14)


def test_a_rule_around_solve_matches_finite_differences():
    a = RNG.standard_normal((4, 4)) + 4.0 * np.eye(4)
    b = RNG.standard_normal(4)
    grads = ad.grad(solve_scaled, wrt=(0, 1, 2))(a, b, 0.7)
    assert_matches_numerical(solve_scaled, [a, b, 0.7], (0, 1, 2), grads)
    value, _ = ad.value_and_grad(solve_scaled)(a, b, 0.7)
    assert value == pytest.approx(np.sum(np.sin(np.linalg.solve(a * 0.7, b))) * 0.7, rel=1e-14)


def test_fwd_learns_from_the_calls_real_arguments():
    a = RNG.standard_normal((3, 3)) + 3.0 * np.eye(3)
    b = RNG.standard_normal(3)
    SEEN.clear()
    ad.grad(solve_scaled, wrt=2).specialize(a, b, 1.5)      # compiling runs the rule ...
    assert SEEN, "fwd learns the result's shape"
    for seen_a, seen_b in SEEN:                              # ... on the call's arguments
        np.testing.assert_array_equal(seen_a, a * 1.5)
        np.testing.assert_array_equal(seen_b, b)
    assert not np.all(SEEN[0][0] == 1.0)


def test_running_the_function_to_learn_from_it_leaves_the_callers_arrays_alone():
    a, b = A2.copy(), B2.copy()
    gb = ad.grad(solve_doubled, wrt=1)(a, b)
    np.testing.assert_array_equal(b, B2)
    np.testing.assert_array_equal(a, A2)
    np.testing.assert_allclose(gb, 2.0 * np.linalg.solve(A2.T, np.ones(2)), rtol=1e-14)


def test_a_rule_around_cholesky_matches_finite_differences():
    b = RNG.standard_normal((3, 3))
    before = b.copy()
    g = ad.grad(chol_weighted)(b)
    assert_matches_numerical(chol_weighted, [b], (0,), (g,))
    np.testing.assert_array_equal(b, before)                 # the caller's array is untouched


def test_the_gradient_of_log_det_through_cholesky_is_the_inverse():
    m = RNG.standard_normal((3, 3))
    a = m @ m.T + 3.0 * I3
    np.testing.assert_allclose(ad.grad(log_det)(a), np.linalg.inv(a), rtol=1e-12, atol=1e-14)
    value, _ = ad.value_and_grad(log_det)(a)
    assert value == pytest.approx(np.linalg.slogdet(a)[1], rel=1e-12)


def test_what_fwd_raises_on_the_real_arguments_is_located_in_the_users_fwd():
    with pytest.raises(ad.CompileError) as info:
        ad.grad(uses_strict)(-np.eye(2))
    err = info.value
    line = _line_of(strict_cholesky_fwd, "np.linalg.cholesky(a)")
    assert (err.filename, err.lineno) == (__file__, line)
    assert "strict_cholesky_fwd, the fwd rule of custom_vjp `strict_cholesky`, raised " \
           "LinAlgError" in err.message
    assert "arrays of ones" not in str(err)
    assert "factor = np.linalg.cholesky(a)" in str(err)      # the excerpt of the user's line


def test_a_branch_not_taken_finds_the_shape_from_the_functions_source():
    x = np.array([0.5, -1.0, 2.0])
    assert np.all(ad.grad(softplus_if_positive)(x, -2.0) == -2.0)
    want = 3.0 / (1.0 + np.exp(-x))
    np.testing.assert_allclose(ad.grad(softplus_if_positive)(x, 3.0), want, rtol=1e-14)


def test_a_black_box_in_a_branch_not_taken_is_a_located_error():
    with pytest.raises(ad.CompileError) as info:
        ad.grad(solve_if_positive, wrt=1)(A2, B2, -1.0)
    err = info.value
    assert (err.filename, err.lineno) == (__file__, _line_of(solve_if_positive, "branch_solve("))
    assert "`branch_solve()` is a custom_vjp function whose result's shape is learnt from a " \
           "call on real arguments" in err.message
    assert "no call of it with arguments like these (f64[2,2], f64[2]) ran" in err.message
    g = ad.grad(solve_if_positive, wrt=1)
    np.testing.assert_allclose(g(A2, B2, 2.0), 2.0 * np.linalg.solve(A2.T, np.ones(2)),
                               rtol=1e-14)
    assert np.all(g(A2, B2, -1.0) == -1.0)        # the same code: its shape is known now
