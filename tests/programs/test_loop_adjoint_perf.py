"""Loop adjoints that cost what the loop costs: no O(n) work per iteration.

Reading ``x[i]`` under an ``if`` adds ``dx[i] += g`` in place on the carried gradient (it was
``dx_1 = np.zeros(n); dx_1[i] = g; dx_1 += dx``); a scalar store ``out[i] += v`` updates its
cotangent in place (it copied the whole array, zeroed one entry and added the same value back);
a carried cotangent that starts as a read-only broadcast is copied once before the loop, not
every iteration; values recomputable from the adjoint loop's counter (``i = k + 1``, ``x[i]``,
a zero of a static shape) are not stacked. The checks are on values and on the generated
source, never on timings."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.pipeline import compile_gradient
from adcompiler.api.signature import classify
from tests.helpers import assert_matches_numerical


def running_max(x):
    best = x[0]
    for i in range(1, x.shape[0]):
        if x[i] > best:
            best = x[i]
    return best * best


def conv1d(x, w):
    n = x.shape[0] - w.shape[0] + 1
    out = np.zeros(n)
    for i in range(n):
        for k in range(w.shape[0]):
            out[i] += w[k] * x[i + k]
    return np.sum(np.tanh(out))


def scale_store(x, w):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[i] * w
        out[i] = out[i] * out[i] + w
    return np.sum(out)


def scale_store_squared(x, w):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[i] * w
        out[i] = out[i] * out[i] + w
    return np.sum(out ** 2)


def prefix(x):
    out = np.zeros(x.shape[0])
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i]
        out[i] = acc * x[i]
    return np.sum(out ** 2)


def clipped_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            s = s + x[i] * x[i]
        else:
            s = s - x[i]
    return s


def two_reads(x):
    y = np.zeros(x.shape[0] - 1)
    for i in range(x.shape[0] - 1):
        if x[i] > x[i + 1]:
            y[i] = x[i] - x[i + 1]
    return np.sum(y * y)


def guarded_next(x):
    s = 0.0
    for i in range(x.shape[0]):
        if i + 1 < x.shape[0]:
            s = s + x[i] * x[i + 1]
    return s


def branch_then_read(x):
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            y[i] = x[i] * 2.0
        y[i] = y[i] + x[i]
    return np.sum(y * y)


X = np.array([0.3, 1.2, 0.7, 2.0, 1.9, 2.5, 0.1, 0.9])
W = np.array([0.2, -0.5, 0.3])

CASES = [(running_max, (X,), (0,)), (running_max, (np.sort(X),), (0,)),
         (conv1d, (X, W), (0, 1)), (scale_store, (X, 0.7), (0, 1)),
         (scale_store_squared, (X, 0.7), (0, 1)), (prefix, (X,), (0,)),
         (clipped_sum, (X,), (0,)), (two_reads, (X,), (0,)), (guarded_next, (X,), (0,)),
         (branch_then_read, (X - 1.0,), (0,))]


@pytest.mark.parametrize("f, args, wrt", CASES, ids=lambda v: getattr(v, "__name__", None))
def test_loop_gradients_are_right(f, args, wrt):
    grads = ad.grad(f, wrt=wrt)(*args)
    grads = grads if isinstance(grads, tuple) else (grads,)
    assert_matches_numerical(f, args, wrt, grads, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f, args, wrt", CASES, ids=lambda v: getattr(v, "__name__", None))
def test_no_array_is_copied_or_made_per_iteration(f, args, wrt):
    g = ad.grad(f, wrt=wrt)
    g(*args)
    for body in _loop_bodies(g.source):
        assert "np.array(" not in body and "np.zeros" not in body, g.source
        assert "np.copy(" not in body and "np.empty(" not in body, g.source


def _loop_bodies(source) -> list:
    """The text of each ``for`` loop's body (the lines indented under it)."""
    lines, bodies = source.splitlines(), []
    for n, line in enumerate(lines):
        if re.match(r"^ *for .*:$", line):
            indent = len(line) - len(line.lstrip())
            body = []
            for inner in lines[n + 1:]:
                if inner.strip() and len(inner) - len(inner.lstrip()) <= indent:
                    break
                body.append(inner)
            bodies.append("\n".join(body))
    assert bodies
    return bodies


