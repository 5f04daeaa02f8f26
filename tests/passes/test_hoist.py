"""Hoisting of per-row products out of loops (passes/hoist.py): a loop's ``x[t] @ W`` (and
``+ b`` after it) becomes one product before the loop, read by rows in it, with the same
gradients; rows the pattern does not cover stay in the loop, and the hoisted arrays live in
pooled buffers (no page faults per call)."""

import resource

import numpy as np

import adcompiler as ad
from adcompiler.backends.inplace import Sharing
from adcompiler.backends.planner import row_arrays
from adcompiler.ir import Aval, Node, Value
from adcompiler.pipeline import compile_gradient
from adcompiler.api.signature import classify
from tests.helpers import check_grads
from tests.passes.test_batch import rnn, rnn_inputs

RNG = np.random.default_rng(17)


def compiled(f, *args, wrt=(0,)):
    g = ad.grad(f, wrt=wrt)
    g(*args)
    return g.source


def before_the_loop(source, header="for t in range("):
    """The generated code before the first ``for`` loop, and that loop's body."""
    head, _, rest = source.partition(header)
    return head, rest.split("\n    #")[0]


def rnn_reference(Wh, Wx, b, x, h0):
    """The hand-written gradient of ``rnn`` (benchmarks/handwritten.py)."""
    T, batch, d_in = x.shape
    inputs = (x.reshape(T * batch, d_in) @ Wx + b).reshape(T, batch, -1)
    hs = [h0]
    for t in range(T):
        hs.append(np.tanh(hs[-1] @ Wh + inputs[t]))
    da, dh = np.empty_like(inputs), 2.0 * hs[-1]
    for t in reversed(range(T)):
        da[t] = dh * (1.0 - hs[t + 1] ** 2)
        dh = da[t] @ Wh.T
    flat = da.reshape(T * batch, -1)
    return (np.reshape(hs[:T], (T * batch, -1)).T @ flat, x.reshape(T * batch, d_in).T @ flat,
            flat.sum(axis=0))


