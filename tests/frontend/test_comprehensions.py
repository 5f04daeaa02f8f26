"""List comprehensions and generator expressions with a static iteration, unrolled while
compiling: each iterable kind, enumerate/zip, filters, nested clauses, the calls that consume a
generator, Python 3 scoping, every transform, and each refused form's located error. Gradients
are checked against finite differences and the dynamic tape."""


import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import assert_located
from adcompiler.tape import dynamic_grad

from tests.helpers import check_grads

COEFFS = (0.5, -1.5, 2.0)
SCALES = [1.0, 2.0, 3.0]
i = 7  # a module global a comprehension's own `i` must not rebind


# ---- iterables --------------------------------------------------------------------------------
def tanh_layers(x, W):
    hs = [np.tanh(W[i] @ x) for i in range(3)]
    return sum(np.sum(h) for h in hs)


def chunks(x):
    parts = [x[i:i + 2] for i in range(0, len(x), 2)]
    return np.sum(np.stack([p * p for p in parts]))


def by_shape(x, W):
    return np.sum(np.stack([W[k] * x[k] for k in range(W.shape[0])]) ** 2)


def by_static_argument(x, n):
    return sum(np.sum(np.sin(x * k)) for k in range(1, n))


def over_literal(x):
    return np.sum(np.concatenate([x[:1]] + [c * x for c in [1.0, 2.0]]))


def over_global_list(x):
    return np.sum(sum(s * np.exp(x / s) for s in SCALES))


def over_tuple(w1, w2):
    params = (w1, w2)
    norms = tuple(np.sum(p ** 2) for p in params)
    return norms[0] + 2.0 * norms[1]


def over_rows(W):
    return sum(np.sum(np.sin(row)) for row in W)


def over_rows_of_1d(x):
    return sum(v * v for v in x)


def polynomial(x):
    return np.sum(sum(w * x ** k for k, w in enumerate(COEFFS)))


def enumerate_from(x):
    first = np.stack([k * np.cos(v) for k, v in enumerate(x, 1)])
    return np.sum(first) + sum(k * v for k, v in enumerate(x, start=-2))


def zipped(x, W):
    return sum(np.sum(w * r) for w, r in zip(W, [x, 2.0 * x, x ** 2]))


def nested_targets(x, W):
    return sum(k * np.sum(a * b) for k, (a, b) in enumerate(zip(W, [x, np.exp(x)])))


def _double(h):
    return 2.0 * h


def _sine(h):
    return np.sin(h)


LAYERS = (_double, _sine)


def layered(x):
    return np.sum(sum(layer(x) for layer in LAYERS))


def reversed_rows(W):
    return np.sum(np.stack([r * (k + 1) for k, r in enumerate(reversed(W))]))


# ---- filters, nesting, consumers ----------------------------------------------------------------
def even_entries(x):
    return np.sum(np.stack([x[i] * x[i] for i in range(len(x)) if i % 2 == 0]))


def two_filters(x):
    return sum(np.sin(x[i]) for i in range(len(x)) if i > 0 if i != 2)


def products(x, y):
    return np.sum(np.stack([a * b for a in x for b in y]))


def triangle(x):
    return sum(x[j] * x[k] for j in range(len(x)) for k in range(j))


def nested_lists(x, y):
    grid = [[a * np.exp(b) for b in y] for a in x]
    return np.sum(np.stack([np.stack(r) for r in grid]))


def largest(W):
    return max(np.sum(r ** 2) for r in W) - min(np.sum(r) for r in W)


def listed(x):
    xs = list(x[k] ** 3 for k in range(2))
    return xs[0] + xs[1]


def summed_from(W):
    return np.sum(sum((np.tanh(r) for r in W), np.ones(4)))


def sum_of_list(x):
    return np.sum(sum([x, x ** 2, np.sin(x)]))


# ---- scoping ------------------------------------------------------------------------------------
def keeps_outer(x):
    k = 2.0
    ys = [x * k for k in range(3)]
    return np.sum(ys[2]) * k


def shadows_argument(x):
    y = np.sum(np.stack([x * x for x in [x, 2.0 * x]]))
    return y + np.sum(x)


