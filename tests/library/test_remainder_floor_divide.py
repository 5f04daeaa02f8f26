"""Python's ``%`` and ``//`` (``np.remainder``, ``np.mod``, ``np.floor_divide``) as primitives.

``x % y`` has derivative 1 in ``x`` and ``-(x // y)`` in ``y`` away from its jumps (where ``x / y``
is an integer); ``x // y`` is piecewise constant (no gradient). Checked here: gradients and
tangents against central finite differences and the dynamic tape, at values of both signs well
away from the jumps; values equal to NumPy's; loop counters (traced ints) in ``for`` and
``while`` loops with Python's sign rules; ``%=`` and ``//=``; Python floats and ints; the
generated source and its parentheses; the CuPy kernels (bit for bit against NumPy, with zero
and negative divisors); numexpr left out; the located error of the operators still refused.
"""

from __future__ import annotations

import ast
import re

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from adcompiler.backends.cuda_kernels import Kernel, kernel_signature, lower_block
from adcompiler.backends.expressions import render as _render
from adcompiler.backends.expressions import node_expr
from adcompiler.ir import Aval, Node, Value
from adcompiler.ir.primitives import PRIMS

from tests import fake_cupy
from tests.cupy_helpers import one_node_block
from tests.helpers import assert_matches_numerical

X = np.array([3.7, -2.2, 0.4, -5.9, 1.3])
Y = np.array([1.1, -0.7, 2.3, 1.6, -2.4])


def away_from_jumps(x, y, margin=1e-3) -> bool:
    q = np.asarray(x, dtype=np.float64) / np.asarray(y, dtype=np.float64)
    return bool(np.all(np.abs(q - np.round(q)) > margin))


# ---- the functions --------------------------------------------------------------------------
def sin_of_wrapped(x):
    return np.sum(np.sin(x % 2.5) * x)


def remainder_sum(x, y):
    return np.sum(x % y)


def calls_remainder(x, y):
    return np.sum(np.remainder(x, y) * x + np.mod(y, x))


