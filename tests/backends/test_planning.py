"""Fusion and memory planning on arrays large enough to be planned: fused nodes appear in .ir,
chains write into reused out= buffers, and results equal the plain (unplanned) code's; returned
gradients are never overwritten by later calls, and concurrent calls never share buffers.
"""

import re
import threading

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.pipeline import compile_gradient
from adcompiler.api.signature import classify

N = 200_000   # 1.6 MB per float64 array: well above the planner's 32 KiB threshold
RNG = np.random.default_rng(3)


def elementwise(x):
    return np.sum(np.tanh(x) * x + 3.0 * x * x - np.exp(-x))


def rosenbrock(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def broadcasting(x, w, b):
    h = np.tanh(x * w + b)          # (n, 4) * (4,) + (1, 4)
    return np.sum(h * h - np.sin(h) * w)


def reused_after_loop(x):
    t = np.exp(-x * x)              # planned, then read inside a loop
    s = 0.0
    for i in range(3):
        s = s + np.sum(t * (i + 1.0))
    return s + np.sum(np.tanh(x) * 2.0)


def planned_and_plain(f, *args, wrt=(0,)):
    names = list(f.__code__.co_varnames[:f.__code__.co_argcount])
    avals = {n: classify(a, n, n in [names[i] for i in wrt]) for n, a in zip(names, args)}
    wrt = tuple(names[i] for i in wrt)
    return (compile_gradient(f, avals, wrt, "grad"),
            compile_gradient(f, avals, wrt, "grad", plain=True))


CASES = [(elementwise, (RNG.standard_normal(N),), (0,)),
         (rosenbrock, (RNG.standard_normal(N),), (0,)),
         (broadcasting, (RNG.standard_normal((N // 4, 4)), RNG.standard_normal(4),
                         RNG.standard_normal((1, 4))), (0, 1, 2)),
         (reused_after_loop, (RNG.standard_normal(N),), (0,))]


@pytest.mark.parametrize("f, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_planned_code_computes_what_plain_code_computes(f, args, wrt):
    planned, plain = planned_and_plain(f, *args, wrt=wrt)
    assert "out=" in planned.source and "out=" not in plain.source
    got = planned.function(*args)
    want = plain.function(*args)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_fused_nodes_show_in_the_ir_and_chains_reuse_buffers():
    g = ad.grad(elementwise)
    g(RNG.standard_normal(N))
    assert "= fused " in str(g.ir) and "expr(" in str(g.ir)
    # one chain: each intermediate written over the last one's buffer
    assert "np.negative(x, out=_buf2)\n    np.exp(_buf2, out=_buf2)" in g.source
    assert "np.subtract(7, _buf1, out=_buf1)\n    np.multiply(x, _buf1, out=_buf1)" in g.source
    # the readable form of the chain is shown above it
    assert "# dx = t1 + x * (7 - t1 ** 2) + np.exp(-x)" in g.source


def test_returned_gradients_survive_later_calls():
    g = ad.grad(elementwise)
    x1, x2 = RNG.standard_normal(N), RNG.standard_normal(N)
    first = g(x1)
    kept = first.copy()
    g(x2)
    g(x2)
    np.testing.assert_array_equal(first, kept)


def test_concurrent_calls_do_not_share_buffers():
    g = ad.grad(rosenbrock)
    inputs = [RNG.standard_normal(N) for _ in range(4)]
    expected = [g(x).copy() for x in inputs]
    for got, want in zip(called_concurrently(g, [(x,) for x in inputs]), expected):
        np.testing.assert_array_equal(got, want)


def called_concurrently(g, inputs, calls=5):
    """The last result of ``calls`` calls ``g(*args)`` per ``args`` in ``inputs``, all the
    argument tuples called from threads of their own at once."""
    results = [None] * len(inputs)

    def work(i):
        for _ in range(calls):
            results[i] = g(*inputs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def logistic(w, X, y):
    return np.mean(np.log1p(np.exp(-(2.0 * y - 1.0) * (X @ w))))


def test_vectors_of_tens_of_kilobytes_are_planned():
    """10,000 float64s (80 KiB) are below glibc's mmap threshold, but freeing several at once
    trims the heap and page-faults them back on every call: they get buffers too."""
    w, X, y = RNG.standard_normal(20), RNG.standard_normal((10_000, 20)), RNG.random(10_000)
    planned, plain = planned_and_plain(logistic, w, X, y)
    assert planned.source.count("np.empty((10000,)") == 3 and "out=" not in plain.source
    assert re.search(r"dw = X\.T @ dt\d+\n", planned.source)   # a matrix-vector product stays one
    s = 2.0 * y - 1.0
    want = X.T @ (-s / (1.0 + np.exp(s * (X @ w)))) / len(y)
    np.testing.assert_allclose(planned.function(w, X, y), want, rtol=1e-12)
    np.testing.assert_allclose(planned.function(w, X, y), plain.function(w, X, y), rtol=1e-14)


def test_small_arrays_are_not_planned():
    g = ad.grad(elementwise)
    g(RNG.standard_normal(100))
    assert "out=" not in g.source and "fused" not in str(g.ir)


def middle_slice(x):
    return np.sum(x[2:5] ** 2) + np.sum(x[1:] * 0.5)


def inner_slice(x):
    return np.sum(x[2:5] ** 2)


def two_reads_of_one_slice(x):
    return np.sum(np.sin(x[:-1]) * x[:-1])


def test_slice_scatters_write_once():
    """The adjoint of ``x[a:b]`` fills an ``np.empty`` array (zeros only outside the slice),
    and two adjoints of one slice add before they scatter (passes/simplify.py)."""
    x = np.linspace(-1.0, 2.0, 7)
    g = ad.grad(middle_slice)
    expected = np.where((np.arange(7) >= 2) & (np.arange(7) < 5), 2 * x, 0.0)
    expected[1:] += 0.5
    np.testing.assert_allclose(g(x), expected, rtol=1e-15)
    assert "dx = np.empty((7,), dtype=np.float64)" in g.source
    assert "dx[1:] = dt2\n    dx[:1] = 0.0" in g.source and "dx[2:5] += dt4" in g.source
    k = ad.grad(inner_slice)
    np.testing.assert_allclose(k(x), np.where((np.arange(7) >= 2) & (np.arange(7) < 5),
                                              2 * x, 0.0), rtol=1e-15)
    assert "dx[2:5] = dt2\n    dx[:2] = 0.0\n    dx[5:] = 0.0" in k.source
    h = ad.grad(two_reads_of_one_slice)
    expected = np.append(np.cos(x[:-1]) * x[:-1] + np.sin(x[:-1]), 0.0)
    np.testing.assert_allclose(h(x), expected, rtol=1e-14)
    assert h.source.count("dx[:-1]") == 1 and "dx[6:] = 0.0" in h.source
    assert sum(n.prim in ("scatter_add", "index_add") for n in h.ir.nodes) == 1


def cross_entropy(logits, onehot):
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(onehot * logp, axis=1))


def test_a_reduction_seed_folds_into_a_scale():
    """mean(sum(...)) seeds its adjoint with a constant broadcast twice; the product with it
    is one scaling, not two broadcasts and a multiply, and (hoist_scales) it is applied once
    where the linear chain ends, ``dlogits = -0.25 * (...)``, not to onehot and negated twice."""
    logits = RNG.standard_normal((4, 3))
    onehot = np.eye(3)[[0, 2, 1, 1]]
    g = ad.grad(cross_entropy)
    softmax = np.exp(logits) / np.sum(np.exp(logits), axis=1, keepdims=True)
    np.testing.assert_allclose(g(logits, onehot), (softmax - onehot) / 4, rtol=1e-12,
                               atol=1e-15)
    # dshifted is dlogits: the max's cotangent is zero (adcompiler.templates.idioms.shift_invariance)
    assert g.source.count("0.25") == 1 and "dshifted = -0.25 * (" in g.source
    assert "broadcast_to(-0.25" not in g.source and "-dlogp" not in g.source


# ---- residual stacks of loops in pooled buffers ---------------------------------------------
def rnn(Wh, Wx, x, h0):
    h = h0
    for t in range(x.shape[0]):
        h = np.tanh(h @ Wh + x[t] @ Wx)
    return np.sum(h * h)


def rnn_inputs(seed, T=6, batch=40, hidden=128, d_in=8):   # one row: 40 KiB, a stack 240 KiB
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((hidden, hidden)) / 12, rng.standard_normal((d_in, hidden)) / 3,
            rng.standard_normal((T, batch, d_in)), rng.standard_normal((batch, hidden)) * 0.1)


def rnn_by_hand(Wh, Wx, x, h0):
    hs = [h0]
    for t in range(x.shape[0]):
        hs.append(np.tanh(hs[-1] @ Wh + x[t] @ Wx))
    dWh, dWx, dh = np.zeros_like(Wh), np.zeros_like(Wx), 2.0 * hs[-1]
    for t in reversed(range(x.shape[0])):
        da = dh * (1.0 - hs[t + 1] ** 2)
        dWh, dWx, dh = dWh + hs[t].T @ da, dWx + x[t].T @ da, da @ Wh.T
    return dWh, dWx


def test_loop_residual_stacks_live_in_pooled_buffers():
    """A stack the adjoint loop only reads row by row is a reused buffer (no 1-10 MB array
    page-faulted in on every call); gradients are right, survive later calls, and concurrent
    calls do not share stacks."""
    g = ad.grad(rnn, wrt=(0, 1))
    inputs = [rnn_inputs(seed) for seed in range(4)]
    first = g(*inputs[0])
    kept = [a.copy() for a in first]
    assert "hs = _buf" in g.source and "np.empty((6, 40, 128)" in g.source
    assert "hs = np.empty" not in g.source
    for got, want in zip(first, rnn_by_hand(*inputs[0])):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    expected = [rnn_by_hand(*a) for a in inputs]
    for got, want in zip(called_concurrently(g, inputs), expected):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    for a, b in zip(first, kept):
        np.testing.assert_array_equal(a, b)


def test_a_stack_with_a_row_outside_the_loops_is_not_pooled():
    """If a view of a stack outlived the loops (here: a row read at the top level and
    returned), the stack's buffer could be handed out again while the view is read."""
    from adcompiler.backends.inplace import Sharing
    from adcompiler.backends.planner import pooled_stacks
    from adcompiler.ir import Aval, Node, Value
    args = rnn_inputs(0)
    avals = {n: classify(a, n, n in ("Wh", "Wx")) for n, a in zip(("Wh", "Wx", "x", "h0"), args)}
    graph = compile_gradient(rnn, avals, ("Wh", "Wx"), "grad").graph
    loop = next(n for n in graph.nodes if n.prim == "loop" and n.params.get("stacked"))
    stack = loop.outputs[-1]
    assert stack in pooled_stacks(graph, Sharing(graph))
    row = Value(Aval("array", "float64", stack.aval.shape[1:]))
    graph.nodes.append(Node("getitem", (stack,), {"index": (("i", 0),)}, (row,)))
    graph.outputs = list(graph.outputs) + [row]
    assert stack not in pooled_stacks(graph, Sharing(graph))
