"""A located error the compiler raises from NumPy's own (a shape mismatch) shows no frame of
the compiler's frontend or IR, and no "direct cause" section, under every transform."""

import traceback

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.errors import CompileError


def mismatched(x):
    return x[:, 0] + x[0, :]    # (3,) + (4,): NumPy raises too


def summed(x):
    return np.sum(mismatched(x))


CALLS = {
    "grad": lambda x: ad.grad(summed)(x),
    "vjp": lambda x: ad.vjp(mismatched)(x, cotangent=np.ones(3)),
    "jvp": lambda x: ad.jvp(summed)(x, tangents=np.ones((3, 4))),
    "jacobian": lambda x: ad.jacobian(mismatched)(x),
    "hessian": lambda x: ad.hessian(summed)(x),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_shape_error_shows_only_the_located_error(name):
    with pytest.raises(CompileError) as info:
        CALLS[name](np.ones((3, 4)))
    exc = info.value
    assert exc.__cause__ is None and exc.__suppress_context__
    text = "".join(traceback.format_exception(exc))
    assert "direct cause" not in text and "During handling" not in text
    for inside in ("adcompiler/frontend", "adcompiler/ir", "numpy/lib"):
        assert inside not in text, text
    assert "test_error_chaining.py:14:" in text    # the user's line, with its caret
    assert "x[:, 0] + x[0, :]" in text and "^^^" in text
