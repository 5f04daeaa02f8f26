"""Returned products written into the arrays the function returned before, where nothing holds
them (adcompiler.backends.recycled). Checked: the values against the unoptimised gradient call
after call, below the planner's MIN_BYTES (no kept arrays) and above; a result the caller
holds (by name, through a view, a memoryview, the result tuple) never changes and never shares
memory with a later result; a dropped result's array is the next call's; threads calling at
once; float32; the kept array of another shape is not taken (a signature's own pool)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends import planner
from adcompiler.backends.check_modes import poisoned, unoptimised

RNG = np.random.default_rng(37)


def mlp(W1, W2, x, y):
    h = np.tanh(x @ W1)
    return np.sum((h @ W2 - y) ** 2)


def _args(n, d, m, dtype=np.float64):
    return tuple(a.astype(dtype) for a in (RNG.standard_normal((d, m)) * 0.1,
                                           RNG.standard_normal((m, d)) * 0.1,
                                           RNG.standard_normal((n, d)), RNG.standard_normal((n, d))))


def _want(args):
    with unoptimised():
        return ad.grad(mlp, wrt=("W1", "W2"))(*args)


@pytest.mark.parametrize("sizes", [(8, 16, 32), (64, 128, 256)], ids=["below", "above"])
def test_values_call_after_call(sizes):
    args = _args(*sizes)
    g = ad.grad(mlp, wrt=("W1", "W2"))
    want = _want(args)
    for _ in range(4):    # each call's results dropped: the next writes into their arrays
        for a, b in zip(g(*args), want):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    kept = "_recycled(" in g.source
    assert kept == (sizes[1] * sizes[2] * 8 >= planner.MIN_BYTES)


def test_a_dropped_result_array_is_the_next_calls():
    args = _args(64, 128, 256)
    g = ad.grad(mlp, wrt=("W1", "W2"))
    first = g(*args)[0]
    where = first.ctypes.data
    del first
    again = g(*args)[0]
    assert again.ctypes.data == where
    np.testing.assert_allclose(again, _want(args)[0], rtol=1e-12)


@pytest.mark.parametrize("hold", ["name", "view", "memoryview", "tuple"])
def test_a_held_result_never_changes(hold):
    args = _args(64, 128, 256)
    g = ad.grad(mlp, wrt=("W1", "W2"))
    result = g(*args)
    snapshot = [r.copy() for r in result]
    held = {"name": lambda: result[0], "view": lambda: result[0][1:, ::2],
            "memoryview": lambda: memoryview(result[0]), "tuple": lambda: result}[hold]()
    first = np.asarray(held[0] if hold == "tuple" else held)
    base = first.copy()
    del result
    other = (args[0] * 2.0, *args[1:])
    later = g(*other)              # different inputs: a reused array would show it
    np.testing.assert_array_equal(np.asarray(held[0] if hold == "tuple" else held), base)
    assert not any(np.shares_memory(first, r) for r in later)
    np.testing.assert_allclose(later[0], _want(other)[0], rtol=1e-12)
    if hold == "tuple":
        np.testing.assert_array_equal(held[1], snapshot[1])


def test_threads_calling_at_once():
    args = _args(64, 128, 256)
    g = ad.grad(mlp, wrt=("W1", "W2"))
    inputs = [(args[0] * (1 + k), *args[1:]) for k in range(4)]
    wants = [_want(a) for a in inputs]
    errors = []

    def work(k):
        for _ in range(20):
            for a, b in zip(g(*inputs[k]), wants[k]):
                if not np.allclose(a, b, rtol=1e-12, atol=1e-12):
                    errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_float32_and_poisoned_code():
    args = _args(64, 128, 256, np.float32)
    g = ad.grad(mlp, wrt=("W1", "W2"))
    for _ in range(3):
        got = g(*args)
        assert all(r.dtype == np.float32 for r in got)
    want = _want(args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    with poisoned():
        gp = ad.grad(mlp, wrt=("W1", "W2"))
        gp(*args)
        assert "_recycled(" not in gp.source
