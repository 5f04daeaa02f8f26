"""Differentiating with respect to a list, tuple or dict of differently-shaped arrays (a model's
parameters) says to make each its own parameter; "pass np.asarray(...)" only where that works."""

import numpy as np
import pytest

import adcompiler as ad


def loss(params, x):
    W, b = params
    return np.sum(np.tanh(x @ W + b))


def test_a_ragged_list_of_parameters_says_to_split_it():
    params = [np.ones((3, 2)), np.zeros(2)]
    with pytest.raises(TypeError, match="make each array its own parameter"):
        ad.grad(loss)(params, np.ones((4, 3)))
    with pytest.raises(TypeError, match="tuple of arrays"):
        ad.grad(loss)(tuple(params), np.ones((4, 3)))


def test_a_list_of_numbers_says_asarray():
    with pytest.raises(TypeError, match=r"np.asarray\(params\)"):
        ad.grad(loss)([1.0, 2.0], np.ones((4, 3)))
