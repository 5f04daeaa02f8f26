"""Differentiating with respect to a list, tuple or dict of differently-shaped arrays (a model's
parameters), once refused with "make each array its own parameter": the gradient is the same
container (tests/api/test_containers.py has the rest)."""

import numpy as np

import adcompiler as ad


def loss(params, x):
    W, b = params
    return np.sum(np.tanh(x @ W + b))


def loss_split(W, b, x):
    return np.sum(np.tanh(x @ W + b))


def test_a_ragged_list_of_parameters_has_a_list_gradient():
    rng = np.random.default_rng(3)
    W, b, x = rng.normal(size=(3, 2)), rng.normal(size=2), rng.normal(size=(4, 3))
    dW, db = ad.grad(loss_split, wrt=("W", "b"))(W, b, x)
    g = ad.grad(loss)([W, b], x)
    assert type(g) is list and len(g) == 2
    np.testing.assert_allclose(g[0], dW, rtol=1e-12)
    np.testing.assert_allclose(g[1], db, rtol=1e-12)
    t = ad.grad(loss)((W, b), x)
    assert type(t) is tuple
    np.testing.assert_allclose(t[0], dW, rtol=1e-12)


def sum_of_squares(params):
    return params[0] ** 2 + 3.0 * params[1]


def test_a_list_of_numbers_has_a_list_of_floats_gradient():
    g = ad.grad(sum_of_squares)([1.5, 2.0])   # as jax.grad: one float per entry
    assert g == [3.0, 3.0] and all(type(v) is float for v in g)
