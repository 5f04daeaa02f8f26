"""Checkpointed reverse mode (``grad(f, checkpoint=...)``, transforms/checkpointing.py): the
gradient equals the unbounded one (and the unoptimised one) to 1e-12, on loops with several
carried values, ifs in the body and outer parameters, trip counts that are and are not multiples
of the segment, T = 1, budgets at least T, while loops; at the sizes where the planner's pooled
stacks (32 KiB), fusion (4,096 elements) and numexpr (2**18 elements) switch on; the stacks the
code allocates hold at most the budget, and the body runs forward as often as the schedule says
(counted by an instrumented run)."""

import math
import re

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends import planner
from adcompiler.backends.check_modes import unoptimised
from adcompiler.backends.numexpr_chains import MIN_ELEMENTS
from adcompiler.passes.fuse import MIN_SIZE
from adcompiler.transforms.checkpointing import Checkpoint


def rnn(W, h0, x):
    h = h0
    for t in range(x.shape[0]):
        h = np.tanh(W @ h + x[t])
    return np.sum(h * h)


def gated(W, a, h0, x):
    """Three carried values (an array, a float, an int), an if nested in an if, outer params."""
    h, s, n = h0, 0.0, 0
    for t in range(x.shape[0]):
        z = W @ h + x[t]
        if t % 3 == 0:
            if np.sum(z) > 0:
                z = z * a
            else:
                z = np.sin(z)
            n = n + 1
        h = np.tanh(z)
        s = s + a * np.sum(h) * n
    return s + np.sum(h)


def loop_in_if(W, h0, x, flag):
    h = h0
    if flag > 0:
        for t in range(x.shape[0]):
            h = np.tanh(W @ h + x[t])
    else:
        h = h * 2.0
    return np.sum(h * h)


def nested_loops(W, h0, x):
    """The inner loop is part of the outer one's body: recomputed with it."""
    h = h0
    for t in range(x.shape[0]):
        for j in range(2):
            h = np.tanh(W @ h + x[t] * j)
    return np.sum(h * h)


def elementwise(a, h0, x):
    h = h0
    for t in range(x.shape[0]):
        h = np.tanh(a * h + x[t]) * 0.5 + h * 0.25
    return np.sum(h * h)


def elementwise_tail(a, h0, x):
    """A loop, then a chain of elementwise operations numexpr computes at 2**18 elements."""
    h = h0
    for t in range(x.shape[0]):
        h = np.tanh(a * h + x[t]) * 0.5 + h * 0.25
    return np.sum(np.tanh(h) * h + 3.0 * h * h - np.exp(-h))


def decay(x, a):
    n = 0
    while np.sum(x * x) < 100.0 and n < 50:
        x = np.sin(x) * a + 0.1 * x
        n = n + 1
    return np.sum(x)


def _leaves(x):
    return [y for item in x for y in _leaves(item)] if isinstance(x, tuple) else [x]


def _close(got, want):
    got, want = _leaves(got), _leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert np.linalg.norm(g - w) <= 1e-12 * max(np.linalg.norm(w), 1.0), (g, w)


def _agrees(f, args, checkpoint, wrt=(0,), mode=ad.grad):
    """The checkpointed gradient equals the unbounded one and the unoptimised checkpointed one;
    the transform (its ``.source`` is the code)."""
    g = mode(f, wrt=wrt, checkpoint=checkpoint)
    got = g(*args)
    _close(got, mode(f, wrt=wrt)(*args))
    with unoptimised():
        _close(got, mode(f, wrt=wrt, checkpoint=checkpoint)(*args))
    return g


def _rnn_args(T, n=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, n)) * 0.5, rng.standard_normal(n), rng.standard_normal((T, n))


@pytest.mark.parametrize("T, snapshots", [(1, 1), (7, 3), (12, 3), (12, 4), (10, 3), (5, 5),
                                          (5, 9), (2, 1), (30, 1), (100, "sqrt")])
def test_for_loops_equal_the_unbounded_gradient(T, snapshots):
    _agrees(rnn, _rnn_args(T), snapshots, wrt=(0, 1, 2))


