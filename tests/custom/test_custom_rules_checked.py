"""Wrong ``custom_vjp`` rules are a located CompileError at compile time (as JAX's "Custom VJP
bwd rule must produce an output with the same shape/dtypes as the args tuple"), checked once per
signature on the call's real arguments (bwd with a cotangent of ones); right rules, None cotangents included, still give the gradient."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.tape import dynamic_grad

X = np.array([0.3, -1.2, 0.8, 2.0])


# ---- wrong bwd rules -----------------------------------------------------------------------------
@ad.custom_vjp
def sin_scalar_ct(x):
    return np.sin(x)


def sin_scalar_ct_fwd(x):
    return np.sin(x), np.cos(x)


def sin_scalar_ct_bwd(c, g):
    return (np.sum(g * c),)          # wrong: a scalar for a (4,) argument


sin_scalar_ct.defvjp(sin_scalar_ct_fwd, sin_scalar_ct_bwd)


@ad.custom_vjp
def sin_bare_ct(x):
    return np.sin(x)


def sin_bare_ct_fwd(x):
    return np.sin(x), np.cos(x)


def sin_bare_ct_bwd(c, g):
    return g * c                     # wrong: an array, not a tuple


sin_bare_ct.defvjp(sin_bare_ct_fwd, sin_bare_ct_bwd)


@ad.custom_vjp
def sin_two_cts(x):
    return np.sin(x)


def sin_two_cts_fwd(x):
    return np.sin(x), np.cos(x)


def sin_two_cts_bwd(c, g):
    return (g * c, g)                # wrong: two cotangents for one argument


sin_two_cts.defvjp(sin_two_cts_fwd, sin_two_cts_bwd)


@ad.custom_vjp
def sin_f32_ct(x):
    return np.sin(x)


def sin_f32_ct_fwd(x):
    return np.sin(x), np.cos(x)


def sin_f32_ct_bwd(c, g):
    return ((g * c).astype(np.float32),)   # wrong: float32 for a float64 argument


sin_f32_ct.defvjp(sin_f32_ct_fwd, sin_f32_ct_bwd)


# ---- wrong fwd rules -----------------------------------------------------------------------------
@ad.custom_vjp
def sin_no_pair(x):
    return np.sin(x)


def sin_no_pair_fwd(x):
    return np.sin(x)                 # wrong: no residuals


def sin_no_pair_bwd(c, g):
    return (g,)


sin_no_pair.defvjp(sin_no_pair_fwd, sin_no_pair_bwd)


@ad.custom_vjp
def sin_summed_value(x):
    return np.sin(x)


def sin_summed_value_fwd(x):
    return np.sum(np.sin(x)), np.cos(x)    # wrong: a scalar value for a (4,) result


def sin_summed_value_bwd(c, g):
    return (g * c,)


sin_summed_value.defvjp(sin_summed_value_fwd, sin_summed_value_bwd)


# ---- right rules: two arrays, a float, None, a static number -----------------------------------
@ad.custom_vjp
def product(a, b):
    return a * b


def product_fwd(a, b):
    return a * b, (a, b)


def product_bwd(res, g):
    a, b = res
    return (g * b, g * a)


product.defvjp(product_fwd, product_bwd)


@ad.custom_vjp
def scaled(x, s):
    return s * x


def scaled_fwd(x, s):
    return s * x, (x, s)


def scaled_bwd(res, g):
    x, s = res
    return (g * s, float(np.sum(g * x)))     # a Python float for the float s


scaled.defvjp(scaled_fwd, scaled_bwd)


@ad.custom_vjp
def scaled_stopped(x, s):
    return s * x


def scaled_stopped_fwd(x, s):
    return s * x, s


def scaled_stopped_bwd(s, g):
    return (g * s, None)             # None: no gradient flows to s through here


scaled_stopped.defvjp(scaled_stopped_fwd, scaled_stopped_bwd)


@ad.custom_vjp
def clipped(x, bound):
    return x


def clipped_fwd(x, bound):
    return x, bound


def clipped_bwd(bound, g):
    return (np.clip(g, -bound, bound), 0.0)   # anything for a static number


clipped.defvjp(clipped_fwd, clipped_bwd)

CALLS = {"counting_bwd": 0}


@ad.custom_vjp
def counting(x):
    return np.sin(x)


def counting_fwd(x):
    return np.sin(x), np.cos(x)


def counting_bwd(c, g):
    CALLS["counting_bwd"] += 1
    return (g * c,)


counting.defvjp(counting_fwd, counting_bwd)


# ---- functions using them ------------------------------------------------------------------------
def uses_scalar_ct(x):
    return np.sum(sin_scalar_ct(x) ** 2)


def uses_bare_ct(x):
    return np.sum(sin_bare_ct(x) ** 2)


def uses_two_cts(x):
    return np.sum(sin_two_cts(x) ** 2)


def uses_f32_ct(x):
    return np.sum(sin_f32_ct(x) ** 2)


def uses_no_pair(x):
    return np.sum(sin_no_pair(x) ** 2)


def uses_summed_value(x):
    return np.sum(sin_summed_value(x) ** 2)


def uses_product(a, b):
    return np.sum(np.sin(product(a, b)))


def uses_scaled(x, s):
    return np.sum(scaled(x, s) ** 2)


def uses_scaled_stopped(x, s):
    return np.sum(scaled_stopped(x, s) ** 2) + s * s


def uses_clipped(x):
    return np.sum(clipped(x * 3.0, 1.0) ** 2)


def uses_counting(x):
    return np.sum(counting(x) ** 2)


# ---- the errors ----------------------------------------------------------------------------------
def _def_line(fn) -> int:
    return fn.__code__.co_firstlineno


@pytest.mark.parametrize("f, rule, phrases", [
    (uses_scalar_ct, sin_scalar_ct_bwd,
     ["the bwd rule of custom_vjp `sin_scalar_ct`", "a float64 array of shape ()",
      "as the cotangent of `x`, a float64 array of shape (4,)"]),
    (uses_bare_ct, sin_bare_ct_bwd,
     ["the bwd rule of custom_vjp `sin_bare_ct`", "returns a float64 array of shape (4,), "
      "not a tuple of 1 cotangent"]),
    (uses_two_cts, sin_two_cts_bwd,
     ["the bwd rule of custom_vjp `sin_two_cts`", "returns a tuple of 2, not a tuple of 1"]),
    (uses_f32_ct, sin_f32_ct_bwd,
     ["the bwd rule of custom_vjp `sin_f32_ct`", "a float32 array of shape (4,) as the "
      "cotangent of `x`, a float64 array of shape (4,)"]),
    (uses_no_pair, sin_no_pair_fwd,
     ["the fwd rule of custom_vjp `sin_no_pair`", "not a pair (value, residuals)"]),
    (uses_summed_value, sin_summed_value_fwd,
     ["the fwd rule of custom_vjp `sin_summed_value`", "a float64 array of shape () as its "
      "value, where sin_summed_value returns a float64 array of shape (4,)"]),
])
def test_a_wrong_rule_is_a_compile_error_at_its_def(f, rule, phrases):
    with pytest.raises(ad.CompileError) as info:
        ad.grad(f)(X)
    err = info.value
    assert (err.filename, err.lineno) == (__file__, _def_line(rule))
    assert f"def {rule.__name__}(" in str(err)
    for phrase in [rule.__name__, *phrases]:
        assert phrase in err.message
    what = "bwd" if rule.__name__.endswith("_bwd") else "fwd"
    assert f"{what}(" in err.hint and "must return" in err.hint


def test_the_hint_says_what_bwd_must_return():
    with pytest.raises(ad.CompileError) as info:
        ad.grad(uses_scalar_ct)(X)
    assert ("bwd(residuals, g) must return a tuple with one cotangent per argument of "
            "sin_scalar_ct, each of its argument's shape and float dtype, or None where no "
            "gradient flows; here (x: a float64 array of shape (4,))") == info.value.hint


def test_check_grad_reports_the_wrong_rule_not_an_index_error():
    for check in (ad.check_grad, ad.value_and_grad):
        with pytest.raises(ad.CompileError, match="sin_scalar_ct_bwd, the bwd rule"):
            check(uses_scalar_ct, X) if check is ad.check_grad else check(uses_scalar_ct)(X)


# ---- right rules ---------------------------------------------------------------------------------
def test_right_rules_give_the_analytic_gradient():
    a, b = X, X[::-1] + 1.0
    ga, gb = ad.grad(uses_product, wrt=(0, 1))(a, b)
    np.testing.assert_allclose(ga, np.cos(a * b) * b, rtol=1e-14)
    np.testing.assert_allclose(gb, np.cos(a * b) * a, rtol=1e-14)
    gx, gs = ad.grad(uses_scaled, wrt=(0, 1))(X, 1.5)
    np.testing.assert_allclose(gx, 2 * 1.5 ** 2 * X, rtol=1e-14)
    assert isinstance(gs, float) and gs == pytest.approx(2 * 1.5 * np.sum(X * X), rel=1e-14)
    want = np.clip(2 * 3.0 * X, -1.0, 1.0) * 3.0
    np.testing.assert_allclose(ad.grad(uses_clipped)(X), want, rtol=1e-14)


def test_none_is_a_zero_cotangent():
    gx, gs = ad.grad(uses_scaled_stopped, wrt=(0, 1))(X, 1.5)
    np.testing.assert_allclose(gx, 2 * 1.5 ** 2 * X, rtol=1e-14)
    assert gs == pytest.approx(2 * 1.5)                 # only the direct s * s
    assert ad.grad(uses_scaled_stopped, wrt=1)(X, 1.5) == pytest.approx(3.0)
    tx, ts = dynamic_grad(uses_scaled_stopped, wrt=(0, 1))(X, 1.5)
    np.testing.assert_allclose(tx, gx)
    assert ts == pytest.approx(gs)
    source = ad.grad(uses_scaled_stopped, wrt=1).specialize(X, 1.5).source
    assert "scaled_stopped_bwd" not in source           # nothing reads bwd's None


def test_the_check_runs_once_per_signature_and_not_in_the_gradient():
    g = ad.grad(uses_counting)
    g(X)
    start = CALLS["counting_bwd"]
    for _ in range(3):
        np.testing.assert_allclose(g(X), 2 * np.sin(X) * np.cos(X), rtol=1e-14)
    assert CALLS["counting_bwd"] == start + 3            # one call each: the generated code's
    source = g.specialize(X).source
    assert "dx = counting_bwd(counting_res, " in source and "shape" not in source
