"""``grad(grad(f))`` of a while loop whose test needs statements (``it < 30 and np.sum(y) <
2.0``: the second operand only where the first holds). The first gradient's code wrote the
loop as ``while True: <test>; if not t2: break; ys.append(y); ...``; reading it again, the
frontend put the append under the break's ``if not done:`` and refused it ("must run once in
every iteration"). Code that is read again now runs the test before the loop and at the end of
its body (``while t2:``), the same steps in the same order."""

import numpy as np
import pytest

import adcompiler as ad


def counted_first(x, s):
    y = x
    it = 0
    while it < 30 and np.sum(y) < 2.0:
        y = y * (1.0 + s) + 0.1
        it += 1
    return np.sum(y) * s


def traced_first(x, s):
    y = x
    it = 0
    while np.sum(y) < 2.0 and it < 30:
        y = y * (1.0 + s) + 0.1
        it += 1
    return np.sum(y) * s


def _second_difference(f, x, s, h=1e-4):
    return (f(x, s + h) - 2 * f(x, s) + f(x, s - h)) / h ** 2


@pytest.mark.parametrize("f", [counted_first, traced_first])
def test_grad_of_grad_through_a_test_with_statements(f):
    x = np.array([0.1, 0.2])
    second = ad.grad(ad.grad(f, wrt="s"), wrt="s")(x, 0.3)
    assert second == pytest.approx(ad.hessian(f, wrt="s")(x, 0.3), rel=1e-12)
    assert second == pytest.approx(_second_difference(f, x, 0.3), rel=1e-4)


def test_the_loop_runs_as_often_as_the_users():
    x = np.array([0.1, 0.2])
    first = ad.grad(counted_first, wrt="s")
    value = ad.value_and_grad(counted_first, wrt="s")(x, 0.3)[0]
    assert value == counted_first(x, 0.3)
    assert first(x, 0.0) == pytest.approx(2.1)            # nine steps of 0.2 reach 2.0
    low = np.array([-10.0, -10.0])
    assert first(low, 0.0) == pytest.approx(-20.0 + 0.2 * 30)   # it < 30 stops it first