def reads_global_after(x):
    ys = [x * i for i in range(2)]
    return np.sum(ys[1]) * i


# ---- inside control flow ------------------------------------------------------------------------
def in_loop(x, W):
    j = 2
    h = x
    for t in range(3):
        h = np.tanh(sum(W[j] * h for j in range(2)) + W[t])
    return np.sum(h[:j])


def in_branch(x):
    if np.sum(x) > 0:
        y = np.stack([x * k for k in range(1, 3)])
    else:
        y = np.stack([np.sin(x) for _ in range(2)])
    return np.sum(y * y)


# ---- values -------------------------------------------------------------------------------------
RNG = np.random.default_rng(3)
X = RNG.normal(size=4)
W = RNG.normal(size=(3, 4))

CASES = [
    (tanh_layers, (X, W), (0, 1)),
    (chunks, (X,), (0,)),
    (by_shape, (X[:3], W), (0, 1)),
    (by_static_argument, (X, 4), (0,)),
    (over_literal, (X,), (0,)),
    (over_global_list, (X,), (0,)),
    (over_tuple, (X, W), (0, 1)),
    (over_rows, (W,), (0,)),
    (over_rows_of_1d, (X,), (0,)),
    (polynomial, (X,), (0,)),
    (enumerate_from, (X,), (0,)),
    (zipped, (X, W), (0, 1)),
    (nested_targets, (X, W), (0, 1)),
    (layered, (X,), (0,)),
    (reversed_rows, (W,), (0,)),
    (even_entries, (X,), (0,)),
    (two_filters, (X,), (0,)),
    (products, (X, X[:3]), (0, 1)),
    (triangle, (X,), (0,)),
    (nested_lists, (X[:2], X[1:]), (0, 1)),
    (largest, (W,), (0,)),
    (listed, (X,), (0,)),
    (summed_from, (W,), (0,)),
    (sum_of_list, (X,), (0,)),
    (keeps_outer, (X,), (0,)),
    (shadows_argument, (X,), (0,)),
    (reads_global_after, (X,), (0,)),
    (in_loop, (X, W[:, :4]), (0, 1)),
    (in_branch, (X,), (0,)),
    (in_branch, (-np.abs(X),), (0,)),
]


@pytest.mark.parametrize("f, args, wrt", CASES, ids=[f"{c[0].__name__}{k}"
                                                      for k, c in enumerate(CASES)])
def test_gradient_matches_differences_and_tape(f, args, wrt):
    grads = check_grads(f, *args, wrt=wrt)
    for g, t in zip(grads, dynamic_grad(f, wrt=wrt)(*args)):
        np.testing.assert_allclose(g, t, rtol=1e-10, atol=1e-12)


def test_value_and_grad():
    value, (dx, dW) = ad.value_and_grad(tanh_layers, wrt=(0, 1))(X, W)
    assert value == pytest.approx(tanh_layers(X, W), rel=1e-12)
    tx, tW = dynamic_grad(tanh_layers, wrt=(0, 1))(X, W)
    np.testing.assert_allclose(dx, tx, rtol=1e-10)
    np.testing.assert_allclose(dW, tW, rtol=1e-10)


def row_images(W):
    return np.stack([np.tanh(r) * k for k, r in enumerate(W)])


def test_vjp():
    cotangent = RNG.normal(size=W.shape)
    got = ad.vjp(row_images)(W, cotangent=cotangent)
    expected = (1.0 - np.tanh(W) ** 2) * np.arange(3.0)[:, None] * cotangent
    np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_jvp():
    t = RNG.normal(size=4)
    value, tangent = ad.jvp(polynomial, wrt=0)(X, tangents=t)
    assert value == pytest.approx(polynomial(X), rel=1e-12)
    g = ad.grad(polynomial)(X)
    assert tangent == pytest.approx(g @ t, rel=1e-10)


def test_hessian():
    H = ad.hessian(triangle)(X)
    n = len(X)
    expected = np.array([[float(j != k) for k in range(n)] for j in range(n)])
    np.testing.assert_allclose(H, expected, atol=1e-10)


