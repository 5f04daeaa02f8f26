"""Random straight-line programs: compiled gradients against central finite differences.

The programs come from :func:`tests.strategies.programs` (DAGs of the supported primitives with
broadcasting, written to a file and imported). Each is compiled with ``adcompiler.grad(f,
wrt=(0, 1, 2))`` and every entry of every gradient is compared with central differences of the
plain function in float64.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, reject, settings

import adcompiler

from tests.helpers import examples
from tests.strategies import load, programs

EPS = 1e-6
RTOL, ATOL = 1e-5, 1e-6


def finite_differences(f, args, i, eps=EPS):
    """d f / d args[i] by central differences, one entry at a time."""
    x = args[i]
    grad = np.zeros(np.shape(x))
    for j in range(grad.size):
        def at(delta):
            if type(x) is float:
                bumped = x + delta
            else:
                bumped = np.array(x, copy=True)
                bumped.reshape(-1)[j] += delta
            return float(f(*args[:i], bumped, *args[i + 1:]))
        grad.reshape(-1)[j] = (at(eps) - at(-eps)) / (2 * eps)
    return grad


def _smooth_here(f, args, i):
    """False where the function has a kink within a step: differences disagree between steps."""
    coarse, fine = finite_differences(f, args, i, 1e-4), finite_differences(f, args, i, 1e-7)
    return np.allclose(coarse, fine, rtol=1e-3, atol=1e-4)


def check_gradients(f, args):
    grads = adcompiler.grad(f, wrt=(0, 1, 2))(*args)
    assert len(grads) == len(args)
    for i, (x, g) in enumerate(zip(args, grads)):
        if type(x) is float:
            assert type(g) is float, f"the gradient of a Python float is {type(g).__name__}"
        else:
            assert isinstance(g, np.ndarray)
            assert np.shape(g) == x.shape and g.dtype == x.dtype
        expected = finite_differences(f, args, i)
        scale = ATOL * (1.0 + np.max(np.abs(expected), initial=0.0))
        if not np.allclose(g, expected, rtol=RTOL, atol=scale):
            if not _smooth_here(f, args, i):
                reject()   # a kink (max, abs, where...) within the finite-difference step
            np.testing.assert_allclose(g, expected, rtol=RTOL, atol=scale,
                                       err_msg=f"gradient with respect to argument {i}")


# tmp_path is shared by a test's examples: each program has its own file, named by its hash.
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                      HealthCheck.too_slow])


@settings(max_examples=examples(1500, 400), **SETTINGS)
@given(program=programs())
def test_compiled_gradients_match_finite_differences(program, tmp_path):
    source, f, args = load(program, tmp_path)
    note(source[source.index("def f"):])
    check_gradients(f, args)
    np.testing.assert_equal(args, program.args)  # the gradient left its inputs alone


@settings(max_examples=examples(150, 60), **SETTINGS)
@given(program=programs())
def test_value_and_grad_agrees_with_the_function_and_grad(program, tmp_path):
    source, f, args = load(program, tmp_path)
    note(source[source.index("def f"):])
    value, grads = adcompiler.value_and_grad(f, wrt=(0, 1, 2))(*args)
    assert float(value) == pytest.approx(float(f(*args)), rel=1e-12, abs=1e-12)
    for g, h in zip(grads, adcompiler.grad(f, wrt=(0, 1, 2))(*args)):
        np.testing.assert_allclose(g, h, rtol=1e-12, atol=1e-12)
