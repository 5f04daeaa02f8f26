"""Calls of the public API: a vjp's ``cotangent=`` of the wrong structure says what it expected;
every callable attribute of a transform decorated in a class (``.specialize``, a Hessian's
``.hvp`` and its ``.specialize``...) binds the instance, as the call itself does; a NumPy scalar
input gets a NumPy scalar gradient of its own type (``np.float32`` for ``np.float32``)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import numerical_grad

X = np.array([0.3, -1.0, 2.0])


# ---- 1. the structure of a vjp's cotangent -------------------------------------------------------
def doubled_sine(x):
    return np.sin(x) * 2.0


def total(x):
    return np.sum(x * x)


def float_square(s):
    return s * s


def two_results(x):
    return np.sin(x), x * x


@pytest.mark.parametrize("cotangent, given", [
    ((X, X), "a tuple of 2 (a float64 array of shape (3,), a float64 array of shape (3,))"),
    ((X,), "a tuple of 1 (a float64 array of shape (3,))"),
    ([X, X], "a list of 2 (a float64 array of shape (3,), a float64 array of shape (3,))"),
])
def test_a_tuple_cotangent_for_one_result_says_what_was_expected(cotangent, given):
    with pytest.raises(ValueError) as info:
        ad.vjp(doubled_sine)(X, cotangent=cotangent)
    assert str(info.value) == (
        f"vjp of doubled_sine: cotangent= must be like doubled_sine's one result, a float64 "
        f"array of shape (3,), but it is {given}; pass one array shaped like the result")
    np.testing.assert_allclose(ad.vjp(doubled_sine)(X, cotangent=X), 2 * np.cos(X) * X)


def test_a_tuple_cotangent_for_a_scalar_result():
    with pytest.raises(ValueError, match=r"cotangent= must be like total's one result, a "
                                         r"float64 array of shape \(\), but it is a tuple of "
                                         r"2 \(a float, a float\)"):
        ad.vjp(total)(X, cotangent=(1.0, 2.0))
    np.testing.assert_allclose(ad.vjp(total)(X, cotangent=3.0), 6.0 * X)
    with pytest.raises(ValueError, match=r"float_square's one result, a float, but it is a "
                                         r"tuple of 1 \(a float\)"):
        ad.vjp(float_square)(1.5, cotangent=(2.0,))
    assert ad.vjp(float_square)(1.5, cotangent=2.0) == pytest.approx(6.0)


def test_a_function_of_several_results_takes_a_tuple_cotangent_only():
    with pytest.raises(ad.CompileError) as info:
        ad.vjp(two_results)(X, cotangent=X)
    err = info.value
    assert err.filename == __file__ and err.lineno == two_results.__code__.co_firstlineno + 1
    assert err.message == (
        "vjp of two_results: two_results returns a tuple of 2 values (a float64 array of shape "
        "(3,), a float64 array of shape (3,)), so cotangent= is a tuple of 2 arrays shaped like "
        "them; cotangent= is a float64 array of shape (3,)")
    assert "np.concatenate or np.stack" in err.hint
    # the tuple: the vjp of both results (tests/api/test_containers.py)
    both = ad.vjp(two_results)(X, cotangent=(X, 2 * X))
    np.testing.assert_allclose(both, np.cos(X) * X + 2 * X * (2 * X), rtol=1e-12)


# ---- 2. methods: every documented callable attribute binds the instance -------------------------
class Model:
    def __init__(self, w):
        self.w = w

    @ad.grad(wrt="x")
    def gloss(self, x):
        return np.sum(np.tanh(self.w * x) ** 2)

    @ad.value_and_grad(wrt="x")
    def vloss(self, x):
        return np.sum(np.tanh(self.w * x) ** 2)

    @ad.hessian(wrt="x")
    def hloss(self, x):
        return np.sum(np.tanh(self.w * x) ** 2)

    @ad.jacobian(wrt="x")
    def jvec(self, x):
        return np.tanh(self.w * x)

    @ad.jvp(wrt="x")
    def tvec(self, x):
        return np.tanh(self.w * x)


def _analytic(w, x):
    """The gradient and Hessian (diagonal) of sum(tanh(w x)^2)."""
    t = np.tanh(w * x)
    sech2 = 1.0 - t * t
    return 2 * w * t * sech2, 2 * w * w * sech2 * (sech2 - 2 * t * t)


def test_hvp_of_a_hessian_method_binds_the_instance():
    m, v = Model(0.7), np.array([1.0, -2.0, 0.5])
    grad, hdiag = _analytic(0.7, X)
    g, hv = m.hloss.hvp(X, tangents=v)
    np.testing.assert_allclose(g, grad, rtol=1e-12)
    np.testing.assert_allclose(hv, hdiag * v, rtol=1e-12)
    g2, hv2 = Model.hloss.hvp(m, X, tangents=v)               # the same, through the class
    np.testing.assert_allclose(hv2, hv, rtol=1e-15)
    m.w = 1.3                                                 # attributes are read each call
    np.testing.assert_allclose(m.hloss.hvp(X, tangents=v)[1], _analytic(1.3, X)[1] * v,
                               rtol=1e-12)


def test_specialize_and_source_through_an_instance():
    m = Model(0.7)
    assert m.gloss.specialize(X).source.startswith("def grad_gloss(self, x):")
    assert m.vloss.specialize(X).source.startswith("def value_and_grad_vloss(self, x):")
    assert m.tvec.specialize(X).source.startswith("def jvp_tvec(self, x, x_dot):")
    assert m.hloss.specialize(X).source.startswith("def hvp_hloss(self, x, x_dot):")
    assert m.hloss.hvp.specialize(X).source.startswith("def hvp_hloss(self, x, x_dot):")
    assert m.hloss.source == m.hloss.hvp.source == Model.hloss.source
    m.jvec.specialize(X)                                      # 3 in, 3 out: reverse mode
    assert m.jvec.last_mode == "rev" and m.jvec.source.startswith("def vjp_jvec(self, x, ")
    value, tangent = m.jvec.forward(X, tangents=np.ones(3))
    np.testing.assert_allclose(value, np.tanh(0.7 * X), rtol=1e-15)
    np.testing.assert_allclose(tangent, 0.7 * (1 - np.tanh(0.7 * X) ** 2), rtol=1e-12)
    np.testing.assert_allclose(m.jvec.reverse(X, cotangent=np.ones(3)), tangent, rtol=1e-12)


def test_a_method_reached_through_an_instance_is_like_a_bound_method():
    m = Model(0.7)
    np.testing.assert_allclose(m.gloss(X), _analytic(0.7, X)[0], rtol=1e-12)
    np.testing.assert_allclose(m.hloss(X), np.diag(_analytic(0.7, X)[1]), rtol=1e-12,
                               atol=1e-15)
    value, grad = m.vloss(X)
    assert value == pytest.approx(np.sum(np.tanh(0.7 * X) ** 2), rel=1e-14)
    assert m.gloss.__self__ is m and m.gloss.__func__ is Model.gloss
    assert m.gloss.__name__ == "gloss" and str(inspect.signature(m.gloss)) == "(x)"
    assert m.gloss.wrt == ("x",) and m.gloss.primal is Model.gloss.primal
    for transform, name in ((ad.grad, "gloss"), (ad.hessian, "hloss")):
        with pytest.raises(TypeError, match=rf"\(model\.{name}\): a bound method"):
            transform(getattr(m, name))


# ---- 3. NumPy scalars: a gradient of the input's type --------------------------------------------
def cubic(x, y):
    return x * x * y + np.sin(x)


@pytest.mark.parametrize("scalar", [np.float32, np.float64, np.float16])
def test_a_numpy_scalar_gets_a_numpy_scalar_of_its_type(scalar):
    x, y = scalar(2.0), scalar(3.0)
    rtol = {np.float64: 1e-14, np.float32: 1e-6, np.float16: 2e-3}[scalar]
    gx, gy = ad.grad(cubic, wrt=(0, 1))(x, y)
    assert type(gx) is scalar and type(gy) is scalar
    assert float(gx) == pytest.approx(2 * 2.0 * 3.0 + np.cos(2.0), rel=rtol)
    assert float(gy) == pytest.approx(4.0, rel=rtol)
    g = ad.grad(cubic)(x, y)
    assert type(g) is scalar
    value, g = ad.value_and_grad(cubic)(x, y)
    assert type(g) is scalar and float(g) == pytest.approx(float(gx), rel=rtol)
    g = ad.vjp(cubic)(x, y, cotangent=scalar(2.0))
    assert type(g) is scalar and float(g) == pytest.approx(2 * float(gx), rel=rtol)


def test_python_floats_and_0d_arrays_keep_their_types():
    gx, gy = ad.grad(cubic, wrt=(0, 1))(2.0, 3.0)
    assert type(gx) is float and type(gy) is float
    zero_d = np.array(2.0, dtype=np.float32)
    g = ad.grad(cubic)(zero_d, np.float32(3.0))
    assert type(g) is np.ndarray and g.shape == () and g.dtype == np.float32
    assert float(g) == pytest.approx(numerical_grad(cubic, [2.0, 3.0], 0), rel=1e-6)


def test_the_hessian_vector_product_of_a_numpy_scalar():
    x, y = np.float32(2.0), np.float32(3.0)
    (gx, gy), (hx, hy) = ad.hessian(cubic, wrt=(0, 1)).hvp(x, y, tangents=(1.0, 0.0))
    assert all(type(v) is np.float32 for v in (gx, gy, hx, hy))
    assert float(hx) == pytest.approx(2 * 3.0 - np.sin(2.0), rel=1e-6)   # d2/dx2
    assert float(hy) == pytest.approx(2 * 2.0, rel=1e-6)                 # d2/dydx
    g, hv = ad.hessian(cubic).hvp(np.float64(2.0), 3.0, tangents=2.0)
    assert type(g) is np.float64 and type(hv) is np.float64
    assert hv == pytest.approx(2 * (6.0 - np.sin(2.0)), rel=1e-14)
