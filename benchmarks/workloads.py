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


def gmm(mu, log_sigma, logit_w, X):
    """Negative mean log likelihood of 2-D points under a mixture of isotropic Gaussians."""
    d = X.shape[1]
    diff = X[:, None, :] - mu[None, :, :]
    sq = np.sum(diff * diff, axis=2)
    log_w = logit_w - np.log(np.sum(np.exp(logit_w)))
    log_2pi = 1.8378770664093453
    comp = log_w - d * log_sigma - 0.5 * sq * np.exp(-2.0 * log_sigma) - 0.5 * d * log_2pi
    m = np.max(comp, axis=1, keepdims=True)
    ll = m + np.log(np.sum(np.exp(comp - m), axis=1, keepdims=True))
    return -np.mean(ll)


def heat(u0, kappa, obs):
    """Heat-equation stencil (periodic, explicit steps) fitted to an observation per step."""
    u = u0
    loss = 0.0
    for t in range(obs.shape[0]):
        u = u + kappa * (np.roll(u, 1) - 2.0 * u + np.roll(u, -1))
        r = u - obs[t]
        loss = loss + np.sum(r * r)
    return loss


def gp_nll(theta, X, y):
    """GP negative log marginal likelihood, RBF kernel; theta = log (length, scale, noise)."""
    n = X.shape[0]
    sq = np.sum(X * X, axis=1)
    d2 = sq[:, None] + sq[None, :] - 2.0 * (X @ X.T)
    K = np.exp(2.0 * theta[1] - 0.5 * d2 * np.exp(-2.0 * theta[0]))
    K = K + np.exp(2.0 * theta[2]) * np.eye(n)
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * (y @ alpha) + np.sum(np.log(np.diag(L))) + 0.5 * n * 1.8378770664093453


def matfact(U, V, iu, iv, r):
    """Matrix factorization on (user, item) pairs with repeats, L2-regularised."""
    pred = np.sum(U[iu] * V[iv], axis=1)
    e = pred - r
    return np.sum(e * e) + 0.01 * (np.sum(U * U) + np.sum(V * V))


def gru(Wz, Uz, bz, Wr, Ur, br, Wh, Uh, bh, x, h0):
    """A GRU over a sequence (a Python loop), loss on the last state."""
    h = h0
    for t in range(x.shape[0]):
        z = 1.0 / (1.0 + np.exp(-(x[t] @ Wz + h @ Uz + bz)))
        r = 1.0 / (1.0 + np.exp(-(x[t] @ Wr + h @ Ur + br)))
        c = np.tanh(x[t] @ Wh + (r * h) @ Uh + bh)
        h = (1.0 - z) * h + z * c
    return np.sum(h * h)


def transformer(Wq, Wk, Wv, Wo, W1, b1, W2, b2, x, y):
    """A pre-norm transformer block: 4-head self-attention and a ReLU MLP, squared error."""
    S, D = x.shape
    H = 4
    dh = D // H
    mu = np.mean(x, axis=1, keepdims=True)
    xc = x - mu
    a = xc / np.sqrt(np.mean(xc * xc, axis=1, keepdims=True) + 1e-5)
    q = np.transpose((a @ Wq).reshape(S, H, dh), (1, 0, 2))
    k = np.transpose((a @ Wk).reshape(S, H, dh), (1, 0, 2))
    v = np.transpose((a @ Wv).reshape(S, H, dh), (1, 0, 2))
    s = (q @ np.swapaxes(k, 1, 2)) * dh ** -0.5
    p = np.exp(s - np.max(s, axis=2, keepdims=True))
    p = p / np.sum(p, axis=2, keepdims=True)
    att = np.transpose(p @ v, (1, 0, 2)).reshape(S, D)
    h = x + att @ Wo
    mu2 = np.mean(h, axis=1, keepdims=True)
    hc = h - mu2
    a2 = hc / np.sqrt(np.mean(hc * hc, axis=1, keepdims=True) + 1e-5)
    f = np.maximum(a2 @ W1 + b1, 0.0) @ W2 + b2
    out = h + f
    return np.mean((out - y) ** 2)