@pytest.mark.parametrize("T, snapshots", [(13, 4), (12, 4), (1, 2), (40, "sqrt")])
def test_carried_values_ifs_and_outer_parameters(T, snapshots):
    W, h0, x = _rnn_args(T, 4, seed=T)
    _agrees(gated, (W, 0.7, h0, x), snapshots, wrt=(0, 1, 2))
    _agrees(gated, (W, 0.7, h0, x), snapshots, wrt=(0, 1), mode=ad.value_and_grad)


@pytest.mark.parametrize("flag", [1.0, -1.0])
def test_a_loop_inside_an_if(flag):
    W, h0, x = _rnn_args(11)
    g = _agrees(loop_in_if, (W, h0, x, flag), 3, wrt=(0, 1, 2))
    assert "# checkpointed: 2 snapshots of h, one per 4 steps" in g.source   # 11 = 2 * 4 + 3


def test_nested_loops_checkpoint_the_outer_one():
    W, h0, x = _rnn_args(11)
    g = _agrees(nested_loops, (W, h0, x), 3, wrt=(0, 1, 2))
    assert g.source.count("# checkpointed:") == 1, g.source


def test_vjp_and_ad_checkpoint_object():
    W, h0, x = _rnn_args(9)
    _agrees(rnn, (W, h0, x), Checkpoint(snapshots=2), wrt=(0, 2))

    def vec(W, h0, x):
        h = h0
        for t in range(x.shape[0]):
            h = np.tanh(W @ h + x[t])
        return h
    ct = np.array([1.0, -2.0, 0.5])
    got = ad.vjp(vec, wrt=(0, 1), checkpoint=3)(W, h0, x, cotangent=ct)
    _close(got, ad.vjp(vec, wrt=(0, 1))(W, h0, x, cotangent=ct))


@pytest.mark.parametrize("every", [1, 3, 4, 100])
def test_while_loops_snapshot_every_k_iterations(every):
    g = _agrees(decay, (np.array([1.0, 0.5, -0.3]), 1.7), Checkpoint(every=every), wrt=(0, 1))
    assert "xs.append(x)" in g.source and f"< {every}" in g.source, g.source


def test_while_loops_without_every_take_at_most_the_snapshots():
    """A number of snapshots without every=: the epochs of tests/transforms/
    test_while_checkpoints.py; "sqrt", which needs the trip count, leaves while loops as they are."""
    g = _agrees(decay, (np.array([1.0, 0.5, -0.3]), 1.7), 4, wrt=(0, 1))
    assert "checkpointed: at most 4 snapshots" in g.source, g.source
    g = _agrees(decay, (np.array([1.0, 0.5, -0.3]), 1.7), "sqrt", wrt=(0, 1))
    assert "checkpointed" not in g.source


# ---- sizes where size-dependent paths switch on ---------------------------------------------
def test_pooled_stacks_at_the_planner_threshold():
    """Segments of 64 steps of a 64-wide state: 64 x 64 float64 = 32 KiB stacks, pooled."""
    assert 64 * 64 * 8 >= planner.MIN_BYTES
    W, h0, x = _rnn_args(64 * 64, 64)
    g = _agrees(rnn, (W * 0.3, h0, x), 64, wrt=(0, 1, 2))
    assert re.search(r"^\s*\w+ = _buf\d+$", g.source, re.M), g.source


def test_fused_chains_above_the_fusion_size():
    rng = np.random.default_rng(3)
    n = MIN_SIZE
    g = _agrees(elementwise, (rng.standard_normal(n), rng.standard_normal(n),
                              rng.standard_normal((9, n))), 3, wrt=(0, 1, 2))
    assert "fused" in str(g.ir), g.ir   # fusion (passes/fuse.py MIN_SIZE) is on


def test_numexpr_chains_above_their_size():
    pytest.importorskip("numexpr")
    rng = np.random.default_rng(4)
    n = MIN_ELEMENTS
    g = _agrees(elementwise_tail, (rng.standard_normal(n), rng.standard_normal(n),
                                   rng.standard_normal((5, n))), 2, wrt=(0, 1))
    assert "ne.evaluate(" in g.source or "_threaded(" in g.source, g.source


