"""numexpr for the arithmetic of large float64 chains (adcompiler/backends/numexpr_chains.py).

Each gradient is compiled twice, with numexpr and with ``ADCOMPILER_NUMEXPR=0`` (ufuncs into
buffers only), and the two must agree: exactly where numexpr performs the same operations in the
same order, to rounding otherwise; and with finite differences.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends import numexpr_chains
from adcompiler.runtime import cache, threaded

ne = pytest.importorskip("numexpr")  # in the test extra; a bare install has no numexpr

N = numexpr_chains.MIN_ELEMENTS


def _both(fn, *args, monkeypatch, **kw):
    """(source with numexpr, value with, source without, value without)."""
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    monkeypatch.setenv("ADCOMPILER_NUMEXPR", "1")
    g = ad.grad(fn, **kw)
    with_ne = g(*args)
    monkeypatch.setenv("ADCOMPILER_NUMEXPR", "0")
    g0 = ad.grad(fn, **kw)
    without = g0(*args)
    return g.source, with_ne, g0.source, without


def _fd(fn, x, k, h=1e-6):
    """d fn / d x[k] by central differences, for a sum of elementwise terms: the k-th term alone
    (the whole sum would drown the difference in rounding)."""
    v = x[k:k + 1]
    return (fn(v + h) - fn(v - h)) / (2 * h)


def elementwise(x):
    return np.sum(np.tanh(x) * x + 3.0 * x * x - np.exp(-x))


def test_transcendentals_stay_numpy_and_the_arithmetic_is_one_numexpr_call(monkeypatch):
    x = np.random.default_rng(0).uniform(-2, 2, N)
    src, g, src0, g0 = _both(elementwise, x, monkeypatch=monkeypatch)
    assert src.startswith("import numexpr as ne\n")
    assert "_threaded(np.tanh, x, out=" in src and "_threaded(np.exp, " in src
    assert src.count("ne.evaluate(") == 1
    assert "ne.evaluate('t1 + x * (7 - t1 ** 2) + _buf" in src
    assert "numexpr" not in src0 and "ne." not in src0
    np.testing.assert_array_equal(g, g0)  # the same float64 operations, in the same order
    expected = np.tanh(x) + x * (1 - np.tanh(x) ** 2) + 6 * x + np.exp(-x)
    np.testing.assert_allclose(g, expected, rtol=1e-13, atol=1e-14)
    for k in (0, 17, N - 1):
        assert abs(g[k] - _fd(elementwise, x, k)) < 1e-6 * max(1.0, abs(g[k]))


def test_below_the_threshold_and_off_and_for_float32_no_numexpr(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    small = np.linspace(-1, 1, N // 2)
    assert "ne." not in ad.grad(elementwise).specialize(small).source
    monkeypatch.setenv("ADCOMPILER_NUMEXPR", "off")
    assert not numexpr_chains.enabled()
    assert "ne." not in ad.grad(elementwise).specialize(np.linspace(-1, 1, N)).source
    monkeypatch.setenv("ADCOMPILER_NUMEXPR", "1")
    x32 = np.linspace(-1, 1, N, dtype=np.float32)
    g = ad.grad(elementwise)
    assert "ne." not in g.specialize(x32).source  # numexpr would compute it in float64
    assert g(x32).dtype == np.float32


def test_rosenbrock_slices_are_named_and_values_match(monkeypatch):
    def rosen(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    x = np.random.default_rng(1).uniform(-1, 1, N + 1)
    src, g, _, g0 = _both(rosen, x, monkeypatch=monkeypatch)
    assert src.count("ne.evaluate(") == 2
    np.testing.assert_array_equal(g, g0)
    a, b = x[:-1], x[1:]
    expected = np.zeros_like(x)
    expected[:-1] = -400 * a * (b - a * a) - 2 * (1 - a)
    expected[1:] += 200 * (b - a * a)
    np.testing.assert_allclose(g, expected, rtol=1e-10, atol=1e-9)


def test_numexpr_between_ufuncs_and_into_a_reused_buffer(monkeypatch):
    """An arithmetic run feeding a transcendental call, whose buffer the next run writes over."""
    def f(x, y):
        u = np.exp(x * y + 0.5 * x) * y
        return np.sum(np.log1p(u * u + y) * x)
    rng = np.random.default_rng(2)
    x, y = rng.uniform(0.1, 1, N), rng.uniform(0.1, 1, N)
    src, g, _, g0 = _both(f, x, y, monkeypatch=monkeypatch, wrt=("x", "y"))
    assert "ne.evaluate(" in src and "np.exp(" in src and "np.log1p(" in src
    for a, b in zip(g, g0):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=0)
    for k in (3, N // 2):
        fx = lambda v: f(v, y[k:k + 1])  # noqa: E731
        assert abs(g[0][k] - _fd(fx, x, k)) < 1e-5 * max(1.0, abs(g[0][k]))


def test_a_name_numexpr_reserves_leaves_the_chain_to_ufuncs(monkeypatch):
    def f(where, sum):  # numexpr would read these as its functions
        return np.sum(np.tanh(where) * where * sum + where * 3.0 + sum * sum)
    rng = np.random.default_rng(3)
    w, s = rng.uniform(-1, 1, N), rng.uniform(-1, 1, N)
    src, g, _, g0 = _both(f, w, s, monkeypatch=monkeypatch, wrt=("where", "sum"))
    assert "ne." not in src
    for a, b in zip(g, g0):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(g[1], np.tanh(w) * w + 2 * s, rtol=1e-13)


def test_compiling_small_code_does_not_import_numexpr(tmp_path):
    """numexpr's import (~7 ms, and its thread pool) is paid only where a chain is large."""
    script = tmp_path / "small_then_large.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        import numpy as np
        import adcompiler as ad

        def f(x):
            return np.sum(np.tanh(x) * x + 3.0 * x * x - np.exp(-x))

        g = ad.grad(f)
        g(np.ones(100))
        assert "numexpr" not in sys.modules, "imported for a small gradient"
        g(np.ones({N}))
        assert "numexpr" in sys.modules and "ne.evaluate" in g.specialize(np.ones({N})).source
    """))
    env = {**os.environ, "ADCOMPILER_CACHE": "0", "ADCOMPILER_NUMEXPR": "1"}
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr


def test_cache_keys_tell_numexpr_from_numpy_only(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_NUMEXPR", "1")
    on = cache.key_for(elementwise, "grad", ("x",), ("sig",))
    with numexpr_chains.disabled():
        off = cache.key_for(elementwise, "grad", ("x",), ("sig",))
        assert not numexpr_chains.enabled()
    assert numexpr_chains.enabled()
    assert on.digest != off.digest and "numexpr off" in off.text and "numexpr on" in on.text


def test_without_numexpr_installed_nothing_changes(monkeypatch):
    monkeypatch.setattr(numexpr_chains, "_installed", lambda: False)
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    assert not numexpr_chains.enabled() and numexpr_chains.fingerprint() == "numexpr off"
    g = ad.grad(elementwise)
    x = np.linspace(-1, 1, N)
    assert "ne." not in g.specialize(x).source
    np.testing.assert_allclose(g(x), np.tanh(x) + x * (1 - np.tanh(x) ** 2) + 6 * x + np.exp(-x))


def test_adcompiler_compile_writes_numpy_only_modules(tmp_path):
    src = tmp_path / "big.py"
    src.write_text(textwrap.dedent(f"""
        import numpy as np
        import adcompiler

        @adcompiler.grad
        def loss(x):
            return np.sum(np.tanh(x) * x + 3.0 * x * x - np.exp(-x))

        def example_loss():
            return (np.linspace(-1.0, 1.0, {N}),)
    """))
    env = {**os.environ, "ADCOMPILER_NUMEXPR": "1"}
    run = subprocess.run([sys.executable, "-m", "adcompiler", "compile", str(src)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    text = (tmp_path / "big_grad.py").read_text()
    assert "numexpr" not in text and "ne.evaluate" not in text and "np.tanh" in text


def test_threaded_ufunc_is_the_ufunc():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(1001, 7)), rng.normal(size=(1001, 7))
    for k in (1, 2, 3, 8):
        out = np.empty_like(a)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(threaded, "parts", lambda: k)
            assert threaded.threaded(np.add, a, b, out=out) is out
            np.testing.assert_array_equal(out, a + b)
            threaded.threaded(np.multiply, a, 2.5, out=out)   # a scalar argument is not cut
            np.testing.assert_array_equal(out, a * 2.5)
            threaded.threaded(np.tanh, out, out=out)           # in place
            np.testing.assert_array_equal(out, np.tanh(a * 2.5))


def test_threaded_parts_keep_the_callers_errstate(monkeypatch):
    monkeypatch.setattr(threaded, "parts", lambda: 2)
    x = np.zeros(1000)
    x[-1] = 1000.0          # overflows in the last part, which a worker thread computes
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            threaded.threaded(np.exp, x, out=np.empty_like(x))
    with np.errstate(over="ignore"):
        assert threaded.threaded(np.exp, x, out=np.empty_like(x))[-1] == np.inf


def test_concurrent_calls_of_one_gradient_agree(monkeypatch):
    from concurrent.futures import ThreadPoolExecutor
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    g = ad.grad(elementwise)
    xs = [np.random.default_rng(k).uniform(-2, 2, N) for k in range(6)]
    expected = [g(x) for x in xs]
    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(g, xs * 3))
    for k, r in enumerate(results):
        np.testing.assert_array_equal(r, expected[k % 6])


def test_the_disk_cache_stores_and_reloads_numexpr_code(monkeypatch, tmp_path):
    monkeypatch.setenv("ADCOMPILER_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("ADCOMPILER_CACHE", "1")
    x = np.random.default_rng(5).uniform(-2, 2, N)
    first = ad.grad(elementwise)
    expected = first(x)
    assert "ne.evaluate(" in first.source and len(list(tmp_path.iterdir())) == 1
    again = ad.grad(elementwise)   # a new object: served from the cache entry
    np.testing.assert_array_equal(again(x), expected)
    assert again.source == first.source
