"""The benchmark workloads: each once as a plain NumPy function, with its input maker and wrt."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import handwritten

# ---- the functions (plain NumPy, self-contained: the peers' adapters re-run them with `np` and
# `math` bound to their own namespaces, so no workload calls a helper) ---------------------------


def seed_graph(w1, w2, w3, inp):
    l1 = inp * w1
    l2 = l1 + w2
    l3 = l1 * w3
    l4 = l2 * l3
    return l4.mean()


def seed_f(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def elementwise(x):
    return np.sum(np.tanh(x) * x + 3.0 * x * x - np.exp(-x))


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def logistic(w, X, y):
    return np.mean(np.log1p(np.exp(-(2.0 * y - 1.0) * (X @ w))))


def mlp(W1, b1, W2, b2, x, onehot):
    h = np.tanh(x @ W1 + b1)
    logits = h @ W2 + b2
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(onehot * logp, axis=1))


def rnn(Wh, Wx, b, x, h0):
    h = h0
    for t in range(x.shape[0]):
        h = np.tanh(h @ Wh + x[t] @ Wx + b)
    return np.sum(h * h)


def small_mlp(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    err = h @ W2 + b2 - y
    return np.mean(err * err)


# ---- input makers (deterministic; float64) ------------------------------------------------------


def _rng():
    return np.random.default_rng(0)


def make_seed_graph():
    return (2.0, 3.0, 4.0, _rng().standard_normal((2, 2)))


def make_seed_f():
    return (2.0, 5.0)


def make_vector(n):
    def make():
        return (_rng().uniform(-2.0, 2.0, n),)
    return make


def make_logistic(n=10000, d=100):
    rng = _rng()
    X = rng.standard_normal((n, d))
    y = (rng.uniform(size=n) < 0.5).astype(np.float64)
    return (rng.standard_normal(d) * 0.1, X, y)


def make_mlp(batch=256, d_in=784, hidden=256, classes=10):
    rng = _rng()
    x = rng.standard_normal((batch, d_in))
    onehot = np.eye(classes)[rng.integers(0, classes, size=batch)]
    return (rng.standard_normal((d_in, hidden)) / math.sqrt(d_in), np.zeros(hidden),
            rng.standard_normal((hidden, classes)) / math.sqrt(hidden), np.zeros(classes),
            x, onehot)


def make_rnn(T=50, hidden=128, d_in=64, batch=32):
    rng = _rng()
    return (rng.standard_normal((hidden, hidden)) / math.sqrt(hidden),
            rng.standard_normal((d_in, hidden)) / math.sqrt(d_in),
            rng.standard_normal(hidden) * 0.1,
            rng.standard_normal((T, batch, d_in)), np.zeros((batch, hidden)))


def make_small_mlp(batch=8, d_in=16, hidden=32):
    rng = _rng()
    return (rng.standard_normal((d_in, hidden)) / 4.0, np.zeros(hidden),
            rng.standard_normal((hidden, 1)) / math.sqrt(hidden), np.zeros(1),
            rng.standard_normal((batch, d_in)), rng.standard_normal((batch, 1)))


# ---- the registry --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """One benchmark: the function, the names it is differentiated by, inputs and the floor."""

    name: str
    title: str
    fn: Callable
    wrt: tuple
    make: Callable
    hand: Callable
    size: int = 0          # elements of the main input, for the size sweep
    sweep: bool = False    # only in the size sweep, not in the main tables


def _vector(name, title, fn, hand, n, sweep=False):
    return Workload(name, title, fn, ("x",), make_vector(n), hand, size=n, sweep=sweep)


WORKLOADS = [
    Workload("seed_graph", "seed graph 2×2", seed_graph, ("w1", "w2", "w3"), make_seed_graph,
             handwritten.seed_graph, size=4),
    Workload("seed_f", "seed f (floats)", seed_f, ("x1", "x2"), make_seed_f, handwritten.seed_f),
    _vector("elementwise_1e6", "elementwise 10^6", elementwise, handwritten.elementwise, 10**6),
    _vector("elementwise_1e7", "elementwise 10^7", elementwise, handwritten.elementwise, 10**7),
    _vector("rosenbrock_1e6", "Rosenbrock 10^6", rosenbrock, handwritten.rosenbrock, 10**6),
    Workload("logistic", "logistic regression", logistic, ("w",), make_logistic,
             handwritten.logistic),
    Workload("mlp", "MLP 256×784→256→10", mlp, ("W1", "b1", "W2", "b2"), make_mlp,
             handwritten.mlp),
    Workload("rnn", "RNN, Python loop", rnn, ("Wh", "Wx", "b"), make_rnn, handwritten.rnn),
    Workload("small_mlp", "small MLP 8×16→32→1", small_mlp, ("W1", "b1", "W2", "b2"),
             make_small_mlp, handwritten.small_mlp),
] + [_vector(f"elementwise_1e{k}", f"elementwise 10^{k}", elementwise, handwritten.elementwise,
             10**k, sweep=True) for k in (2, 3, 4, 5)]

BY_NAME = {w.name: w for w in WORKLOADS}
SWEEP = sorted((w for w in WORKLOADS if w.fn is elementwise), key=lambda w: w.size)


def get(name: str) -> Workload:
    """The workload called ``name`` (a KeyError lists the known names)."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(BY_NAME)}") from None
