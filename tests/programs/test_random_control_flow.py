"""Random programs with control flow: compiled gradients against finite differences, against
the dynamic tape, and ``value_and_grad``'s value against the function's.

The programs come from :func:`tests.control_strategies.control_programs`: the straight-line
statements of tests/strategies.py mixed with if/else on traced conditions (and/or/not),
conditional expressions, for loops over ranges (static and traced bounds), arrays, enumerate and
zip, while loops, break/continue, early returns, nested loops and branches, and subscript
updates of fresh arrays inside and outside loops. Each is written to a file and imported.

Finite differences are taken in float64 with a kink guard (``check_gradients`` of
tests/programs/test_random_programs.py): where the compiled gradient disagrees, the differences are
recomputed at two step sizes, and if those disagree a branch, a loop's trip count or a kink
(max, abs, where) changed within the step, and the example is rejected. The strategy already
keeps every condition a margin away from its threshold, so this is rare. The compiler and the
tape have no such noise: they take the same branches and must agree to rounding.
"""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, note, settings

import adcompiler
from adcompiler import tape

from tests.control_strategies import constructs, control_programs, tape_program
from tests.helpers import examples, raising_after
from tests.strategies import load
from tests.programs.test_random_programs import check_gradients

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                      HealthCheck.too_slow])
TIME_LIMIT = 20  # seconds for one example; generated loops are bounded, a hang is a bug


def time_limit(what):
    """Fail (rather than hang the suite) if ``what`` runs past TIME_LIMIT: a compiled loop that
    never ends (as a `continue` skipping a counter's increment once made one) is a bug."""
    return raising_after(TIME_LIMIT, AssertionError(f"{what} still running after {TIME_LIMIT} s"))


def _loaded(program, tmp_path):
    source, f, args = load(program, tmp_path)
    note(source[source.index("def f"):])
    note(f"args = {args!r}")
    for construct in sorted(constructs(source)):
        event(construct)
    return f, args


@settings(max_examples=examples(250, 80), **SETTINGS)
@given(program=control_programs())
def test_compiled_gradients_match_finite_differences(program, tmp_path):
    f, args = _loaded(program, tmp_path)
    with time_limit("the gradient and its finite differences"):
        check_gradients(f, args)
    np.testing.assert_equal(args, program.args)  # the gradient left its inputs alone


# without the math module: the tape refuses math.* on tensors (test_tape_dynamic checks that)
@settings(max_examples=examples(200, 60), **SETTINGS)
@given(program=control_programs(math=False))
def test_compiled_gradients_agree_with_the_tape(program, tmp_path):
    f, args = _loaded(program, tmp_path)
    _, f_tape, _ = load(tape_program(program), tmp_path)
    with time_limit("the compiled gradient and the tape's"):
        compiled = adcompiler.grad(f, wrt=(0, 1, 2))(*args)
        dynamic = tape.dynamic_grad(f_tape, wrt=(0, 1, 2))(*args)
    for i, (c, d) in enumerate(zip(compiled, dynamic)):
        assert type(c) is type(d), f"argument {i}: {type(c).__name__} != {type(d).__name__}"
        scale = 1e-10 * (1.0 + np.max(np.abs(d), initial=0.0))
        np.testing.assert_allclose(c, d, rtol=1e-10, atol=scale,
                                   err_msg=f"gradient with respect to argument {i}")


@settings(max_examples=examples(120, 40), **SETTINGS)
@given(program=control_programs())
def test_value_and_grad_gives_the_functions_value(program, tmp_path):
    f, args = _loaded(program, tmp_path)
    with time_limit("value_and_grad"):
        value, grads = adcompiler.value_and_grad(f, wrt=(0, 1, 2))(*args)
    expected = f(*load(program, tmp_path)[2])
    assert np.ndim(value) == 0
    assert float(value) == pytest.approx(float(expected), rel=1e-12, abs=1e-12)
    for g, h in zip(grads, adcompiler.grad(f, wrt=(0, 1, 2))(*args)):
        np.testing.assert_allclose(g, h, rtol=1e-12, atol=1e-12)
    np.testing.assert_equal(args, program.args)


EVERY_CONSTRUCT = {
    "if", "if/else", "conditional expression", "and", "or", "not", "early return",
    "for range", "for traced range", "for rows", "for enumerate", "for zip", "while",
    "break", "continue", "nested loop", "branch in loop", "loop in branch",
    "subscript =", "subscript add", "subscript sub", "subscript mult", "subscript index",
    "subscript slice", "subscript mask", "subscript array index", "subscript update in loop",
}


def test_the_strategy_draws_every_construct():
    """The strategy is not silently narrowed: 500 programs (a fixed draw; 800 in the long run)
    use every construct it promises (with hypothesis 6.155 the rarest, a `for` over a range of
    traced bounds, first came between 250 and 400)."""
    seen = set()

    @settings(max_examples=examples(800, 500), database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(program=control_programs())
    def collect(program):
        seen.update(constructs(program.source))

    collect()
    assert EVERY_CONSTRUCT <= seen, f"never drawn: {sorted(EVERY_CONSTRUCT - seen)}"
