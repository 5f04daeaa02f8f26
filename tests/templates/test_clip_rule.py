"""np.clip's derivative follows NumPy's definition, minimum(maximum(x, lo), hi): where the bounds
cross (lo > hi) the result is hi, so hi takes the whole gradient. Compiled, forward mode and
the tape share the rule (templates/elementwise.py)."""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from tests.helpers import assert_matches_numerical


def clipped(x, lo, hi):
    return np.sum(np.clip(x, lo, hi) ** 2)


def clipped_literal(x):
    return np.sum(np.clip(x, -1.0, 1.0) ** 2)


# away from every kink, so that central differences are exact up to rounding
X = np.array([0.1, 2.0, -2.0, 0.7, -0.3, 1.5])
LO = np.array([1.0, 1.0, 1.0, -1.0, -1.0, -2.0])
HI = np.array([0.5, 0.5, 0.5, 1.0, 1.0, 1.0])    # lo > hi in the first three


def test_crossed_bounds_give_hi_the_gradient():
    dx, dlo, dhi = ad.grad(clipped, wrt=(0, 1, 2))(X, LO, HI)
    value = np.clip(X, LO, HI)
    np.testing.assert_array_equal(dx, [0.0, 0.0, 0.0, 2 * 0.7, 2 * -0.3, 0.0])
    np.testing.assert_array_equal(dlo, np.zeros(6))
    np.testing.assert_array_equal(dhi, [2 * 0.5] * 3 + [0.0, 0.0, 2 * value[5]])
    assert_matches_numerical(clipped, (X, LO, HI), (0, 1, 2), (dx, dlo, dhi))


def test_tape_and_forward_mode_agree():
    want = ad.grad(clipped, wrt=(0, 1, 2))(X, LO, HI)
    leaves = [tape.tensor(a, requires_grad=True) for a in (X, LO, HI)]
    got = tape.grad(clipped(*leaves), leaves)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g.detach().numpy()), w)
    for k, w in enumerate(want):   # one jvp per direction of each argument
        tangents = [np.zeros(6), np.zeros(6), np.zeros(6)]
        for i in range(6):
            tangents[k] = np.eye(6)[i]
            _, dot = ad.jvp(clipped, wrt=(0, 1, 2))(X, LO, HI, tangents=tuple(tangents))
            assert dot == pytest.approx(w[i], abs=1e-15)


def test_bounds_keep_x_gradient_as_pytorch_clamp():
    x = np.array([-1.0, 1.0, 0.25])    # exactly at each bound, then inside
    np.testing.assert_array_equal(ad.grad(clipped_literal)(x), [-2.0, 2.0, 0.5])


def test_tape_one_sided_clip():
    x = np.array([-2.0, 0.5, 3.0])
    t = tape.tensor(x, requires_grad=True)
    (g,) = tape.grad(np.sum(np.clip(t, None, 1.0) ** 2), (t,))
    np.testing.assert_array_equal(g.detach().numpy(), [-4.0, 1.0, 0.0])
    t = tape.tensor(x, requires_grad=True)
    (g,) = tape.grad(np.sum(t.clip(min=0.0) ** 2), (t,))
    np.testing.assert_array_equal(g.detach().numpy(), [0.0, 1.0, 6.0])


def test_matches_torch_clamp():
    torch = pytest.importorskip("torch")
    leaves = [torch.tensor(a, requires_grad=True) for a in (X, LO, HI)]
    (torch.clamp(leaves[0], leaves[1], leaves[2]) ** 2).sum().backward()
    for got, leaf in zip(ad.grad(clipped, wrt=(0, 1, 2))(X, LO, HI), leaves):
        np.testing.assert_array_equal(got, leaf.grad.numpy())