def test_scoping_keeps_python_values():
    """The outer `k` stays the float 2.0, the global `i` stays 7, the loop's `j` stays the
    static int 2 (a slice bound, not a carried value)."""
    assert ad.grad(keeps_outer)(X) == pytest.approx(np.full(4, 4.0))
    np.testing.assert_allclose(ad.grad(reads_global_after)(X), np.full(4, 7.0))
    assert np.count_nonzero(ad.grad(in_loop, wrt=(0, 1))(X, W)[0]) == 2


def test_list_comprehension_is_a_list_literal():
    """Unrolled: the generated code has no loop."""
    source = ad.grad(chunks).specialize(X).source
    code = [ln for ln in source.splitlines() if not ln.strip().startswith("#")]
    assert not any(ln.strip().startswith("for ") for ln in code), source


# ---- refused forms ------------------------------------------------------------------------------
def traced_filter(x):
    ys = [x[i] for i in range(3) if x[i] > 0]
    return np.sum(np.stack(ys))


def set_comprehension(x):
    s = {k for k in range(3)}  # noqa: F841
    return np.sum(x)


def kept_generator(x):
    g = (x * k for k in range(3))
    return sum(g)


def stacked_generator(x):
    return np.sum(np.stack(x * k for k in range(3)))


def too_long(x):
    return sum(x * k for k in range(2000))


def too_long_nested(x):
    return np.sum(np.stack([x * a for a in range(40) for b in range(41)]))


def traced_count(x):
    s = 0.0
    for step in range(3):
        s = s + sum(x[j] for j in range(step))
    return s


def while_count(x):
    count = 0
    s = np.sum(x * x)
    while s < 10.0:
        s = s * 2.0
        count = count + 1
    return sum(x[j] for j in range(count))


def iterates_a_while_list(x):
    xs = []
    s = np.sum(x * x)
    while s < 10.0:
        s = s * 2.0
        xs.append(s)
    return sum(v for v in xs)


def iterates_a_float(x, scale):
    return sum(v for v in scale) * np.sum(x)


def iterates_a_number(x):
    return sum(v for v in 3) * np.sum(x)


def leaks(x):
    ys = [x * k for k in range(3)]
    return np.sum(ys[0]) * k  # noqa: F821


def subscript_target(x):
    y = np.zeros(2)
    return np.sum(np.stack([x for y[0] in range(2)]))


REFUSED = [
    (traced_filter, 1, "x[i] > 0", "this comprehension's filter depends on traced values",
     "np.where"),
    (set_comprehension, 1, "{k for k in range(3)}", "set comprehensions are not supported",
     "list comprehension"),
    (kept_generator, 1, "(x * k for k in range(3))",
     "a generator expression is compiled only where a call consumes it at once",
     "write a list comprehension"),
    (stacked_generator, 1, "(x * k for k in range(3))",
     "a generator expression is compiled only where a call consumes it at once",
     "np.stack take a list"),
    (too_long, 1, "range(2000)", "would unroll more than 1000 iterations", "`for` loop"),
    (too_long_nested, 1, "range(41)", "would unroll more than 1000 iterations", "`for` loop"),
    (traced_count, 3, "step", "this range bound changes with a loop counter", "`for` loop"),
    (while_count, 6, "count", "this range bound is computed from the inputs", "`for` loop"),
    (iterates_a_while_list, 6, "xs", "a list built by a while loop has a length known only "
     "when it runs", "`for` loop"),
    (iterates_a_float, 1, "scale", "a traced float is not iterable", "range(...)"),
    (iterates_a_number, 1, "3", "a comprehension cannot iterate over the int 3", "range(...)"),
    (leaks, 2, "k", "name `k` is not defined", "bound only inside a comprehension"),
    (subscript_target, 2, "y[0]", "a comprehension's target must be a name", "for i, x in"),
]


@pytest.mark.parametrize("f, offset, construct, message, hint", REFUSED,
                         ids=[case[0].__name__ for case in REFUSED])
def test_refused_forms_are_located_errors(f, offset, construct, message, hint):
    args = (X, 0.5) if f is iterates_a_float else (X,)
    with pytest.raises(ad.CompileError) as info:
        ad.grad(f)(*args)
    assert message in info.value.message, str(info.value)
    assert_located(info.value, f, offset, construct, hint)
