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

from tests.helpers import assert_matches_numerical, check_grads

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


def scaled_rows(inp, w, k):
    a = inp * w                     # a list times a float: NumPy's product (or TypeError)
    c = inp * k                     # a list times an int: repeated
    return np.sum(a) + np.sum(inp + inp) * w + np.sum(c) * w


def test_operators_on_a_list_argument_keep_np_sum():
    """``inp * w`` is an array or an error whatever ``inp`` is; ``inp + inp`` and ``inp * 2``
    of a list are lists, so their sums stay ``np.sum``."""
    inp = np.array([[1.0, 2.0], [3.0, -1.0]])
    g = ad.value_and_grad(scaled_rows, wrt=1)
    value, dw = g(inp, 0.5, 2)
    assert value == pytest.approx(scaled_rows(inp, 0.5, 2), rel=1e-12)
    assert dw == pytest.approx(inp.sum() + 2 * inp.sum() + 2 * inp.sum(), rel=1e-12)
    assert "a.sum()" in g.source and "np.sum(c)" in g.source


def list_ops(w, inp, k):
    return w * np.sum(inp * k)


def test_a_repeated_list_is_summed_as_the_user_code_sums_it():
    inp = [[1.0, 2.0], [3.0, -1.0]]
    g = ad.value_and_grad(list_ops)
    value, dw = g(0.5, inp, 3)
    assert value == pytest.approx(list_ops(0.5, inp, 3), rel=1e-12) and dw == pytest.approx(15.0)
    assert ".sum()" not in g.source
