"""A compiled method may call the instance's other methods (``self.forward(x)``), static and
class methods, and methods of an object attribute (``self.layer(x)``): each is inlined with its
instance. What they read (``self.W``) is recorded like the method's own reads, so rebinding it
compiles again instead of running the old constants."""

import numpy as np

import adcompiler as ad


class Layer:
    def __init__(self, W):
        self.W = W

    def apply(self, x):
        return np.tanh(self.W @ x)


class Model:
    def __init__(self):
        self.W = np.array([[1.0, 2.0], [3.0, 4.0]])
        self.b = np.array([0.5, -0.5])
        self.layer = Layer(np.array([[0.5, -1.0], [2.0, 0.25]]))

    def forward(self, x):
        return np.tanh(self.W @ x + self.b)

    @staticmethod
    def square(z):
        return z * z

    @classmethod
    def scale(cls, z):
        return cls.FACTOR * z

    FACTOR = 3.0

    @ad.grad(wrt="x")
    def loss(self, x):
        return np.sum(self.square(self.forward(x)))

    @ad.grad(wrt="x")
    def scaled(self, x):
        return np.sum(self.scale(x) * x)

    @ad.grad(wrt="x")
    def nested(self, x):
        return np.sum(self.layer.apply(x))


X = np.array([0.1, 0.2])


def expected_loss_grad(m, x):
    t = np.tanh(m.W @ x + m.b)
    return m.W.T @ (2.0 * t * (1.0 - t ** 2))


def test_instance_and_static_methods_are_inlined():
    m = Model()
    np.testing.assert_allclose(m.loss(X), expected_loss_grad(m, X))


def test_rebinding_an_attribute_a_called_method_reads_compiles_again():
    m = Model()
    m.loss(X)
    m.W = m.W * 2.0
    np.testing.assert_allclose(m.loss(X), expected_loss_grad(m, X))
    m.b = np.zeros(2)
    np.testing.assert_allclose(m.loss(X), expected_loss_grad(m, X))


def test_class_method_reads_the_class_attribute():
    m = Model()
    np.testing.assert_allclose(m.scaled(X), 6.0 * X)


def test_method_of_an_attribute_object():
    m = Model()
    want = m.layer.W.T @ (1.0 - np.tanh(m.layer.W @ X) ** 2)
    np.testing.assert_allclose(m.nested(X), want)
    m.layer.W = np.eye(2)
    np.testing.assert_allclose(m.nested(X), 1.0 - np.tanh(X) ** 2)


def doubled(self, x):
    return 2.0 * x


def test_redefining_a_called_method_compiles_again():
    class Other(Model):
        def forward(self, x):
            return x * 1.0
    m = Other()
    np.testing.assert_allclose(m.loss(X), 2.0 * X)
    Other.forward = doubled
    try:
        np.testing.assert_allclose(m.loss(X), 8.0 * X)
    finally:
        del Other.forward


def test_instances_take_the_fast_path_each_with_its_own_constants():
    a, b = Model(), Model()
    b.W = np.eye(2)
    for _ in range(3):   # interleaved: each instance's guard must send it to its own code
        np.testing.assert_allclose(a.loss(X), expected_loss_grad(a, X))
        np.testing.assert_allclose(b.loss(X), expected_loss_grad(b, X))
    chain = type(Model.__dict__["loss"]).__call__.__source__
    assert chain.count("self is _adc_object") >= 2      # no longer the full path every call


class Normalizer:
    def normalize_(self, z):
        z /= np.sum(z)

    @ad.grad(wrt="x")
    def share(self, x, w):
        y = x * 1.0
        self.normalize_(y)        # a bare call of a method that writes into its argument
        return np.sum(y * w)


def test_a_bare_method_call_applies_its_writes():
    x, w = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    dx = Normalizer().share(x, w)
    s = x.sum()
    np.testing.assert_allclose(dx, w / s - np.dot(w, x) / s ** 2)
