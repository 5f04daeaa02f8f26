"""A list the compiled code read (a module-level list of layers, ``self.weights``, a closure's
list) has its items checked before each call, as the names themselves are: ``LAYERS[0] = W``
or ``model.weights.append(W)`` compiles again. The old check compared the list object only,
and the gradient stayed that of the old items, silently."""

import numpy as np

import adcompiler as ad

LAYERS = [np.array([[1.0, 0.5], [0.0, 2.0]])]
SCALES = [2.0, 3.0]


def net(x):
    h = x
    for W in LAYERS:
        h = np.tanh(W @ h)
    return np.sum(h)


def scaled(x):
    return np.sum(x * SCALES[0]) + SCALES[1] * np.sum(x * x)


class Model:
    def __init__(self):
        self.weights = [np.array([1.0, 2.0])]

    @ad.grad(wrt="x")
    def loss(self, x):
        total = 0.0
        for w in self.weights:
            total = total + np.sum(w * x)
        return total


def _net_grad(x, layers):
    h, hs = x, []
    for W in layers:
        h = np.tanh(W @ h)
        hs.append((W, h))
    g = np.ones_like(h)
    for W, h in reversed(hs):
        g = W.T @ (g * (1 - h * h))
    return g


def test_a_module_list_changed_in_place_compiles_again():
    x = np.array([0.3, -0.4])
    g = ad.grad(net)
    saved = list(LAYERS)
    try:
        np.testing.assert_allclose(g(x), _net_grad(x, LAYERS), rtol=1e-12)
        LAYERS[0] = np.array([[0.5, 0.0], [1.0, 1.0]])
        np.testing.assert_allclose(g(x), _net_grad(x, LAYERS), rtol=1e-12)
        LAYERS.append(np.array([[2.0, -1.0], [0.5, 0.5]]))
        np.testing.assert_allclose(g(x), _net_grad(x, LAYERS), rtol=1e-12)
    finally:
        LAYERS[:] = saved


def test_numbers_in_a_list_and_an_attributes_list():
    x = np.array([1.0, 2.0])
    g = ad.grad(scaled)
    try:
        np.testing.assert_allclose(g(x), 2.0 + 6.0 * x)
        SCALES[1] = 0.5
        np.testing.assert_allclose(g(x), 2.0 + 1.0 * x)
    finally:
        SCALES[1] = 3.0
    m = Model()
    np.testing.assert_allclose(m.loss(x), [1.0, 2.0])
    m.weights.append(np.array([10.0, 20.0]))
    np.testing.assert_allclose(m.loss(x), [11.0, 22.0])
    m.weights[0] = np.array([0.0, 1.0])
    np.testing.assert_allclose(m.loss(x), [10.0, 21.0])
