"""The max subtracted in a softmax or logsumexp gets no gradient where the compiler proves the
function shift-invariant (adcompiler.templates.idioms.shift_invariance), and keeps its rule (ties split)
everywhere else. Values are checked against finite differences or closed forms, with ties in
the max, extreme inputs and float32."""

import numpy as np

import adcompiler as ad
from tests.helpers import assert_matches_numerical


# ---- shift-invariant: the max's gradient is zero and its rule's passes are gone --------------
def softmax_ce(z, onehot):
    m = np.max(z, axis=1, keepdims=True)
    s = z - m
    logp = s - np.log(np.sum(np.exp(s), axis=1, keepdims=True))
    return -np.mean(np.sum(onehot * logp, axis=1))


def lse_rows(z):
    m = np.max(z, axis=1, keepdims=True)
    return np.sum(m[:, 0] + np.log(np.sum(np.exp(z - m), axis=1)))


def softmax_weighted(z, w):
    e = np.exp(z - np.max(z, axis=-1, keepdims=True))
    p = e / np.sum(e, axis=-1, keepdims=True)
    return np.sum(p * w)


def softmax_global(z, w):
    e = np.exp(z - np.max(z))
    return np.sum(e / np.sum(e) * w)


def softmax_min_columns(z, w):
    m = np.min(z, axis=0)
    e = np.exp(z - m[None, :])
    return np.sum(e / np.sum(e, axis=0) * w)


def lse_scaled(z):
    m = np.max(z, axis=1, keepdims=True)
    return np.sum(2.0 * m + 2.0 * np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)))


# ---- not shift-invariant: the max keeps its gradient -------------------------------------------
def centred_squares(z):
    return np.sum((z - np.max(z, axis=1, keepdims=True)) ** 2)


def softmax_other_axis(z, w):
    e = np.exp(z - np.max(z, axis=1, keepdims=True))
    return np.sum(e / np.sum(e, axis=0, keepdims=True) * w)


def lse_wrong_addback(z):
    m = np.max(z, axis=1, keepdims=True)
    return np.sum(2.0 * m + np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)))


def softmax_temperature(z, w, t):
    e = np.exp(t * (z - np.max(z, axis=1, keepdims=True)))
    return np.sum(e / np.sum(e, axis=1, keepdims=True) * w)


def _code(g):
    return "\n".join(ln for ln in g.source.splitlines() if not ln.strip().startswith("#"))


def _softmax(z, axis):
    e = np.exp(z - np.max(z, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


RNG = np.random.default_rng(7)
TIES = np.array([[1.0, 3.0, 3.0, -2.0], [0.5, 0.5, 0.5, 0.5], [2.0, -1.0, 0.0, 2.0]])


def test_softmax_cross_entropy_with_ties_matches_differences_and_drops_the_max_rule():
    onehot = np.eye(4)[[1, 3, 0]]
    g = ad.grad(softmax_ce)
    dz = g(TIES, onehot)
    assert_matches_numerical(softmax_ce, [TIES, onehot], (0,), (dz,))
    np.testing.assert_allclose(dz, (_softmax(TIES, 1) - onehot) / 3, rtol=1e-12, atol=1e-15)
    assert "==" not in _code(g) and "np.equal" not in _code(g)


def test_logsumexp_rows_with_ties_and_a_squeezed_max():
    g = ad.grad(lse_rows)
    dz = g(TIES)
    np.testing.assert_allclose(dz, _softmax(TIES, 1), rtol=1e-12)
    assert_matches_numerical(lse_rows, [TIES], (0,), (dz,))
    assert "==" not in _code(g)


def test_softmax_layouts_global_min_and_scaled_addback():
    z, w = RNG.standard_normal((3, 5)), RNG.standard_normal((3, 5))
    z[0, 1] = z[0, 3] = z.max() + 1.0           # a tie in the global max
    for f in (softmax_weighted, softmax_global, softmax_min_columns):
        g = ad.grad(f, wrt=(0, 1))
        assert_matches_numerical(f, [z, w], (0, 1), g(z, w))
        assert "==" not in _code(g), f.__name__
    g = ad.grad(lse_scaled)
    np.testing.assert_allclose(g(TIES), 2.0 * _softmax(TIES, 1), rtol=1e-12)
    assert "==" not in _code(g)


def test_extreme_logits_give_finite_exact_gradients():
    z = np.array([[800.0, -800.0, 0.0], [-800.0, -800.0, 800.0], [800.0, 800.0, -800.0]])
    onehot = np.eye(3)[[2, 2, 0]]
    dz = ad.grad(softmax_ce)(z, onehot)
    assert np.all(np.isfinite(dz))
    np.testing.assert_allclose(dz, (_softmax(z, 1) - onehot) / 3, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(ad.grad(lse_rows)(z), _softmax(z, 1), rtol=1e-12)


def test_float32_gradient_stays_float32():
    z = TIES.astype(np.float32)
    onehot = np.eye(4, dtype=np.float32)[[1, 3, 0]]
    g = ad.grad(softmax_ce)
    dz = g(z, onehot)
    assert dz.dtype == np.float32
    np.testing.assert_allclose(dz, (_softmax(TIES, 1) - onehot) / 3, rtol=1e-5, atol=1e-7)
    assert "float64" not in _code(g) and "==" not in _code(g)


def test_not_shift_invariant_keeps_the_max_gradient_with_ties_split():
    g = ad.grad(centred_squares)
    dz = g(TIES)
    m = TIES.max(axis=1, keepdims=True)
    hit = TIES == m
    inner = 2.0 * (TIES - m)
    expected = inner - hit / hit.sum(axis=1, keepdims=True) * inner.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(dz, expected, rtol=1e-12)
    assert "==" in _code(g)


def test_near_misses_keep_the_max_gradient():
    z, w = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    for f in (softmax_other_axis,):
        g = ad.grad(f, wrt=(0, 1))
        assert_matches_numerical(f, [z, w], (0, 1), g(z, w))
        assert "==" in _code(g)
    g = ad.grad(lse_wrong_addback)
    assert_matches_numerical(lse_wrong_addback, [z], (0,), (g(z),))
    assert "==" in _code(g)
    g = ad.grad(softmax_temperature, wrt=(0, 2))
    assert_matches_numerical(softmax_temperature, [z, w, 1.7], (0, 2), g(z, w, 1.7))


def centre_rows(h, w):
    c = h - np.mean(h, axis=1, keepdims=True)
    return np.sum(c * c * w)


def test_the_negation_of_a_broadcast_subtrahend_moves_onto_its_sum():
    """The adjoint of ``h - mean`` sums ``-dc``: the negation goes onto the (rows, 1) sum, not
    the (rows, cols) array (exact: IEEE negation commutes with sums)."""
    h, w = RNG.standard_normal((5, 6)), RNG.standard_normal((5, 6))
    g = ad.grad(centre_rows, wrt=(0, 1))
    assert_matches_numerical(centre_rows, [h, w], (0, 1), g(h, w))
    assert "np.sum(-" not in g.source
