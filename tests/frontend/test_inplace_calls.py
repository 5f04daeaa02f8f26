"""A bare call that writes into an array (``y.fill``, ``np.copyto``, ``out=``) is refused with a
message that says so, not as a statement without effect (removing it would change the code)."""

import numpy as np
import pytest

import adcompiler as ad


def uses_fill(x):
    y = x * 1.0
    y.fill(2.0)
    return np.sum(y * x)


def uses_copyto(x):
    y = x * 0.0
    np.copyto(y, x)
    return np.sum(y * x)


def uses_out(x):
    y = x * 0.0
    np.exp(x, out=y)
    return np.sum(y)


def has_no_effect(x):
    np.add(x, x)
    return np.sum(x)


@pytest.mark.parametrize("f, line, what, rewrite", [
    (uses_fill, "y.fill(2.0)", "`.fill()`", "`y = np.full_like(y, 2.0)`"),
    (uses_copyto, "np.copyto(y, x)", "`np.copyto`", "`y = x.copy()`"),
    (uses_out, "np.exp(x, out=y)", "`out=`", "`y = np.exp(x)`"),
])
def test_a_call_writing_in_place_says_so(f, line, what, rewrite):
    with pytest.raises(ad.CompileError) as err:
        ad.grad(f)(np.ones(3))
    text = str(err.value)
    assert f"{what} writes into an array in place" in text and line in text and rewrite in text
    assert err.value.filename == __file__


def test_a_call_without_effect_is_still_called_so():
    with pytest.raises(ad.CompileError, match="has no effect on the result"):
        ad.grad(has_no_effect)(np.ones(3))


def sorts_in_place(x):
    y = x * 2.0
    y.sort(axis=0)
    return np.sum(y * x)


def test_the_rewrite_uses_the_users_names():
    with pytest.raises(ad.CompileError) as err:
        ad.grad(sorts_in_place)(np.ones(3))
    assert "`y = np.sort(y, axis=0)` for `y.sort(axis=0)`" in str(err.value)
    assert "fill" not in str(err.value)                  # no hint about another method


def misspelt(x):
    return np.sum(np.tanhh(x))


def test_a_misspelt_numpy_function_gets_a_suggestion():
    with pytest.raises(ad.CompileError) as err:
        ad.grad(misspelt)(np.ones(3))
    assert "has no attribute `tanhh`" in str(err.value)
    assert "hint: did you mean `np.tanh`?" in str(err.value)
