"""``for`` loops over sequences known while compiling, unrolled (one copy of the body per item),
and arrays unpacked into names (``a, b = p`` is ``a, b = p[0], p[1]``): each iterable kind,
tuple and starred targets, break/continue/else, every transform, the tape, the command line,
and each refused form's located error. Gradients are checked against finite differences and the
dynamic tape."""

import re
import textwrap

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import assert_located
from adcompiler import cli
from adcompiler.tape import dynamic_grad

from tests.helpers import assert_matches_numerical, check_grads

RNG = np.random.default_rng(7)
X = np.array([0.3, -0.8, 1.1])
W1 = RNG.normal(size=(4, 3)) * 0.5
W2 = RNG.normal(size=(2, 4)) * 0.5
P = RNG.normal(size=(2, 3))
LAYERS = [np.eye(3) * 0.5 + 0.1, RNG.normal(size=(2, 3)) * 0.5]  # shapes differ: no loop carries h
BIASES = (np.array([0.1, -0.2, 0.3]), np.array([0.5, -0.5]))
COEFFS = (0.5, 1.0, 2.0)
PAIRS = np.array([[0.5, 1.0], [2.0, -1.0], [1.5, 0.25]])
MANY = [0.5] * 1001


class Model:
    def __init__(self):
        self.weights = [W1.copy(), W2.copy()]

    @ad.grad(wrt="x")
    def loss(self, x):
        h = x
        for W in self.weights:
            h = np.tanh(W @ h)
        return np.sum(h ** 2)


# ---- iterables --------------------------------------------------------------------------------
def over_tuple_literal(x):
    s = 0.0
    for k in (0.5, 1.0, 2.0):
        s = s + np.sum(np.sin(k * x))
    return s


def over_functions(x):
    s = 0.0
    for f in [np.sin, np.cos, np.tanh]:
        s = s + np.sum(f(x) * x)
    return s


def over_module_list(x):
    h = x
    for W in LAYERS:
        h = np.tanh(W @ h)
    return np.sum(h ** 2)


def over_object_list(model, x):
    h = x
    for W in model.weights:
        h = np.tanh(W @ h)
    return np.sum(h ** 2)


def over_zip(x):
    h = x
    for W, b in zip(LAYERS, BIASES):
        h = np.tanh(W @ h + b)
    return np.sum(h)


def over_built_tuple(x, w1, w2):
    ws = (w1, w2)
    h = x
    for i, W in enumerate(ws):
        h = np.tanh(W @ h) * (i + 1)
    return np.sum(h)


def over_built_list_from_one(x, w1):
    h = x
    for i, W in enumerate([w1, w1.T], 1):
        h = np.sin(W @ h) / i
    return np.sum(h)


def over_zip_with_rows(x, m):
    s = 0.0
    for c, row in zip(COEFFS, m):
        s = s + c * np.sum(row * x)
    return s


def over_reversed(x):
    s = 0.0
    for k, c in enumerate(reversed(COEFFS)):
        s = s + c * np.sum(x ** (k + 1))
    return s


def nested_in_compiled_loop(x):
    s = 0.0
    for t in range(3):
        for k in COEFFS:
            s = s + np.sum(np.sin(k * x + t))
    return s


def compiled_loop_inside(x):
    s = 0.0
    for k in COEFFS:
        for i in range(3):
            s = s + k * x[i] ** 2
    return s


def nested_unrolled(x):
    s = 0.0
    for a in COEFFS:
        for f in (np.sin, np.cos):
            s = s + a * np.sum(f(a * x))
    return s


def over_carried_tuple(x):
    state = (x, 2.0 * x)
    acc = 0.0
    for t in range(3):
        for k, s in enumerate(state):
            acc = acc + (k + 1.0) * np.sum(np.sin(s))
        a, b = state
        state = (b * 0.5, a + 0.1)
    return acc


def over_comprehension(x):
    s = 0.0
    for v in [x * k for k in COEFFS]:
        s = s + np.sum(v ** 2)
    return s


def starred_targets(x):
    s = 0.0
    for a, *rest in [(1.0, 2.0, 3.0), (4.0, 5.0)]:
        s = s + a * np.sum(np.sin(x)) * len(rest) + rest[-1] * np.sum(x)
    return s


def target_after(x):
    s = 0.0
    for k in COEFFS:
        t = np.sum(k * x ** 2)
        s = s + t
    return s * k + t  # the last item, and a name first bound in the body


# ---- break, continue, else --------------------------------------------------------------------
def static_break(x):
    s = 0.0
    for k in COEFFS:
        if k > 0.8:
            break
        s = s + np.sum(np.sin(k * x))
    return s * k  # k is the item it broke at


