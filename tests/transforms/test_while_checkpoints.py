"""While loops checkpointed in at most ``s`` snapshots whatever the trip count
(``checkpoint=s`` without ``every=``, transforms/while_checkpoints.py): the gradient equals the
unbounded one (and the unoptimised one) to 1e-12 on loops with data-dependent trip counts (a
Newton iteration to a tolerance, an RNN carry with a while on a counter) from 1 to thousands of
iterations and past the epochs' reach, with carries above the planner's pooled-buffer size; a
traced run holds at most ``s`` snapshots at once; the body runs forward ``T + 2 min(T,
covered(s))`` times (counted); the code runs with NumPy alone."""

import sys

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends import planner
from adcompiler.backends.check_modes import unoptimised
from adcompiler.transforms.while_checkpoints import covered, forward_steps, split


def newton_sqrt(a, y0):
    """sqrt(a) by Newton's iteration until the residual is below a tolerance."""
    y = y0
    while np.max(np.abs(y * y - a)) > 1e-10:
        y = 0.5 * (y + a / y)
    return np.sum(y)


def damped(a, y0):
    """A slow fixed-point iteration y <- y + 0.002 (a - y^3) to a tolerance: thousands of
    iterations, data-dependent."""
    y = y0
    while np.max(np.abs(a - y * y * y)) > 1e-6:
        y = y + 0.002 * (a - y * y * y)
    return np.sum(y * y)


def rnn_while(W, h0, x):
    h = h0
    t = 0
    while t < x.shape[0]:
        h = np.tanh(W @ h + x[t])
        t = t + 1
    return np.sum(h * h)


def wide_while(a, h0, x, T):
    h = h0
    t = 0
    while t < T:
        h = np.tanh(a * h + x[t % 4])
        t = t + 1
    return np.sum(h * h)


def _leaves(x):
    return [y for item in x for y in _leaves(item)] if isinstance(x, tuple) else [x]


def _close(got, want):
    got, want = _leaves(got), _leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert np.linalg.norm(g - w) <= 1e-12 * max(np.linalg.norm(w), 1.0), (g, w)


def _agrees(f, args, snapshots, wrt):
    g = ad.grad(f, wrt=wrt, checkpoint=snapshots)
    got = g(*args)
    _close(got, ad.grad(f, wrt=wrt)(*args))
    with unoptimised():
        _close(got, ad.grad(f, wrt=wrt, checkpoint=snapshots)(*args))
    assert f"at most {snapshots} snapshots" in g.source, g.source
    return g, got


def _rnn_args(T, n=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, n)) * 0.5, rng.standard_normal(n), rng.standard_normal((T, n))


@pytest.mark.parametrize("T, snapshots", [(1, 4), (2, 2), (5, 3), (6, 4), (7, 4), (40, 6),
                                          (1000, 10), (3000, 20), (3000, 4), (100, 64)])
def test_a_while_on_a_counter_equals_the_unbounded_gradient(T, snapshots):
    """T past the epochs' reach (covered(4) = 6, covered(6) = 21, covered(10) = 155): the rest
    loop keeps its residuals, as the unbounded loop does."""
    _agrees(rnn_while, _rnn_args(T), snapshots, wrt=(0, 1, 2))


@pytest.mark.parametrize("a", [2.0, 1e6])
def test_newton_to_a_tolerance(a):
    args = (np.array([a, 3.0, 0.25]), np.array([1.0, 1.0, 1.0]))
    _, (da, dy0) = _agrees(newton_sqrt, args, 4, wrt=(0, 1))
    assert np.allclose(da, 0.5 / np.sqrt(args[0]), rtol=1e-8)


def test_a_slow_iteration_of_thousands_of_steps():
    args = (np.array([2.0, 0.5]), np.array([1.0, 1.0]))
    trips = _trips(damped, args)
    assert 1000 <= trips <= 10000, trips
    _agrees(damped, args, 12, wrt=(0,))


def _trips(f, args):
    """How many iterations the while loop of ``f`` runs (counting the body's first line)."""
    code, count = f.__code__, [0]
    line = code.co_firstlineno + 4   # ``y = y + ...`` / the body's line
    def trace(frame, event, arg):
        if frame.f_code is code and event == "line" and frame.f_lineno == line:
            count[0] += 1
        return trace
    sys.settrace(trace)
    try:
        f(*args)
    finally:
        sys.settrace(None)
    return count[0]


def test_carries_above_the_planner_threshold():
    n = planner.MIN_BYTES // 8 * 2   # 64 KiB carries
    rng = np.random.default_rng(2)
    args = (0.9, rng.standard_normal(n), rng.standard_normal((4, n)), 300)
    _agrees(wide_while, args, 8, wrt=(0, 1, 2))


