"""A one-sided clip (``np.clip(x, 0.0, None)``, ``x.clip(max=1.0)``) keeps clip's rule: at the
bound x takes the whole gradient, as in the two-sided clip, the tape and PyTorch's clamp. It
used to lower to np.maximum/np.minimum, whose rule splits a tie in half."""

import numpy as np

import adcompiler as ad
from adcompiler import tape


def relu_clip(x):
    return np.sum(np.clip(x, 0.0, None))


def capped(x):
    return np.sum(x.clip(max=1.0) * 3.0)


def traced_floor(x, lo):
    return np.sum(np.clip(x, lo, None) ** 2)


def test_lower_bound_tie_gives_x_the_gradient():
    x = np.array([-1.0, 0.0, 1.0, 2.0])
    g = ad.grad(relu_clip)
    np.testing.assert_array_equal(g(x), [0.0, 1.0, 1.0, 1.0])
    t = tape.tensor(x, requires_grad=True)
    relu_clip(t).backward()
    np.testing.assert_array_equal(t.grad.numpy() if hasattr(t.grad, "numpy") else t.grad, g(x))


def test_upper_bound_tie_gives_x_the_gradient():
    x = np.array([0.0, 1.0, 2.0])
    value, dx = ad.value_and_grad(capped)(x)
    assert value == np.sum(np.clip(x, None, 1.0) * 3.0)
    np.testing.assert_array_equal(dx, [3.0, 3.0, 0.0])


def test_traced_bound_takes_the_gradient_only_below_it():
    x = np.array([-1.0, 0.5, 2.0])
    lo = np.array([-0.5, 0.5, 1.0])
    dx, dlo = ad.grad(traced_floor, wrt=(0, 1))(x, lo)
    np.testing.assert_array_equal(dx, [0.0, 1.0, 4.0])    # the tie at 0.5 goes to x
    np.testing.assert_array_equal(dlo, [-1.0, 0.0, 0.0])


def test_source_reads_as_a_maximum_without_infinities():
    g = ad.grad(relu_clip)
    g(np.ones(3))
    assert "np.maximum(" in ad.value_and_grad(relu_clip).specialize(np.ones(3)).source
    assert "inf" not in g.source
    assert "dx = np.where(x < 0.0, 0.0, 1.0)" in g.source   # the simplified value keeps dx
