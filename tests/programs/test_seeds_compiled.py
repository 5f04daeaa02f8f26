"""The seed documents' examples through the static compiler, with the seeds' own numbers.

Seed 000/003: ``l1 = input*w1; l2 = l1 + w2; l3 = l1*w3; l4 = l2*l3; loss = mean(l4)`` at
``w = 2, 3, 4`` and ``input = ones((2, 2))`` gives ``w1.grad, w2.grad, w3.grad = 28, 8, 10`` and
``inp.grad = 14`` everywhere. Seed 002: ``f(x1, x2) = ln(x1) + x1*x2 - sin(x2)`` at ``(2, 5)``
gives ``y = 11.6521`` and the gradient ``(5.5, 1.7163)``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import adcompiler


def loss(w1, w2, w3, inp):
    l1 = inp * w1
    l2 = l1 + w2
    l3 = l1 * w3
    l4 = l2 * l3
    return l4.mean()


def loss_input(w1, w2, w3, input):  # the seed's own spelling, shadowing the builtin
    l1 = input * w1
    l2 = l1 + w2
    l3 = l1 * w3
    l4 = l2 * l3
    loss = l4.mean()
    return loss


def f(x1, x2):
    return np.log(x1) + x1 * x2 - np.sin(x2)


def f_math(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def f_steps(x1, x2):  # the survey's evaluation trace, one primitive per line
    v1 = np.log(x1)
    v2 = x1 * x2
    v3 = np.sin(x2)
    v4 = v1 + v2
    y = v4 - v3
    return y


F_GRAD = (5.5, 2.0 - math.cos(5.0))   # 1.7163378145367738...
F_VALUE = math.log(2.0) + 10.0 - math.sin(5.0)


# ---- seed 000/003: the computation graph example -----------------------------------------------
@pytest.mark.parametrize("fn", [loss, loss_input])
def test_seed_graph_python_floats(fn):
    grads = adcompiler.grad(fn, wrt=(0, 1, 2))(2.0, 3.0, 4.0, np.ones((2, 2)))
    assert grads == (28.0, 8.0, 10.0)
    assert all(type(g) is float for g in grads)


def test_seed_graph_zero_d_arrays():
    w = [np.array(2.0), np.array(3.0), np.array(4.0)]
    grads = adcompiler.grad(loss, wrt=(0, 1, 2))(*w, np.ones((2, 2)))
    np.testing.assert_array_equal(grads, [28.0, 8.0, 10.0])
    for g in grads:
        assert isinstance(g, np.ndarray) and g.shape == () and g.dtype == np.float64


def test_seed_graph_input_gradient():
    dw1, dw2, dw3, dinp = adcompiler.grad(loss, wrt=("w1", "w2", "w3", "inp"))(
        2.0, 3.0, 4.0, np.ones((2, 2)))
    assert (dw1, dw2, dw3) == (28.0, 8.0, 10.0)
    assert dinp.shape == (2, 2) and dinp.dtype == np.float64
    np.testing.assert_array_equal(dinp, np.full((2, 2), 14.0))


def test_seed_graph_single_wrt_and_value():
    assert adcompiler.grad(loss, wrt="w3")(2.0, 3.0, 4.0, np.ones((2, 2))) == 10.0
    value, grads = adcompiler.value_and_grad(loss, wrt=(0, 1, 2))(2.0, 3.0, 4.0, np.ones((2, 2)))
    assert value == 40.0 and grads == (28.0, 8.0, 10.0)


def test_seed_graph_decorator_reuses_its_compilation():
    grad_loss = adcompiler.grad(wrt=(0, 1, 2))(loss)
    assert grad_loss(2.0, 3.0, 4.0, np.ones((2, 2))) == (28.0, 8.0, 10.0)
    first = grad_loss.source
    # Other values, same signature: the same code; by hand, dw2 = mean(l1 * w3) = inp*w1*w3.
    assert grad_loss(1.0, 0.5, -2.0, np.full((2, 2), 3.0))[1] == 3.0 * 1.0 * -2.0
    assert grad_loss.source == first


# ---- seed 002: the survey's f(x1, x2) ------------------------------------------------------------
@pytest.mark.parametrize("fn", [f, f_math, f_steps])
def test_seed_survey_gradient(fn):
    grads = adcompiler.grad(fn, wrt=(0, 1))(2.0, 5.0)
    assert grads[0] == pytest.approx(5.5, rel=1e-15)
    assert grads[1] == pytest.approx(1.7163378145367738, rel=1e-15)
    assert grads == pytest.approx(F_GRAD, rel=1e-15)


@pytest.mark.parametrize("fn", [f, f_math])
def test_seed_survey_value_and_grad(fn):
    value, grads = adcompiler.value_and_grad(fn, wrt=(0, 1))(2.0, 5.0)
    assert round(float(value), 4) == 11.6521
    assert float(value) == pytest.approx(F_VALUE, rel=1e-15)
    assert grads == pytest.approx(F_GRAD, rel=1e-15)


def test_seed_survey_on_arrays():
    x1, x2 = np.array([2.0, 0.5, 3.0]), np.array([5.0, -1.0, 0.25])
    dx1, dx2 = adcompiler.vjp(f, wrt=(0, 1))(x1, x2, cotangent=np.ones(3))
    np.testing.assert_allclose(dx1, 1 / x1 + x2, rtol=1e-15)
    np.testing.assert_allclose(dx2, x1 - np.cos(x2), rtol=1e-15)


# ---- vjp: the gradient of sum(f * cotangent) ---------------------------------------------------
def layer(x, w, b):
    return np.tanh(x @ w + b) * b


def weighted_layer(x, w, b, c):
    return np.sum(layer(x, w, b) * c)


def test_vjp_equals_grad_of_weighted_sum():
    rng = np.random.default_rng(0)
    x, w, b = rng.normal(size=(4, 3)), rng.normal(size=(3, 2)), rng.normal(size=(2,))
    c = rng.normal(size=(4, 2))
    got = adcompiler.vjp(layer, wrt=(0, 1, 2))(x, w, b, cotangent=c)
    want = adcompiler.grad(weighted_layer, wrt=(0, 1, 2))(x, w, b, c)
    for g, h in zip(got, want):
        np.testing.assert_allclose(g, h, rtol=1e-13, atol=1e-15)
    # ...and both are the chain rule written by hand.
    t = np.tanh(x @ w + b)
    dz = c * b * (1 - t * t)
    np.testing.assert_allclose(got[0], dz @ w.T, rtol=1e-13)
    np.testing.assert_allclose(got[1], x.T @ dz, rtol=1e-13)
    np.testing.assert_allclose(got[2], dz.sum(axis=0) + (c * t).sum(axis=0), rtol=1e-13)


def test_vjp_needs_a_cotangent():
    with pytest.raises(TypeError, match="cotangent"):
        adcompiler.vjp(layer)(np.ones((1, 3)), np.ones((3, 2)), np.ones(2))