# ---- the budget and the schedule ------------------------------------------------------------
def _stack_rows(source) -> list:
    """The leading dimension of every stack the code allocates (np.empty / pooled buffers)."""
    return [int(m) for m in re.findall(r"np\.empty\(\((\d+), ", source)]


@pytest.mark.parametrize("T, snapshots", [(100, 10), (1000, "sqrt"), (37, 5), (10000, "sqrt")])
def test_stored_states_within_the_budget(T, snapshots):
    W, h0, x = _rnn_args(T)
    g = ad.grad(rnn, wrt=(0,), checkpoint=snapshots)
    g(W, h0, x)
    keep = snapshots if isinstance(snapshots, int) else math.isqrt(T - 1) + 1
    length = -(-T // keep)
    rows = _stack_rows(g.source) + [int(m) for m in re.findall(r"_buf\d+ = np\.empty\(\((\d+), ",
                                                                 g.source)]
    assert rows and max(rows) <= max(keep, length), g.source
    snapshot_rows = T // length
    assert snapshot_rows <= keep
    # one snapshot stack (h) of T // L rows; the segment's stacks of L rows each
    assert f"np.empty(({snapshot_rows}, 3)" in g.source
    if snapshots == "sqrt":
        assert snapshot_rows + length <= 2 * math.sqrt(T) + 1


class _Counting:
    """NumPy, counting the calls of ``np.tanh``."""

    def __init__(self):
        self.calls = 0

    def __getattr__(self, name):
        attr = getattr(np, name)
        if name != "tanh":
            return attr

        def counted(*args, **kwargs):
            self.calls += 1
            return attr(*args, **kwargs)
        return counted


@pytest.mark.parametrize("T, snapshots", [(100, 10), (7, 3), (12, 5), (50, "sqrt"), (5, 9)])
@pytest.mark.parametrize("mode", ["grad", "value_and_grad"])
def test_forward_steps_follow_the_schedule(T, snapshots, mode):
    """The two-level schedule runs each full segment forward twice (the forward sweep taking
    its snapshot, the reverse sweep again) and the rest (T % L steps) once, stacking its
    residuals: T + L * (T // L) tanh calls; T where the budget holds every iteration."""
    W, h0, x = _rnn_args(T)
    g = getattr(ad, mode)(rnn, wrt=(0,), checkpoint=snapshots)
    g(W, h0, x)
    function = g.specialize(W, h0, x).function
    counting, saved = _Counting(), function.__globals__["np"]
    function.__globals__["np"] = counting
    try:
        function(W, h0, x)
    finally:
        function.__globals__["np"] = saved
    length = Checkpoint(None if snapshots == "sqrt" else snapshots).segment(T)
    want = T if length is None else T + length * (T // length)
    assert counting.calls == want, g.source


def test_the_code_says_what_is_checkpointed():
    W, h0, x = _rnn_args(20)
    g = ad.grad(rnn, checkpoint=4)
    g(W, h0, x)
    assert "# checkpointed: 4 snapshots of h, one per 5 steps, run again in the reverse sweep" \
        in g.source, g.source
    assert "# a checkpointed segment run again, its residuals kept for it only" in g.source


@pytest.mark.parametrize("bad", [0, -1, 2.5, "half", True])
def test_bad_budgets_are_refused(bad):
    with pytest.raises(TypeError, match="checkpoint="):
        ad.grad(rnn, checkpoint=bad)


# ---- ad.checkpoint(fn): a call's residuals not kept --------------------------------------------
def cell(W, a, h, x):
    return np.tanh(W @ h * a + x) if W.ndim == 2 else np.tanh(W * h * a + x)


checkpointed_cell = ad.checkpoint(cell)


def rnn_of_cells(W, a, h0, x):
    h = h0
    for t in range(x.shape[0]):
        h = checkpointed_cell(W, a, h, x[t])
    return np.sum(h * h)


def rnn_inlined(W, a, h0, x):
    h = h0
    for t in range(x.shape[0]):
        h = cell(W, a, h, x[t])
    return np.sum(h * h)


@pytest.mark.parametrize("n", [3, MIN_SIZE])
def test_a_checkpointed_call_has_the_gradient_of_the_call(n):
    """At MIN_SIZE the compiled vjp the adjoint calls is planned and fused itself."""
    rng = np.random.default_rng(n)
    W = rng.standard_normal((n, n)) / math.sqrt(n) if n < 10 else rng.standard_normal(n)
    args = (W, 0.8, rng.standard_normal(n), rng.standard_normal((4, n)))
    g = ad.grad(rnn_of_cells, wrt=(0, 1, 2, 3))
    got = g(*args)
    assert isinstance(got[1], float)
    _close(got, ad.grad(rnn_inlined, wrt=(0, 1, 2, 3))(*args))
    with unoptimised():
        _close(got, ad.grad(rnn_of_cells, wrt=(0, 1, 2, 3))(*args))
    # the loop keeps the call's arguments (h), the adjoint packs them: no forward run for them
    assert "cell_args(W, a, h, x[t_1])" in g.source and "cell_fwd(" not in g.source, g.source
    assert rnn_of_cells(*args) == rnn_inlined(*args)


def test_a_checkpointed_call_on_the_tape():
    from adcompiler.tape import dynamic_grad
    rng = np.random.default_rng(5)
    args = (rng.standard_normal((3, 3)), 0.8, rng.standard_normal(3), rng.standard_normal((5, 3)))
    _close(dynamic_grad(rnn_of_cells, wrt=(0, 1, 2, 3))(*args),
           ad.grad(rnn_inlined, wrt=(0, 1, 2, 3))(*args))


def test_checkpoint_of_a_function_is_one_object_and_refuses_custom_rules():
    assert ad.checkpoint(cell) is checkpointed_cell
    with pytest.raises(TypeError, match="checkpoint"):
        ad.checkpoint(checkpointed_cell)


# ---- more levels: each segment checkpointed again ----------------------------------------------
@pytest.mark.parametrize("T, policy", [(100, Checkpoint(levels=3)), (30, Checkpoint(3, levels=3)),
                                       (1000, Checkpoint(levels=4)), (7, Checkpoint(levels=3)),
                                       (2, Checkpoint(levels=5)), (64, Checkpoint(levels=3))])
def test_more_levels_equal_the_unbounded_gradient(T, policy):
    W, h0, x = _rnn_args(T)
    _agrees(rnn, (W, h0, x), policy, wrt=(0, 1, 2))


def test_more_levels_with_carried_values_and_ifs():
    W, h0, x = _rnn_args(30, 4, seed=30)
    _agrees(gated, (W, 0.7, h0, x), Checkpoint(3, levels=3), wrt=(0, 1, 2))


def test_three_levels_hold_three_cube_roots_and_run_three_times():
    """T = 1000 = 10 ** 3 with levels=3: 10 snapshots of 100-step segments, 10 of 10-step
    sub-segments, 10 iterations' residuals: 30 states (2-level: 64); each step runs forward
    three times (the forward sweep, the replay of its segment, of its sub-segment)."""
    T = 1000
    W, h0, x = _rnn_args(T)
    policy = Checkpoint(levels=3)
    assert policy.lengths(T) == [100, 10]
    g = ad.grad(rnn, wrt=(0,), checkpoint=policy)
    g(W, h0, x)
    rows = _stack_rows(g.source)
    assert rows and max(rows) == 10, g.source
    function = g.specialize(W, h0, x).function
    counting, saved = _Counting(), function.__globals__["np"]
    function.__globals__["np"] = counting
    try:
        function(W, h0, x)
    finally:
        function.__globals__["np"] = saved
    assert counting.calls == 3 * T


def test_levels_below_two_are_refused():
    with pytest.raises(TypeError, match="levels"):
        Checkpoint(levels=1)


def test_checkpointed_dask_code():
    """backend='dask' writes the same segments in dask.array code (lists stacked by da.stack)."""
    pytest.importorskip("dask.array")
    W, h0, x = _rnn_args(11)
    got = ad.grad(rnn, wrt=(0, 2), checkpoint=3, backend="dask", compute=True)(W, h0, x)
    _close(tuple(np.asarray(g) for g in got), ad.grad(rnn, wrt=(0, 2))(W, h0, x))
