"""Loop idioms people write every day (issue 29, part 8): appending to a list in a ``for`` over
``range`` of known bounds, and slices whose length follows the counter (``x[:i]``): such loops
are unrolled (frontend/statements/unrolled.py: range_needs_unrolling), so each iteration is
written out with its own shapes. Past the unrolling limit, or where the append would run once
for several paths (a traced ``if``), a located error says what to write instead."""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from tests.helpers import numerical_grad

X = np.linspace(0.1, 1.0, 6)


def products(x):
    out = []
    for i in range(4):
        out.append(x[i] * x[i + 1])
    return np.sum(np.stack(out) ** 2)


def rows_then_array(x):
    rows = []
    alias = rows                       # the list itself grows, as in Python
    for i in range(1, 4):
        rows.append(np.sum(x[:i]) * x[i])
    return np.sum(np.array(alias)) + len(rows)


def prefix_sums(x):
    s = 0.0
    for i in range(1, 5):
        s = s + np.sum(x[:i] ** 2) * np.sum(x[i:])
    return s


@pytest.mark.parametrize("f", [products, rows_then_array, prefix_sums],
                         ids=lambda f: f.__name__)
def test_the_idiom_compiles_and_agrees(f):
    g = ad.grad(f)(X)
    np.testing.assert_allclose(g, numerical_grad(f, [X], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tape.dynamic_grad(f)(X), g, rtol=1e-12)
    assert ad.value_and_grad(f)(X)[0] == pytest.approx(f(X), rel=1e-12)


def long_append(x):
    out = []
    for i in range(2000):
        out.append(x[i % 6])
    return np.sum(np.stack(out))


def append_in_a_branch(x):
    out = []
    for i in range(3):
        if x[i] > 0.5:
            out.append(x[i])
    return len(out)


def test_past_the_unrolling_limit_it_says_to_preallocate():
    with pytest.raises(ad.CompileError) as info:
        ad.grad(long_append)(X)
    assert "compiled loop" in info.value.message
    assert "xs = np.zeros((n, ...))" in info.value.hint
    assert info.value.lineno == long_append.__code__.co_firstlineno + 3


def test_an_append_under_a_traced_if_is_located():
    with pytest.raises(ad.CompileError) as info:
        ad.grad(append_in_a_branch)(X)
    assert "inside a traced `if`" in info.value.message
    assert info.value.lineno == append_in_a_branch.__code__.co_firstlineno + 4


def returns_early(x):
    for i in range(6):
        if x[i] > 0.5:
            return x[i] ** 2
    return np.sum(x)


def returns_early_rewritten(x):      # the hint's rewrite
    found = False
    result = 0.0
    for i in range(6):
        if not found and x[i] > 0.5:
            result, found = x[i] ** 2, True
    return np.where(found, result, np.sum(x))


def test_a_return_inside_a_loop_says_how_to_keep_the_result():
    with pytest.raises(ad.CompileError) as info:
        ad.grad(returns_early)(X)
    assert "a `return` inside a loop is not supported yet" in info.value.message
    assert "return np.where(found, result, <the other result>)" in info.value.hint
    assert returns_early_rewritten(X) == returns_early(X)
    np.testing.assert_allclose(ad.grad(returns_early_rewritten)(X),
                               numerical_grad(returns_early, [X], 0), atol=1e-8)
