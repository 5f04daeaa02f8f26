"""A two-layer perceptron with a numerically stable softmax cross-entropy.

    adcompiler show samples/mlp.py:loss
"""

import numpy as np

import adcompiler as ad


def log_softmax(z):
    shifted = z - np.max(z, axis=1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))


@ad.grad(wrt=("W1", "b1", "W2", "b2"))
def loss(W1, b1, W2, b2, x, onehot):
    h = np.tanh(x @ W1 + b1)
    logits = h @ W2 + b2
    return -np.mean(np.sum(onehot * log_softmax(logits), axis=1))


def example_loss():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16))
    onehot = np.eye(4)[rng.integers(0, 4, size=8)]
    return (rng.standard_normal((16, 32)) * 0.1, np.zeros(32),
            rng.standard_normal((32, 4)) * 0.1, np.zeros(4), x, onehot)