# ---- what is held and what runs ---------------------------------------------------------------
def _snapshot_lists(source):
    """For each loop that takes snapshots (the epoch loop and the segments loop), the names of
    the lists it appends to once per iteration."""
    loops, stack = [], []
    for text in source.splitlines():
        indent = len(text) - len(text.lstrip())
        while stack and indent <= stack[-1][0]:
            stack.pop()
        if text.lstrip().startswith("while "):
            takes = " epoch < " in text or " segments" in text
            stack.append((indent, [] if takes else None))
            if takes:
                loops.append(stack[-1][1])
        elif ".append(" in text and stack and stack[-1][1] is not None \
                and indent == stack[-1][0] + 4:
            stack[-1][1].append(text.strip().split(".append(")[0])
    return loops


def _held(g, args):
    """The most snapshots a run of g's code holds at once, traced line by line."""
    function = g.specialize(*args).function
    lists = [names for names in _snapshot_lists(g.source) if names]
    assert len(lists) >= 2, g.source
    most = [0]
    def trace(frame, event, arg):
        if frame.f_code is function.__code__ and event == "line":
            local = frame.f_locals
            held = sum(max((len(local[n]) for n in names if isinstance(local.get(n), list)),
                           default=0) for names in lists)
            most[0] = max(most[0], held)
        return trace
    sys.settrace(trace)
    try:
        function(*args)
    finally:
        sys.settrace(None)
    return most[0]


@pytest.mark.parametrize("T, snapshots", [(7, 4), (200, 6), (1500, 10), (2000, 40)])
def test_at_most_the_snapshots_are_held(T, snapshots):
    args = _rnn_args(T)
    g = ad.grad(rnn_while, wrt=(0,), checkpoint=snapshots)
    g(*args)
    held = _held(g, args)
    assert 2 <= held <= snapshots, (held, g.source)
    epochs, per_epoch = split(snapshots)
    assert f"epoch < {epochs}" in g.source and f"segments < {per_epoch}" in g.source


class _Counting:
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


@pytest.mark.parametrize("T, snapshots", [(1, 4), (7, 4), (100, 6), (1000, 10), (2500, 32)])
def test_forward_steps_within_three_T(T, snapshots):
    args = _rnn_args(T)
    g = ad.grad(rnn_while, wrt=(0,), checkpoint=snapshots)
    g(*args)
    function = g.specialize(*args).function
    counting, saved = _Counting(), function.__globals__["np"]
    function.__globals__["np"] = counting
    try:
        function(*args)
    finally:
        function.__globals__["np"] = saved
    assert counting.calls == forward_steps(T, snapshots) <= 3 * T, g.source
    assert forward_steps(T, snapshots) == T + 2 * min(T, covered(snapshots))


def test_the_code_runs_with_numpy_alone():
    args = _rnn_args(50)
    g = ad.grad(rnn_while, wrt=(0, 2), checkpoint=6)
    want = g(*args)
    namespace = {"np": np}
    exec(g.source, namespace)
    _close(namespace["grad_rnn_while"](*args), want)


def test_one_snapshot_and_every_keep_their_meaning():
    args = _rnn_args(20)
    g = ad.grad(rnn_while, wrt=(0,), checkpoint=1)   # one snapshot: the start, nothing gained
    _close(g(*args), ad.grad(rnn_while, wrt=(0,))(*args))
    assert "checkpointed" not in g.source
    g = ad.grad(rnn_while, wrt=(0,), checkpoint=ad.Checkpoint(snapshots=4, every=5))
    _close(g(*args), ad.grad(rnn_while, wrt=(0,))(*args))
    assert "a snapshot every 5 iterations" in g.source
    g = ad.grad(rnn_while, wrt=(0,), checkpoint="sqrt")   # sqrt(T) needs T: unbounded
    _close(g(*args), ad.grad(rnn_while, wrt=(0,))(*args))
    assert "checkpointed" not in g.source


def broken_off(x, a):
    n = 0
    while n < 300:
        x = np.sin(x) * a + 0.1 * x
        if np.sum(x * x) > 5.0:
            break
        n = n + 1
    return np.sum(x)


def in_an_if(x, a, flag):
    if flag > 0:
        n = 0
        while n < 137:
            x = np.sin(x) * a + 0.1 * x
            n = n + 1
    return np.sum(x)


@pytest.mark.parametrize("a", [0.3, 1.7])   # runs all 300 iterations / breaks early
def test_a_loop_that_breaks(a):
    _agrees(broken_off, (np.array([1.0, 0.5, -0.3]), a), 6, wrt=(0, 1))


def test_a_while_loop_inside_an_if():
    x = np.array([1.0, 0.5, -0.3])
    _agrees(in_an_if, (x, 0.9, 1.0), 8, wrt=(0, 1))
    _close(ad.grad(in_an_if, wrt=(0, 1), checkpoint=8)(x, 0.9, -1.0),
           ad.grad(in_an_if, wrt=(0, 1))(x, 0.9, -1.0))
