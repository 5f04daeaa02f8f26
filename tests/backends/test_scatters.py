"""Scatter-adds of rows (backends/scatters.py): the ``_add_rows`` helper against ``np.add.at``
(the oracle) in both forms, and compiled gradients whose gathers' adjoints take it against the
unoptimised gradient (which keeps ``np.add.at``). The size thresholds are crossed in
tests/programs/test_thresholds.py."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends import scatters
from adcompiler.backends.check_modes import unoptimised
from adcompiler.templates import factorizations

HAVE_SCIPY = importlib.util.find_spec("scipy") is not None
FORMS = ["flat"] + (["sparse"] if HAVE_SCIPY else [])
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")


def _oracle(index, g, shape):
    out = np.zeros(shape)
    np.add.at(out, index, g)
    return out


def _cases():
    rng = np.random.default_rng(3)
    yield "repeats", rng.integers(0, 50, 3000), (50, 8)
    yield "negative", rng.integers(-50, 50, 3000), (50, 8)
    yield "2-D index", rng.integers(-40, 40, (60, 70)), (40, 16)
    yield "3-D target", rng.integers(0, 30, 900), (30, 4, 5)
    yield "int32 index", rng.integers(-64, 64, 4000).astype(np.int32), (64, 32)
    yield "one row", np.zeros(700, dtype=np.int64), (1, 4)
    yield "empty", np.zeros(0, dtype=np.int64), (9, 4)
    yield "empty target", np.zeros(0, dtype=np.int64), (0, 4)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("case, index, shape", list(_cases()), ids=[c[0] for c in _cases()])
def test_helper_adds_what_add_at_adds(form, case, index, shape):
    """On zeros the rows are summed in np.add.at's order: the same bits."""
    g = np.random.default_rng(4).standard_normal(index.shape + shape[1:])
    got = scatters.helper_function(form)(index, g, shape)
    assert got.shape == shape and got.dtype == np.float64 and got.flags.c_contiguous
    np.testing.assert_array_equal(got, _oracle(index, g, shape))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("bad", [50, -51, 10**6])
def test_helper_out_of_bounds_raises_numpys_error(form, bad):
    index = np.array([0, 3, bad, 7])
    g = np.ones((4, 8))
    with pytest.raises(IndexError) as want:
        _oracle(index, g, (50, 8))
    with pytest.raises(IndexError) as got:
        scatters.helper_function(form)(index, g, (50, 8))
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("form", FORMS)
def test_helper_noncontiguous_values(form):
    g = np.random.default_rng(5).standard_normal((16, 5000)).T   # (5000, 16), F-ordered
    index = np.random.default_rng(6).integers(-100, 100, 5000)
    np.testing.assert_array_equal(scatters.helper_function(form)(index, g, (100, 16)),
                                  _oracle(index, g, (100, 16)))


# ---- compiled gradients ---------------------------------------------------------------------

def factors(U, V, iu, iv, r):
    """Matrix factorization: U's adjoint adds the gather's rows to 0.02 U (an update), V's
    is the scatter alone."""
    e = np.sum(U[iu] * V[iv], axis=1) - r
    return np.sum(e * e) + 0.01 * np.sum(U * U)


def gathered_2d(W, idx):
    """A 2-D index array (an embedding of a batch of sequences)."""
    return np.sum(np.tanh(W[idx]) * W[idx[::-1]])


def gathered_slice(W, idx):
    return np.sum(W[idx, :] ** 2 + W[idx] * 0.5)


def add_at_in_user_code(v, idx, W):
    y = np.zeros((200, 8))
    np.add.at(y, idx, v)          # the forward's own scatter, and its adjoint a gather
    return np.sum(y * y * W)


def indexed_update(x, idx, v):
    y = np.tanh(x)
    y[idx] += v                   # an indexed +=: NumPy adds each repeated entry once
    return np.sum(y * y)


def _factor_args(n, m, w, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, w)), rng.standard_normal((m, w)),
            rng.integers(-m, m, n), rng.integers(0, m, n), rng.standard_normal(n))


def _against_unoptimised(f, wrt, args, rtol=1e-12):
    g = ad.grad(f, wrt=wrt)
    got = g(*args)
    with unoptimised():
        want = ad.grad(f, wrt=wrt)(*args)
    for a, b in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * np.max(np.abs(b)))
    return g


def _oracle_factors(U, V, iu, iv, r):
    """The gradient written by hand with np.add.at."""
    e = np.sum(U[iu] * V[iv], axis=1) - r
    dU, dV = 0.02 * U, np.zeros_like(V)
    np.add.at(dU, iu, 2 * e[:, None] * V[iv])
    np.add.at(dV, iv, 2 * e[:, None] * U[iu])
    return dU, dV


