"""Calling an object whose class defines ``__call__`` (a layer, ``self.l1(x)``, ``for layer
in self.layers: h = layer(h)``) inlines its ``__call__`` with the object first, as a method
call is; what it reads (``self.W``) is checked before each call like a method's reads, through
list attributes too (``net.layers[1].W = W2`` compiles again). It was refused: "calling
`self.l1` is not supported in a compiled function"."""

import numpy as np

import adcompiler as ad
from tests.helpers import check_grads


class Dense:
    def __init__(self, W, b):
        self.W, self.b = W, b

    def __call__(self, x):
        return np.tanh(x @ self.W + self.b)


class Net:
    def __init__(self, layers):
        self.layers = layers
        self.first = layers[0]

    def head(self, x):
        return np.sum(self.first(x) ** 2)

    def loss(self, x):
        h = x
        for layer in self.layers:
            h = layer(h)
        return np.sum(h * h)


def _net():
    rng = np.random.default_rng(3)
    return Net([Dense(rng.standard_normal((3, 4)), rng.standard_normal(4)),
                Dense(rng.standard_normal((4, 2)), rng.standard_normal(2))])


X = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])


def test_layer_objects_against_differences():
    net = _net()
    for method in (Net.head, Net.loss):
        (g,) = check_grads(method, net, X, wrt=(1,), rtol=1e-6)
        assert g.shape == X.shape


def test_a_layers_weights_rebound_or_replaced_compile_again():
    net = _net()
    g = ad.grad(Net.loss, wrt="x")
    for change in (lambda: setattr(net.layers[1], "W", net.layers[1].W * 2.0),
                   lambda: setattr(net.first, "b", net.first.b + 1.0),
                   lambda: net.layers.__setitem__(1, Dense(np.ones((4, 2)), np.zeros(2)))):
        before = g(net, X)
        change()
        after = g(net, X)
        expected = check_grads(Net.loss, net, X, wrt=(1,), rtol=1e-6)[0]
        np.testing.assert_allclose(after, expected, rtol=1e-10)
        assert not np.allclose(before, after)
