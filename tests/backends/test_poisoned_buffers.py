"""Poisoned buffers (``check_modes.poisoned()``): a read of a released buffer shows as NaN.

Poisoned code fills each planned buffer with NaN when it takes it from the pool, when the
planner releases it and before it gives it back, so a plan that reads a released buffer (or
returns one) gives NaN instead of a plausible wrong number. These tests show that the mode
leaves right plans' values alone, and that it does expose the two flaws the planner had (a
buffer released while a loop's slot still held it; a returned pool buffer), by putting the old
planner's rules back for the duration of a test.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends import emit, planner
from adcompiler.backends.check_modes import poisoned, unoptimised
from adcompiler.backends.verify_plan import PlanError
from adcompiler.runtime.poison import poison

from tests.backends.test_buffer_aliases import (accumulator, branch_result, nested_slots, while_residuals,
                                  zero_trip_while)

X = np.random.default_rng(7).standard_normal((70, 70))
CASES = [(accumulator, (X,)), (while_residuals, (X, 1.1)), (branch_result, (X,)),
         (nested_slots, (X,))]


@pytest.mark.parametrize("f, args", CASES)
def test_poisoned_code_computes_the_same_gradient(f, args):
    with poisoned():
        g = ad.grad(f)
        got = g(*args)
    assert "_poison(" in g.source and "out=_buf" in g.source
    np.testing.assert_array_equal(got, ad.grad(f)(*args))  # the same plan, the same values
    with unoptimised():
        np.testing.assert_allclose(got, ad.grad(f)(*args), rtol=1e-12, atol=1e-15)


def test_the_environment_variable_turns_it_on(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_POISON_BUFFERS", "1")
    g = ad.grad(accumulator)
    g(X)
    assert g.source.count("_poison(") >= 3   # taken, released, given back
    monkeypatch.setenv("ADCOMPILER_POISON_BUFFERS", "0")
    h = ad.grad(accumulator)
    h(X)
    assert "_poison" not in h.source


def test_no_poison_below_the_buffer_threshold():
    """Small arrays get no buffers, so poisoned code is the ordinary code."""
    small = X[:8, :8].copy()
    with poisoned():
        g = ad.grad(accumulator)
        g(small)
    plain = ad.grad(accumulator)
    plain(small)
    assert g.source == plain.source


def _names_only_liveness(self, v, end):
    """The planner's old rule: a buffer dies at the last read of the value written into it."""
    return not self.live.read_after(v, end, ())


def test_a_read_of_a_released_buffer_shows_as_nan(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")   # the disk cache holds today's right plan
    monkeypatch.setattr(emit.Emitter, "_dead", _names_only_liveness)
    with pytest.raises(PlanError, match="writes into pool buffer _buf1 while `dacc_1`"):
        ad.grad(accumulator)(X)     # the plan checker (on in the suite) refuses the old plan
    monkeypatch.setenv("ADCOMPILER_VERIFY_PLANS", "0")   # and without it, poison shows it
    wrong = ad.grad(accumulator)(X)                       # the old plan: a plausible number
    assert np.isfinite(wrong).all()
    with unoptimised():
        right = ad.grad(accumulator)(X)
    assert not np.allclose(wrong, right)
    with poisoned():
        shown = ad.grad(accumulator)(X)
    assert np.isnan(shown).any()


def test_a_returned_pool_buffer_shows_as_nan(monkeypatch):
    """The old planner planned a value a while loop's result returns when it runs no
    iteration; given back poisoned, that gradient is NaN once the call returns."""
    def old_rules(graph, sharing, rows=frozenset()):
        class NoAliases:
            def aliases(self, v):
                return [v]
        return planner.plannable_nodes(graph, NoAliases(), rows)
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    monkeypatch.setenv("ADCOMPILER_VERIFY_PLANS", "0")   # it refuses that plan too
    monkeypatch.setattr(emit, "plannable_nodes", old_rules)
    with poisoned():
        g = ad.grad(zero_trip_while)
        got = g(0.1 * X, 0.0)   # the loop runs no iteration
    assert np.isnan(got).all()


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128", "int64", "int32", "bool"])
def test_poison_fills_every_dtype_with_a_value_that_changes(dtype):
    a, b = np.zeros(5, dtype=dtype), np.zeros(5, dtype=dtype)
    poison(a)
    poison(b)
    if np.dtype(dtype).kind in "fc":
        assert np.isnan(a).all() and np.isnan(b).all()
    else:
        assert (a != b).all()   # consecutive calls fill different patterns
