"""Adjoints of stores into an array inside a loop (``h[:, t] = ...``): the right gradient, and
no copy of the whole cotangent array per iteration.

The adjoint of a store reads the stored entries' cotangent (``g = dh[:, t]``, a view) and zeroes
them; the reads of ``g`` used to come after the zeroing, so the emitter copied ``dh`` on every
iteration (``dh_1 = np.array(dh_1)``), O(T^2) work. :func:`adcompiler.passes.carry.sink_updates`
moves the zeroing after those reads. The cases cover a store per column, row and 3-D slice, the
same index stored twice or on several iterations, recurrences reading the neighbouring column,
an active initial array and a while loop; small shapes and fused (large) ones.
"""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.ir import Aval, Block, Graph, Literal, Node, Value
from adcompiler.ir.verify import verify
from adcompiler.passes.carry import sink_updates
from tests.helpers import assert_matches_numerical


def store_columns(w, x):
    B, T = x.shape
    h = np.zeros((B, T))
    for t in range(T):
        h[:, t] = x[:, t] * w[t]
    return np.sum(np.tanh(h))


def store_twice(w, x):
    B, T = x.shape
    h = np.zeros((B, T))
    for t in range(T):
        h[:, t] = x[:, t] * w[t]
        h[:, t] = np.sin(h[:, t]) * w[t]
    return np.sum(np.tanh(h))


def store_same_column(w, x):
    B, T = x.shape
    h = np.zeros((B, 3))
    for t in range(T):
        h[:, t % 3] = h[:, t % 3] * 0.5 + x[:, t] * w[t]
    return np.sum(np.tanh(h))


def recurrence(w, x):
    B, T = x.shape
    h = np.zeros((B, T + 1))
    for t in range(T):
        h[:, t + 1] = np.tanh(h[:, t] * w[t] + x[:, t])
    return np.sum(h * h)


def recurrence_back(w, x):
    B, T = x.shape
    h = np.ones((B, T))
    for t in range(1, T):
        h[:, t] = np.tanh(x[:, t] * w[t])
        h[:, t - 1] = h[:, t - 1] * h[:, t]
    return np.sum(h * h)


def recurrence_in_while(w, x):
    B, T = x.shape
    h = np.zeros((B, T + 1))
    t = 0
    while t < T:
        h[:, t + 1] = np.tanh(h[:, t] * w[t] + x[:, t])
        t = t + 1
    return np.sum(h * h)


def recurrence_by_rows(w, x):
    T, B = x.shape
    h = np.zeros((T + 1, B))
    for t in range(T):
        h[t + 1] = np.tanh(h[t] * w[t] + x[t])
    return np.sum(h * h)


def store_rows(w, x):
    T, B = x.shape
    h = np.zeros((T, B))
    for t in range(T):
        h[t] = x[t] * w[t]
    return np.sum(np.tanh(h))


def store_3d(w, x):
    B, C, T = x.shape
    h = np.zeros((B, C, T))
    for t in range(T):
        h[:, :, t] = x[:, :, t] * w[t]
    return np.sum(np.tanh(h))


def active_initial(w, x):
    B, T = x.shape
    h = x * 2.0
    for t in range(T):
        h[:, t] = h[:, t] * w[t]
    return np.sum(np.tanh(h) * x)


def store_in_while(w, x):
    B, T = x.shape
    h = np.zeros((B, T))
    t = 0
    while t < T:
        h[:, t] = x[:, t] * w[t]
        t = t + 1
    return np.sum(np.tanh(h))


def nested_loops(w, x):
    B, T = x.shape
    h = np.zeros((B, T))
    for r in range(2):
        for t in range(T):
            h[:, t] = h[:, t] * 0.5 + x[:, t] * w[t]
    return np.sum(np.tanh(h))


def store_in_branches(w, x):
    B, T = x.shape
    h = np.zeros((B, T))
    for t in range(T):
        if w[t] > 0:
            h[:, t] = x[:, t] * w[t]
        else:
            h[:, t] = np.sin(x[:, t]) * w[t]
    return np.sum(np.tanh(h))


def read_after_store(w, x):
    B, T = x.shape
    h = np.zeros((B, T))
    s = np.zeros(B)
    for t in range(T):
        h[:, t] = x[:, t] * w[t]
        s = s + h[:, t] * h[:, 0]
    return np.sum(np.tanh(h)) + np.sum(s * s)


def conv_columns(W, x):
    B, C, T = x.shape
    F, _, k = W.shape
    Wf = W.reshape(F, C * k)
    h = np.zeros((B, F, T - k + 1))
    for t in range(T - k + 1):
        h[:, :, t] = x[:, :, t:t + k].reshape(B, C * k) @ Wf.T
    return np.sum(np.tanh(h))


def _args(f, rng, big=False):
    """(w, x) for ``f``: x's loop axis is last (first for ``store_rows``), of length 5 (64 where
    ``big``: 4096 entries or more, so elementwise chains are fused)."""
    T, B = (64, 64) if big else (5, 3)
    shape = {store_rows: (T, B), recurrence_by_rows: (T, B), store_3d: (B, 2, T)}.get(f, (B, T))
    return [rng.standard_normal(T), rng.standard_normal(shape)]