@pytest.mark.parametrize("scipy_on", [False] + ([True] if HAVE_SCIPY else []))
@pytest.mark.parametrize("n, m, w", [(3000, 200, 32), (300, 30, 4), (5000, 40, 3)])
def test_factorization_gradient(n, m, w, scipy_on, monkeypatch):
    """Above the thresholds (3000 x 32: the sparse product where SciPy is on, else flat
    indices) and below (300 x 4 values; rows of 3): the unoptimised gradient's values, and the
    hand-written np.add.at gradient's."""
    monkeypatch.setattr(factorizations, "_SCIPY", [scipy_on, scipy_on])
    args = _factor_args(n, m, w)
    g = _against_unoptimised(factors, (0, 1), args)
    for a, b in zip(g(*args), _oracle_factors(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.max(np.abs(b)))
    form = scatters.choose(n, (m, w), scipy_on)
    assert ("def _add_rows(" in g.source) == (form is not None), g.source
    assert ("scipy.sparse" in g.source) == (form == "sparse"), g.source
    if form is not None:
        assert "dU += _add_rows(iu, " in g.source and "np.add.at" not in g.source.split(
            "def grad_factors")[1], g.source


@pytest.mark.parametrize("f, args", [
    (gathered_2d, lambda rng: (rng.standard_normal((300, 16)), rng.integers(-300, 300, (40, 50)))),
    (gathered_slice, lambda rng: (rng.standard_normal((300, 16)), rng.integers(-300, 300, 2000))),
    (add_at_in_user_code, lambda rng: (rng.standard_normal((3000, 8)),
                                       rng.integers(-200, 200, 3000),
                                       rng.standard_normal((200, 8)))),
    (indexed_update, lambda rng: (rng.standard_normal((300, 8)), rng.integers(-300, 300, 2000),
                                  rng.standard_normal((2000, 8)))),
], ids=["2-D index", "x[idx, :]", "np.add.at in user code", "y[idx] += v"])
def test_gathers_in_user_code(f, args):
    args = args(np.random.default_rng(7))
    g = _against_unoptimised(f, (0,), args)
    if f is not indexed_update:    # the indexed += is a masked write, no scatter
        assert "_add_rows(" in g.source, g.source


def test_add_at_in_user_code_out_of_bounds_raises():
    """The user's np.add.at, now the helper, raises NumPy's IndexError for a bad index."""
    v, idx, W = np.ones((3000, 8)), np.arange(3000) % 200, np.ones((200, 8))
    g = ad.grad(add_at_in_user_code)
    g(v, idx, W)
    idx[5] = 200
    with pytest.raises(IndexError, match="index 200 is out of bounds for axis 0 with size 200"):
        g(v, idx, W)


def counted(W, idx, k):
    c = np.zeros((200, 8), dtype=np.int64)
    np.add.at(c, idx, k)          # an integer target: np.add.at's integer sums
    return np.sum(c * W)


def vector(x, idx):
    return np.sum(x[idx] ** 3)


@pytest.mark.parametrize("f", [counted, vector])
def test_other_targets_keep_add_at(f):
    """An integer target (the helper sums float64 rows; complex values do not compile) and a
    1-D one (np.add.at's own fast path is the fastest there) keep np.add.at, with the
    unoptimised code's values."""
    rng = np.random.default_rng(8)
    idx = rng.integers(-200, 200, 5000)
    if f is vector:
        args = (rng.standard_normal(200), idx)
    else:
        extra = rng.integers(-3, 4, (5000, 8)) if f is counted else rng.standard_normal((5000, 8))
        args = (rng.standard_normal((200, 8)), idx, extra)
    g = _against_unoptimised(f, (0,), args)
    assert "np.add.at(" in g.source and "_add_rows" not in g.source, g.source


def test_matfact_workload_source():
    """The benchmark's factorization: both gathers' adjoints are the helper, the sparse form
    where SciPy is on, the flat one where it is not (as the goldens are compiled)."""
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks import workloads
    finally:
        sys.path.remove(str(ROOT))
    w = workloads.BY_NAME["matfact"]
    args = w.make()
    held = list(factorizations._SCIPY)
    try:
        for on in (False,) + ((True,) if HAVE_SCIPY else ()):
            factorizations._SCIPY[:] = [on, on]
            g = ad.grad(w.fn, wrt=w.wrt)
            src = g.specialize(*args).source
            assert "dU += _add_rows(iu, " in src and "dV += _add_rows(iv, " in src, src
            assert ("scipy.sparse.csr_matrix" in src) == on, src
            assert (src.splitlines()[0] == "import scipy.sparse") == on, src   # at the top
            for a, b in zip(g(*args), _oracle_factors_l2(*args)):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.max(np.abs(b)))
    finally:
        factorizations._SCIPY[:] = held


def _oracle_factors_l2(U, V, iu, iv, r):
    e = np.sum(U[iu] * V[iv], axis=1) - r
    dU, dV = 0.02 * U, 0.02 * V
    np.add.at(dU, iu, 2 * e[:, None] * V[iv])
    np.add.at(dV, iv, 2 * e[:, None] * U[iu])
    return dU, dV
