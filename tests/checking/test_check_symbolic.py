"""``check_grad`` (compiled vs tape vs finite differences) and ``symbolic`` (SymPy expressions
of the gradient, from the compiler's own graph)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy

import adcompiler as ad
from adcompiler.checking.check_grad import GradCheckReport


# ---- check_grad ----------------------------------------------------------------------------------
def mlp(W, b, x):
    return np.tanh(x @ W + b).sum()


def seed_f(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


@ad.custom_vjp
def wrong(x):
    return np.sin(x)


def wrong_fwd(x):
    return np.sin(x), x


def wrong_bwd(x, g):
    return (g * np.sin(x),)   # should be cos: a mistake check_grad must catch


wrong.defvjp(wrong_fwd, wrong_bwd)


def uses_wrong(x, y):
    return (wrong(x) * y).sum()


def test_a_correct_gradient_checks_out():
    rng = np.random.default_rng(0)
    report = ad.check_grad(mlp, rng.standard_normal((3, 2)), rng.standard_normal(2),
                           rng.standard_normal((4, 3)), wrt=("W", "b"))
    assert isinstance(report, GradCheckReport) and report.ok
    assert [c.name for c in report.inputs] == ["W", "b"]
    assert set(report.worst) == {"W", "b"} and max(report.worst.values()) < 1e-7
    assert "W" in str(report) and "ok" in str(report)


def test_floats_check_out_where_the_tape_cannot_run():
    report = ad.check_grad(seed_f, 2.0, 5.0, wrt=(0, 1))   # math.log on tensors: the tape refuses
    assert report.ok and report.inputs[1].compiled == pytest.approx(2.0 - math.cos(5.0))
    assert "could not run seed_f" in str(report) and math.isnan(report.inputs[0].vs_tape)


def test_a_wrong_rule_raises_with_the_entry_and_the_three_values():
    x, y = np.array([0.3, 1.2]), np.array([1.0, -2.0])
    with pytest.raises(ad.GradientCheckError) as info:
        ad.check_grad(uses_wrong, x, y, wrt=(0, 1))
    message = str(info.value)
    assert isinstance(info.value, AssertionError)
    assert "x" in message and "MISMATCH" in message and "finite differences" in message
    report = info.value.report
    assert [c.ok for c in report.inputs] == [False, True]   # y's gradient is right
    assert report.inputs[0].vs_tape < 1e-15                  # both engines run the same rule


def test_report_without_raising():
    report = ad.check_grad(uses_wrong, np.array([0.3]), np.array([1.0]), raise_on_failure=False)
    assert not report.ok and report.inputs[0].vs_numerical > 0.1


def test_inputs_are_left_alone():
    x = np.array([0.3, 1.2])
    ad.check_grad(lambda_free, x)
    np.testing.assert_array_equal(x, [0.3, 1.2])


def lambda_free(x):
    y = x * 2.0
    return (y * x).sum()


# ---- symbolic ------------------------------------------------------------------------------------
def with_branch(x, y):
    if x > 1.0:
        z = x * y
    else:
        z = y * y
    return z + math.exp(x)


def with_loop(x, n):
    s = x
    for i in range(n):
        s = math.sin(s) * x + s
    return s


def tanh_scaled(x):
    return math.tanh(x) * 2.0


def test_symbolic_seed_gradient():
    x1, x2 = sympy.symbols("x1 x2", real=True)
    g = ad.symbolic(seed_f)
    assert g.wrt == ("x1", "x2") and g.symbols == (x1, x2)
    assert sympy.simplify(g.exprs[0] - (x2 + 1 / x1)) == 0
    assert sympy.simplify(g.exprs[1] - (x1 - sympy.cos(x2))) == 0
    assert sympy.simplify(g.value - (sympy.log(x1) + x1 * x2 - sympy.sin(x2))) == 0
    assert g.lambdify()(2.0, 5.0) == pytest.approx((5.5, 2.0 - math.cos(5.0)))
    assert tuple(g) == g.exprs and g[1] == g.exprs[1]


def test_symbolic_agrees_with_sympy_diff_through_a_branch():
    x, y = sympy.symbols("x y", real=True)
    g = ad.symbolic(with_branch, wrt="y")
    want = sympy.diff(sympy.Piecewise((x * y, x > 1), (y * y, True)), y)
    for xv, yv in [(2.0, 3.0), (0.5, 3.0)]:
        assert float(g.exprs[0].subs({x: xv, y: yv})) == pytest.approx(
            float(want.subs({x: xv, y: yv})))


def test_symbolic_unrolls_loops_and_cse_tames_the_swell():
    x = sympy.Symbol("x", real=True)
    g = ad.symbolic(with_loop, n=3)
    s = x
    for _ in range(3):
        s = sympy.sin(s) * x + s
    want = sympy.lambdify(x, sympy.diff(s, x))
    assert float(g.exprs[0].subs(x, 0.3)) == pytest.approx(want(0.3), rel=1e-12)
    replacements, reduced = g.cse
    flat = sympy.count_ops(g.exprs[0])
    shared = sum(sympy.count_ops(e) for _, e in replacements) + sympy.count_ops(reduced[1])
    assert shared < flat
    assert "dwith_loop/dx = " in str(g)


def test_symbolic_reuses_the_forward_value_as_the_template_does():
    x = sympy.Symbol("x", real=True)
    (dx,) = ad.symbolic(tanh_scaled).exprs
    assert sympy.simplify(dx - 2 * (1 - sympy.tanh(x) ** 2)) == 0


def test_symbolic_refuses_arrays():
    with pytest.raises(ad.CompileError, match="scalars"):
        ad.symbolic(array_code)


def array_code(x):
    return (np.ones(3) * x).sum()
