"""Traces of products and products with the diagonal matrix a trace's adjoint builds
(passes/traces.py): ``np.trace(A @ B)`` is ``np.sum(A * B.T)`` and ``diag(d) @ M`` is
``d[:, None] * M``, so no n^3 product is left; the values and gradients are the plain code's and
finite differences'."""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends.check_modes import unoptimised
from tests.helpers import numerical_grad

RNG = np.random.default_rng(7)


def trace_of_product(A, B):
    return np.trace(A @ B) + np.sum(np.tanh(A))


def scaled_traces(A, B, s):
    return s * np.trace(A @ B) - 0.5 * np.trace(B @ A) ** 2


def _code(source) -> str:
    return "\n".join(line.split("#")[0] for line in source.splitlines())


@pytest.mark.parametrize("shapes", [((40, 40), (40, 40)), ((30, 7), (7, 30))])
def test_a_trace_of_a_product_is_a_sum_of_products(shapes):
    A, B = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
    g = ad.value_and_grad(trace_of_product, wrt=(0, 1))
    value, grads = g(A, B)
    assert " @ " not in _code(g.source)
    assert "(A * B.T).sum()" in _code(g.source)
    with unoptimised():
        want_value, want = ad.value_and_grad(trace_of_product, wrt=(0, 1))(A, B)
    assert value == pytest.approx(want_value, rel=1e-12)
    for got, ref in zip(grads, want):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grads[1], numerical_grad(trace_of_product, [A, B], 1),
                               rtol=1e-6, atol=1e-8)


def test_scaled_traces_and_a_traced_scale():
    A, B = RNG.standard_normal((12, 5)), RNG.standard_normal((5, 12))
    g = ad.grad(scaled_traces, wrt=(0, 1, 2))
    grads = g(A, B, 1.7)
    assert " @ " not in _code(g.source)
    with unoptimised():
        want = ad.grad(scaled_traces, wrt=(0, 1, 2))(A, B, 1.7)
    for got, ref in zip(grads, want):
        np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(grads[0], numerical_grad(scaled_traces, [A, B, 1.7], 0),
                               rtol=1e-6, atol=1e-7)
