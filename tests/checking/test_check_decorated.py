"""check_grad of a decorated gradient (``@ad.grad(wrt=...) def loss``) checks the gradient it
computes, with its own wrt: it used to check the derivative of that gradient (a second
derivative) and print "ok" for it, or refuse several wrt with a hint about hessian."""

import numpy as np
import pytest

import adcompiler as ad


@ad.grad(wrt=("w", "b"))
def loss(w, b, x):
    return np.sum(np.tanh(x @ w + b) ** 2)


@ad.grad
def single(w):
    return np.sum(w ** 3)


def test_a_decorated_gradient_is_checked_as_the_gradient_it_computes():
    rng = np.random.default_rng(0)
    w, b, x = rng.standard_normal(3), 0.3, rng.standard_normal((4, 3))
    report = ad.check_grad(loss, w, b, x)
    assert [c.name for c in report.inputs] == ["w", "b"]
    np.testing.assert_allclose(report.inputs[0].compiled, loss(w, b, x)[0])
    one = ad.check_grad(single, np.array([1.0, 2.0]))
    np.testing.assert_allclose(one.inputs[0].compiled, [3.0, 12.0])   # 3 w**2, not 6 w


def test_another_wrt_for_a_decorated_gradient_is_refused():
    with pytest.raises(TypeError, match="drop wrt="):
        ad.check_grad(loss, np.ones(3), 0.3, np.ones((4, 3)), wrt="x")
