"""`.source` at the sizes where buffers are planned stays readable: each quantity has its own
name (no ``dlogp += ...`` that leaves another quantity under a name), and each chain computed
through work buffers is introduced by a comment giving its formula in the user's terms
(``# dz = dt5 * t3 + dlogp``), so the buffer plumbing reads as the expression it computes."""

import ast
import re

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends.check_modes import unoptimised


def log_softmax_mlp(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    m = np.max(z, axis=1, keepdims=True)
    logp = z - m - np.log(np.sum(np.exp(z - m), axis=1, keepdims=True))
    return -np.mean(np.sum(y * logp, axis=1)) + 0.01 * np.sum(logp ** 2)


def mixture(mu, log_s, X):
    diff = X[:, None, :] - mu[None, :, :]
    r2 = np.sum(diff * diff, axis=2) / np.exp(2 * log_s)
    return -np.sum(np.log(np.sum(np.exp(-0.5 * r2), axis=1)))


def _mlp():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(512, 64))
    y = np.eye(10)[rng.integers(0, 10, 512)]
    return (log_softmax_mlp, (0, 1, 2, 3),
            (rng.normal(size=(64, 256)) * 0.1, np.zeros(256), rng.normal(size=(256, 10)) * 0.1,
             np.zeros(10), x, y))


def _gmm():
    rng = np.random.default_rng(1)
    return mixture, (0, 1), (rng.normal(size=(16, 2)), 0.3, rng.normal(size=(20_000, 2)))


@pytest.mark.parametrize("case", [_mlp, _gmm], ids=["mlp", "gmm"])
def test_planned_source_names_each_quantity_once_and_explains_its_buffers(case):
    f, wrt, args = case()
    g = ad.grad(f, wrt=wrt)
    g(*args)
    source = g.source
    assert "out=_buf" in source                            # the planned form is what we read
    (fn,) = [d for d in ast.parse(source).body if isinstance(d, ast.FunctionDef)
             and d.name == f"grad_{f.__name__}"]
    bound: dict = {}
    for stmt in fn.body:
        assert not isinstance(stmt, ast.AugAssign), ast.unparse(stmt)
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                for name in [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]:
                    bound[name] = bound.get(name, 0) + 1
    assert {n: k for n, k in bound.items() if k > 1} == {}
    lines = source.splitlines()
    for i, line in enumerate(lines):                     # a chain's first buffer write ...
        if "out=_buf" in line and "out=_buf" not in lines[i - 1] and \
                not re.match(r"\s*\w+ = ", line):
            assert re.match(r"\s*# \w+ = ", lines[i - 1]), "\n".join(lines[i - 2:i + 2])
    with unoptimised():                                  # the same gradient, unplanned
        reference = ad.grad(f, wrt=wrt)(*args)
    for got, expected in zip(g(*args), reference):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
