"""Gradients that hold for every size: one example shape each, any batch size afterwards.

    adcompiler compile samples/shapes.py      # then grad_bias(W, b, x) takes any batch of x

Each function is compiled for its example's shapes; the standalone module's gradient reads the
sizes from its arguments (``d1, d2 = x.shape``), so it takes any sizes with the example's dtypes,
ranks and sizes of 1. ``by_size`` decides on a size while compiling, so it stays per shape.
"""

import numpy as np

import adcompiler as ad


@ad.grad(wrt=("W", "b"))
def bias(W, b, x):
    """An affine layer with a bias broadcast over the batch."""
    return np.mean((np.tanh(x @ W + b) - 0.5) ** 2)


@ad.grad(wrt=("x", "w"))
def rows(x, w):
    """A loop over the rows of x."""
    total = 0.0
    for i in range(x.shape[0]):
        total = total + np.sum(np.sin(x[i] * w)) * (i + 1.0)
    return total


@ad.grad
def standardise(x):
    """Reductions that keep their axis, broadcast back over it."""
    m = x.mean(axis=1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=1, keepdims=True)
    return np.sum(((x - m) / np.sqrt(v + 0.1)) ** 3 * x)


@ad.grad
def window(x):
    """Differences of neighbours, and the first three entries: sizes of at least 3."""
    d = x[1:] - x[:-1]
    return np.sum(d ** 2) + np.sum(x[:3] ** 3)


@ad.vjp(wrt="x")
def scaled(x, w):
    """A vector-Jacobian product: the cotangent has x's sizes."""
    return np.tanh(x * w)


@ad.grad
def by_size(x):
    """Decides on the size while compiling: compiled per shape."""
    if x.shape[0] > 3:
        return np.sum(x ** 2)
    return np.sum(x ** 3)


def example_bias():
    rng = np.random.default_rng(0)
    return rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal((8, 4))


def example_rows():
    return np.linspace(0.1, 1.2, 12).reshape(4, 3), np.array([0.5, -1.0, 2.0])


def example_standardise():
    return (np.linspace(-1.0, 2.0, 15).reshape(3, 5),)


def example_window():
    return (np.linspace(-1.0, 1.0, 6),)


def example_scaled():
    return np.ones((2, 3)) * 0.3, np.array([1.0, -0.5, 2.0])


def example_by_size():
    return (np.ones(5),)
