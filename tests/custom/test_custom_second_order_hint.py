"""hessian through a custom_vjp whose rules call a NumPy function without a rule
(np.linalg.tensorinv here; np.linalg.solve and pinv have one now): the error
says that second derivatives differentiate the rules, and its fix (call the custom function
in them) gives the right Hessian."""

import numpy as np
import pytest

import adcompiler as ad


@ad.custom_vjp
def solve(A, b):
    return np.linalg.tensorinv(A, ind=1) @ b


def solve_fwd(A, b):
    x = np.linalg.tensorinv(A, ind=1) @ b
    return x, (A, x)


def solve_bwd(res, g):
    A, x = res
    gb = np.linalg.tensorinv(A.T, ind=1) @ g
    return -np.outer(gb, x), gb


solve.defvjp(solve_fwd, solve_bwd)


@ad.custom_vjp
def solve2(A, b):
    return np.linalg.solve(A, b)


def solve2_fwd(A, b):
    x = solve2(A, b)
    return x, (A, x)


def solve2_bwd(res, g):
    A, x = res
    gb = solve2(A.T, g)
    return -np.outer(gb, x), gb


solve2.defvjp(solve2_fwd, solve2_bwd)


def fit(w, t, y):
    A = np.stack([np.ones_like(t), np.exp(-w * t)], axis=1)
    c = solve(A.T @ A, A.T @ y)
    return np.sum((A @ c - y) ** 2)


def fit2(w, t, y):
    A = np.stack([np.ones_like(t), np.exp(-w * t)], axis=1)
    c = solve2(A.T @ A, A.T @ y)
    return np.sum((A @ c - y) ** 2)


T = np.linspace(0, 3, 8)
Y = 1 + 2 * np.exp(-1.3 * T) + 0.01 * np.sin(7 * T)


def test_the_error_names_the_rules_and_the_fix():
    np.testing.assert_allclose(ad.grad(fit)(1.0, T, Y), ad.grad(fit2)(1.0, T, Y), rtol=1e-12)
    with pytest.raises(ad.CompileError) as err:
        ad.hessian(fit)(1.0, T, Y)
    e = err.value
    assert "second derivatives differentiate `solve`'s rules as code" in e.message
    assert "in solve_fwd and solve_bwd, call a custom_vjp function" in e.hint
    assert "test_custom_second_order_hint.py:18:9" in str(e)   # tensorinv in solve_fwd


def test_the_suggested_rules_give_the_hessian():
    g = ad.grad(fit2)
    eps = 1e-5
    want = (g(1.0 + eps, T, Y) - g(1.0 - eps, T, Y)) / (2 * eps)
    np.testing.assert_allclose(ad.hessian(fit2)(1.0, T, Y), want, rtol=1e-6)


def test_outside_custom_rules_the_message_is_unchanged():
    with pytest.raises(ad.CompileError) as err:
        ad.grad(plain_tensorinv)(np.eye(2) * 2.0, np.ones(2))
    assert err.value.message == "`np.linalg.tensorinv` has no derivative rule in adcompiler"


def plain_tensorinv(A, b):
    return np.sum(np.linalg.tensorinv(A, ind=1) @ b)