def static_continue(x):
    s = 0.0
    for k in (0.5, 1.0, 2.0, 3.0):
        if k == 1.0:
            continue
        s = s + np.sum(np.cos(k * x))
    return s


def static_else(x):
    s = 0.0
    for k in COEFFS:
        s = s + np.sum(k * x)
    else:
        s = s * 2.0
    return s


def traced_break(x, limit):
    s = 0.0
    for k in (1.0, 2.0, 3.0, 4.0):
        s = s + np.sum(np.sin(k * x) ** 2)
        if s > limit:
            break
    else:
        s = s * 10.0
    return s * k


def traced_break_in_compiled_loop(x):
    acc = 0.0
    for t in range(3):
        for c in (1.0, 2.0, 3.0):
            acc = acc + np.sum(np.sin(c * x + t))
            if acc > 1.0:
                break
    return acc


def traced_continue(x):
    s = 0.0
    for W in LAYERS:
        h = W @ x
        if np.sum(h) < 0.0:
            continue
        s = s + np.sum(h ** 2)
    return s


# ---- unpacking arrays -------------------------------------------------------------------------
def unpacks_rows(p):
    a, b = p
    return np.sum(a * np.sin(b))


def unpacks_vector(x):
    u, v, w = x
    return u * v + np.sin(w) * u


def unpacks_starred(m):
    first, *rest = m
    head, *middle, last = m
    return np.sum(first * rest[0]) + len(rest) * np.sum(last) + np.sum(middle[0] ** 2)


def unpacks_in_loop(m, x):
    s = 0.0
    for a, b in m:
        s = s + a * np.sum(np.sin(b * x))
    return s


def unpacks_global_rows(x):
    s = 0.0
    for a, b in PAIRS:
        s = s + a * np.sum(x ** 2) + b * np.sum(x)
    return s


def unpacks_in_unrolled_target(x, w1, w2):
    s = 0.0
    for k, (u, v) in enumerate(zip((w1, w2), x[:2])):
        s = s + (k + 1.0) * np.sum(u) * v
    return s


CASES = [
    (over_tuple_literal, (X,), (0,)),
    (over_functions, (X,), (0,)),
    (over_module_list, (X,), (0,)),
    (over_zip, (X,), (0,)),
    (over_built_tuple, (X, W1, W2), (0, 1, 2)),
    (over_built_list_from_one, (X, RNG.normal(size=(3, 3))), (0, 1)),
    (over_zip_with_rows, (X, RNG.normal(size=(3, 3))), (0, 1)),
    (over_reversed, (X,), (0,)),
    (nested_in_compiled_loop, (X,), (0,)),
    (compiled_loop_inside, (X,), (0,)),
    (nested_unrolled, (X,), (0,)),
    (over_carried_tuple, (X,), (0,)),
    (over_comprehension, (X,), (0,)),
    (starred_targets, (X,), (0,)),
    (target_after, (X,), (0,)),
    (static_break, (X,), (0,)),
    (static_continue, (X,), (0,)),
    (static_else, (X,), (0,)),
    (traced_break, (X, 0.3), (0, 1)),
    (traced_break, (X, 100.0), (0, 1)),
    (traced_break_in_compiled_loop, (X,), (0,)),
    (traced_break_in_compiled_loop, (X - 2.0,), (0,)),
    (traced_continue, (X,), (0,)),
    (traced_continue, (-X,), (0,)),
    (unpacks_rows, (P,), (0,)),
    (unpacks_vector, (X,), (0,)),
    (unpacks_starred, (RNG.normal(size=(4, 3)),), (0,)),
    (unpacks_in_loop, (PAIRS, X), (0, 1)),
    (unpacks_global_rows, (X,), (0,)),
    (unpacks_in_unrolled_target, (X, W1, W2), (0, 1, 2)),
]


@pytest.mark.parametrize("f, args, wrt", CASES, ids=[f"{c[0].__name__}{k}"
                                                      for k, c in enumerate(CASES)])
