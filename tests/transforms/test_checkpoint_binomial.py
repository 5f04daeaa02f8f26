"""The binomial (Revolve) schedule, ``Checkpoint(snapshots=s, schedule="binomial")``
(backends/binomial.py, binomial_emit.py): the gradient equals the unbounded one to 1e-12 (RNN,
RK4 ODE, at the fusion, pooled-stack and numexpr sizes); the store never holds more than ``s``
snapshots; the forward steps run are the optimum of a brute-force DP over every schedule
(forward sweep, then one step reversed at a time, at most ``s`` states kept), counted on an
instrumented run; with segments of ``L`` steps, fewer than the three-level schedule holding as
many states."""

import heapq
from functools import lru_cache
from math import comb

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends import binomial
from adcompiler.backends.numexpr_chains import MIN_ELEMENTS
from adcompiler.backends.planner import MIN_BYTES
from adcompiler.passes.fuse import MIN_SIZE
from adcompiler.transforms.checkpointing import Checkpoint
from benchmarks import workloads

from .test_checkpoint import _Counting, _agrees, _rnn_args, elementwise, elementwise_tail, rnn


@lru_cache(None)
def reverse_cost(t, c):
    """The fewest forward steps reversing ``t`` steps from a snapshot takes, ``c`` slots held
    (the snapshot's own included), one step's residuals at a time: every split tried."""
    if t == 1:
        return 0
    if c == 1:
        return t * (t - 1) // 2   # from the snapshot to each step again
    return min(m + reverse_cost(t - m, c - 1) + reverse_cost(m, c) for m in range(1, t))


@lru_cache(None)
def after_forward(t, c):
    """The same after a forward sweep that may snapshot any state on its way (free)."""
    if t == 1:
        return 0
    if c == 1:
        return reverse_cost(t, 1)
    return min(reverse_cost(m, c) + after_forward(t - m, c - 1) for m in range(1, t))


def closed_form(t, c):
    """Griewank's count for reverse_cost: r t - C(c + r, r - 1), r the least with
    C(c + r, c) >= t."""
    r = 0
    while comb(c + r, c) < t:
        r += 1
    return r * t - comb(c + r, r - 1) if r else 0


def greedy_after_forward(t, c):
    """after_forward for large t: the forward sweep's parts, reversed with c, c - 1, ..., 1
    slots, filled one step at a time where the step costs least (each part's cost is convex)."""
    sizes, heap = [0] * c, [(0, i) for i in range(c)]   # (cost of one more step, part)
    for _ in range(t):
        _, i = heapq.heappop(heap)
        sizes[i] += 1
        slots = c - i
        more = closed_form(sizes[i] + 1, slots) - closed_form(sizes[i], slots)
        heapq.heappush(heap, (more, i))
    return sum(closed_form(m, c - i) for i, m in enumerate(sizes) if m)


def policy(s, segment=None):
    return Checkpoint(snapshots=s, schedule="binomial", segment_steps=segment)


def _run_counted(g, args):
    """(np.tanh calls, the most snapshots the store held) of one instrumented call."""
    function = g.specialize(*args).function
    stores = []

    class Recorded(function.__globals__["_Binomial"]):
        def __init__(self, *a):
            super().__init__(*a)
            stores.append(self)

    counting, saved = _Counting(), dict(function.__globals__)
    function.__globals__.update(np=counting, _Binomial=Recorded)
    try:
        function(*args)
    finally:
        function.__globals__.update(np=saved["np"], _Binomial=saved["_Binomial"])
    return counting.calls, max(s.most for s in stores)


@pytest.mark.parametrize("T, s", [(2, 1), (10, 2), (20, 3), (37, 4), (50, 5), (60, 3), (45, 7),
                                  (30, 1)])
def test_forward_steps_are_the_optimum(T, s):
    """tanh runs T times in the forward sweep, T in the steps reversed (with residuals), and
    the DP's optimum in between; the store holds at most s snapshots."""
    args = _rnn_args(T)
    g = _agrees(rnn, args, policy(s), wrt=(0, 1, 2))
    calls, most = _run_counted(g, args)
    assert calls == 2 * T + after_forward(T, s), g.source
    assert most <= s
    assert f"at most {s} snapshots of h over {T} steps" in g.source


def test_the_schedule_alone_against_the_dp():
    """The store's own count (its ``steps``) on a counter, for every T < 70, s <= 6."""
    for s in range(1, 7):
        for T in range(1, 70):
            store = binomial._Binomial(T, s, lambda j, x: (x + 1,), 1)
            for k in range(T):
                store.put(k, (k,))
            assert [store.view(0)[k] for k in reversed(range(T))] == list(reversed(range(T)))
            assert store.steps == after_forward(T, s) and store.most <= s, (T, s)


def test_the_closed_forms_are_the_dp():
    assert all(closed_form(t, c) == reverse_cost(t, c) for t in range(1, 60) for c in range(1, 7))
    assert all(greedy_after_forward(t, c) == after_forward(t, c)
               for t in range(1, 60) for c in range(1, 7))