CASES = [store_columns, store_twice, store_same_column, recurrence, recurrence_back,
         recurrence_in_while, recurrence_by_rows, store_rows, store_3d, active_initial,
         store_in_while, nested_loops, store_in_branches]


def _assert_no_copy(source):
    """No ``x = np.array(x)`` (an update on a copy of the whole array) anywhere: the forward
    loop's stores and the adjoint loop's zeroings run in place."""
    assert "np.array(" not in source, source


def _adjoint_loop(source) -> str:
    return source[source.index("# grad of: for"):]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_and_no_per_iteration_copy(f):
    args = _args(f, np.random.default_rng(0))
    g = ad.grad(f, wrt=("w", "x"))
    grads = g(*args)
    assert_matches_numerical(f, args, ("w", "x"), grads)
    _assert_no_copy(g.source)


def test_gradient_where_a_column_is_read_after_its_store():
    """``h[:, 0]`` read after ``h[:, t]`` is stored, in the same iteration: right gradient, and
    the adjoint loop updates ``dh`` in place (the forward loop still copies ``h``: the emitter
    takes a view of the next value, kept by the stack, for one of the param's)."""
    args = _args(read_after_store, np.random.default_rng(4))
    g = ad.grad(read_after_store, wrt=("w", "x"))
    assert_matches_numerical(read_after_store, args, ("w", "x"), g(*args))
    assert "np.array(" not in _adjoint_loop(g.source), g.source


def test_a_stacked_view_is_copied_only_where_its_array_is_updated():
    """The residual ``h[:, t]`` of a recurrence is copied (one row) before ``h`` is updated;
    a loop that stacks no view of an updated array copies nothing."""
    args = _args(recurrence, np.random.default_rng(5))
    g = ad.grad(recurrence, wrt="w")
    g(*args)
    assert g.source.count("np.copy(") == 1, g.source
    g = ad.grad(store_columns, wrt="w")
    g(*args)
    assert "np.copy(" not in g.source, g.source


@pytest.mark.parametrize("f", [store_columns, store_3d, recurrence, store_rows],
                         ids=lambda f: f.__name__)
def test_fused_cotangent_is_updated_in_place(f):
    """At 4096 entries the initial cotangent (``1 - t * t``) is a fused chain: an array the
    code made, so the loop zeroes its entries in place, with no copy before or in the loop."""
    args = _args(f, np.random.default_rng(1), big=True)
    g = ad.grad(f, wrt="w")
    assert_matches_numerical(f, args, ("w",), [g(*args)])
    _assert_no_copy(g.source)


def test_convolution_by_columns():
    rng = np.random.default_rng(2)
    args = [rng.standard_normal((3, 2, 3)), rng.standard_normal((4, 2, 9))]
    g = ad.grad(conv_columns, wrt=("W", "x"))
    assert_matches_numerical(conv_columns, args, ("W", "x"), g(*args))
    _assert_no_copy(g.source)


def test_stored_entries_zeroed_after_their_reads():
    """The zeroing comes after every read of the stored column, on the same array."""
    args = _args(store_columns, np.random.default_rng(3))
    g = ad.grad(store_columns, wrt="w")
    g(*args)
    lines = [line.strip() for line in g.source.splitlines()]
    zero = next(i for i, line in enumerate(lines) if line.endswith("] = 0.0"))
    read = next(i for i, line in enumerate(lines) if line.startswith("dt") and "dh_1[" in line)
    view = lines[read].split(" = ")[0]
    assert all(view not in line for line in lines[zero:]), g.source


# ---- the pass on a hand-made graph ------------------------------------------------------------
def _vec():
    return Value(Aval("array", "float64", (4,)))


def _node(prim, inputs, params=None, aval=None):
    return Node(prim, tuple(inputs), params or {}, (Value(aval) if aval else _vec(),))


def test_sink_keeps_dependencies():
    """``v = x[0:2]; u = (x[0:2] = 0); y = v * 2``: the update moves after ``y``; a node that
    reads the update stays after it."""
    x = _vec()
    part = Aval("array", "float64", (2,))
    index = {"index": (("s", 0, 2, None),)}
    view = _node("getitem", [x], index, part)
    zero = _node("setitem", [x, Literal(0.0)], index)
    double = _node("multiply", [view.out, Literal(2.0)], aval=part)
    after = _node("multiply", [zero.out, Literal(3.0)])
    graph = Graph("f", [x], [view, zero, double, after], [double.out, after.out])
    sink_updates(graph)
    assert graph.nodes == [view, double, zero, after]
    verify(graph)


def test_sink_ends_with_two_updates_of_one_array():
    """Two updates of the same array each read it: each moves at most once."""
    x, g = _vec(), _vec()
    index = {"index": (("s", 0, 2, None),)}
    zero = _node("setitem", [x, Literal(0.0)], index)
    add = _node("index_add", [x, Literal(1.0)], index)
    total = _node("add", [zero.out, add.out])
    graph = Graph("f", [x, g], [zero, add, total], [total.out])
    sink_updates(graph)
    assert graph.nodes[-1] is total and set(graph.nodes[:2]) == {zero, add}
    verify(graph)