def rebuilt_remainder(x, y):      # x - y * (x // y) is x % y: the same gradient
    return np.sum(x - y * (x // y))


def quotient_times_x(x, y):
    return np.sum(np.floor_divide(x, y) * x + (x // y))


GRADIENTS = [
    (sin_of_wrapped, (X,), (0,)),
    (remainder_sum, (X, Y), (0, 1)),
    (remainder_sum, (X, -1.7), (0, 1)),      # a Python float divisor, negative and positive
    (remainder_sum, (X, 0.9), (0, 1)),
    (remainder_sum, (3.45, Y), (0, 1)),      # a Python float dividend
    (calls_remainder, (X, Y), (0, 1)),
]
IDS = ["sin_of_wrapped", "arrays", "negative_float", "positive_float", "float_dividend",
       "np_functions"]


def test_the_values_are_away_from_the_jumps():
    for y in (Y, -1.7, 0.9, 2.5):
        assert away_from_jumps(X, y) and away_from_jumps(y, X)
    assert away_from_jumps(3.45, Y)


@pytest.mark.parametrize("f, args, wrt", GRADIENTS, ids=IDS)
def test_gradient_matches_finite_differences_and_the_tape(f, args, wrt):
    value, grads = ad.value_and_grad(f, wrt=wrt)(*args)
    assert value == f(*args)                              # NumPy's value, exactly
    grads = grads if isinstance(grads, tuple) else (grads,)
    assert_matches_numerical(f, args, wrt, grads, rtol=1e-6, atol=1e-7)
    dynamic = tape.dynamic_grad(f, wrt=wrt)(*args)
    for got, want in zip(grads, dynamic if isinstance(dynamic, tuple) else (dynamic,)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("f, args, wrt", GRADIENTS, ids=IDS)
def test_jvp_matches_finite_differences(f, args, wrt):
    rng = np.random.default_rng(3)
    tangents = [float(rng.standard_normal()) if isinstance(args[i], float)
                else rng.standard_normal(np.shape(args[i])) for i in wrt]
    value, derivative = ad.jvp(f, wrt=wrt)(*args, tangents=tuple(tangents))
    assert value == f(*args)

    def moved(eps):
        out = list(args)
        for i, t in zip(wrt, tangents):
            out[i] = args[i] + eps * t
        return f(*out)
    eps = 1e-6
    assert derivative == pytest.approx((moved(eps) - moved(-eps)) / (2 * eps), rel=1e-6)


def test_floor_divide_has_numpys_values_and_no_gradient():
    value, (dx, dy) = ad.value_and_grad(quotient_times_x, wrt=(0, 1))(X, Y)
    assert value == quotient_times_x(X, Y)
    np.testing.assert_array_equal(dx, X // Y)             # d/dx of (x // y) * x: the quotient
    np.testing.assert_array_equal(dy, np.zeros(5))
    np.testing.assert_array_equal(tape.dynamic_grad(quotient_times_x)(X, Y), X // Y)


def test_rebuilding_the_remainder_from_the_quotient_gives_its_gradient():
    rebuilt = ad.grad(rebuilt_remainder, wrt=(0, 1))(X, Y)
    direct = ad.grad(remainder_sum, wrt=(0, 1))(X, Y)
    for a, b in zip(rebuilt, direct):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(direct[0], np.ones(5))
    np.testing.assert_array_equal(direct[1], -(X // Y))


# ---- loop counters: traced ints, Python's sign rules -----------------------------------------
def every_other(x):
    s = 0.0
    for i in range(6):
        if i % 2 == 0:
            s = s + np.sum(x * i)
    return s


def every_third_while(x):
    s = 0.0
    k = 0
    while k < 8:
        if k % 3 == 0:
            s = s + np.sum(x * k)
        k = k + 1
    return s


def negative_counter(x):
    s = 0.0
    for i in range(-3, 4):
        s = s + np.sum(x * (i % 3)) + np.sum(x * (i // 2)) * 10.0
    return s


@pytest.mark.parametrize("f, want, text", [
    (every_other, 6.0, "% 2"),
    (every_third_while, 9.0, "% 3"),
    (negative_counter, 6.0 - 20.0, "% 3"),   # Python's: -3 % 3 == 0, -2 % 3 == 1, -3 // 2 == -2
])
def test_loop_counters(f, want, text):
    g = ad.grad(f)
    np.testing.assert_array_equal(g(np.ones(3)), [want] * 3)
    assert text in g.source
    np.testing.assert_array_equal(tape.dynamic_grad(f)(np.ones(3)), [want] * 3)


def traced_int(x):
    m = int(np.sum(x))
    return np.sum(x) * (m % 3) + np.sum(x) * (m // 4)


def test_a_traced_int_uses_pythons_operators():
    x = np.array([-2.2, -3.1])                    # m = int(-5.3) = -5: -5 % 3 = 1, -5 // 4 = -2
    g = ad.value_and_grad(traced_int)
    value, dx = g(x)
    assert value == traced_int(x)
    np.testing.assert_array_equal(dx, [-1.0, -1.0])
    assert "m % 3" in g.source and "m // 4" in g.source


# ---- the tape -----------------------------------------------------------------------------------
def test_tape_operators_functions_and_node_names():
    x, y = tape.tensor(X, requires_grad=True), tape.tensor(Y, requires_grad=True)
    assert (x % y).grad_fn.name() == "RemainderBackward1"       # PyTorch's names
    assert (x % 2.5).grad_fn.name() == "RemainderBackward0"
    assert np.remainder(x, y).grad_fn.name() == np.mod(x, y).grad_fn.name()
    quotients = [(x // y, X // Y), (np.floor_divide(x, y), X // Y), (7.0 // x, 7.0 // X),
                 (tape.floor_divide(x, 2.5), X // 2.5)]
    for quotient, want in quotients:
        assert quotient.grad_fn is None and not quotient.requires_grad   # as np.sign's
        np.testing.assert_array_equal(quotient.numpy(), want)
    out = np.sum(7.0 % x) + np.sum(tape.remainder(x, y) * 2.0)
    dx, dy = tape.grad(out, [x, y])
    np.testing.assert_allclose(dx.numpy(), -(7.0 // X) + 2.0, rtol=1e-15)
    np.testing.assert_allclose(dy.numpy(), -2.0 * (X // Y), rtol=1e-15)


def test_tape_updates_in_place():
    x = tape.tensor(X, requires_grad=True)
    z = x * 3.0
    z %= 2.5
    assert z.grad_fn.name() == "RemainderBackward0"
    (dx,) = tape.grad(np.sum(z * x), [x])
    np.testing.assert_allclose(dx.numpy(), 3.0 * X + (3.0 * X) % 2.5, rtol=1e-14)
    w = x * 3.0
    w //= 2.5                     # piecewise constant now: no gradient flows back through it
    assert w.grad_fn is None and not w.requires_grad
    np.testing.assert_array_equal(w.numpy(), (3.0 * X) // 2.5)
    (dx,) = tape.grad(np.sum(w * x), [x])
    np.testing.assert_array_equal(dx.numpy(), (3.0 * X) // 2.5)


# ---- augmented assignment ---------------------------------------------------------------------
def augmented(x, y):
    z = x * 1.0
    z %= y
    w = x * 3.0
    w //= y
    v = x * 2.0
    v[1:] %= 1.5
    v[:2] //= 0.7
    return np.sum(z * w + v * x)


def test_augmented_assignment():
    assert away_from_jumps(3 * X, Y) and away_from_jumps(2 * X, 1.5)
    assert away_from_jumps(2 * X, 0.7)
    value, grads = ad.value_and_grad(augmented, wrt=(0, 1))(X, Y)
    assert value == augmented(X, Y)
    assert_matches_numerical(augmented, (X, Y), (0, 1), grads, rtol=1e-6, atol=1e-7)
    for got, want in zip(grads, tape.dynamic_grad(augmented, wrt=(0, 1))(X, Y)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


# ---- Python floats and ints -------------------------------------------------------------------
def scalar_mod(a, b):
    return (a % b) * a


@pytest.mark.parametrize("a, b", [(3.7, -1.7), (-3.7, 1.7), (-5.9, -0.9), (0.4, 2.3)])
def test_python_floats(a, b):
    g = ad.value_and_grad(scalar_mod, wrt=(0, 1))
    value, grads = g(a, b)
    assert value == scalar_mod(a, b) and type(value) is float
    assert all(type(d) is float for d in grads)
    assert_matches_numerical(scalar_mod, (a, b), (0, 1), grads, rtol=1e-6, atol=1e-7)
    assert "a % b" in g.source and "a // b" in g.source


def int_operands(a, n):
    return a * (n % 3) + a * (n // 4) + (a % 2) * n


@pytest.mark.parametrize("n", [-5, 7, 0])
def test_python_ints(n):
    value, da = ad.value_and_grad(int_operands)(1.3, n)
    assert value == int_operands(1.3, n)
    assert da == pytest.approx(n % 3 + n // 4 + n, rel=1e-15)


# ---- the generated source ---------------------------------------------------------------------
VALUES = {"a": np.array([7.5, -7.5, 3.0]), "b": np.array([2.0, 2.0, -1.25]),
          "c": np.array([0.75, -3.0, 2.5])}


def _emitted(tree):
    """``(expression, value)`` of a nested ``(prim, *operands)`` tree over ``VALUES``' names:
    the emitter's expression for it, and its value computed prim by prim with NumPy."""
    if isinstance(tree, str):
        return ast.Name(tree, ast.Load()), VALUES[tree]
    prim, *operands = tree
    exprs, values = zip(*map(_emitted, operands))
    aval = Aval("array", "float64", (3,))
    node = Node(prim, tuple(Value(aval) for _ in operands), {}, (Value(aval),))
    return node_expr(node, list(exprs)), PRIMS[prim].fn(*values)


@pytest.mark.parametrize("text, tree", [
    ("a % (b + c)", ("remainder", "a", ("add", "b", "c"))),
    ("a % b * c", ("multiply", ("remainder", "a", "b"), "c")),     # (a % b) * c, as Python reads
    ("a * (b % c)", ("multiply", "a", ("remainder", "b", "c"))),
    ("-(a % b)", ("negative", ("remainder", "a", "b"))),
    ("a - b % c", ("subtract", "a", ("remainder", "b", "c"))),
    ("a // (b % c)", ("floor_divide", "a", ("remainder", "b", "c"))),
    ("a ** (b // c)", ("power", "a", ("floor_divide", "b", "c"))),
])
def test_infix_spellings_keep_their_meaning(text, tree):
    expr, value = _emitted(tree)
    assert _render(ast.Expr(expr)) == text
    np.testing.assert_array_equal(eval(text, {}, dict(VALUES)), value)


def precedence(a, b, c):
    return np.sum(a % (b + c) + (a % b) * c + a * (b % c) - (a % b) - a % b % c + a // b // c)


def test_compiled_expressions_keep_their_grouping():
    args = (np.array([7.3, -7.6, 3.2]), np.array([2.1, 2.2, -1.3]), np.array([0.7, -3.1, 2.6]))
    g = ad.value_and_grad(precedence, wrt=(0, 1, 2))
    value, _ = g(*args)
    assert value == precedence(*args)
    assert "a % (b + c)" in g.source


def test_source_reads_like_the_user_code():
    source = ad.grad(remainder_sum, wrt=(0, 1)).specialize(X, Y).source
    assert "x // y" in source                             # dy = -(x // y)
    source = ad.value_and_grad(remainder_sum).specialize(X, Y).source
    assert "    remainder_sum = (x % y).sum()\n" in source


# ---- CuPy: kernels equal to NumPy bit for bit --------------------------------------------------
def _same_bits(got, want):
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok].view(f"u{got.itemsize}"),
                                  want[ok].view(f"u{want.itemsize}"))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("prim", ["remainder", "floor_divide"])
def test_kernels_compute_numpys_bits(prim, dtype):
    rng = np.random.default_rng(11)
    special = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.5, 3.0, -3.0, 1e-300, 1e300, 7.0, -7.0,
               np.inf, -np.inf, np.nan, 0.1, -0.1, 1 / 3]
    a, b = (v.ravel() for v in np.meshgrid(special, special))
    a = np.concatenate([a, rng.standard_normal(4000) * 10, rng.integers(-9, 9, 500) * 0.5])
    b = np.concatenate([b, rng.standard_normal(4000) * 3, rng.integers(-3, 4, 500) * 0.25])
    with np.errstate(over="ignore"):                     # 1e300 is inf in float32
        a, b = a.astype(dtype), b.astype(dtype)
    fn = getattr(np, prim)
    with np.errstate(all="ignore"):
        cases = [((a, b), fn(a, b)), ((a, 2.5), fn(a, 2.5)), ((a, -0.5), fn(a, -0.5)),
                 ((1.5, b), fn(1.5, b)), ((a, 0.0), fn(a, 0.0))]
    for ins, want in cases:
        block = one_node_block(prim, ins, want.dtype.name)
        root = lower_block(block)
        assert root is not None, "a float remainder must become kernel code"
        kernel = Kernel("_k", "k", *kernel_signature(block, root), root)
        arrays = [x for x in ins if isinstance(x, np.ndarray)]
        _same_bits(kernel.evaluate(*arrays), want)         # the tree
        run = fake_cupy.ElementwiseKernel(kernel.in_params, kernel.out_params, kernel.operation)
        _same_bits(run(*[fake_cupy.ndarray(x) for x in arrays]).get(), want)   # its C text


def test_integer_remainder_stays_a_cupy_ufunc():
    ints = np.arange(-4, 4)
    assert lower_block(one_node_block("remainder", (ints, 3), "int64")) is None


def wrapped_chain(x, y, c):      # x % y read once: fused; its adjoint reads x // y once
    return np.sum(((x % y) * 2.0 + x) * c)


@pytest.fixture
def cp():
    with fake_cupy.install() as module:
        yield module


def test_fused_chains_with_remainder_and_floor_divide_run_as_kernels(cp):
    rng = np.random.default_rng(4)
    x, y = rng.uniform(-6, 6, 4096), rng.uniform(0.5, 2, 4096) * rng.choice([-1.0, 1.0], 4096)
    c = rng.standard_normal(4096)
    g = ad.value_and_grad(wrapped_chain, wrt=(0, 1), backend="cupy")
    operations = [k.operation for k in g.specialize(x, y, c).kernels]
    assert any("fmod(" in op and "copysign(" in op for op in operations), operations
    assert any("floor(" in op for op in operations), operations
    value, grads = g(cp.asarray(x), cp.asarray(y), cp.asarray(c))
    want_value, want = ad.value_and_grad(wrapped_chain, wrt=(0, 1))(x, y, c)
    assert float(value) == pytest.approx(want_value, rel=1e-12)
    for a, b in zip(grads, want):
        np.testing.assert_allclose(a.get(), b, rtol=1e-12, atol=1e-12)


# ---- numexpr: its float `%` rounds otherwise, so remainder stays a ufunc ------------------------
def big_chain(x, y):
    return np.sum((x % y) * x * 2.0 + x * x - (x // y) * 0.5)


def test_numexpr_never_computes_remainder():
    n = 1 << 18
    rng = np.random.default_rng(5)
    x, y = rng.uniform(-6, 6, n), rng.uniform(0.5, 2, n)
    g = ad.value_and_grad(big_chain, wrt=(0, 1))
    value, (dx, dy) = g(x, y)
    assert value == pytest.approx(big_chain(x, y), rel=1e-12)
    for text in re.findall(r"ne\.evaluate\('([^']*)'", g.source):
        assert "%" not in text and "//" not in text, text
    np.testing.assert_allclose(dx, 2.0 * (x % y) + 2.0 * x + 2.0 * x, rtol=1e-12)
    np.testing.assert_allclose(dy, -(x // y) * x * 2.0, rtol=1e-12)


# ---- the operators still refused ----------------------------------------------------------------
def shifts_an_array(x):
    return np.sum(x << 1)


def shifts_a_counter(x):
    s = 0.0
    for i in range(3):
        s = s + np.sum(x) * (i << 1)
    return s


@pytest.mark.parametrize("f, construct, what", [
    (shifts_an_array, "x << 1", "`<<` on arrays is not supported"),
    (shifts_a_counter, "i << 1", "`<<` on traced values is not supported"),
])
def test_other_operators_give_a_located_error(f, construct, what):
    with pytest.raises(ad.CompileError) as info:
        ad.grad(f)(X.copy())
    err = info.value
    header, shown, caret, *rest = str(err).split("\n")
    assert what in header and "on arrays" not in header.replace(what, "")
    col = shown.index(construct)
    assert caret == " " * col + "^" * len(construct)
    assert rest[-1].startswith("hint: ")
