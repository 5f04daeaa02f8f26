"""Differentiating a gradient that is not one scalar (grad(grad(f)) of an array gradient, any
transform of grad(f, wrt=(a, b))) is a located error at the user's def that names the transform
to use instead, not an error inside the generated source."""

import math

import numpy as np
import pytest

import adcompiler as ad


def kepler(M, e):
    E = M
    for _ in range(20):
        E = E - (E - e * math.sin(E) - M) / (1.0 - e * math.cos(E))
    return E


def piecewise(x):
    if np.sum(x) > 0:
        y = np.sum(x ** 2)
    else:
        y = np.sum(np.exp(x))
    return y


@pytest.mark.parametrize("make", [
    lambda: ad.grad(ad.grad(kepler, wrt=("M", "e")), wrt="M"),
    lambda: ad.jacobian(ad.grad(kepler, wrt=("M", "e")), wrt=("M", "e")),
])
def test_a_tuple_of_gradients_points_to_hessian(make):
    with pytest.raises(ad.CompileError) as info:
        make()(1.0, 0.3)
    err = info.value
    assert err.filename == __file__ and err.lineno == kepler.__code__.co_firstlineno
    assert "returns a tuple of 2 gradients" in err.message
    assert "adcompiler.hessian(kepler, wrt=('M', 'e'))" in err.hint
    H = ad.hessian(kepler, wrt=("M", "e"))(1.0, 0.3)   # what the hint says works
    mixed = ad.grad(ad.grad(kepler, wrt="e"), wrt="M")(1.0, 0.3)
    np.testing.assert_allclose(H[0][1], mixed, rtol=1e-12)


def test_grad_of_an_array_gradient_points_to_hessian():
    x = np.array([1.0, 2.0])
    with pytest.raises(ad.CompileError) as info:
        ad.grad(ad.grad(piecewise))(x)
    err = info.value
    assert err.lineno == piecewise.__code__.co_firstlineno
    assert "inner gradient is an array of shape (2,)" in err.message
    assert "adcompiler.hessian(piecewise)" in err.hint
    np.testing.assert_allclose(ad.hessian(piecewise)(x), 2.0 * np.eye(2))


def newton_rows(s, a):
    out = 0.0
    for i in range(a.shape[0]):
        x = 1.0
        while abs(x * x - s * a[i]) > 1e-12:
            x = 0.5 * (x + s * a[i] / x)
        out = out + x
    return out


def test_what_the_generated_source_cannot_take_is_located_at_the_def():
    a = np.array([2.0, 3.0])
    with pytest.raises(ad.CompileError) as info:
        ad.grad(ad.grad(newton_rows))(1.3, a)
    err = info.value
    assert err.lineno == newton_rows.__code__.co_firstlineno
    assert "reading its generated source back failed" in err.message
    assert "adcompiler.hessian(newton_rows)" in err.hint
    want = sum(-0.25 * ai ** 2 / (1.3 * ai) ** 1.5 for ai in a)    # d2/ds2 of sum sqrt(s a_i)
    np.testing.assert_allclose(ad.hessian(newton_rows)(1.3, a), want, rtol=1e-8)
