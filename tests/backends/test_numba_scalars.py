"""``backend="numba"`` of a function of Python floats only (no array to loop over) is NumPy
code, as for any graph the loops do not take: it emitted a kernel with an empty body and
failed inside the compiler with an IndentationError."""

import numpy as np
import pytest

import adcompiler as ad

pytest.importorskip("numba")


def log_of(s):
    return np.log(s)


def product(s, t):
    return s * s * t + np.sin(t)


def test_python_floats_under_the_numba_backend():
    g = ad.grad(log_of, backend="numba")
    assert g(2.0) == 0.5 and type(g(2.0)) is float
    assert "NumPy code" in g.source and "no array to loop over" in g.source
    assert ad.grad(log_of, backend="numba")(np.float64(4.0)) == 0.25
    ds, dt = ad.grad(product, wrt=(0, 1), backend="numba")(1.5, 0.5)
    assert ds == pytest.approx(2 * 1.5 * 0.5) and dt == pytest.approx(1.5 ** 2 + np.cos(0.5))
