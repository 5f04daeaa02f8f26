"""Forward mode (``adcompiler.jvp``): the seed's tables value by value, control flow, the calling
convention, and jvp against vjp (``<v, J u> == <J^T v, u>``) on the shared random programs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, reject, settings
from hypothesis import strategies as st

import adcompiler as ad
from adcompiler.ir import Literal
from adcompiler.ir.primitives import evaluate

from tests.helpers import examples
from tests.strategies import load, programs


def f(x1, x2):  # seed 002: the survey's trace, one primitive per line
    v1 = math.log(x1)
    v2 = x1 * x2
    v3 = math.sin(x2)
    v4 = v1 + v2
    v5 = v4 - v3
    return v5


def trace(graph, *args) -> dict:
    """Every named value of a straight-line graph, computed node by node (``evaluate``)."""
    env = dict(zip(graph.params, args))
    for node in graph.nodes:
        inputs = [x.value if isinstance(x, Literal) else env[x] for x in node.inputs]
        env[node.out] = evaluate(node.prim, inputs, node.params)
    return {v.name: value for v, value in env.items() if v.name}


# ---- seed 002: the forward and reverse tables at (x1, x2) = (2, 5) ------------------------------
FORWARD_TABLE = {  # v_i and its tangent along x1 (x1_dot = 1, x2_dot = 0)
    "v1": (math.log(2.0), 0.5), "v2": (10.0, 5.0), "v3": (math.sin(5.0), 0.0),
    "v4": (math.log(2.0) + 10.0, 5.5), "v5": (math.log(2.0) + 10.0 - math.sin(5.0), 5.5)}


def test_seed_forward_table_value_by_value():
    j = ad.jvp(f, wrt=("x1", "x2"))
    value, tangent = j(2.0, 5.0, tangents=(1.0, 0.0))
    assert value == pytest.approx(11.652071455223084) and tangent == 5.5
    values = trace(j.ir, 2.0, 5.0, 1.0, 0.0)
    for name, (v, dv) in FORWARD_TABLE.items():
        assert values[name] == pytest.approx(v, rel=1e-15), name
        assert values[name + "_dot"] == pytest.approx(dv, rel=1e-15), name + "_dot"
    assert j(2.0, 5.0, tangents=(0.0, 1.0))[1] == pytest.approx(2.0 - math.cos(5.0))


def test_seed_forward_table_as_code():
    """Each tangent line is the table's formula, right under its value."""
    ad.jvp(f, wrt=(0, 1))(2.0, 5.0, tangents=(1.0, 0.0))
    assert ad.jvp(f, wrt=(0, 1)).specialize(2.0, 5.0).source == '''\
def jvp_f(x1, x2, x1_dot, x2_dot):
    v1 = math.log(x1)
    v1_dot = x1_dot / x1
    v2 = x1 * x2
    v2_dot = x1_dot * x2 + x2_dot * x1
    v3 = math.sin(x2)
    v3_dot = x2_dot * math.cos(x2)
    v4 = v1 + v2
    v4_dot = v1_dot + v2_dot
    v5 = v4 - v3
    v5_dot = v4_dot - v3_dot
    return v5, v5_dot
'''


def test_seed_reverse_table_value_by_value():
    """The adjoints of the reverse table: v5bar = v4bar = v1bar = v2bar = ybar (the cotangent
    itself: no code), v3bar = -1, then x2bar and x1bar in two accumulation steps each."""
    v = ad.vjp(f, wrt=(0, 1))
    assert v(2.0, 5.0, cotangent=1.0) == pytest.approx((5.5, 2.0 - math.cos(5.0)))
    values = trace(v.ir, 2.0, 5.0, 1.0)
    assert values["dv3"] == -1.0
    assert values["dx2"] == pytest.approx(-math.cos(5.0))   # v0bar = v3bar cos v0 = -0.284
    assert values["dx1"] == 5.0                               # v-1bar = v2bar v0
    assert values["dx2_1"] == pytest.approx(1.7163378145367738)  # v0bar += v2bar v-1
    assert values["dx1_1"] == 5.5                             # v-1bar += v1bar / v-1
    assert not any(name in values for name in ("dv5", "dv4", "dv2", "dv1"))


# ---- forward mode on arrays and through control flow --------------------------------------------
def layer(x, w):
    h = np.tanh(x @ w)
    return (h * h).sum(axis=0)


def branchy(x, y):
    if x.sum() > 0:
        z = np.sin(x) * y
    else:
        z = x * x
    return z * y


def looped(x, w):
    h = x
    for i in range(3):
        h = np.tanh(h * w + x)
    return h


def whiled(x):
    s = x
    while s.sum() < 10.0:
        s = s * 1.5 + x
    return s * s


def floats(a, b):
    c = 0.0
    for i in range(4):
        c = c + math.sin(a * i) * b
    return c * a


def nested(x, w):
    h = x
    for i in range(2):
        if h.sum() > 0:
            h = np.tanh(h * w)
        else:
            h = h * w * 0.5
    return h ** 2


def unused(x, y):
    return y * 2.0


RNG = np.random.default_rng(0)
CASES = [(layer, (RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2)))),
         (branchy, (np.abs(RNG.standard_normal(3)), RNG.standard_normal(3))),
         (branchy, (-np.abs(RNG.standard_normal(3)), RNG.standard_normal(3))),
         (looped, (RNG.standard_normal(3), RNG.standard_normal(3))),
         (whiled, (np.abs(RNG.standard_normal(3)) + 0.5,)),
         (floats, (0.7, 1.3)),
         (nested, (RNG.standard_normal(3), RNG.standard_normal(3))),
         (unused, (RNG.standard_normal(2), RNG.standard_normal(2)))]