def test_revolve_split_is_the_dp_optimum():
    """Revolve's split, recursively, costs what every split tried does (t < 60, c <= 6)."""
    @lru_cache(None)
    def split_cost(t, c):
        if t == 1 or c == 1:
            return reverse_cost(t, c)
        m = binomial._split(t, c)
        return m + split_cost(t - m, c - 1) + split_cost(m, c)
    assert all(split_cost(t, c) == reverse_cost(t, c) for t in range(1, 60) for c in range(1, 7))


def test_a_long_rnn_and_its_bounded_store():
    T, s = 3000, 12
    args = _rnn_args(T)
    g = _agrees(rnn, args, policy(s), wrt=(0, 1, 2))
    calls, most = _run_counted(g, args)
    assert most <= s
    assert calls == 2 * T + greedy_after_forward(T, s) == 15625   # each step run 5.2 times
    assert "np.empty((3000" not in g.source


def test_the_rk4_ode():
    args = workloads.make_ode(batch=4, d=3, hidden=8, steps=300)
    g = _agrees(workloads.ode_rk4, args, policy(6), wrt=(0, 1, 2, 3))
    assert "_Binomial(300, 6," in g.source, g.source


def test_states_at_the_fusion_and_pooled_sizes():
    """One 4,096-float state: fused chains, and each reversed step's 32 KiB stack pooled."""
    assert MIN_SIZE * 8 >= MIN_BYTES
    rng = np.random.default_rng(3)
    n = MIN_SIZE
    g = _agrees(elementwise, (rng.standard_normal(n), rng.standard_normal(n),
                              rng.standard_normal((40, n))), policy(4), wrt=(0, 1, 2))
    assert "fused" in str(g.ir) and "_Binomial(40, 4," in g.source


def test_numexpr_chains_after_the_loop():
    pytest.importorskip("numexpr")
    rng = np.random.default_rng(4)
    n = MIN_ELEMENTS
    g = _agrees(elementwise_tail, (rng.standard_normal(n), rng.standard_normal(n),
                                   rng.standard_normal((6, n))), policy(2), wrt=(0, 1))
    assert "ne.evaluate(" in g.source or "_threaded(" in g.source, g.source


@pytest.mark.parametrize("T, s, L", [(1000, 20, 10), (103, 4, 5)])
def test_segments_of_steps(T, s, L):
    """Binomial over segments of L steps, each replayed with its residuals: T forward, the
    full segments' steps again with their residuals, and L times the optimum over T // L
    segments (the rest, T % L steps, stacked as it runs once); at T = 1000 it holds 20 + 10
    states for 2,800 steps, the three-level schedule 30 for 3,000."""
    args = _rnn_args(T)
    g = _agrees(rnn, args, policy(s, L), wrt=(0, 1, 2))
    calls, most = _run_counted(g, args)
    full = T // L
    assert calls == T + L * full + L * after_forward(full, s) and most <= s, g.source
    if T == 1000:
        assert calls == 2800 < 3 * T


def test_bad_schedules_are_refused():
    with pytest.raises(TypeError, match="schedule"):
        Checkpoint(schedule="revolve")
    with pytest.raises(TypeError, match="binomial"):
        Checkpoint(levels=3, schedule="binomial")
    with pytest.raises(TypeError, match="segment_steps"):
        Checkpoint(segment_steps=4)


def test_the_code_runs_with_numpy_alone():
    """The store's source is in the generated module: exec'd with only NumPy, it runs."""
    args = _rnn_args(40)
    g = ad.grad(rnn, wrt=(0, 2), checkpoint=policy(3))
    want = g(*args)
    assert "class _Binomial" in g.source and "adcompiler" not in g.source
    namespace = {"np": np}
    exec(g.source, namespace)
    got = namespace["grad_rnn"](*args)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)


def test_two_loops_in_a_row_each_their_store():
    def two(W, h0, x):
        h = h0
        for t in range(x.shape[0]):
            h = np.tanh(W @ h + x[t])
        g = h
        for t in range(x.shape[0]):
            g = np.sin(W @ g) + x[t] * 0.5
        return np.sum(h * g)
    args = _rnn_args(30)
    g = _agrees(two, args, policy(4), wrt=(0, 1, 2))
    assert g.source.count("_Binomial(30, 4,") == 2, g.source


@pytest.mark.parametrize("T, s", [(40, 3), (13, 12), (25, 1)])
def test_carried_values_ifs_and_outer_parameters(T, s):
    """Three carried values (an array, a float, an int) and nested ifs in the def's body."""
    from .test_checkpoint import gated
    W, h0, x = _rnn_args(T, 4, seed=T)
    _agrees(gated, (W, 0.7, h0, x), policy(s), wrt=(0, 1, 2))
    _agrees(gated, (W, 0.7, h0, x), policy(s), wrt=(0, 1), mode=ad.value_and_grad)


def test_other_backends_take_the_two_level_schedule():
    """backend="dask" writes no store: the two-level schedule with as many snapshots."""
    pytest.importorskip("dask.array")
    W, h0, x = _rnn_args(11)
    g = ad.grad(rnn, wrt=(0, 2), checkpoint=policy(3), backend="dask", compute=True)
    got = g(W, h0, x)
    assert g.checkpoint == Checkpoint(snapshots=3)
    for a, b in zip(got, ad.grad(rnn, wrt=(0, 2))(W, h0, x)):
        assert np.linalg.norm(np.asarray(a) - b) <= 1e-12 * np.linalg.norm(b)
