"""Tiered compilation (adcompiler.api.tiers): NumPy code first, numba loops once compiled.

Every test runs above the default threshold (tiers.ELEMENTS = 10^6 elements) where the
default is to tier, and compares the tiered gradient with the unoptimised one.
"""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.api import tiers
from adcompiler.backends.check_modes import unoptimised

pytest.importorskip("numba")

N = 3 * tiers.ELEMENTS // 2   # above the threshold


@pytest.fixture(autouse=True)
def _tiers_on(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_TIERED", "1")


def elementwise(x):
    return np.sum(np.tanh(x) * x + 3.0 * x * x - np.exp(-x))


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def two(x, y):
    return np.sum(np.sin(x) * y + np.log1p(y * y))


def stencil(u, steps):
    for _ in range(steps):
        u = u + 0.1 * (np.roll(u, 1) - 2.0 * u + np.roll(u, -1))
    return np.sum(u * u)


def _plain(transform, *args):
    with unoptimised():
        return transform(*args)


def _reference(fn, *args):
    return _plain(ad.grad(fn, tiered=False), *args)


@pytest.mark.parametrize("fn", [elementwise, rosenbrock])
def test_a_large_elementwise_gradient_moves_to_numba_with_equal_values(fn):
    x = np.random.default_rng(1).standard_normal(N)
    g = ad.grad(fn)
    first = g(x)
    assert g.tier == "compiling"
    assert g.wait_tier(120) == "checking"
    assert "@numba.njit" in g.tier_source and "numba" not in g.source
    reference = _reference(fn, x)
    np.testing.assert_allclose(first, reference, rtol=1e-12, atol=1e-12)
    checked = g(x)   # the NumPy code's answer; the loop's compared with it
    assert g.tier == "numba"
    np.testing.assert_allclose(checked, reference, rtol=1e-12, atol=1e-12)
    after = g(x)   # through the rebuilt fast path: the loop
    np.testing.assert_allclose(after, reference, rtol=1e-9, atol=1e-9 * np.abs(reference).max())
    y = np.random.default_rng(2).standard_normal(N)   # new values, the same signature
    np.testing.assert_allclose(g(y), _reference(fn, y), rtol=1e-9,
                               atol=1e-9 * np.abs(_reference(fn, y)).max())


def test_value_and_grad_with_two_arguments_tiers_up():
    x, y = np.random.default_rng(3).standard_normal((2, N))
    g = ad.value_and_grad(two, wrt=(0, 1))
    g(x, y)
    assert g.wait_tier(120) == "checking"
    g(x, y)
    assert g.tier == "numba"
    value, (dx, dy) = g(x, y)
    ref_value, (rx, ry) = _plain(ad.value_and_grad(two, wrt=(0, 1), tiered=False), x, y)
    assert value == pytest.approx(ref_value, rel=1e-10)
    np.testing.assert_allclose(dx, rx, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(dy, ry, rtol=1e-9, atol=1e-12)


def test_below_the_threshold_and_when_off_the_numpy_code_stays(monkeypatch):
    small = np.random.default_rng(4).standard_normal(tiers.ELEMENTS - 1)
    g = ad.grad(elementwise)
    g(small)
    assert g.tier == "numpy" and g.tier_source is None
    off = ad.grad(elementwise, tiered=False)
    off(np.ones(N))
    assert off.tier == "numpy"
    monkeypatch.setenv("ADCOMPILER_TIERED", "0")
    env_off = ad.grad(elementwise)
    env_off(np.ones(N))
    assert env_off.tier == "numpy"


def test_tiered_true_takes_small_inputs_too():
    x = np.linspace(-2.0, 2.0, 1000)
    g = ad.grad(elementwise, tiered=True)
    g(x)
    assert g.wait_tier(120) == "checking"
    g(x)
    assert g.tier == "numba"
    np.testing.assert_allclose(g(x), _reference(elementwise, x), rtol=1e-9, atol=1e-12)


def test_a_call_with_a_static_argument_stays_numpy():
    """Only calls whose every argument is a NumPy array tier up (an int's value is part of
    the signature, and a loop program is no whole elementwise loop)."""
    u = np.random.default_rng(5).standard_normal(N)
    for tiered in (None, True):
        g = ad.grad(stencil, tiered=tiered)
        got = g(u, 5)
        assert g.wait_tier(120) == "numpy"
        np.testing.assert_allclose(got, _reference(stencil, u, 5), rtol=1e-12, atol=1e-12)


def test_a_loop_that_disagrees_never_runs(monkeypatch):
    """The loop's first result is checked against the NumPy code's: a wrong loop (here made
    wrong on purpose) leaves the NumPy code in place, with a warning that says so."""
    from adcompiler import pipeline
    original = pipeline.compile_gradient

    def broken(*args, **kwargs):
        loop = original(*args, **kwargs)
        if kwargs.get("backend") == "numba":
            function = loop.function
            loop.function = lambda *a: function(*a) * 1.001
        return loop
    monkeypatch.setattr(pipeline, "compile_gradient", broken)
    x = np.random.default_rng(6).standard_normal(N)
    g = ad.grad(elementwise)
    g(x)
    assert g.wait_tier(120) == "checking"
    with pytest.warns(RuntimeWarning, match="the NumPy code stays") as record:
        checked = g(x)
    assert record[0].filename == __file__   # the user's call, not a line of adcompiler
    assert g.tier == "numpy"
    assert "differed" in g._latest().tier.reason
    reference = _reference(elementwise, x)
    np.testing.assert_allclose(checked, reference, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g(x), reference, rtol=1e-12, atol=1e-12)


def test_a_loop_that_raises_leaves_the_numpy_code():
    """A loop that fails at its checking call (here: made to raise) is a difference too."""
    x = np.random.default_rng(8).standard_normal(N)
    g = ad.grad(elementwise)
    g(x)
    assert g.wait_tier(120) == "checking"
    g._latest().tier.loop.function = lambda *a: 1 / 0
    with pytest.warns(RuntimeWarning, match="ZeroDivisionError"):
        g(x)
    assert g.tier == "numpy"
    np.testing.assert_allclose(g(x), _reference(elementwise, x), rtol=1e-12, atol=1e-12)


def test_the_check_keeps_no_copy_and_frees_the_numpy_buffers():
    """While the loop compiles nothing of the call is held (the Tier keeps shapes only); at
    the checking call the NumPy code's pooled work arrays are released."""
    x = np.random.default_rng(9).standard_normal(N)
    g = ad.grad(elementwise)
    g(x)
    tier = g._latest().tier
    assert all(isinstance(part, tuple) and not isinstance(part[0], np.ndarray)
               for part in tier.arrays)
    assert tier.arrays == (((N,), np.dtype(float), "C"),)
    assert g.wait_tier(120) == "checking"
    pools = [v for k, v in tier.numpy_code.__globals__.items()
             if k.endswith("_buffers") and isinstance(v, list)]
    assert pools and all(len(pool) == 1 for pool in pools)   # planned code at this size
    g(x)
    assert g.tier == "numba" and all(len(pool) == 0 for pool in pools)


def test_arguments_changed_in_place_after_the_first_call_do_not_matter():
    """The check uses copies made at the first call: an optimiser's in-place update while the
    loop compiles cannot make a false mismatch, nor reach the loop's check."""
    x = np.random.default_rng(7).standard_normal(N)
    g = ad.grad(elementwise)
    for _ in range(5):
        x -= 1e-3 * g(x)
    assert g.wait_tier(120) in ("checking", "numba")   # (the loop may be ready in the five)
    x -= 1e-3 * g(x)
    assert g.tier == "numba"
    np.testing.assert_allclose(g(x), _reference(elementwise, x), rtol=1e-9, atol=1e-9)


def test_the_check_compares_every_chunk():
    """The comparison runs in chunks of tiers.CHUNK values: a difference in the last, partial
    chunk is found, the scale is the largest value of any chunk, non-finite values must match."""
    n = 3 * tiers.CHUNK + 5
    expected = np.linspace(-1.0, 1.0, n)
    expected[2 * tiers.CHUNK + 1] = 1e6            # the scale, in the third chunk
    assert tiers._difference(expected.copy(), expected) == ""
    got = expected.copy()
    got[-1] += 1e-2                                # far above 1e-9 x 1e6
    assert "apart" in tiers._difference(got, expected)
    got = expected.copy()
    got[-1] += 1e-4                                # within 1e-9 of the largest magnitude
    assert tiers._difference(got, expected) == ""
    got = expected.copy()
    got[tiers.CHUNK] = np.nan
    assert "non-finite" in tiers._difference(got, expected)
    assert "another structure" in tiers._difference((got,), expected)
    assert "float32" in tiers._difference(expected.astype(np.float32), expected)


def gram(A):
    return np.sum(np.tanh(A @ A.T))


def test_a_gradient_numba_takes_no_loop_of_stays_numpy_saying_why():
    x = np.random.default_rng(10).standard_normal((30, 20))
    g = ad.grad(gram, tiered=True)
    got = g(x)
    assert g.wait_tier(120) == "numpy"
    reason = g._latest().tier.reason
    assert reason.startswith("numba takes no loop here: NumPy code: backend='numba' writes "
                             "loops only"), reason
    np.testing.assert_allclose(got, _reference(gram, x), rtol=1e-12, atol=1e-12)
    assert g.tier_source is None
