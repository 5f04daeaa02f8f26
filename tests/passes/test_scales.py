"""The scale-hoisting pass (adcompiler/passes/scales.py): a literal factor such as mean's ``1/n``
is applied where its linear chain ends, on fewer elements. Each case checks the values (against
the hand-written gradients, the tape or finite differences) and counts the array work against
the same function compiled with the pass taken out of the pipeline.
"""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import passes
from adcompiler.ir import Literal, walk
from adcompiler.passes.scales import hoist_scales
from adcompiler.tape import dynamic_grad
from benchmarks import handwritten, workloads
from tests.helpers import assert_matches_numerical

RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _compile_every_time(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")   # the disk cache would skip the passes


@pytest.fixture
def without_pass(monkeypatch):
    """``compile(fn, args, **kw)`` with hoist_scales taken out of the pipeline."""
    def compile_without(fn, args, make=ad.grad, **kw):
        with monkeypatch.context() as m:
            m.setattr(passes, "PIPELINE", tuple(p for p in passes.PIPELINE
                                                if p is not hoist_scales))
            return _compiled(fn, args, make, **kw)
    return compile_without


def _compiled(fn, args, make=ad.grad, **kw):
    g = make(fn, **kw)
    g(*copy.deepcopy(args))
    return g


def _array_work(g, prims=("multiply", "negative")) -> tuple:
    """(nodes, elements) of the array (ndim >= 1) nodes of ``prims`` in ``g``'s graph."""
    nodes = [n for n in walk(g.ir.nodes) if n.prim in prims and len(n.outputs) == 1
             and n.out.aval.kind == "array" and n.out.aval.ndim]
    return len(nodes), sum(int(np.prod(n.out.aval.shape)) for n in nodes)


def _scalings(g) -> list:
    """The avals of the values a float literal multiplies."""
    return [n.out.aval for n in walk(g.ir.nodes) if n.prim == "multiply"
            and any(isinstance(x, Literal) and type(x.value) is float for x in n.inputs)]


def _close(got, want, rtol):
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-15)


# ---- the seed graph: 0.25 goes from two 2x2 arrays onto the three Python floats ------------------

def test_seed_graph_applies_the_mean_once_per_gradient(without_pass):
    args = workloads.make_seed_graph()
    wrt = ("w1", "w2", "w3")
    g = _compiled(workloads.seed_graph, args, wrt=wrt)
    before = without_pass(workloads.seed_graph, args, wrt=wrt)
    got = g(*args)
    _close(got, handwritten.seed_graph(*args), rtol=1e-12)
    _close(got, dynamic_grad(workloads.seed_graph, wrt=wrt)(*copy.deepcopy(args)), rtol=1e-12)
    assert all(type(d) is float for d in got)
    assert [a.kind for a in _scalings(before)] == ["array", "array"]
    assert [a.kind for a in _scalings(g)] == ["float"] * 3
    assert "0.25 * l" not in g.source and g.source.count("= 0.25 * float(") == 3
    assert _array_work(g)[0] == _array_work(before)[0] - 2


def test_seed_graph_goldens_inputs_stay_exact():
    """On the seed's own numbers every product is exact, before and after the hoist."""
    g = ad.grad(workloads.seed_graph, wrt=("w1", "w2", "w3"))
    assert g(2.0, 3.0, 4.0, np.ones((2, 2))) == (28.0, 8.0, 10.0)


# ---- the benchmark workloads: the hand-written gradients, never more array work ----------------

CASES = {
    "small_mlp": workloads.make_small_mlp,
    "mlp": lambda: workloads.make_mlp(batch=16, d_in=20, hidden=12, classes=5),
    "logistic": lambda: workloads.make_logistic(n=200, d=7),
}


@pytest.mark.parametrize("name", list(CASES))
def test_workloads_match_the_hand_written_gradients(name, without_pass):
    w = workloads.get(name)
    args = CASES[name]()
    g = _compiled(w.fn, args, wrt=w.wrt)
    before = without_pass(w.fn, args, wrt=w.wrt)
    _close(g(*args), w.hand(*args), rtol=1e-10)
    count, elements = _array_work(g)
    count_before, elements_before = _array_work(before)
    assert count <= count_before and elements <= elements_before


