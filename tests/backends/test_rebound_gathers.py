"""A name rebound to a gather of itself (``x = x[::-1]``, ``x = np.sort(x)``, ``x = x[1:]``,
``x = x[idx]``) used more than once: its cotangent and the parameter's share the user's name
``dx``, and the scatter back wrote ``dx = np.zeros(...)`` before reading the old ``dx``
(``dx[::-1] = dx``): the gradient was zero (or partial, or a broadcast error); in a loop the
carried slot did the same (``dx_1 = np.zeros(...); dx_1[::-1] = dx_1 + dv2_1``). Now the
result of an emission that writes before it reads takes no name its inputs' expressions read
(``backends/emit.py``, ``backends/inplace.py``)."""

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import check_grads

IDX = np.array([2, 0, 1, 2])


def reversed_twice_read(x):
    x = x[::-1]
    return np.sum(x ** 2) + np.sum(np.tanh(x))


def sorted_pair(x, y):
    x = np.sort(x)
    y = np.sort(y)
    return np.mean((x - y) ** 2) + 0.1 * np.sum(x ** 2)


def sliced(x):
    x = x[1:]
    return np.sum(x ** 2) + np.sum(np.tanh(x))


def fancy(x):
    x = x[IDX]
    return np.sum(x ** 3) + np.sum(x)


def masked(x):
    x = x[np.array([True, False, True])]
    return np.sum(np.sin(x) * x) + np.sum(x)


def column(y):
    y = y[:, 0]
    return np.sum(y * y) + np.sum(np.exp(y))


def flipped_cumsum(x, a):
    y = a * x
    y = y[::-1]
    z = np.cumsum(y)
    return np.sum(z * z) + np.sum(y)


def sorted_in_loop(w):
    a = w * 0.3
    for _ in range(2):
        a = np.sort(a)
    return np.sum(a * w)


def trajectory(k, x0, data):
    traj = np.zeros(data.shape[0] + 1)
    traj[0] = x0
    for i in range(data.shape[0]):
        traj[i + 1] = traj[i] - 0.1 * k * traj[i]
    traj = traj[1:]
    return np.sum((traj - data) ** 2) + 0.01 * np.sum(traj ** 2)


def along(x, order):
    x = np.take_along_axis(x, order, axis=1)
    return np.sum(x ** 2) + np.sum(x[:, 0])


def reversed_in_a_loop(x):
    total = np.zeros((3,))
    for _ in range(3):
        flipped = x[::-1]
        x = x[::-1]
        total = total + flipped
    return np.sum(total * np.arange(1.0, 4.0))


def reversed_over_rows(x):
    total = np.zeros((3,))
    for k, (p, q) in enumerate(zip(x, x)):
        x = x[::-1]
        total = total + x * p
    return np.sum(total)


X = np.array([0.3, -1.2, 0.8])


@pytest.mark.parametrize("f, args, wrt", [
    (reversed_twice_read, (X,), (0,)),
    (sorted_pair, (np.array([0.3, -1.2, 0.8, 2.0]), np.array([1.0, 0.1, -0.5, 0.6])), (0, 1)),
    (sliced, (X,), (0,)),
    (fancy, (X,), (0,)),
    (masked, (X,), (0,)),
    (column, (np.array([[0.3, 1.0], [-0.2, 0.5]]),), (0,)),
    (flipped_cumsum, (np.array([0.5, -1.0, 2.0, 0.25]), 0.7), (0, 1)),
    (sorted_in_loop, (np.array([0.5, -0.3, 0.8, 0.1]),), (0,)),
    (trajectory, (0.5, 1.2, np.exp(-0.03 * np.arange(1, 6))), (0, 1)),
    (reversed_in_a_loop, (X,), (0,)),     # the loop's slot: dx_1[::-1] = dx_1 + dv2_1
    (reversed_over_rows, (X,), (0,)),
    (along, (np.array([[0.3, -1.0, 2.0], [1.5, 0.2, -0.7]]),
             np.array([[2, 0, 1], [1, 2, 0]])), (0,)),
])
def test_a_name_rebound_to_a_gather_of_itself(f, args, wrt):
    check_grads(f, *args, wrt=wrt, rtol=1e-5, atol=1e-7)


def test_the_reversal_gradient_and_its_source():
    g = ad.grad(reversed_twice_read)
    np.testing.assert_allclose(g(X), 2 * X + 1 - np.tanh(X) ** 2)   # the old code: zeros
    assert "dx[::-1] = dx\n" not in g.source
