"""The template cases of the factorizations' rules (``templates/factorizations.py``), which
``test_templates.CASES`` takes in: finite differences of every rule (there), the tape's
backward and forward mode and the tangent rules (``tests/tape/test_tape_rules.py``) run on them.

Inputs are well conditioned and away from ties: symmetric positive definite matrices (plus a
non-symmetric part in the triangle the function does not read, which must get no gradient),
eigenvalues and singular values at least 0.5 apart, 2-D and stacked.
"""

from __future__ import annotations

import numpy as np
import pytest

_rng = np.random.default_rng(20261202)


def _case(prim, args, params=None, id=None):
    return pytest.param(prim, tuple(args), params or {}, 1e-6, id=id)


def spd(*shape, unread="upper"):
    """A well-conditioned symmetric positive definite matrix (stack), with noise in the
    triangle that ``cholesky``/``eigh`` do not read (``unread``), so that rules are checked
    on NumPy's function of all n*n entries."""
    n = shape[-1]
    x = _rng.standard_normal(shape)
    a = x @ np.swapaxes(x, -1, -2) / n + 2.0 * np.eye(n)
    noise = _rng.standard_normal(shape)
    return a + (np.triu(noise, 1) if unread == "upper" else np.tril(noise, -1))


def spread(*shape, gap=0.5):
    """A matrix (stack) whose singular values are at least ``gap`` apart and away from 0."""
    m, n = shape[-2:]
    k = min(m, n)
    u = np.linalg.qr(_rng.standard_normal(shape[:-2] + (m, k)))[0]
    v = np.linalg.qr(_rng.standard_normal(shape[:-2] + (n, k)))[0]
    s = 1.0 + gap * np.arange(k)[::-1] + 0.1 * _rng.uniform(size=shape[:-2] + (k,))
    return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)


def symmetric_spread(*shape):
    """A symmetric matrix (stack) with eigenvalues at least 0.5 apart, noise above it."""
    n = shape[-1]
    q = np.linalg.qr(_rng.standard_normal(shape))[0]
    w = np.linspace(-2.0, 2.0, n) + 0.05 * _rng.uniform(size=shape[:-2] + (n,))
    a = (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)
    return a + np.triu(_rng.standard_normal(shape), 1)


def lower(*shape):
    """A well-conditioned matrix (stack) for triangular solves: either triangle, read as
    triangular, is far from singular; the other triangle is noise the solve does not read."""
    return _rng.standard_normal(shape) * 0.3 + 2.0 * np.eye(shape[-1])


def factorization_cases():
    for shape in [(3, 3), (4, 4)]:
        yield _case("tril", [_rng.standard_normal(shape)], {"k": -1}, id=f"tril-{shape[0]}-k-1")
    yield _case("tril", [_rng.standard_normal((2, 3, 3))], id="tril-stack")
    for shape in [(3, 3), (2, 3, 3), (1, 1)]:
        yield _case("cholesky", [spd(*shape)], id=f"cholesky-{'x'.join(map(str, shape))}")
    yield from _triangular_cases()
    for prim in ("eigh_values", "eigh_vectors", "eigvalsh"):
        for shape in [(3, 3), (2, 4, 4)]:
            yield _case(prim, [symmetric_spread(*shape)], id=f"{prim}-{'x'.join(map(str, shape))}")
        a = symmetric_spread(3, 3)
        a = np.triu(a) + np.tril(_rng.standard_normal((3, 3)), -1)   # the upper one is read
        yield _case(prim, [a], {"UPLO": "U"}, id=f"{prim}-upper")
    for prim in ("svd_u", "svd_s", "svd_vh", "svdvals"):
        for shape in [(3, 3), (4, 2), (2, 4), (2, 3, 2)]:
            yield _case(prim, [spread(*shape)], id=f"{prim}-{'x'.join(map(str, shape))}")
    for prim in ("qr_q", "qr_r"):
        for shape in [(3, 3), (4, 2), (2, 3, 2)]:
            yield _case(prim, [spread(*shape)], id=f"{prim}-{'x'.join(map(str, shape))}")
    for shape in [(3, 3), (4, 2), (2, 4), (2, 3, 2)]:
        yield _case("pinv", [spread(*shape)], id=f"pinv-{'x'.join(map(str, shape))}")
    for bshape in [(4,), (4, 2)]:
        yield _case("lstsq_x", [spread(4, 3), _rng.standard_normal(bshape)],
                    id=f"lstsq_x-{'x'.join(map(str, bshape))}")


def _triangular_cases():
    for lower_, trans, unit in [(True, 0, False), (False, 0, False), (True, 1, False),
                                (False, 1, True)]:
        a = lower(3, 3)
        params = {"lower": lower_, "trans": trans, "unit_diagonal": unit}
        tag = f"{'lower' if lower_ else 'upper'}-t{trans}{'-unit' if unit else ''}"
        yield _case("solve_triangular", [a, _rng.standard_normal(3)], params, id=f"tri-{tag}-vec")
        yield _case("solve_triangular", [a, _rng.standard_normal((3, 2))], params,
                    id=f"tri-{tag}-mat")
    params = {"lower": True, "trans": 0, "unit_diagonal": False}
    yield _case("solve_triangular", [lower(2, 3, 3), _rng.standard_normal(3)], params,
                id="tri-stack-vec")
    yield _case("solve_triangular", [lower(2, 3, 3), _rng.standard_normal((3, 2))], params,
                id="tri-stack-mat")
    yield _case("solve_triangular", [lower(3, 3), _rng.standard_normal((2, 3, 2))], params,
                id="tri-matrix-stack-b")
