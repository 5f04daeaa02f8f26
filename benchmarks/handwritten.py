"""Expert hand-written NumPy gradients of the workloads: the practical floor for NumPy code.

Careful and vectorised (whole-array products, transposes as views, derivatives simplified by
hand, forward values reused), but ordinary NumPy: no ``out=`` buffers. Each takes the workload's
arguments and returns the gradients with respect to its ``wrt`` names, as a tuple.
"""

import math

import numpy as np


def seed_graph(w1, w2, w3, inp):
    l1 = inp * w1
    l2 = l1 + w2
    l3 = l1 * w3
    n = inp.size
    dw1 = float(np.sum((l3 + l2 * w3) * inp)) / n
    dw2 = float(np.sum(l3)) / n
    dw3 = float(np.sum(l2 * l1)) / n
    return dw1, dw2, dw3


def seed_f(x1, x2):
    return 1.0 / x1 + x2, x1 - math.cos(x2)


def elementwise(x):
    # d/dx [tanh(x) x + 3x^2 - exp(-x)] = x (1 - tanh^2) + tanh + 6x + exp(-x)
    t = np.tanh(x)
    g = 7.0 - t * t
    g *= x
    g += t
    g += np.exp(-x)
    return (g,)


def rosenbrock(x):
    a = x[:-1]
    r = x[1:] - a * a
    g = np.empty_like(x)
    g[0] = 0.0
    g[1:] = 200.0 * r
    g[:-1] += 2.0 * (a - 1.0) - 400.0 * (a * r)
    return (g,)


def logistic(w, X, y):
    s = 2.0 * y - 1.0
    # d/dm log1p(exp(-m)) = -1 / (1 + exp(m)), with m = s * (X @ w)
    dm = s / (1.0 + np.exp(s * (X @ w)))
    return (X.T @ (dm * (-1.0 / len(y))),)


def mlp(W1, b1, W2, b2, x, onehot):
    h = np.tanh(x @ W1 + b1)
    logits = h @ W2 + b2
    e = np.exp(logits - np.max(logits, axis=1, keepdims=True))
    # the rows of onehot sum to one, so d loss / d logits = (softmax - onehot) / batch
    dz = e / np.sum(e, axis=1, keepdims=True)
    dz -= onehot
    dz /= len(x)
    da = dz @ W2.T
    da *= 1.0 - h * h
    return x.T @ da, np.sum(da, axis=0), h.T @ dz, np.sum(dz, axis=0)


def rnn(Wh, Wx, b, x, h0):
    T, batch, d_in = x.shape
    inputs = (x.reshape(T * batch, d_in) @ Wx + b).reshape(T, batch, -1)
    hs = np.empty((T + 1,) + h0.shape)   # hs[t] is the state before step t
    hs[0] = h0
    for t in range(T):
        hs[t + 1] = np.tanh(hs[t] @ Wh + inputs[t])
    da = np.empty_like(inputs)           # d loss / d pre-activation, per step
    dh = 2.0 * hs[T]
    for t in range(T - 1, -1, -1):
        da[t] = dh * (1.0 - hs[t + 1] * hs[t + 1])
        dh = da[t] @ Wh.T
    flat = da.reshape(T * batch, -1)
    dWh = hs[:T].reshape(T * batch, -1).T @ flat
    dWx = x.reshape(T * batch, d_in).T @ flat
    return dWh, dWx, np.sum(flat, axis=0)


def small_mlp(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    derr = (h @ W2 + b2 - y) * (2.0 / y.size)
    da = (derr @ W2.T) * (1.0 - h * h)
    return x.T @ da, np.sum(da, axis=0), h.T @ derr, np.sum(derr, axis=0)
