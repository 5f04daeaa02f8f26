"""The fast, SymPy-free tier of the fused-expression simplifier (adcompiler/passes/algebra_poly.py):
its normal form and rewrites on small polynomials, and, on random elementwise expressions,
gradients equal to those compiled without the simplifier."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import adcompiler as ad
from adcompiler.passes import algebra
from adcompiler.passes import algebra_poly as poly
from tests.helpers import import_source

X, Y, S = poly.atom(("in", 0)), poly.atom(("in", 1)), poly.atom(("in", 2))


def test_like_terms_merge_and_constants_fold_exactly():
    p = poly.add(poly.add(X, X), poly.mul(poly.const(0.1), X))
    assert p == {((("in", 0), 1),): 2 + Fraction(0.1)}       # 2.1 from exact 0.1, no rounding
    assert poly.add(p, p, -1) == {}                              # x - x is gone
    assert poly.mul(poly.mul(X, Y), poly.inverse(X)) == Y        # x*y/x


def test_what_the_tier_does_not_express():
    with pytest.raises(poly.NotPolynomial):
        poly.mul(poly.add(X, poly.const(1)), poly.add(X, poly.const(-1)))  # would cancel digits
    with pytest.raises(poly.NotPolynomial):
        poly.inverse(poly.add(X, Y))                                       # a quotient of sums
    with pytest.raises(poly.NotPolynomial):
        poly.power(X, 0.5)


def test_common_factor_and_collection():
    # -2*x*y + 2*x - 2: the common factor 2 comes out, the terms in x collect
    p = poly.add(poly.add(poly.mul(poly.const(-2), poly.mul(X, Y)), poly.mul(poly.const(2), X)),
                 poly.const(-2))
    assert poly.content(p) == (2, ())
    groups, rest = poly.collected(p, ("in", 0))
    assert groups == {1: {((("in", 1), 1),): -2, (): 2}} and rest == {(): -2}
    negative = poly.add({}, poly.mul(X, Y), -1)
    assert poly.content(poly.add(negative, poly.mul(poly.const(-3), X))) == (
        -1, ((("in", 0), 1),))


def test_forward_values_are_reused():
    # 2*x*x*y with s = x*x computed forward: 2*s*y; x/t with s = 1/t: x*s
    p = poly.mul(poly.const(2), poly.mul(poly.mul(X, X), Y))
    assert poly.reuse(p, 2, poly.mul(X, X)) == poly.mul(poly.const(2), poly.mul(S, Y))
    calls: dict = {}
    (rewritten,) = [v for v in poly.variants(poly.mul(X, poly.inverse(Y)),
                                             [(2, poly.inverse(Y))], calls)
                    if ("in", 1) not in poly.atoms(v)]
    assert rewritten == poly.mul(X, S)


# ---- random elementwise expressions: the simplifier on against off ---------------------------
N = 5000   # above fusion's MIN_SIZE, so the adjoint is fused and simplified


@st.composite
def expressions(draw, depth=3):
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(["x", "y", "0.5", "2.0", "3.0"]))
    kind = draw(st.sampled_from(["+", "-", "*", "*", "/", "neg", "pow", "call"]))
    a = draw(expressions(depth - 1))
    if kind in "+-*":
        return f"({a} {kind} {draw(expressions(depth - 1))})"
    if kind == "/":   # by one term (the fast tier) or by a sum (SymPy's)
        return f"({a} / {draw(st.sampled_from(['x', 'y', 'np.exp(y)', '(x + 2.0)']))})"
    if kind == "neg":
        return f"(-{a})"
    if kind == "pow":
        return f"({a}) ** {draw(st.sampled_from([2, 3]))}"
    return f"np.{draw(st.sampled_from(['tanh', 'sin', 'cos', 'exp']))}({a} * 0.25)"


def _load(expr, directory):
    source = f"import numpy as np\n\n\ndef f(x, y):\n    return np.sum({expr} * x)\n"
    return import_source(source, directory, "poly").f


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expr=expressions())
def test_gradients_match_the_unsimplified_ones(expr, tmp_path, monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    f = _load(expr, tmp_path)
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0.5, 1.5, N), rng.uniform(0.5, 1.5, N)
    simplified = ad.grad(f, wrt=(0, 1))(x, y)
    with monkeypatch.context() as m:
        m.setattr(algebra, "_eligible", lambda node: False)
        plain = ad.grad(f, wrt=(0, 1))(x, y)
    for got, want in zip(simplified, plain):
        scale = 1e-9 * (1.0 + np.max(np.abs(want)))
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=scale, err_msg=expr)
