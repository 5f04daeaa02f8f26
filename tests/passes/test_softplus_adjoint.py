"""The log-add-exp idiom (softplus, np.logaddexp) differentiates as one stable sigmoid
(adcompiler.templates.idioms.logaddexp): no sign, equality or where passes in the gradient, finite
and exact at +-800 and at infinities, 1/2 at ties, float32 kept; where the idiom's pieces are
read elsewhere the rules stay general and still give the right values."""

import numpy as np

import adcompiler as ad
from tests.helpers import assert_matches_numerical


def softplus_sum(z):
    return np.sum(np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z))))


def softplus_reversed(z, w):
    return np.sum((np.log1p(np.exp(-np.abs(z))) + np.maximum(0.0, z)) * w)


def logistic(w, b, X, y):
    m = X @ w + b
    return np.mean(np.logaddexp(0.0, m) - y * m)


def logaddexp_both(x, y):
    return np.sum(np.logaddexp(x, y) * 1.5)


def logaddexp_spelled(x, y):
    return np.sum(np.maximum(x, y) + np.log1p(np.exp(-np.abs(y - x))))


def logaddexp_broadcast(x, y):
    return np.sum(np.logaddexp(x, y[:, None]))


def top_read_twice(z):
    t = np.maximum(z, 0.0)
    return np.sum(t + np.log1p(np.exp(-np.abs(z)))) + np.sum(t * t)


def abs_read_twice(z):
    a = np.abs(z)
    return np.sum(np.maximum(z, 0.0) + np.log1p(np.exp(-a))) + np.sum(a * z)


def _code(g):
    return "\n".join(ln for ln in g.source.splitlines() if not ln.strip().startswith("#"))


def _sigmoid(z):
    return np.exp(-np.logaddexp(0.0, -z))


Z = np.array([-800.0, -30.0, -3.0, -0.5, 0.0, 0.5, 3.0, 30.0, 800.0])


def _assert_lean(g):
    code = _code(g)
    for waste in ("np.sign", "==", "np.where", "np.equal"):
        assert waste not in code, waste


def test_softplus_is_one_sigmoid_exact_at_extremes_and_ties():
    g = ad.grad(softplus_sum)
    dz = g(Z)
    np.testing.assert_allclose(dz, _sigmoid(Z), rtol=1e-14, atol=0)
    assert dz[4] == 0.5 and dz[0] == 0.0 and dz[-1] == 1.0
    _assert_lean(g)
    z = np.linspace(-4, 4, 7)
    w = np.linspace(1, 2, 7)
    g = ad.grad(softplus_reversed, wrt=(0, 1))
    assert_matches_numerical(softplus_reversed, [z, w], (0, 1), g(z, w))
    _assert_lean(g)


def test_logistic_regression_through_np_logaddexp():
    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((9, 3)), (rng.standard_normal(9) > 0).astype(float)
    w, b = rng.standard_normal(3), 0.3
    g = ad.grad(logistic, wrt=(0, 1))
    dw, db = g(w, b, X, y)
    assert_matches_numerical(logistic, [w, b, X, y], (0, 1), (dw, db))
    r = (_sigmoid(X @ w + b) - y) / 9
    np.testing.assert_allclose(dw, X.T @ r, rtol=1e-12)
    _assert_lean(g)
    big = np.array([[800.0], [-800.0], [0.0]])          # margins +-800 and a tie with 0
    dw, db = g(np.array([1.0]), 0.0, big, np.array([0.0, 1.0, 1.0]))
    np.testing.assert_allclose(dw, [(1.0 * 800 + -1.0 * -800 + -0.5 * 0.0) / 3], rtol=1e-15)
    np.testing.assert_allclose(db, -0.5 / 3, rtol=1e-15)


def test_two_sided_logaddexp_ties_and_infinities():
    x = np.array([1.0, 2.0, -3.0, np.inf, -np.inf, np.inf, 700.0, -800.0])
    y = np.array([1.0, -1.0, 4.0, np.inf, -np.inf, 0.0, -700.0, 800.0])
    dx, dy = ad.grad(logaddexp_both, wrt=(0, 1))(x, y)
    with np.errstate(invalid="ignore"):
        ex = np.where(x == y, 0.5, _sigmoid(x - y))
    np.testing.assert_allclose(dx, 1.5 * ex, rtol=1e-14)
    np.testing.assert_allclose(dy, 1.5 * (1 - ex), rtol=1e-12, atol=1e-300)
    a, b = np.linspace(-2, 2, 5), np.array([0.3, -1.0, 0.0, 2.5, -0.7])
    for f in (logaddexp_both, logaddexp_spelled):
        g = ad.grad(f, wrt=(0, 1))
        assert_matches_numerical(f, [a, b], (0, 1), g(a, b))
        assert "np.sign" not in _code(g)
    g = ad.grad(logaddexp_broadcast, wrt=(0, 1))
    xs, ys = np.linspace(-1, 1, 6).reshape(2, 3), np.array([0.4, -0.2])
    assert_matches_numerical(logaddexp_broadcast, [xs, ys], (0, 1), g(xs, ys))


def test_float32_keeps_float32_and_stays_finite():
    z = Z.astype(np.float32)
    g = ad.grad(softplus_sum)
    dz = g(z)
    assert dz.dtype == np.float32 and np.all(np.isfinite(dz))
    np.testing.assert_allclose(dz, _sigmoid(Z), rtol=1e-6, atol=1e-30)
    assert "float64" not in _code(g)
    w = np.ones(3, dtype=np.float32)
    X = np.array([[1.0, 0, 0], [0, 2.0, 0]], dtype=np.float32)
    dw, db = ad.grad(logistic, wrt=(0, 1))(w, 0.5, X, np.array([1.0, 0.0], dtype=np.float32))
    assert dw.dtype == np.float32 and type(db) is float
    np.testing.assert_allclose(dw, [(_sigmoid(1.5) - 1) / 2, _sigmoid(2.5), 0], rtol=1e-6)


def test_pieces_read_elsewhere_keep_the_general_rules():
    z = np.array([-2.0, -0.3, 0.4, 1.5])
    for f in (top_read_twice, abs_read_twice):
        g = ad.grad(f)
        assert_matches_numerical(f, [z], (0,), (g(z),))


def test_second_derivative_of_softplus():
    z = np.array([-3.0, -0.5, 0.7, 2.0])
    h = ad.hessian(softplus_sum)(z)
    s = _sigmoid(z)
    np.testing.assert_allclose(h, np.diag(s * (1 - s)), rtol=1e-10, atol=1e-14)