def ode_rk4(W1, b1, W2, y0, obs):
    """A neural ODE integrated by RK4 in a loop, fitted to an observation per step."""
    dt = 0.05
    y = y0
    loss = 0.0
    for t in range(obs.shape[0]):
        k1 = np.tanh(y @ W1 + b1) @ W2
        k2 = np.tanh((y + 0.5 * dt * k1) @ W1 + b1) @ W2
        k3 = np.tanh((y + 0.5 * dt * k2) @ W1 + b1) @ W2
        k4 = np.tanh((y + dt * k3) @ W1 + b1) @ W2
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        r = y - obs[t]
        loss = loss + np.mean(r * r)
    return loss / obs.shape[0]


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


def make_gmm(n=100_000, k=16, d=2):
    rng = _rng()
    centres = 3.0 * rng.standard_normal((k, d))
    X = centres[rng.integers(0, k, size=n)] + rng.standard_normal((n, d))
    return (centres + 0.5 * rng.standard_normal((k, d)), 0.1 * rng.standard_normal(k),
            0.1 * rng.standard_normal(k), X)


def make_heat(n=4096, steps=200):
    rng = _rng()
    grid = np.linspace(0.0, 2.0 * math.pi, n, endpoint=False)
    return (np.sin(grid) + 0.1 * rng.standard_normal(n), rng.uniform(0.1, 0.3, n),
            0.5 * rng.standard_normal((steps, n)))


def make_gp(n=300, d=3):
    rng = _rng()
    X = rng.standard_normal((n, d))
    y = np.sin(np.sum(X, axis=1)) + 0.1 * rng.standard_normal(n)
    return (np.array([0.0, 0.0, -2.0]), X, y)


def make_matfact(users=2000, items=1000, rank=32, pairs=100_000):
    rng = _rng()
    return (0.1 * rng.standard_normal((users, rank)), 0.1 * rng.standard_normal((items, rank)),
            rng.integers(0, users, size=pairs), rng.integers(0, items, size=pairs),
            rng.standard_normal(pairs))


def make_gru(T=100, hidden=64, d_in=32, batch=32):
    rng = _rng()
    gates = []
    for _ in range(3):
        gates += [rng.standard_normal((d_in, hidden)) / math.sqrt(d_in),
                  rng.standard_normal((hidden, hidden)) / math.sqrt(hidden),
                  0.1 * rng.standard_normal(hidden)]
    return (*gates, rng.standard_normal((T, batch, d_in)), np.zeros((batch, hidden)))


def make_transformer(seq=128, d_model=128, d_ff=512):
    rng = _rng()
    square = [rng.standard_normal((d_model, d_model)) / math.sqrt(d_model) for _ in range(4)]
    return (*square, rng.standard_normal((d_model, d_ff)) / math.sqrt(d_model),
            0.1 * rng.standard_normal(d_ff), rng.standard_normal((d_ff, d_model)) / math.sqrt(d_ff),
            0.1 * rng.standard_normal(d_model), rng.standard_normal((seq, d_model)),
            rng.standard_normal((seq, d_model)))


def make_ode(batch=256, d=8, hidden=64, steps=100):
    rng = _rng()
    return (rng.standard_normal((d, hidden)) / math.sqrt(d), 0.1 * rng.standard_normal(hidden),
            rng.standard_normal((hidden, d)) / math.sqrt(hidden),
            rng.standard_normal((batch, d)), rng.standard_normal((steps, batch, d)))


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
    Workload("gmm", "Gaussian mixture, 16 × 10^5 points", gmm, ("mu", "log_sigma", "logit_w"),
             make_gmm, handwritten.gmm),
    Workload("heat", "heat stencil, 200 steps × 4096", heat, ("u0", "kappa"), make_heat,
             handwritten.heat),
    Workload("gp", "GP likelihood, n = 300", gp_nll, ("theta",), make_gp, handwritten.gp_nll),
    Workload("matfact", "matrix factorization, 10^5 pairs", matfact, ("U", "V"), make_matfact,
             handwritten.matfact),
    Workload("gru", "GRU, T = 100, hidden 64", gru,
             ("Wz", "Uz", "bz", "Wr", "Ur", "br", "Wh", "Uh", "bh"), make_gru, handwritten.gru),
    Workload("transformer", "transformer block 128×128, 4 heads", transformer,
             ("Wq", "Wk", "Wv", "Wo", "W1", "b1", "W2", "b2"), make_transformer,
             handwritten.transformer),
    Workload("ode_rk4", "neural ODE, RK4, 100 steps", ode_rk4, ("W1", "b1", "W2"), make_ode,
             handwritten.ode_rk4),
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
