"""The SymPy pass on fused elementwise expressions (adcompiler/passes/algebra.py): real fused
adjoints it makes cheaper, operation counts before and after, gradients unchanged (against
central differences and against the gradient compiled without the pass), and its bounds."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.ir import walk
from adcompiler.passes import algebra

N = 5000   # above fusion's MIN_SIZE


@pytest.fixture(autouse=True)
def _compile_every_time(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")   # the disk cache would skip the passes


def sigmoid_loss(x):
    s = 1.0 / (1.0 + np.exp(-x))
    return np.sum(s * s)


def logcosh(x):
    return np.sum(np.log(np.cosh(x)))


def shifted_softplus(x):   # log(1 + exp(x)) is one primitive (passes/logistic.py, #33)
    return np.sum(np.log(2.0 + np.exp(x)))


def poly(x):
    return np.sum(x * x * x + x * x)


def swish(x):
    return np.sum(x / (1.0 + np.exp(-x)))


def rosenbrock(x):   # the benchmark workload
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def elementwise(x):   # the benchmark workload
    return np.sum(np.tanh(x) * x + 3.0 * x * x - np.exp(-x))


def fused_costs(fn, x):
    """(transcendental calls, operations) of each fused block of ``grad(fn)``, sorted."""
    graph = ad.grad(fn).specialize(x).graph
    return sorted(algebra.cost(n.regions[0].nodes) for n in walk(graph.nodes)
                  if n.prim == "fused")


@pytest.fixture
def without_pass(monkeypatch):
    """Compile with the pass turned off (it leaves every fused node alone)."""
    def off():
        monkeypatch.setattr(algebra, "_eligible", lambda node: False)
    return off


# fn, its fused blocks' costs without the pass, with it, and what the adjoint now reads
CASES = [
    # the sigmoid is one primitive before differentiation (passes/logistic.py, #33): its
    # adjoint 2*s*s*(1-s) reads s alone, and no rewrite makes it cheaper (before, the pass
    # took 2*(s*s/t2*t1) to 2*t1*s**3, which still kept t1 = exp(-x))
    (sigmoid_loss, [(0, 4), (1, 4)], [(0, 4), (1, 4)], "dx = 2.0 * s * s * (1.0 - s)"),
    (logcosh, [(2, 4)], [(1, 1)], "dx = np.tanh(x)"),            # sinh(x)/cosh(x)
    (shifted_softplus, [(0, 3)], [(0, 2)], "dx = t1 / (t1 + 2)"),  # 1/(2+t1)*t1
    (poly, [(0, 4)], [(0, 3)], "dx = 2 * x + 3 * t1"),             # t1 + t1 + t1 + 2x
    (swish, [(0, 6), (1, 2)], [(0, 4), (1, 2)], "dx = (x * t1 / t2 + 1) / t2"),  # seed 1
    # the two adjoints of x[:-1] add before they scatter (passes/simplify.py), then collect
    (rosenbrock, [(0, 3), (0, 6)], [(0, 3), (0, 4)], "t3 = 2 * (t2 - t2 * dt5 - 1)"),
    # t2 = 3*x from the forward part, inlined: 6*x + x*(1 - t1**2) collects (t2 is not kept)
    (elementwise, [(1, 9)], [(1, 7)], "dx = t1 + x * (7 - t1 ** 2) + np.exp(-x)"),
]


@pytest.mark.parametrize("fn, before, after, line", CASES, ids=[c[0].__name__ for c in CASES])
def test_fused_adjoints_get_cheaper_and_keep_their_values(fn, before, after, line, without_pass):
    x = np.linspace(-1.5, 1.3, N)
    assert fused_costs(fn, x) == after
    g = ad.grad(fn)(x)
    assert line in ad.grad(fn).specialize(x).source
    without_pass()
    assert fused_costs(fn, x) == before
    np.testing.assert_allclose(g, ad.grad(fn)(x), rtol=1e-12, atol=1e-12)
    eps, k = 1e-6, np.arange(0, N, 997)          # central differences at a few entries
    for j in k:
        up, down = x.copy(), x.copy()
        up[j] += eps
        down[j] -= eps
        assert g[j] == pytest.approx((fn(up) - fn(down)) / (2 * eps), rel=1e-5, abs=1e-7)


def test_float32_stays_float32():
    x = np.linspace(-1, 1, N).astype(np.float32)
    g = ad.grad(sigmoid_loss)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, ad.grad(sigmoid_loss)(x.astype(np.float64)), rtol=1e-5)


def test_same_source_every_time():
    x = np.linspace(-1, 1, N)
    first = ad.grad(swish).specialize(x).source
    algebra._CACHE.clear()
    assert ad.grad(swish).specialize(x).source == first


def many_terms(x):
    return np.sum(np.sin(x) * x * 0.5 + np.cos(x) * x * 0.25 + np.exp(x) * x * 0.125
                  + np.tanh(x) * x * 0.0625 + np.sinh(x) * x * 0.03125 + x * x * x * x)


def test_large_expressions_are_left_alone(without_pass):
    """A block over MAX_NODES operations is not given to SymPy (its time grows fast)."""
    x = np.linspace(-1, 1, N)
    algebra._CACHE.clear()
    with_pass = fused_costs(many_terms, x)
    assert max(ops for _, ops in with_pass) > algebra.MAX_NODES and not algebra._CACHE
    without_pass()
    assert fused_costs(many_terms, x) == with_pass


def test_each_expression_is_simplified_once_per_process():
    algebra._CACHE.clear()
    x = np.linspace(-1, 1, N)
    ad.grad(shifted_softplus).specialize(x)
    assert len(algebra._CACHE) == 1
    ad.grad(shifted_softplus).specialize(x + 1.0)   # a new compilation of the same expression
    assert len(algebra._CACHE) == 1


def tanh_layer(x):
    h = np.tanh(x * 0.5)
    return np.sum(h * x)


def test_sympy_is_asked_only_where_it_may_pay():
    """Polynomial blocks go to the fast tier (passes/algebra_poly.py) and SymPy is never
    imported for them: the benchmark's elementwise and Rosenbrock gradients compile without
    it (its import alone takes ~0.2 s), nor the logistic regression's (whose sign SymPy cannot
    fold: the import was 34 MB of its first gradient's peak memory, #33). A quotient of sums
    (a shifted softplus) still goes to SymPy."""
    script = textwrap.dedent(f"""
        import sys
        import numpy as np
        import adcompiler as ad
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import test_algebra as t
        x = np.linspace(-1.5, 1.3, {N})
        for fn in (t.elementwise, t.rosenbrock, t.poly, t.sigmoid_loss, t.tanh_layer):
            ad.grad(fn).specialize(x)
        ad.grad(t.logistic, wrt=("w",)).specialize(*t.logistic_inputs())
        print("sympy" in sys.modules)
        ad.grad(t.shifted_softplus).specialize(x)
        print("sympy" in sys.modules)
    """)
    env = {**os.environ, "ADCOMPILER_CACHE": "0"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, check=True).stdout.split()
    assert out == ["False", "True"]


def test_blocks_the_fast_tier_leaves_to_sympy():
    x = np.linspace(-1, 1, N)
    algebra._CACHE.clear()
    ad.grad(tanh_layer).specialize(x)   # nothing to gain: neither tier replaces the block
    ad.grad(rosenbrock).specialize(x)   # a polynomial: the fast tier
    assert not algebra._CACHE
    ad.grad(logcosh).specialize(x)      # sinh(x)/cosh(x): SymPy's identities
    assert len(algebra._CACHE) == 1


def logistic(w, X, y):   # the benchmark workload: a mean, so the adjoint's factor is 1/n
    return np.mean(np.log1p(np.exp(-(2.0 * y - 1.0) * (X @ w))))


def logistic_sum(w, X, y):   # a sum: the adjoint's factor is the seed 1, which takes the sign
    return np.sum(np.log1p(np.exp(-(2.0 * y - 1.0) * (X @ w))))


def logistic_inputs():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((N, 3))
    return rng.standard_normal(3) * 0.5, X, (rng.uniform(size=N) < 0.5).astype(np.float64)


@pytest.mark.parametrize("fn, before, after, line", [
    # 1/n / (1 + exp(t1*t2)) * -t1: SymPy's form -(1/n)*t1/(...) costs as much (the Float
    # 1/n does not take the sign), so the block is left alone without asking SymPy
    (logistic, [(0, 2), (1, 6)], [(0, 2), (1, 6)], "dt3 = 0.0002 / (1.0 + np.exp(t1 * t2)) * -t1"),
    # 1 / (1 + exp(t1*t2)) * -t1: the Integer 1 takes the sign, one operation less
    (logistic_sum, [(0, 2), (1, 6)], [(0, 2), (1, 5)], "dt3 = -t1 / (np.exp(t1 * t2) + 1)"),
], ids=["mean", "sum"])
def test_a_sign_is_folded_only_where_sympy_can(fn, before, after, line, without_pass):
    args = logistic_inputs()
    g = ad.grad(fn, wrt=("w",))
    spec = g.specialize(*args)
    costs = sorted(algebra.cost(n.regions[0].nodes) for n in walk(spec.graph.nodes)
                   if n.prim == "fused")
    assert costs == after and line in spec.source
    (got,) = g(*args)
    without_pass()
    spec = ad.grad(fn, wrt=("w",)).specialize(*args)
    assert sorted(algebra.cost(n.regions[0].nodes) for n in walk(spec.graph.nodes)
                  if n.prim == "fused") == before
    np.testing.assert_allclose(got, ad.grad(fn, wrt=("w",))(*args)[0], rtol=1e-12, atol=1e-15)
    w, X, y = args
    eps = 1e-6
    for j in range(w.size):
        up, down = w.copy(), w.copy()
        up[j] += eps
        down[j] -= eps
        assert got[j] == pytest.approx((fn(up, X, y) - fn(down, X, y)) / (2 * eps), rel=1e-6)
