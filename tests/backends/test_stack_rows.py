"""Stacked loop values computed straight into their stack's row (``out=hs[t]``), and the arrays
that then share memory with a stack: never updated in place while the stack is read, never
returned from a pooled (reused) stack."""

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import assert_matches_numerical

RNG = np.random.default_rng(3)
W = RNG.standard_normal((6, 6)) * 0.4
XS = RNG.standard_normal((5, 4, 6))
H0 = RNG.standard_normal((4, 6))
B = RNG.standard_normal(6) * 0.1


def rnn(W, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W + xs[t])
    return np.sum(h * h)


def carried_then_updated(W, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W + xs[t])   # kept for the adjoint, then changed
        h += 0.5
        h[0] = 0.25 * h[1]
    return np.sum(h * h)


def elementwise_recurrence(W, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.sin(h * xs[t] + W[0])
    return np.sum(h)


def float32_recurrence(W, xs, h0):
    h = h0.astype(np.float32)
    for t in range(xs.shape[0]):
        h = np.tanh(h * 0.9 + xs[t].astype(np.float32))
    return np.sum(h).astype(np.float64)


def test_the_rnn_writes_each_state_once_into_its_stack():
    g = ad.grad(rnn, wrt=(0, 1, 2))
    assert_matches_numerical(rnn, (W, XS, H0), (0, 1, 2), g(W, XS, H0))
    src = g.source
    assert "out=hs[t])" in src and "hs[t] = " not in src
    assert "out=dt" in src   # the adjoint loop's kept cotangent too


@pytest.mark.parametrize("f", [carried_then_updated, elementwise_recurrence])
def test_values_sharing_a_stack_row_give_the_right_gradient(f):
    g = ad.grad(f, wrt=(0, 1, 2))
    assert_matches_numerical(f, (W, XS, H0), (0, 1, 2), g(W, XS, H0))


def test_an_update_of_a_value_in_a_stack_row_works_on_a_copy():
    g = ad.grad(carried_then_updated, wrt=0)
    g(W, XS, H0)
    assert "h += 0.5" not in g.source   # the stack keeps the tanh, which the adjoint reads


@pytest.mark.parametrize("f", [rnn, elementwise_recurrence, carried_then_updated])
def test_results_survive_the_next_call(f):
    """Gradients and values from one call keep their values through the next call, which
    reuses the pooled stacks."""
    g = ad.value_and_grad(f, wrt=(0, 1, 2))
    value, grads = g(W, XS, H0)
    kept = (value, *[np.copy(x) for x in grads])
    g(W * 0.5, XS[::-1].copy(), -H0)
    assert value == kept[0]
    for got, want in zip(grads, kept[1:]):
        np.testing.assert_array_equal(got, want)


def final_state(W, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W + xs[t])
    return h


def test_a_returned_state_does_not_share_a_reused_stack():
    """vjp of a function returning the loop's last state: the state it returns is a row of
    the stack when computed into it, so that stack must be fresh each call."""
    ct = np.ones_like(H0)
    g = ad.vjp(final_state, wrt=(0, 2))
    first = g(W, XS, H0, cotangent=ct)
    kept = [np.copy(x) for x in first]
    g(W * 0.5, XS[::-1].copy(), -H0, cotangent=ct * 2.0)
    for got, want in zip(first, kept):
        np.testing.assert_array_equal(got, want)
    value, tangent = ad.jvp(final_state, wrt=0)(W, XS, H0, tangents=np.ones_like(W))
    np.testing.assert_allclose(value, final_state(W, XS, H0), rtol=1e-13)


def test_float32_rows_stay_float32():
    g = ad.grad(float32_recurrence, wrt=2)
    got = g(W, XS, H0)
    assert got.dtype == np.float64   # its input's dtype
    assert "out=hs[t])" in g.source
    hs = [H0]   # the same recurrence and its adjoint by hand, in float64
    for t in range(XS.shape[0]):
        hs.append(np.tanh(hs[-1] * 0.9 + XS[t]))
    want = np.ones_like(H0)
    for h in reversed(hs[1:]):
        want = want * (1 - h * h) * 0.9
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_fused_chain_writes_its_last_operation_into_the_row():
    """Large arrays: the kept pre-activation ``h * xs[t] + W[0]`` is a fused chain, whose
    add writes the row; checked against the adjoint written by hand."""
    rng = np.random.default_rng(5)
    w, xs, h0 = (rng.standard_normal((2, 50000)), rng.standard_normal((3, 50000)),
                 rng.standard_normal(50000))
    g = ad.grad(elementwise_recurrence, wrt=2)
    got = g(w, xs, h0)
    assert "np.add(h * t1, t2, out=saved[t])" in g.source
    pres, h = [], h0
    for t in range(3):
        pres.append(h * xs[t] + w[0])
        h = np.sin(pres[-1])
    want = np.ones_like(h0)
    for t in reversed(range(3)):
        want = want * np.cos(pres[t]) * xs[t]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
