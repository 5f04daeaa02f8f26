"""``checkpoint={"memory": ...}`` / ``Checkpoint(memory=...)`` (transforms/checkpoint_budget.py):
the snapshots and levels chosen from the loop's carried values fit the budget (every stack the
generated code allocates, summed, is within it), the gradient equals the unbounded one to 1e-12
(RNN and RK4 ODE, at and above the planner's pooled-stack size), the code's note says what was
chosen, and bad budgets are refused with what is accepted."""

import re

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends import planner
from adcompiler.transforms.checkpoint_budget import parse_bytes
from adcompiler.transforms.checkpointing import Checkpoint, as_checkpoint
from benchmarks import workloads

from .test_checkpoint import _agrees, _rnn_args, rnn


def _allocated(source) -> int:
    """The bytes of every float64 array the code allocates with np.empty (its stacks), summed:
    at least what it holds at once."""
    total = 0
    for shape in re.findall(r"np\.empty\(\(([\d, ]+)\), dtype=np\.float64\)", source):
        total += 8 * int(np.prod([int(n) for n in shape.split(",") if n.strip()]))
    return total


def _note(source) -> str:
    found = re.findall(r"# .*memory=.*", source)
    assert found, source
    return found[0]


@pytest.mark.parametrize("memory, levels", [(6_000, 2), (2_500, 3), (24_000, 2)])
def test_the_rnn_within_the_budget(memory, levels):
    T = 1000
    W, h0, x = _rnn_args(T)
    g = _agrees(rnn, (W, h0, x), {"memory": memory}, wrt=(0, 1, 2))
    note = _note(g.source)
    assert f": {levels} levels" in note and "24 B a snapshot" in note, note
    assert 0 < _allocated(g.source) <= memory, g.source
    assert _allocated(ad.grad(rnn, wrt=(0, 1, 2)).specialize(W, h0, x).source) > memory


def test_a_budget_holding_every_step_keeps_them():
    W, h0, x = _rnn_args(50)
    g = _agrees(rnn, (W, h0, x), Checkpoint(memory="1MB"), wrt=(0, 2))
    assert "checkpointed" not in g.source
    assert "memory=1 MB (24 B a snapshot, 128 B a step): all 50 iterations kept" in g.source


def test_pooled_stacks_within_the_budget():
    """A 64-wide state, 4,096 steps: the chosen segments' stacks are at least 32 KiB (pooled)."""
    T, n = 64 * 64, 64
    W, h0, x = _rnn_args(T, n)
    memory = 2 * 1024 * 1024
    g = _agrees(rnn, (W * 0.3, h0, x), {"memory": "2MiB"}, wrt=(0, 1, 2))
    assert ": 2 levels" in _note(g.source)
    rows = [int(m) for m in re.findall(r"np\.empty\(\((\d+), 64\)", g.source)]
    assert rows and max(rows) * n * 8 >= planner.MIN_BYTES, g.source
    assert _allocated(g.source) <= memory, g.source


def test_the_rk4_ode_within_the_budget():
    args = workloads.make_ode(batch=4, d=3, hidden=8, steps=400)
    g = _agrees(workloads.ode_rk4, args, {"memory": "40kB"}, wrt=(0, 1, 2, 3))
    note = _note(g.source)
    assert "104 B a snapshot" in note, note   # y: 4 x 3 float64, and the loss (a float)
    assert _allocated(g.source) <= 40_000, g.source


def test_a_budget_too_small_says_the_least():
    W, h0, x = _rnn_args(1000)
    with pytest.raises(ad.CompileError, match=r"memory=100 B is less than .* 1,000 iterations"):
        ad.grad(rnn, checkpoint={"memory": 100})(W, h0, x)


@pytest.mark.parametrize("text, n", [("64MB", 64 * 10 ** 6), ("1.5 GiB", 3 * 2 ** 29),
                                     ("2kb", 2000), ("512", 512), (4096, 4096)])
def test_budgets_in_units(text, n):
    assert parse_bytes(text) == n
    assert as_checkpoint({"memory": text}) == Checkpoint(memory=n)


@pytest.mark.parametrize("bad", [0, -5, True, 2.5, "64 parsecs", "MB", "0kB"])
def test_bad_budgets_are_refused(bad):
    with pytest.raises(TypeError, match=r"memory="):
        Checkpoint(memory=bad)


def test_memory_and_snapshots_together_are_refused():
    with pytest.raises(TypeError, match="not both"):
        Checkpoint(snapshots=4, memory="1MB")
    with pytest.raises(TypeError, match="keys"):
        ad.grad(rnn, checkpoint={"memroy": "1MB"})
