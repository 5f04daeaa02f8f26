"""np.linspace with traced ends (a time horizon being fitted): NumPy's values, bit for bit, and
the gradient of each end; constant ends still fold while compiling."""

import re

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import numerical_grad


def trajectory(T, v):
    t = np.linspace(0.0, T, 11)
    return np.sum(np.sin(v * t) ** 2)


def open_interval(a, b):
    return np.sum(np.exp(np.linspace(a, b, 7, endpoint=False)))


def single(a, b):
    return np.sum(np.linspace(a, b, num=1) * 3.0)


def constant_ends(x):
    return np.sum(x * np.linspace(0, 1, 4))


def vector_ends(a, b):
    return np.sum(np.linspace(a, b, 3))


def with_retstep(a, b):
    return np.sum(np.linspace(a, b, 3, retstep=True)[0])


@pytest.mark.parametrize("f, args", [(trajectory, [2.0, 1.3]), (open_interval, [0.5, 2.0]),
                                     (single, [0.5, 2.0]), (constant_ends, [np.ones(4)])])
def test_values_are_numpys_and_gradients_match(f, args):
    wrt = tuple(range(len(args)))
    value, grads = ad.value_and_grad(f, wrt=wrt)(*args)
    assert value == f(*args)   # NumPy's own steps: the same bits
    for k, g in enumerate(grads):
        np.testing.assert_allclose(g, numerical_grad(f, args, k), rtol=1e-6, atol=1e-9)


def total(a, b):
    return np.sum(np.linspace(a, b, 5))


def test_end_point_weights():
    # sum(linspace(a, b, 5)) = 5 (a + b) / 2: each end has weight 5 / 2; one point is the start
    np.testing.assert_allclose(ad.grad(total, wrt=(0, 1))(0.5, 2.0), (2.5, 2.5), rtol=1e-15)
    assert ad.grad(single, wrt=(0, 1))(0.5, 2.0) == (3.0, 0.0)


@pytest.mark.parametrize("f, args, text", [
    (vector_ends, [np.zeros(2), np.ones(2)], "takes scalars (0-d values) here"),
    (with_retstep, [0.0, 1.0], "takes only `num=` and `endpoint=` here")])
def test_refused_forms_say_what_to_write(f, args, text):
    with pytest.raises(ad.CompileError, match=re.escape(text)) as err:
        ad.grad(f)(*args)
    assert "test_linspace_traced.py" in str(err.value)