def test_small_mlp_keeps_its_scale_on_the_error():
    """derr (8 elements) is the cheapest place for 0.25: db2 and dW2 together are more elements
    and more multiplications, and dh leads to dW1 (512 elements). The source is the hand-written
    one's shape, ``derr = 0.25 * err`` once."""
    args = workloads.make_small_mlp()
    g = _compiled(workloads.small_mlp, args, wrt=("W1", "b1", "W2", "b2"))
    assert "derr = 0.25 * err" in g.source and g.source.count("0.25") == 1


@pytest.mark.parametrize("batch, d_in, hidden, classes", [(16, 20, 12, 5), (53, 31, 43, 47)])
def test_mlp_cross_entropy_scale_passes_both_negations(batch, d_in, hidden, classes,
                                                       without_pass):
    """-1/batch multiplied into onehot was negated twice on the way to dlogits (the adjoints of
    ``shifted - log(...)`` and ``logits - max``): now one scaling, on dlogits, where the chain
    meets matmuls that would make it larger. At the second sizes no single later value is
    cheaper than dlogits, only db2, dh and dW2 together: the chain must stop at dlogits, not
    split into two scalings above it (as a cut of dlogits with its descendants would)."""
    w = workloads.get("mlp")
    args = workloads.make_mlp(batch, d_in, hidden, classes)
    g = _compiled(w.fn, args, wrt=w.wrt)
    before = without_pass(w.fn, args, wrt=w.wrt)
    _close(g(*args), w.hand(*args), rtol=1e-10)
    c = repr(-1.0 / batch)
    assert f"dlogp = {c} * onehot" in before.source
    assert "-d" not in g.source.replace(c, "") and g.source.count(c[1:]) == 1
    # dshifted is dlogits: the max's cotangent is zero (adcompiler.templates.idioms.shift_invariance),
    # and simplify writes sum(-x) as -sum(x): one negation (of a sum) is left to pass
    assert f"dshifted = {c} * (" in g.source
    assert _array_work(g)[0] == _array_work(before)[0] - 1


# ---- values read by non-linear code stay as they were ------------------------------------------

def tanh_of_scaled(x):
    return np.sum(np.tanh(0.5 * x) * x)


def exp_and_sum(x):
    y = 3.0 * x
    return np.sum(np.exp(y)) + np.sum(y)


def scaled_read_twice(x, w):
    y = 0.25 * x
    return np.sum(y * w) + np.sum(np.tanh(y))


def scaled_sum_read_by_tanh(x):
    s = np.sum(0.5 * x)
    return np.tanh(s) + s * s


@pytest.mark.parametrize("fn", [tanh_of_scaled, exp_and_sum, scaled_read_twice],
                         ids=lambda f: f.__name__)
def test_a_scaled_value_read_by_non_linear_code_stays(fn, without_pass):
    args = (RNG.standard_normal(7),) + ((RNG.standard_normal(7),) if fn is scaled_read_twice
                                        else ())
    wrt = tuple(range(len(args)))
    g = _compiled(fn, args, make=ad.value_and_grad, wrt=wrt)
    before = without_pass(fn, args, make=ad.value_and_grad, wrt=wrt)
    value, grads = g(*copy.deepcopy(args))
    assert value == pytest.approx(float(fn(*copy.deepcopy(args))), rel=1e-12)
    assert_matches_numerical(fn, args, wrt, grads)
    _close(grads, dynamic_grad(fn, wrt=wrt)(*copy.deepcopy(args)), rtol=1e-12)
    assert _array_work(g) <= _array_work(before)


