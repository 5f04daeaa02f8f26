"""Random draws inside a compiled function (np.random.*, a Generator's methods) are a located
error that says to draw them in the caller, not "has no derivative rule"."""

import numpy as np
import pytest

import adcompiler as ad

RNG = np.random.default_rng(0)


def legacy(x):
    return np.sum(x * np.random.randn(3))


def generator(x):
    return np.sum(x * RNG.normal(size=3))


@pytest.mark.parametrize("f, text", [(legacy, "np.random.randn"), (generator, "RNG.normal")])
def test_random_draws_are_refused_with_the_fix(f, text):
    with pytest.raises(ad.CompileError, match="draws random numbers") as info:
        ad.grad(f)(np.ones(3))
    assert f"`{text}`" in str(info.value)
    assert "pass them as an argument" in info.value.hint
    assert info.value.lineno == f.__code__.co_firstlineno + 1