def test_the_rnn_input_product_and_bias_are_hoisted():
    args = rnn_inputs()
    grads = check_grads(rnn, *args, wrt=(0, 1, 2))
    for got, want in zip(grads, rnn_reference(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    head, body = before_the_loop(compiled(rnn, *args, wrt=(0, 1, 2)))
    assert "x_Wx_flat = np.reshape(x, (15, 2)) @ Wx" in head
    assert "x_Wx_b = x_Wx + b" in head
    assert "@ Wx" not in body and "+ b" not in body and "x_Wx_b[t]" in body


def no_bias(Wh, Wx, x, h0):
    h = h0
    for t in range(x.shape[0]):
        h = np.tanh(h @ Wh + x[t] @ Wx)
    return np.sum(h * h)


def scaled_then_shifted(Wx, s, c, x):
    acc = 0.0
    for t in range(x.shape[0]):
        u = c - (x[t] @ Wx) * s          # c - row, row * s: both rows of hoisted arrays
        acc = acc + np.sum(np.sin(u))
    return acc


def test_a_product_without_a_bias_and_other_elementwise_operands():
    Wh, Wx, _, x, h0 = rnn_inputs()
    check_grads(no_bias, Wh, Wx, x, h0, wrt=(0, 1, 2, 3))
    head, body = before_the_loop(compiled(no_bias, Wh, Wx, x, h0, wrt=(0, 1)))
    assert "x_Wx = x_Wx_flat.reshape((5, 3, 4))" in head and "@ Wx" not in body
    args = (RNG.standard_normal((2, 4)), RNG.standard_normal(4), RNG.standard_normal((3, 1)),
            RNG.standard_normal((5, 3, 2)))
    check_grads(scaled_then_shifted, *args, wrt=(0, 1, 2, 3))
    src = compiled(scaled_then_shifted, *args, wrt=(0, 1, 2))
    assert "x_Wx_s = x_Wx * s\n    us = c - x_Wx_s\n" in src
    # the adjoint reads rows of the hoisted arrays; the forward loop has nothing left to do
    assert "\n    for t in range" not in src and "u_1 = us[t_1]" in src


def weight_made_in_the_loop(W, x):
    h = x[0]
    for t in range(x.shape[0]):
        Wt = W * (t + 1.0)
        h = np.tanh(x[t] @ Wt + h)
    return np.sum(h * h)


def shifted_row(W, x):
    h = x[0]
    for t in range(x.shape[0] - 1):
        h = np.tanh(x[t + 1] @ W + h)
    return np.sum(h * h)


def stepped(W, x):
    h = x[0]
    for t in range(0, x.shape[0], 2):
        h = np.tanh(x[t] @ W + h)
    return np.sum(h * h)


def backwards(W, x, b):
    h = x[0]
    for t in reversed(range(x.shape[0])):
        h = np.tanh(x[t] @ W + h + b)
    return np.sum(h * h)


def fewer_iterations_than_rows(W, x):
    h = x[0]
    for t in range(2):
        h = np.tanh(x[t] @ W + h)
    return np.sum(h * h)


def bias_of_another_shape(W, x, c):
    acc = 0.0
    for t in range(x.shape[0]):
        acc = acc + np.sum(np.tanh(x[t] @ W + c))    # (2, 3) + (3, 2, 3): not a row
    return acc


def test_rows_outside_the_pattern_stay_in_the_loop_and_are_right():
    W, x = RNG.standard_normal((3, 3)) / 2, RNG.standard_normal((4, 2, 3))
    b = RNG.standard_normal(3)
    for f in (weight_made_in_the_loop, shifted_row, stepped, fewer_iterations_than_rows):
        check_grads(f, W, x, wrt=(0, 1))
        header = "for k in range(" if f is stepped else "for t in range("
        head, body = before_the_loop(compiled(f, W, x, wrt=(0, 1)), header)
        assert "@" not in head and " @ W" in body, f.__name__
    check_grads(backwards, W, x, b, wrt=(0, 1, 2))
    src = compiled(backwards, W, x, b, wrt=(0, 1, 2))
    assert "x_W_flat = np.reshape(x, (8, 3)) @ W" not in src    # x[3 - k]: not the counter
    c = RNG.standard_normal((3, 2, 3))
    check_grads(bias_of_another_shape, W, x, c, wrt=(0, 1, 2))
    head, body = before_the_loop(compiled(bias_of_another_shape, W, x, c, wrt=(0, 2)))
    assert "x_W = x_W_flat.reshape((4, 2, 3))" in head and "x_W_c" not in head
    assert "x_W[t] + c" in body


def nested(W, x):
    h = x[0, 0]
    for i in range(x.shape[0]):
        xi = x[i]
        for j in range(xi.shape[0]):
            h = np.tanh(xi[j] @ W + h)
    return np.sum(h * h)


def rows_of_vectors(W, x, b):
    h = x[0] @ W
    for t in range(x.shape[0]):
        h = np.tanh(h + x[t] @ W + b)                 # rows of a 2-D x: one 2-D product
    return np.sum(h * h)


def test_a_nested_loop_and_rows_of_a_matrix():
    W, x = RNG.standard_normal((3, 3)) / 2, RNG.standard_normal((2, 4, 2, 3))
    check_grads(nested, W, x, wrt=(0, 1))
    src = compiled(nested, W, x, wrt=(0, 1))
    outer = src.split("for i in range(2):")[1].split("hss[i] = hs")[0].split("for j in range(4)")
    assert "xi_W_flat = np.reshape(xi, (8, 3)) @ W" in outer[0]
    assert "np.tanh(xi_W[j] + h, out=hs[j])" in outer[1] and "@" not in outer[1]
    W, x, b = RNG.standard_normal((3, 4)) / 2, RNG.standard_normal((5, 3)), RNG.standard_normal(4)
    check_grads(rows_of_vectors, W, x, b, wrt=(0, 1, 2))
    head, body = before_the_loop(compiled(rows_of_vectors, W, x, b, wrt=(0, 1, 2)))
    assert "x_W = x @ W" in head and "x_W_b = x_W + b" in head and "@" not in body


def sines(W, x):
    acc = 0.0
    for t in range(x.shape[0]):
        acc = acc + np.sum(np.sin(x[t] @ W))
    return acc


def test_a_stack_of_hoisted_rows_is_the_hoisted_array():
    """``sin(x[t] @ W)`` needs ``x[t] @ W`` again in the adjoint: it reads the hoisted array's
    rows instead of a stack of copies."""
    W, x = RNG.standard_normal((3, 3)), RNG.standard_normal((4, 2, 3))
    check_grads(sines, W, x, wrt=(0, 1))
    src = compiled(sines, W, x, wrt=(0, 1))
    assert "np.cos(x_W[t_1])" in src and src.count("np.empty") == 1   # dt2s only


def scalar_weight(a, W, x, b):
    h = x[0]
    for t in range(x.shape[0]):
        h = np.tanh(a * (h @ W) + x[t] @ W + b)
    return np.sum(h * h)


def test_higher_derivatives_through_a_hoisted_loop():
    """Plain code (read again) is not hoisted; the second derivatives, compiled from it, are
    hoisted and agree with differences of the (hoisted) first derivatives."""
    a, W = 0.7, RNG.standard_normal((3, 3)) / 2
    x, b = RNG.standard_normal((4, 2, 3)), RNG.standard_normal(3)
    avals = {n: classify(v, n, n == "W") for n, v in zip("a W x b".split(), (a, W, x, b))}
    plain = compile_gradient(scalar_weight, avals, ("W",), "grad", plain=True).source
    assert "np.reshape(x" not in plain and "x[t] @ W" in plain
    h = ad.hessian(scalar_weight, wrt=1)(a, W, x, b)
    grad = ad.grad(scalar_weight, wrt=1)
    assert "x_W_b = x_W + b" in compiled(scalar_weight, a, W, x, b, wrt=(1,))
    eps = 1e-6
    for i, j in [(0, 0), (1, 2), (2, 1)]:
        Wp, Wm = W.copy(), W.copy()
        Wp[i, j] += eps
        Wm[i, j] -= eps
        np.testing.assert_allclose(h[:, :, i, j], (grad(a, Wp, x, b) - grad(a, Wm, x, b))
                                   / (2 * eps), rtol=1e-5, atol=1e-7)
    g2 = ad.grad(ad.grad(scalar_weight))
    second = g2(a, W, x, b)
    assert "x_W_b = x_W + b" in g2.source
    eps = 1e-5
    want = (ad.grad(scalar_weight)(a + eps, W, x, b)
            - ad.grad(scalar_weight)(a - eps, W, x, b)) / (2 * eps)
    np.testing.assert_allclose(second, want, rtol=1e-6)


def big_rnn_inputs():
    return (RNG.standard_normal((128, 128)) / 12, RNG.standard_normal((64, 128)) / 8,
            RNG.standard_normal(128), RNG.standard_normal((50, 32, 64)),
            RNG.standard_normal((32, 128)) * 0.1)


def test_hoisted_arrays_live_in_pooled_buffers():
    """At the benchmark's size (1.6 MB a hoisted array) the product and the sum write into
    buffers reused across calls: no page faults per call, the same gradients as by hand, and
    results kept from an earlier call are not overwritten."""
    args = big_rnn_inputs()
    g = ad.grad(rnn, wrt=(0, 1, 2))
    first = [a.copy() for a in g(*args)]
    assert "x_Wx_flat = np.matmul(np.reshape(x, (1600, 64)), Wx, out=_buf" in g.source
    assert "x_Wx_b = np.add(x_Wx, b, out=_buf" in g.source
    for got, want in zip(first, rnn_reference(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    kept = g(*args)
    for _ in range(5):
        g(*args)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        g(*args)
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20 < 50
    other = [a + 0.1 for a in args]
    g(*other)
    for a, b in zip(kept, first):
        np.testing.assert_array_equal(a, b)


def carried_row(W, x):
    h = x[0] @ W
    for t in range(x.shape[0]):
        h = x[t] @ W                      # the row itself is carried out of the loop
    return np.sum(h * h)


def test_a_row_that_escapes_its_loop_keeps_its_array_out_of_the_pool():
    W, x = RNG.standard_normal((64, 128)) / 8, RNG.standard_normal((50, 32, 64))
    check_grads(carried_row, RNG.standard_normal((3, 4)), RNG.standard_normal((5, 2, 3)),
                wrt=(0, 1))
    avals = {n: classify(v, n, n == "W") for n, v in zip("Wx", (W, x))}
    graph = compile_gradient(carried_row, avals, ("W",), "grad").graph
    hoisted = next(n.outputs[0] for n in graph.nodes if n.outputs[0].name == "hs_flat")
    assert hoisted not in row_arrays(graph, Sharing(graph))
    g = ad.grad(carried_row)
    np.testing.assert_allclose(g(W, x), 2.0 * x[-1].T @ (x[-1] @ W), rtol=1e-12)
    assert "hs_flat = np.reshape(x, (1600, 64)) @ W" in g.source
    assert "hs_flat = np.matmul" not in g.source


def test_a_row_array_with_a_view_returned_is_not_pooled():
    args = big_rnn_inputs()
    names = ("Wh", "Wx", "b", "x", "h0")
    avals = {n: classify(a, n, n in ("Wh", "Wx", "b")) for n, a in zip(names, args)}
    graph = compile_gradient(rnn, avals, ("Wh", "Wx", "b"), "grad").graph
    rows = {v.name: v for v in row_arrays(graph, Sharing(graph))}
    assert set(rows) == {"x_Wx_flat", "x_Wx_b"}
    stack = rows["x_Wx_b"]
    row = Value(Aval("array", "float64", stack.aval.shape[1:]))
    graph.nodes.append(Node("getitem", (stack,), {"index": (("i", 0),)}, (row,)))
    graph.outputs = list(graph.outputs) + [row]
    assert stack not in row_arrays(graph, Sharing(graph))


def two_biases(Wh, Wx, b, c, x, h0):
    h = h0
    for t in range(x.shape[0]):
        h = np.tanh(h @ Wh + x[t] @ Wx + b + c)    # ((t1 + t2) + b) + c
    return np.sum(h * h)


def test_a_chain_of_invariant_terms_is_hoisted_term_by_term():
    Wh, Wx, b, x, h0 = rnn_inputs()
    c = RNG.standard_normal((3, 1))
    check_grads(two_biases, Wh, Wx, b, c, x, h0, wrt=(0, 1, 2, 3, 4, 5))
    head, body = before_the_loop(compiled(two_biases, Wh, Wx, b, c, x, h0, wrt=(0, 1, 2, 3)))
    # the second sum is written in place on the first's fresh array
    assert "x_Wx_b = x_Wx + b\n    x_Wx_b += c\n" in head
    assert "h = np.tanh(h @ Wh + x_Wx_b[t], out=hs[t])" in body