def directional(fn, args, i, t, eps=1e-6):
    up, down = list(args), list(args)
    up[i], down[i] = args[i] + eps * t, args[i] - eps * t
    return (np.asarray(fn(*up)) - np.asarray(fn(*down))) / (2 * eps)


def _direction(x, seed):
    t = np.random.default_rng(seed).standard_normal(np.shape(x))
    return float(t) if isinstance(x, float) else t


@pytest.mark.parametrize("fn, args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_jvp_matches_directional_differences(fn, args):
    for i, x in enumerate(args):
        t = _direction(x, i)
        value, tangent = ad.jvp(fn, wrt=i)(*args, tangents=t)
        np.testing.assert_allclose(value, fn(*args), rtol=1e-12)
        np.testing.assert_allclose(tangent, directional(fn, args, i, t), rtol=1e-5, atol=1e-7)
        assert np.shape(tangent) == np.shape(value)


@pytest.mark.parametrize("fn, args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_jvp_against_vjp_on_random_vectors(fn, args):
    """<v, J u> == <J^T v, u>, every input at once."""
    wrt = tuple(range(len(args)))
    u = tuple(_direction(x, 10 + i) for i, x in enumerate(args))
    value, ju = ad.jvp(fn, wrt=wrt)(*args, tangents=u)
    v = _direction(value if np.ndim(value) else float(value), 99)
    jtv = ad.vjp(fn, wrt=wrt)(*args, cotangent=v)
    lhs = np.sum(np.multiply(v, ju))
    rhs = sum(np.sum(np.multiply(g, t)) for g, t in zip(jtv, u))
    assert lhs == pytest.approx(rhs, rel=1e-10, abs=1e-12)


def test_tangents_flow_through_loops_as_carried_values():
    j = ad.jvp(looped, wrt="w")
    src = j.specialize(*CASES[3][1]).source
    body = src[src.index("for i in range(3):"):]
    assert "h_dot = " in body and body.index("h_dot") < body.index("return")
    (loop,) = [n for n in j.ir.nodes if n.prim == "loop"]
    assert len(loop.outputs) == 2 and loop.outputs[1].name.startswith("h_dot")


def test_tangents_of_a_cond_are_extra_outputs():
    j = ad.jvp(branchy, wrt="x")
    src = j.specialize(*CASES[1][1]).source
    assert src.count("z_dot = ") == 2   # one per branch, into the same slot
    (cond,) = [n for n in j.ir.nodes if n.prim == "cond"]
    assert [v.name for v in cond.outputs] == ["z_2", "z_dot_2"]  # SSA names of z, z_dot


def test_tangent_of_an_output_that_does_not_depend_on_wrt_is_zero():
    x, y = CASES[-1][1]
    value, tangent = ad.jvp(unused, wrt="x")(x, y, tangents=np.ones(2))
    np.testing.assert_array_equal(tangent, np.zeros(2))


def test_jvp_keeps_python_floats_and_dtypes():
    value, tangent = ad.jvp(floats, wrt=(0, 1))(0.7, 1.3, tangents=(1, 0))
    assert type(value) is float and type(tangent) is float
    x = np.ones(3, np.float32)
    _, t = ad.jvp(whiled)(x, tangents=np.ones(3))
    assert t.dtype == np.float32


def test_jvp_calling_convention_errors():
    j = ad.jvp(layer, wrt=("x", "w"))
    x, w = CASES[0][1]
    with pytest.raises(TypeError, match="tangents="):
        j(x, w)
    with pytest.raises(TypeError, match="takes 2 tangents"):
        j(x, w, tangents=(x,))
    with pytest.raises(ValueError, match="shape"):
        j(x, w, tangents=(x, x))
    with pytest.raises(TypeError, match="cannot differentiate"):
        ad.jvp(floats, wrt=0)(1, 1.0, tangents=1.0)


def test_jvp_as_decorator_and_specialize():
    @ad.jvp(wrt="x2")
    def g(x1, x2):
        return x1 * x2

    assert g(3.0, 2.0, tangents=1.0) == (6.0, 3.0)
    assert "x2_dot" in g.specialize(3.0, 2.0).source


# ---- the shared random programs ------------------------------------------------------------------
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                      HealthCheck.too_slow])


@settings(max_examples=examples(150, 50), **SETTINGS)
@given(program=programs(), seed=st.integers(0, 2 ** 32 - 1))
def test_random_programs_jvp_against_vjp(program, seed, tmp_path):
    """<v, J u> == <J^T v, u> with random u (one tangent per input) and v."""
    source, fn, args = load(program, tmp_path)
    note(source[source.index("def f"):])
    try:
        grads = ad.grad(fn, wrt=(0, 1, 2))(*args)
    except ad.CompileError:
        reject()  # a reverse-mode or frontend limitation: tests/programs/test_random_programs.py's concern
    rng = np.random.default_rng(seed)
    u = tuple(float(rng.standard_normal()) if isinstance(x, float)
              else rng.standard_normal(np.shape(x)) for x in args)
    value, ju = ad.jvp(fn, wrt=(0, 1, 2))(*args, tangents=u)
    assert float(value) == pytest.approx(float(fn(*args)), rel=1e-12, abs=1e-12)
    v = float(rng.standard_normal())
    rhs = sum(v * np.sum(np.multiply(g, t)) for g, t in zip(grads, u))
    assert v * float(ju) == pytest.approx(rhs, rel=1e-9, abs=1e-9)
