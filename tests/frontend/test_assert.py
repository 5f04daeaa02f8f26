"""``assert`` on shapes, dtypes and static arguments is checked while compiling each signature
(a failure is a located error that is also an AssertionError); one on traced values (array
contents, float arguments) is checked by the generated code, raising AssertionError."""

import numpy as np
import pytest

import adcompiler as ad


def layer(x, W):
    assert x.ndim == 1, "x must be a vector"
    assert W.shape[1] == x.shape[0], f"W is {W.shape}, x is {x.shape}"
    return np.sum(np.tanh(W @ x))


def power_sum(x, n):
    assert n > 0
    return np.sum(x ** n)


def positive_only(x):
    assert np.all(x > 0.0)
    return np.sum(np.log(x))


def test_passing_assertions_compile_to_nothing():
    x, W = np.array([0.1, 0.2, 0.3]), np.full((2, 3), 0.5)
    g = ad.grad(layer)
    np.testing.assert_allclose(g(x, W), W.T @ (1.0 - np.tanh(W @ x) ** 2))
    assert "assert" not in g.source


def test_failing_assertion_is_located_and_an_assertion_error():
    with pytest.raises(AssertionError) as info:
        ad.grad(layer)(np.ones(3), np.ones((2, 4)))
    err = info.value
    assert isinstance(err, ad.AssertionFailed) and isinstance(err, ad.CompileError)
    assert err.lineno == layer.__code__.co_firstlineno + 2
    assert 'f"W is {W.shape}, x is {x.shape}"' in str(err)


def test_assertion_on_a_static_argument_is_checked_per_value():
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(ad.grad(power_sum)(x, 2), 2.0 * x)
    with pytest.raises(AssertionError, match="AssertionError for these inputs"):
        ad.grad(power_sum)(x, 0)


def test_assertion_on_traced_values_is_checked_while_running():
    g = ad.grad(positive_only)
    np.testing.assert_allclose(g(np.full(3, 2.0)), np.full(3, 0.5))
    assert "if not np.all(x > 0.0):\n        raise AssertionError()" in g.source
    with pytest.raises(AssertionError) as info:
        g(np.array([1.0, -1.0, 2.0]))
    assert type(info.value) is AssertionError
