"""The gradient of a weight applied to a batch of matrices (``x @ W``, x of shape (B, T, D)) is
one product of the stacked rows, ``x.reshape(-1, D).T @ g.reshape(-1, F)``, not a batch of B
small products summed (a (B, D, F) intermediate): the attention and CNN weight gradients."""

import numpy as np

import adcompiler as ad
from adcompiler import tape


def projected(x, W):
    return np.sum(np.tanh(x @ W) ** 2)


def test_weight_gradient_of_a_batched_product_is_one_product():
    rng = np.random.default_rng(0)
    x, W = rng.standard_normal((4, 5, 3)), rng.standard_normal((3, 2))
    g = ad.grad(projected, wrt=(0, 1))
    dx, dW = g(x, W)
    h = np.tanh(x @ W)
    dz = 2.0 * h * (1.0 - h * h)
    np.testing.assert_allclose(dW, np.einsum("btd,btf->df", x, dz), rtol=1e-12)
    np.testing.assert_allclose(dx, dz @ W.T, rtol=1e-12)
    assert "np.reshape(x, (-1, 3)).T @" in g.source and "axis=0" not in g.source
    tx, tW = tape.tensor(x, requires_grad=True), tape.tensor(W, requires_grad=True)
    projected(tx, tW).backward()
    np.testing.assert_allclose(tW.grad.numpy(), dW, rtol=1e-12)
