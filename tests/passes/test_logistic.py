"""The logistic family seen whole (adcompiler.passes.logistic): users' spellings of sigmoid,
softplus and log-sigmoid are one primitive each before differentiation (one residual, the
adjoint from the result alone) and ufuncs again after it.

Values: the compiled gradient against the unoptimised one and against the tape (which records
the user's operations one by one), at small sizes and past the planner's and fusion's threshold
(4,096 elements) and numexpr's (262,144); against central differences where small. Shape: the
reverse loop of a GRU reads no exponential and divides nowhere; a chain whose pieces are read
elsewhere is left as written; softplus and log-sigmoid are finite far into both tails.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from adcompiler.backends.check_modes import unoptimised
from adcompiler.ir import Aval, walk
from adcompiler.passes.logistic import recognise_logistics
from adcompiler.pipeline import lower
from tests.helpers import assert_matches_numerical


def sigmoid_gate(x, W):
    return np.sum(1.0 / (1.0 + np.exp(-(x @ W))) * x)


def sigmoid_ratio(x, W):
    e = np.exp(x @ W)
    return np.sum(e / (1 + e)) + np.sum(np.exp(W) / (1 + np.exp(W)))


def softplus_both(x, W):
    return np.sum(np.log(1 + np.exp(x)) @ W) + np.sum(np.log1p(np.exp(W)))


def log_sigmoids(x, W):
    return (np.sum(-np.log(1 + np.exp(-x)) @ W) - np.sum(np.log1p(np.exp(-W)))
            + np.sum(np.log(1 / (1 + np.exp(-x)))))


def shared_exp(x, W):
    e = np.exp(-x)
    return np.sum(1.0 / (1.0 + e) + e @ W)


def gru(W, U, x, h0):
    h = h0
    for t in range(x.shape[0]):
        z = 1.0 / (1.0 + np.exp(-(x[t] @ W + h @ U)))
        r = 1.0 / (1.0 + np.exp(-(x[t] @ U + h @ W)))
        h = (1.0 - z) * h + z * np.tanh(r * h)
    return np.sum(h * h)


FUNCTIONS = [sigmoid_gate, sigmoid_ratio, softplus_both, log_sigmoids, shared_exp]


def _args(n, m, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, m)), rng.standard_normal((m, m)) / np.sqrt(m)


def _gru_args(T, batch, hidden, seed=1):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden),
            rng.standard_normal((hidden, hidden)) / np.sqrt(hidden),
            rng.standard_normal((T, batch, hidden)), 0.1 * rng.standard_normal((batch, hidden)))


def _close(got, want, rtol=1e-12):
    for a, b in zip(got, want):
        assert np.linalg.norm(a - b) <= rtol * max(np.linalg.norm(b), 1e-300), (a, b)


def _against_references(f, args, wrt):
    g = ad.grad(f, wrt=wrt)
    got = g(*args)
    with unoptimised():
        want = ad.grad(f, wrt=wrt)(*args)
    _close(got, want)
    _close(got, tape.dynamic_grad(f, wrt=wrt)(*args), rtol=1e-11)
    return g


def _recognised(f, args) -> list:
    names = f.__code__.co_varnames[:f.__code__.co_argcount]
    graph = lower(f, {n: Aval("array", "float64", a.shape) for n, a in zip(names, args)})
    return [n.prim for n in walk(recognise_logistics(graph).nodes)
            if n.prim in ("sigmoid", "softplus", "log_sigmoid")]


@pytest.mark.parametrize("f", FUNCTIONS)
def test_small_against_differences_and_references(f):
    args = _args(3, 4)
    grads = _against_references(f, args, (0, 1))
    assert_matches_numerical(f, args, (0, 1), grads(*args))


@pytest.mark.parametrize("f", FUNCTIONS)
@pytest.mark.parametrize("n", [1100, 70_000])   # 4,400 and 280,000 elements: past the planner
def test_past_the_thresholds(f, n):               # and fusion, and past numexpr
    args = _args(n, 4)
    g = _against_references(f, args, (0, 1))
    assert "out=_buf" in g.source


@pytest.mark.parametrize("f, found", [
    (sigmoid_gate, ["sigmoid"]), (sigmoid_ratio, ["sigmoid", "sigmoid"]),
    (softplus_both, ["softplus", "softplus"]),
    (log_sigmoids, ["log_sigmoid", "softplus", "log_sigmoid"]), (shared_exp, [])])
def test_what_is_recognised(f, found):
    """Each spelling is one node; a sigmoid whose exponential is read elsewhere stays."""
    assert _recognised(f, _args(3, 4)) == found


@pytest.mark.parametrize("batch", [4, 48])      # 48 x 96: 4,608 elements a step
def test_gru_loop(batch):
    hidden = 8 if batch == 4 else 96
    args = _gru_args(4, batch, hidden)
    g = _against_references(gru, args, (0, 1))
    forward, backward = g.source.split("reversed(range(")
    backward = backward.split("\n    return ")[0]
    assert "np.exp" not in backward and " / " not in backward   # the adjoint: g * s * (1 - s)
    stored = [ln for ln in forward.splitlines() if "out=" in ln and "np.exp(" in ln]
    assert len(stored) == 2 and all(re.search(r"np\.divide\(1\.0, 1\.0 \+ np\.exp", ln)
                                    for ln in stored), stored   # one stack a gate: its s
    assert "_sigmoid" not in g.source and "logaddexp" not in g.source


def test_tails_are_finite():
    """softplus and log-sigmoid spelled without overflow: value and slope at +-800 (the slope
    1 / (1 + exp(-x)) overflows to 0, as it should, where NumPy warns)."""
    x = np.array([-800.0, -30.0, -1.0, 0.0, 1.0, 30.0, 800.0])
    w = np.linspace(0.5, 1.5, x.size)

    def softplus(x, w):
        return np.sum(np.log(1 + np.exp(x)) * w)

    def log_sigmoid(x, w):
        return np.sum(-np.log(1 + np.exp(-x)) * w)

    with np.errstate(over="ignore"):     # the slopes' exp(800): 1 / (1 + inf) is 0
        value, (dx,) = ad.value_and_grad(softplus, wrt=(0,))(x, w)
    assert value == pytest.approx(np.sum(np.logaddexp(0.0, x) * w), rel=1e-15)
    np.testing.assert_allclose(dx, w * np.exp(-np.logaddexp(0.0, -x)), rtol=1e-14, atol=0)
    with np.errstate(over="ignore"):
        value, (dx,) = ad.value_and_grad(log_sigmoid, wrt=(0,))(x, w)
    assert value == pytest.approx(-np.sum(np.logaddexp(0.0, -x) * w), rel=1e-15)
    np.testing.assert_allclose(dx, w * np.exp(-np.logaddexp(0.0, x)), rtol=1e-14, atol=0)


def test_second_order():
    """The plain gradient's source is read again (its ufuncs recognised again): the Hessian of
    a sigmoid model equals the tape's differences of the gradient."""
    x, W = _args(3, 4)
    h = ad.hessian(lambda_free, wrt=0)(x[0], W)
    s = 1.0 / (1.0 + np.exp(-(W @ x[0])))
    want = W.T @ np.diag(s * (1 - s)) @ W
    np.testing.assert_allclose(h, want, rtol=1e-12, atol=1e-14)


def lambda_free(v, W):
    return np.sum(np.log(1 + np.exp(W @ v)))