def test_a_scaled_sum_is_materialised_for_its_non_linear_reader(without_pass):
    """``np.sum(0.5 * x)`` read by tanh: the sum is materialised (``s = 0.5 * t``, one scalar
    product, ``t = np.sum(x)``) for tanh and ``s * s``; the array product goes. The adjoint of
    ``s * s``, ``2.0 * s``, is ``t`` itself (the scales multiply to 1)."""
    x = RNG.standard_normal(9)
    g = _compiled(scaled_sum_read_by_tanh, (x,), make=ad.value_and_grad)
    before = without_pass(scaled_sum_read_by_tanh, (x,), make=ad.value_and_grad)
    value, grad = g(x)
    assert value == pytest.approx(scaled_sum_read_by_tanh(x), rel=1e-12)
    assert_matches_numerical(scaled_sum_read_by_tanh, (x,), (0,), (grad,))
    statement = "\n    s = (0.5 * x).sum()\n"                  # not the "# grad of:" line
    assert statement in before.source and statement not in g.source
    assert [str(a) for a in _scalings(g)] == ["f64[]", "f64[9]"]     # s, and dx = dt * 0.5
    assert "2.0 * s" in before.source and "2.0" not in g.source
    assert _array_work(g)[0] == _array_work(before)[0] - 1


# ---- control flow: blocks are left alone, the code around them still gains ----------------------

def mean_in_a_loop(w, x):
    s = 0.0
    for i in range(3):
        s = s + np.mean(x * w) * w
    return s + np.mean(np.tanh(x) * w)


def mean_in_a_branch(w, x):
    if np.sum(x) > 0.0:
        y = np.mean(x * w)
    else:
        y = np.mean(x * x) * w
    return y + np.mean(np.tanh(x) * w)


@pytest.mark.parametrize("fn", [mean_in_a_loop, mean_in_a_branch], ids=lambda f: f.__name__)
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_control_flow_stays_correct(fn, sign, without_pass):
    args = (0.7, sign * np.abs(RNG.standard_normal(6)))
    g = _compiled(fn, args, make=ad.value_and_grad, wrt=(0, 1))
    before = without_pass(fn, args, make=ad.value_and_grad, wrt=(0, 1))
    value, grads = g(*copy.deepcopy(args))
    assert value == pytest.approx(float(fn(*copy.deepcopy(args))), rel=1e-12)
    assert type(grads[0]) is float
    assert_matches_numerical(fn, args, (0, 1), grads)
    _close(grads, dynamic_grad(fn, wrt=(0, 1))(*copy.deepcopy(args)), rtol=1e-12)
    assert _array_work(g) <= _array_work(before)


def test_the_branch_keeps_its_own_scaling():
    """Outside the if, ``np.sum(c * tanh(x))`` becomes ``c * np.sum(tanh(x))``; inside the
    branch nothing moves (the pass stays at the top level)."""
    x = np.abs(RNG.standard_normal(6))
    g = _compiled(mean_in_a_branch, (0.7, x))
    # top level: hoisted (a sum of an array the code computed is spelled as its method)
    assert re.search(r"0\.16666666666666666 \* (np\.sum\(t|t\d*\.sum\()", g.source)
    assert "(0.16666666666666666 * x).sum()" in g.source      # in the branch: as it was


# ---- dtypes --------------------------------------------------------------------------------------

def mean_square(x, y):
    return np.mean((x - y) ** 2) + np.mean(x * y)


def test_float32_stays_float32():
    x, y = (RNG.standard_normal(5).astype(np.float32) for _ in range(2))
    g = _compiled(workloads.seed_graph, (2.0, 3.0, 4.0, x.reshape(5, 1)), wrt=(0, 1, 2, 3))
    *scalars, dinp = g(2.0, 3.0, 4.0, x.reshape(5, 1))
    assert all(type(d) is float for d in scalars) and dinp.dtype == np.float32
    dx, dy = ad.grad(mean_square, wrt=(0, 1))(x, y)
    assert dx.dtype == dy.dtype == np.float32
    np.testing.assert_allclose(dx, 2 * (x - y) / 5 + y / 5, rtol=1e-5)