def test_gradient_matches_differences_and_tape(f, args, wrt):
    grads = check_grads(f, *args, wrt=wrt)
    for g, t in zip(grads, dynamic_grad(f, wrt=wrt)(*args)):
        np.testing.assert_allclose(g, t, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("f, args, wrt", CASES, ids=[f"{c[0].__name__}{k}"
                                                      for k, c in enumerate(CASES)])
def test_value_and_grad(f, args, wrt):
    value, grads = ad.value_and_grad(f, wrt=wrt)(*args)
    assert value == pytest.approx(f(*args), rel=1e-12)
    assert_matches_numerical(f, args, wrt, grads)


def test_values_are_pythons():
    """The unrolled loop computes what Python computes, break and else included."""
    x = X.copy()
    assert ad.value_and_grad(static_break)(x)[0] == pytest.approx(np.sum(np.sin(0.5 * x)))
    assert ad.value_and_grad(target_after)(x)[0] == pytest.approx(
        3.5 * np.sum(x ** 2) * 2.0 + 2.0 * np.sum(x ** 2))
    s = np.sum(np.sin(x) ** 2)  # above 0.3: breaks at k = 1.0, no else
    assert ad.value_and_grad(traced_break)(x, 0.3)[0] == pytest.approx(s)
    full = sum(np.sum(np.sin(k * x) ** 2) for k in (1.0, 2.0, 3.0, 4.0))
    assert ad.value_and_grad(traced_break)(x, 100.0)[0] == pytest.approx(full * 10.0 * 4.0)
    assert ad.value_and_grad(static_else)(x)[0] == pytest.approx(7.0 * np.sum(x))


def test_object_attribute_list():
    model = Model()
    want = dynamic_grad(over_object_list, wrt=(1,))(model, X)[0]
    np.testing.assert_allclose(model.loss(X), want, rtol=1e-10)
    got = ad.grad(over_object_list, wrt=1)(model, X)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert_matches_numerical(over_object_list, (model, X), (1,), (got,))


def test_jvp():
    t = RNG.normal(size=3)
    for f in (over_module_list, traced_continue, unpacks_vector):
        value, tangent = ad.jvp(f, wrt=0)(X, tangents=t)
        assert value == pytest.approx(f(X), rel=1e-12)
        assert tangent == pytest.approx(ad.grad(f)(X) @ t, rel=1e-10)


def test_jvp_of_traced_break():
    t = RNG.normal(size=3)
    value, tangent = ad.jvp(traced_break, wrt=0)(X, 0.3, tangents=t)
    assert value == pytest.approx(traced_break(X, 0.3), rel=1e-12)
    assert tangent == pytest.approx(ad.grad(traced_break)(X, 0.3) @ t, rel=1e-10)


def test_hessian():
    H = ad.hessian(over_tuple_literal)(X)
    expected = np.diag(sum(-k * k * np.sin(k * X) for k in (0.5, 1.0, 2.0)))
    np.testing.assert_allclose(H, expected, atol=1e-10)
    H = ad.hessian(unpacks_vector)(X)
    u, v, w = X
    expected = np.array([[0.0, 1.0, np.cos(w)], [1.0, 0.0, 0.0], [np.cos(w), 0.0,
                                                                   -np.sin(w) * u]])
    np.testing.assert_allclose(H, expected, atol=1e-10)


@pytest.mark.parametrize("f, rest", [(over_module_list, ()), (over_built_tuple, (W1, W2)),
                                     (traced_break, (0.3,)), (traced_break, (100.0,)),
                                     (traced_continue, ())])
def test_hessian_matches_differences_of_the_gradient(f, rest):
    H = ad.hessian(f)(X, *rest)
    g = ad.grad(f)
    eps = 1e-6
    columns = [(g(X + eps * e, *rest) - g(X - eps * e, *rest)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(H, np.stack(columns, axis=1), rtol=1e-5, atol=1e-6)


def test_the_loop_leaves_straight_line_code():
    g = ad.grad(over_functions)
    g(X)
    source = g.source
    assert "for " not in source
    assert "np.tanh" in source and "np.cos" in source


# ---- refused forms ----------------------------------------------------------------------------
def too_many_items(x):
    s = 0.0
    for k in MANY:
        s = s + k * np.sum(x)
    return s


def traced_bound_in_zip(x):
    s = 0.0
    for i, k in zip(range(np.argmax(x)), COEFFS):
        s = s + k * np.sum(x)
    return s


def returns_inside(x):
    for k in COEFFS:
        if k > 0.8:
            return np.sum(k * x)
    return np.sum(x)


def unpacks_too_many(m):
    a, b = m
    return np.sum(a * b)


def unpacks_too_few(x):
    a, b, c, d = x
    return a * b


def unpacks_too_few_starred(x):
    a, b, *rest, c, d = x
    return a * b


def unpacks_a_scalar(x):
    a, b = np.sum(x)
    return a * b


def unpacks_a_number(x):
    a, b = 2.0
    return a * b * np.sum(x)


def unpacks_tuple_mismatch(x):
    a, b = x, x, x
    return np.sum(a * b)


REFUSED = [
    (too_many_items, (X,), 2, "MANY", "this loop would unroll more than 1000 iterations",
     "np.stack(items)"),
    (traced_bound_in_zip, (X,), 2, "np.argmax(x)", "this range bound is known only while running",
     "enumerate(items)"),
    (returns_inside, (X,), 3, "return np.sum(k * x)", "a `return` inside a loop is not supported",
     "keep the result and a flag"),
    (unpacks_too_many, (RNG.normal(size=(3, 2)),), 1, "a, b",
     "ValueError: too many values to unpack (expected 2)", "has 3 items"),
    (unpacks_too_few, (X,), 1, "a, b, c, d",
     "ValueError: not enough values to unpack (expected 4, got 3)", "starred"),
    (unpacks_too_few_starred, (X,), 1, "a, b, *rest, c, d",
     "ValueError: not enough values to unpack (expected at least 4, got 3)",
     "at most 3 names beside the starred one"),
    (unpacks_a_scalar, (X,), 1, "a, b",
     "TypeError: cannot unpack non-iterable numpy.float64 object",
     "with a first axis"),
    (unpacks_a_number, (X,), 1, "a, b", "TypeError: cannot unpack non-iterable float object",
     "with a first axis"),
    (unpacks_tuple_mismatch, (X,), 1, "a, b",
     "ValueError: too many values to unpack (expected 2)", "has 3 items"),
]


@pytest.mark.parametrize("f, args, offset, construct, message, hint", REFUSED,
                         ids=[case[0].__name__ for case in REFUSED])
def test_refused_forms_are_located_errors(f, args, offset, construct, message, hint):
    with pytest.raises(ad.CompileError, match=re.escape(message)) as info:
        ad.grad(f)(*args)
    assert_located(info.value, f, offset, construct, hint)


def test_numpy_raises_the_same_errors():
    """The located errors are the ones Python and NumPy raise running the function."""
    with pytest.raises(ValueError, match=re.escape("too many values to unpack (expected 2)")):
        unpacks_too_many(np.ones((3, 2)))
    with pytest.raises(TypeError, match=re.escape("cannot unpack non-iterable numpy.float64")):
        unpacks_a_scalar(X)
    with pytest.raises(TypeError, match=re.escape("cannot unpack non-iterable float object")):
        unpacks_a_number(X)


# ---- the command line -------------------------------------------------------------------------
MODULE = '''
    import numpy as np
    import adcompiler as ad

    SCALES = (0.5, 1.0, 2.0)
    OFFSETS = [(0.5, 0.1), (0.2, 0.4)]


    @ad.value_and_grad(wrt=("x", "w1", "w2"))
    def loss(x, w1, w2):
        s = 0.0
        for k in SCALES:
            s = s + np.sum(np.sin(k * x))
        h = x
        for a, b in OFFSETS:
            h = np.tanh(a * h + b)
        for i, w in enumerate((w1, w2)):
            s = s + (i + 1.0) * np.sum(w * x)
        for f in [np.sin, np.cos]:
            if f is np.cos:
                break
            s = s + np.sum(f(x))
        return s + np.sum(h)


    @ad.grad(wrt="p")
    def pair(p):
        a, b = p
        first, *rest = p
        return np.sum(a * b) + np.sum(first * rest[0] ** 2)


    def example_loss():
        return np.array([0.3, 0.7]), np.array([1.0, 2.0]), np.array([0.5, -0.5])


    def example_pair():
        return (np.array([[0.3, 0.7, 0.1], [1.0, 2.0, 3.0]]),)
'''


def test_command_line_compiles_and_checks(tmp_path, capsys):
    path = tmp_path / "unrolled_module.py"
    path.write_text(textwrap.dedent(MODULE))
    assert cli.main(["compile", str(path)]) == 0, capsys.readouterr().err
    assert cli.main(["check", str(path)]) == 0, capsys.readouterr().out
    assert "all gradients agree" in capsys.readouterr().out
    namespace = {}
    exec(compile((tmp_path / "unrolled_module_grad.py").read_text(), "grad", "exec"), namespace)
    x, w1, w2 = np.array([0.3, 0.7, 0.2]), np.array([1.0, 2.0, 0.5]), np.array([0.5, -0.5, 1.0])
    value, grads = namespace["value_and_grad_loss"](x, w1, w2)
    assert value == pytest.approx(namespace["loss"](x, w1, w2), rel=1e-12)
    assert_matches_numerical(namespace["loss"], (x, w1, w2), (0, 1, 2), grads)
    p = RNG.normal(size=(2, 4))
    assert_matches_numerical(namespace["pair"], (p,), (0,), (namespace["grad_pair"](p),))
    with pytest.raises(TypeError, match=re.escape("float64[2, d1]")):
        namespace["grad_pair"](np.ones((3, 4)))  # unpacked into 2 names: 2 rows exactly
