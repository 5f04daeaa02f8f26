"""A gradient object called inside a differentiated function (issue 29, part 5b): ``G = grad(f)``,
then ``def hv(x, v): return np.sum(G(x) * v)`` is a Hessian-vector product; ``grad(hv)`` inlines
G's generated source at the call (:func:`adcompiler.api.regradient.called_gradient`). Against
``hessian(f) @ v``, finite differences of the gradient, forward mode; ``value_and_grad`` objects
and ``wrt=`` tuples too; the transforms that are not (vjp, jacobian, hessian) are located
errors at the user's call, not inside adcompiler."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import assert_located, check_grads

RNG = np.random.default_rng(55)
X, V = RNG.standard_normal(4), RNG.standard_normal(4)


def energy(x):
    return np.sum(np.sin(x) * x ** 2) + np.prod(np.cos(x[:2]))


G = ad.grad(energy)


def hessian_vector(x, v):
    return np.sum(G(x) * v)


def test_a_hessian_vector_product_through_a_called_gradient():
    hv = ad.grad(hessian_vector)(X, V)
    np.testing.assert_allclose(hv, ad.hessian(energy)(X) @ V, rtol=1e-12, atol=1e-13)
    check_grads(hessian_vector, X, V, wrt=(0, 1))   # finite differences of G itself
    _, tangent = ad.jvp(hessian_vector)(X, V, tangents=V)
    assert tangent == pytest.approx(V @ ad.hessian(energy)(X) @ V, rel=1e-11)


def cubic(x, s, power=3):
    return np.sum(x ** power) * s


PAIR = ad.grad(cubic, wrt=("x", "s"))
VALUE_AND_GRAD = ad.value_and_grad(energy)


def uses_a_pair(x, s):
    dx, ds = PAIR(x, s)
    return np.sum(dx * x) + ds * 2.0


def uses_value_and_grad(x):
    value, g = VALUE_AND_GRAD(x)
    return value + np.sum(g ** 2)


def scalar(t):
    return t ** 3 * np.sin(t)


SCALAR_GRAD = ad.grad(scalar)


def uses_a_scalar_gradient(t):
    return SCALAR_GRAD(t) * t


def test_wrt_tuples_value_and_grad_and_python_floats():
    check_grads(uses_a_pair, X, 1.5, wrt=(0, 1))
    check_grads(uses_value_and_grad, X)
    d = ad.grad(uses_a_scalar_gradient)(0.7)
    t, h = 0.7, 1e-6
    want = (uses_a_scalar_gradient(t + h) - uses_a_scalar_gradient(t - h)) / (2 * h)
    assert type(d) is float and d == pytest.approx(want, rel=1e-7)


HESSIAN = ad.hessian(energy)
VJP = ad.vjp(energy)


def calls_a_hessian(x):
    return np.sum(HESSIAN(x))


def calls_a_vjp(x):
    return np.sum(VJP(x, cotangent=1.0))


def test_the_other_transforms_are_located_errors_at_the_call():
    for f, construct, words in ((calls_a_hessian, "HESSIAN(x)", "calling a hessian of `energy`"),
                                (calls_a_vjp, "VJP(x, cotangent=1.0)", "calling a vjp of `energy`")):
        with pytest.raises(ad.CompileError) as info:
            ad.grad(f)(X)
        assert words in str(info.value) and "adcompiler/api" not in str(info.value)
        assert_located(info.value, f, 1, construct, "adcompiler.grad(energy)")


def test_on_the_tape_a_called_gradient_says_what_to_do_instead():
    from adcompiler.tape import dynamic_grad
    with pytest.raises(TypeError, match="it is a tape tensor, and a compiled gradient called on "
                                        "one would drop its graph") as info:
        dynamic_grad(hessian_vector)(X, V)
    assert "create_graph=True" in str(info.value)
