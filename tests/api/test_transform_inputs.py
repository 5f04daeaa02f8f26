"""What the higher-order transforms take and give: ``jacobian`` and ``hessian`` keep float32,
in every mode; what cannot be compiled (a partial, a staticmethod object, a transform other than
``grad``) is a TypeError when the transform is made, saying what to write instead; ``jacobian``
and ``hessian`` bind an instance as ``grad`` does; a Hessian through a custom_vjp function whose
value the gradient needs is the reverse-mode Jacobian of the gradient (against the analytic
Hessian)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.errors import CompileError
from tests.custom.test_hessian_custom import lse as logsumexp_c  # a custom_vjp logsumexp

RNG = np.random.default_rng(11)


def softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def scaled_tanh(s, x):
    return np.tanh(s * x) * s


def kwonly(x, *, scale=2.0):
    return np.sum(x ** 2) * scale


def cube(x):
    return np.sum(x ** 3)


def softmax_jacobian(x):
    p = softmax(np.asarray(x, dtype=np.float64))
    return np.diag(p) - np.outer(p, p)


# ---- 1. float32 in, float32 out, in every mode ----------------------------------------------
@pytest.mark.parametrize("mode", ["fwd", "rev", "auto"])
def test_jacobian_and_hessian_keep_float32(mode):
    x = RNG.standard_normal(5).astype(np.float32)
    j = ad.jacobian(softmax, mode=mode)(x)
    assert j.dtype == np.float32 and j.shape == (5, 5)
    np.testing.assert_allclose(j, softmax_jacobian(x), rtol=1e-4, atol=1e-6)
    h = ad.hessian(logsumexp)(x)
    assert h.dtype == np.float32
    np.testing.assert_allclose(h, softmax_jacobian(x), rtol=1e-4, atol=1e-6)
    # a Python float takes part weakly: float32 blocks for both inputs, in both modes
    js, jx = ad.jacobian(scaled_tanh, wrt=(0, 1), mode=mode)(0.7, x)
    assert js.dtype == jx.dtype == np.float32 and js.shape == (5,) and jx.shape == (5, 5)
    sech2 = 1.0 / np.cosh(0.7 * x.astype(np.float64)) ** 2
    np.testing.assert_allclose(jx, np.diag(0.49 * sech2), rtol=1e-4, atol=1e-6)
    x64 = x.astype(np.float64)
    assert ad.jacobian(softmax, mode=mode)(x64).dtype == np.float64
    assert ad.hessian(logsumexp)(x64).dtype == np.float64


# ---- 2. what cannot be compiled: a TypeError when the transform is made -----------------------
NESTED = [
    ("grad(hessian(logsumexp))", lambda: ad.grad(ad.hessian(logsumexp)), "a hessian"),
    ("grad(jacobian(logsumexp))", lambda: ad.grad(ad.jacobian(logsumexp)), "a jacobian"),
    ("jvp(jacobian(softmax))", lambda: ad.jvp(ad.jacobian(softmax)), "a jacobian"),
    ("jacobian(vjp(softmax))", lambda: ad.jacobian(ad.vjp(softmax)), "a vjp"),
    ("jacobian(jvp(softmax))", lambda: ad.jacobian(ad.jvp(softmax)), "a jvp"),
    ("jacobian(jacobian(softmax))", lambda: ad.jacobian(ad.jacobian(softmax)), "a jacobian"),
    ("hessian(jacobian(logsumexp))", lambda: ad.hessian(ad.jacobian(logsumexp)), "a jacobian"),
    ("jacobian(hessian(logsumexp))", lambda: ad.jacobian(ad.hessian(logsumexp)), "a hessian"),
    ("grad(value_and_grad(cube))", lambda: ad.grad(ad.value_and_grad(cube)), "a value_and_grad"),
]


@pytest.mark.parametrize("what, make, inner", NESTED, ids=[n for n, _, _ in NESTED])
def test_unsupported_inputs_are_refused_when_the_transform_is_made(what, make, inner):
    with pytest.raises(TypeError) as info:
        make()                                   # made, never called
    text = str(info.value)
    assert isinstance(info.value, CompileError)  # as grad(value_and_grad(f)) always was
    assert f"{what}: cannot differentiate {inner}" in text
    assert "only grad(f)" in text and "supported: grad(grad(f))" in text
    assert "jacobian or hessian of grad(f)" in text and "adcompiler.hessian(f)" in text
    assert "AttributeError" not in text and "'args'" not in text


def test_partial_staticmethod_and_callable_objects_say_what_to_write():
    with pytest.raises(TypeError, match=r"grad\(functools.partial\(kwonly, scale=3.0\)\): a "
                                        r"functools.partial object") as info:
        ad.grad(functools.partial(kwonly, scale=3.0))
    assert "write a def that calls kwonly" in str(info.value)
    assert "def kwonly_fixed(x): return kwonly(x, scale=3.0)" in str(info.value)
    with pytest.raises(TypeError, match=r"jacobian\(functools.partial"):
        ad.jacobian(functools.partial(kwonly, scale=3.0))
    with pytest.raises(TypeError, match=r"grad\(staticmethod cube\): @adcompiler.grad is "
                                        r"stacked directly over @staticmethod") as info:
        ad.grad(staticmethod(cube))              # what @ad.grad over @staticmethod passes
    assert "put @staticmethod above the adcompiler decorator" in str(info.value)
    with pytest.raises(TypeError, match=r"hessian\(print\): .*not a def; write a def"):
        ad.hessian(print)


def test_the_nestings_that_work_keep_working():
    x = RNG.standard_normal(4)
    want = softmax_jacobian(x)
    np.testing.assert_allclose(ad.jacobian(ad.grad(logsumexp))(x), want, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(ad.jacobian(ad.grad(logsumexp), mode="fwd")(x), want,
                               rtol=1e-10, atol=1e-14)
    v = RNG.standard_normal(4)
    np.testing.assert_allclose(ad.jvp(ad.grad(logsumexp))(x, tangents=v)[1], want @ v,
                               rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(ad.vjp(ad.grad(logsumexp))(x, cotangent=v), want @ v,
                               rtol=1e-10, atol=1e-14)
    assert ad.grad(ad.grad(ad.grad(scalar_cube)))(0.5) == pytest.approx(6.0)
    np.testing.assert_allclose(ad.grad(logsumexp_c)(x), softmax(x), rtol=1e-12)  # custom_vjp


def scalar_cube(s):
    return s ** 3


# ---- 3. jacobian and hessian on methods ------------------------------------------------------
class Model:
    def __init__(self, w):
        self.w = w

    @ad.hessian(wrt="x")
    def hloss(self, x):
        return np.sum(np.tanh(self.w * x) ** 2)

    @ad.jacobian(wrt="x")
    def jloss(self, x):
        return np.tanh(self.w * x)

    def plain(self, x):
        return np.tanh(self.w * x)


def test_jacobian_and_hessian_bind_the_instance():
    x, m = np.array([0.3, -1.0, 2.0]), Model(0.7)
    t = np.tanh(0.7 * x)
    sech2 = 1.0 - t * t
    np.testing.assert_allclose(m.jloss(x), np.diag(0.7 * sech2), rtol=1e-12)
    want = np.diag(2 * 0.49 * sech2 * (sech2 - 2 * t * t))   # d2/dx2 tanh(wx)^2
    np.testing.assert_allclose(m.hloss(x), want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(Model.hloss(m, x), want, rtol=1e-12, atol=1e-15)
    m.w = 1.3                                                 # attributes are read each call
    np.testing.assert_allclose(m.jloss(x), np.diag(1.3 / np.cosh(1.3 * x) ** 2), rtol=1e-12)
    for transform in (ad.jacobian, ad.hessian):
        name = transform.__name__
        with pytest.raises(TypeError, match=rf"{name}\(model.plain\): a bound method; take the "
                                            rf"{name} of the function, {name}\(Model.plain"):
            transform(m.plain)


# ---- 4. the Hessian through a custom_vjp function whose value the gradient needs -------------


def lse_times_norm(w, x):          # the gradient needs logsumexp_c's value
    return logsumexp_c(x @ w) * np.sum(w * w)


def lse_scaled(s, z):              # and with a Python float
    return logsumexp_c(z) * s * s


def test_hessian_through_a_custom_vjp_whose_value_the_gradient_needs():
    w, x = RNG.standard_normal(3), RNG.standard_normal((4, 3))
    z = x @ w
    lse, p, norm = logsumexp(z), softmax(z), w @ w
    d_lse, d2_lse = x.T @ p, x.T @ softmax_jacobian(z) @ x
    want = d2_lse * norm + 2 * np.outer(d_lse, w) + 2 * np.outer(w, d_lse) + 2 * lse * np.eye(3)
    h = ad.hessian(lse_times_norm)
    np.testing.assert_allclose(h(w, x), want, rtol=1e-12, atol=1e-14)
    assert h.hvp.rows is not None and "def vjp_grad_lse_times_norm(" in h.source
    v = RNG.standard_normal(3)
    g, hv = h.hvp(w, x, tangents=v)
    np.testing.assert_allclose(g, d_lse * norm + 2 * lse * w, rtol=1e-12)
    np.testing.assert_allclose(hv, want @ v, rtol=1e-12, atol=1e-14)
    s, zz = 0.8, RNG.standard_normal(4)
    (hss, hsz), (hzs, hzz) = ad.hessian(lse_scaled, wrt=(0, 1))(s, zz)
    assert hss == pytest.approx(2 * logsumexp(zz), rel=1e-12) and hss.shape == ()
    np.testing.assert_allclose(hsz, 2 * s * softmax(zz), rtol=1e-12)
    np.testing.assert_allclose(hzs, 2 * s * softmax(zz), rtol=1e-12)
    np.testing.assert_allclose(hzz, s * s * softmax_jacobian(zz), rtol=1e-12, atol=1e-14)
    (gs, gz), (hvs, hvz) = ad.hessian(lse_scaled, wrt=(0, 1)).hvp(s, zz, tangents=(1.0, zz))
    assert isinstance(hvs, float) and hvs == pytest.approx(hss + hsz @ zz, rel=1e-12)
    np.testing.assert_allclose(hvz, hzs + hzz @ zz, rtol=1e-12, atol=1e-14)
    assert gs == pytest.approx(2 * s * logsumexp(zz), rel=1e-12)
