"""Reductions of arrays the generated code computed are spelled as methods (``dt.sum(axis=0)``,
a microsecond less than ``np.sum`` on small arrays); values that may not be NumPy arrays when
the code runs (a list passed for an argument, a branch's result that may be that list) keep
``np.sum``. See adcompiler/backends/methods.py."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.tape import dynamic_grad
from benchmarks import handwritten, workloads

from .helpers import assert_matches_numerical, check_grads

RNG = np.random.default_rng(16)


def test_the_small_mlp_bias_gradients_are_method_sums():
    args = workloads.make_small_mlp()
    g = ad.grad(workloads.small_mlp, wrt=(0, 1, 2, 3))
    got = g(*args)
    for a, b in zip(got, handwritten.small_mlp(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert "np.sum" not in g.source
    assert g.source.count(".sum(axis=0)") == 2


def softmax_xent(w, x, labels):
    z = x @ w
    z = z - np.max(z, axis=1, keepdims=True)
    p = np.exp(z)
    p = p / np.sum(p, axis=1, keepdims=True)
    return -np.mean(np.log(np.sum(p * labels, axis=1))) + 0.1 * np.prod(np.tanh(w[0]))


def test_keywords_and_every_reduction_keep_their_values():
    w, x = RNG.standard_normal((4, 3)), RNG.standard_normal((5, 4))
    labels = np.eye(3)[[0, 2, 1, 1, 0]]
    g = ad.value_and_grad(softmax_xent)
    value, dw = g(w, x, labels)
    assert value == pytest.approx(softmax_xent(w, x, labels), rel=1e-12)
    assert_matches_numerical(softmax_xent, (w, x, labels), (0,), (dw,))
    np.testing.assert_allclose(dw, dynamic_grad(softmax_xent)(w, x, labels), rtol=1e-10)
    assert ".sum(axis=1, keepdims=True)" in g.source and ".prod()" in g.source


def broadcast_bias(x, b):
    return np.sum(np.tanh(x + b) ** 2)


def test_a_broadcast_operand_is_summed_back_with_methods():
    x, b = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 1))
    check_grads(broadcast_bias, x, b, wrt=(0, 1))
    g = ad.grad(broadcast_bias, wrt=1)
    g(x, b)
    assert ".sum(axis=1, keepdims=True)" in g.source


def reduce_a_list(x, y):
    return np.sum(x * np.sum(y, axis=0)) + np.mean(y[0]) * np.sum(x * x)


def reduce_a_branch(x, y):
    if np.sum(x) > 0.0:
        z = y                       # the list itself, when this branch runs
    else:
        z = np.outer(x, x)
    return np.sum(z, axis=0) @ x + np.max(z)


@pytest.mark.parametrize("fn", [reduce_a_list, reduce_a_branch], ids=lambda f: f.__name__)
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_list_argument_is_still_reduced_by_numpy(fn, sign):
    """A list given for an argument that is not differentiated reaches the generated code as
    the list, which has no ``.sum``: those reductions stay ``np.sum``/``np.max``."""
    x = sign * np.array([0.5, 1.5, 2.0])
    y = [[1.0, 2.0, 3.0], [0.5, -1.0, 4.0], [2.0, 0.0, 1.0]]
    got = ad.grad(fn)(x, y)
    assert_matches_numerical(fn, (x, np.array(y)), (0,), (got,))