def test_running_max_adds_in_place_and_stacks_only_the_branch_taken():
    g = ad.grad(running_max)
    g(X)
    src = g.source
    assert "dx[i] += dbest_1" in src and "i = k_1 + 1" in src   # the counter taken again
    assert "is_" not in src and "bests" not in src              # neither i nor best stacked
    assert src.count("np.empty(") == 1                          # the predicate's stack only
    assert "dx[0] += dbest_1" in src and "np.array(dx)" not in src  # the result's own array
    assert "np.float64(0.0)" in src and "np.zeros(())" not in src   # a scalar zero, made once


def test_conv1d_adjoint_reads_as_written_by_hand():
    g = ad.grad(conv1d, wrt=(0, 1))
    g(X, W)
    src = g.source
    assert "saved" not in src and "np.empty(" not in src        # x[i + k], i + k: taken again
    assert re.search(r"dx\[t\d\] \+= dt\d", src) and re.search(r"dw\[k_1\] \+= dt\d", src)
    assert "= 0.0" not in src                                  # no zeroing of dout[i]


def test_a_store_after_a_store_keeps_one_and_reads_back_the_value():
    g = ad.value_and_grad(scale_store_squared, wrt=(0, 1))
    value, (dx, dw) = g(X, 0.7)
    assert np.isclose(value, scale_store_squared(X, 0.7))
    src = g.source
    assert "np.array(" not in src
    assert src.count("saved[i] = ") == 1                        # one stack per value


def test_a_broadcast_seed_updated_by_entries_is_copied_once():
    g = ad.grad(scale_store, wrt=(0, 1))
    g(X, 0.7)
    assert "dout_1 = np.copy(dout)" in g.source and "np.array(" not in g.source


def test_reads_inside_a_branch_are_taken_again_not_lifted():
    for f in (clipped_sum, two_reads):
        g = ad.grad(f)
        g(X)
        assert "t_taken" not in g.source and "ts[" not in g.source, g.source


def test_a_guarded_read_is_not_taken_again_outside_its_guard():
    """``x[i + 1]`` under ``if i + 1 < n`` would raise if computed again unguarded; it is
    taken again only as the same read at the loop's top level, else kept."""
    g = ad.grad(guarded_next)
    got = g(X)
    want = np.zeros_like(X)
    want[:-1] += X[1:]
    want[1:] += X[:-1]
    np.testing.assert_allclose(got, want)


def test_float32_loops_stay_float32():
    x = X.astype(np.float32)
    for f in (running_max, clipped_sum, prefix):
        g = ad.grad(f)
        got = g(x)
        assert got.dtype == np.float32, g.source
        assert "float64" not in g.source, g.source


def running_max_of(x):
    best = x[0]
    for i in range(1, x.shape[0]):
        if x[i] > best:
            best = x[i]
    return best


def test_second_order_through_the_running_max():
    h = ad.hessian(running_max)(np.sort(X))
    want = np.zeros((X.size, X.size))
    want[-1, -1] = 2.0
    np.testing.assert_allclose(h, want)
    assert ad.grad(running_max_of)(X)[int(np.argmax(X))] == 1.0


BIG = np.sin(np.arange(5000) * 0.37)  # 40 KB: large enough for planned buffers


@pytest.mark.parametrize("f, args, wrt", [
    (running_max, (BIG,), (0,)), (conv1d, (BIG, W), (0, 1)), (scale_store, (BIG, 0.7), (0, 1)),
    (prefix, (BIG,), (0,)), (clipped_sum, (BIG,), (0,)), (two_reads, (BIG,), (0,)),
    (branch_then_read, (BIG,), (0,))], ids=lambda v: getattr(v, "__name__", None))
def test_large_arrays_are_not_copied_per_iteration_either(f, args, wrt):
    """A cotangent the loop updates entry by entry never lives in a planned buffer, which
    the emitter does not update in place."""
    g = ad.grad(f, wrt=wrt)
    grads = g(*args)
    for body in _loop_bodies(g.source):
        assert "np.array(" not in body and "np.copy(" not in body, g.source
    names = list(inspect.signature(f).parameters)
    avals = {n: classify(a, n, i in wrt) for i, (n, a) in enumerate(zip(names, args))}
    plain = compile_gradient(f, avals, tuple(names[i] for i in wrt), "grad", plain=True)
    want = plain.function(*args)  # plain code: no update in place, no planned buffer
    grads = grads if isinstance(grads, tuple) else (grads,)
    want = want if isinstance(want, tuple) else (want,)
    for got, ref in zip(grads, want):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
